package e2e

import (
	"bytes"
	"net"
	"net/netip"
	"text/template"
)

// CorefileConfig shapes [Corefile].
type CorefileConfig struct {
	// Listen, Health and Ready are "127.0.0.1:port" addresses.
	Listen, Health, Ready string
	// Kubeconfig is the control plane's admin kubeconfig.
	Kubeconfig string
	// Upstream ("ip:port") is what `forward .` sends to: the public DNS.
	Upstream string
	// Metrics, when set, is the prometheus plugin's "127.0.0.1:port"
	// (kubeadm's Corefile has `prometheus :9153`).
	Metrics string
	// Hairpin is the hairpin stanza added to the stock Corefile, as a user
	// adds it (see [ProxyStanza]); empty for the stock Corefile. Lines after
	// the first are indented as they stand inside a server block.
	Hairpin string
	// Uncached, with Hairpin, adds a second server block on this address
	// with the same hairpin stanza (so the same watch) and no cache.
	Uncached string
}

// ProxyStanza is the explicit form of the hairpin stanza: one proxy
// Service, hairpin-system/hairpin-proxy, answering Ingress hosts of every
// class in [Zone] and, when gatewayClass is set, the Gateway API hostnames of
// Gateways of that class. The kubeconfig is explicit because the test runs
// outside a cluster.
func ProxyStanza(kubeconfig, gatewayClass string) string {
	var b bytes.Buffer
	if err := proxyStanzaTmpl.Execute(&b, map[string]string{"Kubeconfig": kubeconfig, "GatewayClass": gatewayClass, "Zone": Zone}); err != nil {
		panic(err) // the template is fixed; only a programming error gets here
	}
	return b.String()
}

var proxyStanzaTmpl = template.Must(template.New("hairpin").Parse(`hairpin {{.Zone}} {
        proxy ` + ProxyNamespace + "/" + ProxyService + `
        kubeconfig {{.Kubeconfig}}
        startup_timeout 10s
{{- if .GatewayClass}}
        gateway_class {{.GatewayClass}}
{{- end}}
    }`))

// Corefile returns a Corefile shaped like the one kube-system's CoreDNS
// ships with (kubeadm's), with addresses on loopback, an explicit kubeconfig
// (we run outside a cluster) and `forward` to the public DNS stand-in instead
// of /etc/resolv.conf. With Hairpin it is the same plus one stanza: what a
// user adds.
func Corefile(c CorefileConfig) string {
	var b bytes.Buffer
	if err := corefileTmpl.Execute(&b, c); err != nil {
		panic(err) // the template is fixed; only a programming error gets here
	}
	return b.String()
}

var corefileTmpl = template.Must(template.New("Corefile").Funcs(tmplFuncs).Parse(`.:{{port .Listen}} {
    bind {{host .Listen}}
    errors
    health {{.Health}}
    ready {{.Ready}}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
{{- if .Hairpin}}
    {{.Hairpin}}
{{- end}}
{{- if .Metrics}}
    prometheus {{.Metrics}}
{{- end}}
    forward . {{.Upstream}}
    cache 30
    loop
    reload
    loadbalance
}
{{- if and .Hairpin .Uncached}}

# The same hairpin settings share one watch and index; this block has no
# cache, so a poll shows when the plugin itself starts serving a change.
.:{{port .Uncached}} {
    bind {{host .Uncached}}
    errors
    {{.Hairpin}}
    forward . {{.Upstream}}
}
{{- end}}
`))

// ZoneFile is one zone the public DNS stand-in serves from a zone file.
type ZoneFile struct {
	// Zone is the origin ("example.com"); Path the file (see [ZoneText]).
	Zone, Path string
}

// PublicCorefile returns the Corefile of the public DNS stand-in: our
// CoreDNS binary serving each zone file authoritatively on listen.
func PublicCorefile(listen string, zones ...ZoneFile) string {
	var b bytes.Buffer
	if err := publicTmpl.Execute(&b, map[string]any{"Listen": listen, "Zones": zones}); err != nil {
		panic(err)
	}
	return b.String()
}

var publicTmpl = template.Must(template.New("Corefile.public").Funcs(tmplFuncs).Parse(`{{range .Zones}}{{.Zone}}:{{port $.Listen}} {
    bind {{host $.Listen}}
    file {{.Path}}
    errors
}
{{end}}`))

// ZoneText is a public zone as the internet sees it: the apex and, through
// the wildcard, every name point at lb, the load balancer of the zone's
// ingress; records (zone-file lines relative to the origin, such as
// "legacy IN A 127.1.2.3") add or override names. TTLs are short and the SOA
// minimum (the negative TTL) is 1 s, so that neither the public answers nor
// NXDOMAINs stick in CoreDNS's cache longer than its own 5 s floor.
func ZoneText(origin string, lb netip.Addr, records ...string) string {
	var b bytes.Buffer
	if err := zoneTmpl.Execute(&b, map[string]any{"Origin": origin, "LB": lb, "Records": records}); err != nil {
		panic(err)
	}
	return b.String()
}

var zoneTmpl = template.Must(template.New("zone").Parse(`$ORIGIN {{.Origin}}.
$TTL 5
@    IN SOA ns.{{.Origin}}. hostmaster.{{.Origin}}. 1 7200 3600 1209600 1
@    IN NS  ns.{{.Origin}}.
ns   IN A   {{.LB}}
@    IN A   {{.LB}}
*    IN A   {{.LB}}
{{- range .Records}}
{{.}}
{{- end}}
`))

// PublicZone is [Zone] as the internet sees it (see [ZoneText]), with every
// name on the load balancer lb.
//
// app.example.com also has a public AAAA and an HTTPS record with an
// ipv4hint, so that the test can show that hairpin hides both. The AAAA is a
// documentation address (RFC 3849); nothing ever dials it.
func PublicZone(lb netip.Addr) string {
	return ZoneText(Zone, lb,
		"app  IN A   "+lb.String(),
		"app  IN AAAA "+PublicAAAA,
		`app  IN HTTPS 1 . alpn="h2,http/1.1" ipv4hint=`+lb.String())
}

// PublicAAAA is the public AAAA record of app.example.com.
const PublicAAAA = "2001:db8::1"

// tmplFuncs split "host:port" addresses for Corefile syntax.
var tmplFuncs = template.FuncMap{
	"host": func(hostport string) (string, error) {
		h, _, err := net.SplitHostPort(hostport)
		return h, err
	},
	"port": func(hostport string) (string, error) {
		_, p, err := net.SplitHostPort(hostport)
		return p, err
	},
}
