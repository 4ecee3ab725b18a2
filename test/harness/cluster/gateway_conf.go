package cluster

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// gatewayReadyPort serves the data plane's /readyz, as NGF's nginx does.
const gatewayReadyPort = 8081

// gatewayServer is one listener port of the rendered nginx.conf: the
// server_names its listeners and attached routes serve there, and whether
// a route without hostnames on a listener without one makes the default
// server answer too.
type gatewayServer struct {
	Port     int32
	Names    []string
	CatchAll bool
}

// gatewayServers returns p's servers, one per HTTP listener port.
func gatewayServers(p gatewayPlane) []gatewayServer {
	var out []gatewayServer
	for _, port := range gatewayPorts(p.g) {
		s := gatewayServer{Port: port}
		for _, l := range p.g.Spec.Listeners {
			if l.Protocol != gw.HTTPProtocolType || int32(l.Port) != port {
				continue
			}
			listenerHost := ""
			if l.Hostname != nil {
				listenerHost = strings.ToLower(string(*l.Hostname))
			}
			for _, r := range p.routes {
				if !attachesTo(parentRefsTo(r, p.g), l) || !admits(l, p.g.Namespace, r.Namespace) {
					continue
				}
				if len(r.Spec.Hostnames) == 0 {
					if listenerHost == "" {
						s.CatchAll = true
					} else {
						s.Names = append(s.Names, listenerHost)
					}
				}
				for _, h := range r.Spec.Hostnames {
					if name, ok := servedHostname(listenerHost, strings.ToLower(string(h))); ok {
						s.Names = append(s.Names, name)
					}
				}
			}
		}
		slices.Sort(s.Names)
		s.Names = slices.Compact(s.Names)
		out = append(out, s)
	}
	return out
}

// admits applies a listener's allowedRoutes.namespaces: Same (the default)
// or All; a Selector admits nothing here.
func admits(l gw.Listener, gatewayNS, routeNS string) bool {
	from := gw.NamespacesFromSame
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil && l.AllowedRoutes.Namespaces.From != nil {
		from = *l.AllowedRoutes.Namespaces.From
	}
	return from == gw.NamespacesFromAll || from == gw.NamespacesFromSame && gatewayNS == routeNS
}

// servedHostname is the server_name NGF gives a route hostname on a
// listener: the route's own when the listener has none, equals it, or its
// wildcard covers it; the listener's when the route's wildcard covers the
// listener's name; none otherwise.
func servedHostname(listener, route string) (string, bool) {
	covers := func(wildcard, name string) bool {
		suffix, ok := strings.CutPrefix(wildcard, "*")
		return ok && len(name) > len(suffix) && strings.HasSuffix(name, suffix)
	}
	switch {
	case listener == "", listener == route, covers(listener, route):
		return route, true
	case covers(route, listener):
		return listener, true
	}
	return "", false
}

// renderGatewayConf is p's nginx.conf.
func renderGatewayConf(p gatewayPlane) (string, error) {
	var b bytes.Buffer
	err := gatewayTemplate.Execute(&b, map[string]any{
		"Gateway":       p.g.Namespace + "/" + p.g.Name,
		"Servers":       gatewayServers(p),
		"ProxyProtocol": p.proxyProtocol,
		"Trusted":       p.trusted,
		"LogFormat":     harness.NginxLogFormat,
		"UserNS":        userns.Inside(),
		"ReadyPort":     gatewayReadyPort,
	})
	if err != nil {
		return "", fmt.Errorf("cluster: nginx.conf of gateway %s/%s: %w", p.g.Namespace, p.g.Name, err)
	}
	return b.String(), nil
}

var gatewayTemplate = template.Must(template.New("nginx.conf").Parse(`# nginx as NGINX Gateway Fabric renders it for Gateway {{.Gateway}} (written by the coredns-hairpin test cluster)
daemon off;
` + nginxPrelude + `{{- if .ProxyProtocol}}

    # NginxProxy rewriteClientIP.mode: ProxyProtocol
    real_ip_header proxy_protocol;
{{- range .Trusted}}
    set_real_ip_from {{.}};
{{- end}}
{{- end}}
{{range $s := .Servers}}
    server {
        listen {{$s.Port}}{{if $.ProxyProtocol}} proxy_protocol{{end}} default_server;
        server_name _;
        location / {
{{- if $s.CatchAll}}
            return 200 "ok host=$host client=$remote_addr gateway={{$.Gateway}}\n";
{{- else}}
            return 404 "no route\n";
{{- end}}
        }
    }
{{- range $s.Names}}

    server {
        listen {{$s.Port}}{{if $.ProxyProtocol}} proxy_protocol{{end}};
        server_name {{.}};
        location / {
            return 200 "ok host=$host client=$remote_addr gateway={{$.Gateway}}\n";
        }
    }
{{- end}}
{{end}}
    server {
        listen {{.ReadyPort}};
        access_log off;
        location /readyz {
            return 200 "ok\n";
        }
    }
}
`))
