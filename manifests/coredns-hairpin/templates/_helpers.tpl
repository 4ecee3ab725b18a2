{{/*
The target keys of the hairpin plugin (plugin/hairpin/README.md, "Targets"):
it discovers Services with this label in its targets namespace, and reads
these annotations.
*/}}
{{- define "hairpin.targetKey" -}}hairpin.coredns-hairpin.io/target{{- end }}
{{- define "hairpin.annotationPrefix" -}}hairpin.coredns-hairpin.io/{{- end }}

{{/* The proxy's fixed object name; two releases per cluster are not supported. */}}
{{- define "hairpin.proxyName" -}}hairpin-proxy{{- end }}

{{/* Labels every object carries. */}}
{{- define "hairpin.labels" -}}
app.kubernetes.io/part-of: coredns-hairpin
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The proxy pods' selector; the target Services select them too. */}}
{{- define "hairpin.proxySelector" -}}
app.kubernetes.io/name: hairpin-proxy
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The tenant CoreDNS pods' selector: what stock CoreDNS uses, so that
NetworkPolicies written for it apply unchanged. */}}
{{- define "hairpin.corednsSelector" -}}
k8s-app: kube-dns
{{- end }}

{{/*
hairpin.image: REPOSITORY:TAG of (list IMAGE $), TAG defaulting to the
chart's appVersion, and REPOSITORY:TAG@DIGEST when a digest is set: the
runtime pulls by the digest, and the tag stays for the people reading it.
*/}}
{{- define "hairpin.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{ $img.repository }}:{{ $img.tag | default $root.Chart.AppVersion }}
{{- with $img.digest }}@{{ . }}{{ end -}}
{{- end }}

{{/*
hairpin.targets: .Values.targets (a map keyed by name, so that values merge
into the default target) as a JSON list sorted by name, each entry with its
"name"; an entry set to null is dropped. Use it with fromJsonArray.
*/}}
{{- define "hairpin.targets" -}}
{{- $list := list -}}
{{- range $name, $t := .Values.targets -}}
{{- if and $t (ne (toString $t.enabled) "false") -}}
{{- $list = append $list (merge (dict "name" $name) $t) -}}
{{- end -}}
{{- end -}}
{{- toJson $list -}}
{{- end }}

{{/*
hairpin.proxiedTargets: the targets that the proxy fronts (hairpin.targets
without the direct ones), as a JSON list. Use it with fromJsonArray.
*/}}
{{- define "hairpin.proxiedTargets" -}}
{{- $list := list -}}
{{- range include "hairpin.targets" . | fromJsonArray -}}
{{- if not .direct -}}
{{- $list = append $list . -}}
{{- end -}}
{{- end -}}
{{- toJson $list -}}
{{- end }}

{{/*
hairpin.directNamespaces: the namespaces of the Services that direct
targets name, sorted and unique, as a JSON list.
*/}}
{{- define "hairpin.directNamespaces" -}}
{{- $list := list -}}
{{- range include "hairpin.targets" . | fromJsonArray -}}
{{- with .direct -}}
{{- $list = append $list .namespace -}}
{{- end -}}
{{- end -}}
{{- toJson ($list | uniq | sortAlpha) -}}
{{- end }}

{{/* hairpin.gatewayAPI: "true" when the Gateway API rules are granted. */}}
{{- define "hairpin.gatewayAPI" -}}
{{- $g := .Values.rbac.gatewayAPI -}}
{{- if eq (toString $g) "auto" -}}
{{- range include "hairpin.targets" . | fromJsonArray -}}
{{- if or .gatewayClasses .gateways -}}true{{- end -}}
{{- end -}}
{{- else if $g -}}true{{- end -}}
{{- end }}

{{/* hairpin.upstreamHost: the absolute DNS name of a target's upstream. */}}
{{- define "hairpin.upstreamHost" -}}
{{- $t := index . 0 -}}
{{- $root := index . 1 -}}
{{ $t.upstream.name }}.{{ $t.upstream.namespace }}.svc.{{ trimSuffix "." $root.Values.clusterDomain }}.
{{- end }}

{{/*
hairpin.routePort: the name of the proxy's container port of one route,
(list TARGET PORT), and the targetPort of that port of the target Service.
A named targetPort puts in the target's EndpointSlices only the proxy Pods
that serve the route: a Pod without the name is listed without the port
(the EndpointSlice controller resolves a name per Pod), while a number
would list every proxy Pod, also one started before the target existed.
The plugin waits for a ready endpoint of each port before the target takes
hosts. The name follows the target and the port's name, not the number, so
a changed containerPort keeps serving from the old Pods during the rollout;
a port name may have 15 characters, hence the hash.
*/}}
{{- define "hairpin.routePort" -}}
{{- $t := index . 0 -}}
{{- $p := index . 1 -}}
hp-{{ printf "%s/%s" $t.name $p.name | sha256sum | trunc 8 }}
{{- end }}

{{/*
hairpin.validate fails the render, naming the field, on what the schema
cannot say: names and ports that must be unique across list entries, and
settings that contradict each other.
*/}}
{{- define "hairpin.validate" -}}
{{- /* Target names and zones are checked here rather than by the schema,
whose errors for them blame another field (propertyNames) or show only a
regex; range goes over the names in order, so the error is the same on
every render. Disabled targets are checked too. */ -}}
{{- range $name, $t := .Values.targets -}}
{{- if or (gt (len $name) 63) (not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name)) -}}
{{- fail (printf "targets: %q is not a valid target name: it names the target's Service, so at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. tenant-root)" $name) -}}
{{- end -}}
{{- if kindIs "map" $t -}}
{{- range $i, $z := $t.zones -}}
{{- if not (regexMatch "^([a-z0-9]([-a-z0-9]*[a-z0-9])?\\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?\\.?$" $z) -}}
{{- fail (printf "targets.%s.zones[%d]: %q is not a DNS zone: lower-case labels of letters, digits and '-' separated by dots, such as example.com; no wildcard, a zone already covers every name under it" $name $i $z) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.corednsMonitor.enabled .Values.tenant.enabled -}}
{{- fail "corednsMonitor.enabled: tenant mode's CoreDNS is scraped by serviceMonitor.enabled already; turn one of them off" -}}
{{- end -}}
{{- $p := .Values.proxy -}}
{{- $stop := addf (include "hairpin.seconds" $p.lameduck | float64) (include "hairpin.seconds" $p.drainTimeout | float64) -}}
{{- if le (float64 $p.terminationGracePeriodSeconds) $stop -}}
{{- fail (printf "proxy.terminationGracePeriodSeconds: %v must exceed proxy.lameduck + proxy.drainTimeout (%s + %s = %vs), or the kubelet kills connections still draining; set it to at least %d" $p.terminationGracePeriodSeconds $p.lameduck $p.drainTimeout $stop (add1 (floor $stop | int))) -}}
{{- end -}}
{{- $routes := dict -}}
{{- $routePorts := dict -}}
{{- $ports := dict (toString .Values.proxy.healthPort) "proxy.healthPort" -}}
{{- range $t := include "hairpin.targets" . | fromJsonArray -}}
{{- $where := printf "targets.%s" $t.name -}}
{{- if eq $t.name (printf "%s-metrics" (include "hairpin.proxyName" $)) -}}
{{- fail (printf "%s: %q is the name of the proxy's metrics Service" $where $t.name) -}}
{{- end -}}
{{- $portNames := dict -}}
{{- $servicePorts := dict -}}
{{- range $j, $p := dig "upstream" "ports" list $t -}}
{{- $pw := printf "%s.upstream.ports[%d]" $where $j -}}
{{- if hasKey $portNames $p.name -}}
{{- fail (printf "%s.name: %q is already the name of %s" $pw $p.name (get $portNames $p.name)) -}}
{{- end -}}
{{- $_ := set $portNames $p.name $pw -}}
{{- if hasKey $servicePorts (toString $p.port) -}}
{{- fail (printf "%s.port: %v is already the port of %s" $pw $p.port (get $servicePorts (toString $p.port))) -}}
{{- end -}}
{{- $_ := set $servicePorts (toString $p.port) $pw -}}
{{- if hasKey $ports (toString $p.containerPort) -}}
{{- fail (printf "%s.containerPort: %v is already used by %s; container ports must be unique over all targets" $pw $p.containerPort (get $ports (toString $p.containerPort))) -}}
{{- end -}}
{{- $_ := set $ports (toString $p.containerPort) $pw -}}
{{- $route := printf "%s-%s" $t.name $p.name -}}
{{- if hasKey $routes $route -}}
{{- fail (printf "%s.name: route name %q is already the route of %s" $pw $route (get $routes $route)) -}}
{{- end -}}
{{- $_ := set $routes $route $pw -}}
{{- $portName := include "hairpin.routePort" (list $t $p) -}}
{{- if hasKey $routePorts $portName -}}
{{- fail (printf "%s.name: the container port name %q of route %q is already that of %s; rename the port" $pw $portName $route (get $routePorts $portName)) -}}
{{- end -}}
{{- $_ := set $routePorts $portName $pw -}}
{{- end -}}
{{- if and (eq (toString $.Values.rbac.gatewayAPI) "false") (or $t.gatewayClasses $t.gateways) -}}
{{- fail (printf "%s: selects Gateways (gatewayClasses/gateways) but rbac.gatewayAPI is false, so CoreDNS could not read them; set rbac.gatewayAPI to auto or true" $where) -}}
{{- end -}}
{{- if not (or $t.ingressClasses $t.gatewayClasses $t.gateways) -}}
{{- fail (printf "%s: selects nothing; set ingressClasses, gatewayClasses or gateways" $where) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.tenant.enabled (not .Values.tenant.dnsServiceIP) -}}
{{- fail "tenant.dnsServiceIP: required in tenant mode (kubelet's --cluster-dns)" -}}
{{- end -}}
{{- end }}

{{/*
hairpin.seconds: a Go duration of the values ("5s", "1m30s", "500ms",
"0") in seconds, for the checks that add durations up.
*/}}
{{- define "hairpin.seconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" (toString .) -1 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $part -}}
{{- $total = addf $total (mulf ($num | float64) (get $units (trimPrefix $num $part))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
hairpin.tenantCorefile: tenant.corefile, or by default the stock kubeadm
Corefile with an explicit hairpin stanza that discovers the targets in the
release namespace.
*/}}
{{- define "hairpin.tenantCorefile" -}}
{{- if .Values.tenant.corefile -}}
{{ .Values.tenant.corefile }}
{{- else -}}
.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes {{ trimSuffix "." .Values.clusterDomain }} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    hairpin {
        targets {{ .Release.Namespace }}
    }
    prometheus :9153
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
{{- end }}
{{- end }}
