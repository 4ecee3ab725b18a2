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
	// Hairpin adds the one hairpin stanza to the stock Corefile.
	Hairpin bool
	// GatewayClass, with Hairpin, also serves Gateway API hostnames of
	// Gateways of this class.
	GatewayClass string
	// Uncached, with Hairpin, adds a second server block on this address
	// with the same hairpin settings (so the same watch) and no cache.
	Uncached string
}

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
    {{template "hairpin" .}}
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
    {{template "hairpin" .}}
    forward . {{.Upstream}}
}
{{- end}}
{{define "hairpin"}}hairpin example.com {
        kubeconfig {{.Kubeconfig}}
        startup_timeout 10s
{{- if .GatewayClass}}
        gateway_class {{.GatewayClass}}
{{- end}}
    }{{end}}
`))

// PublicCorefile returns the Corefile of the public DNS stand-in: our
// CoreDNS binary serving the zone file authoritatively on listen.
func PublicCorefile(listen, zoneFile string) string {
	var b bytes.Buffer
	if err := publicTmpl.Execute(&b, map[string]string{"Listen": listen, "ZoneFile": zoneFile}); err != nil {
		panic(err)
	}
	return b.String()
}

var publicTmpl = template.Must(template.New("Corefile.public").Funcs(tmplFuncs).Parse(`example.com:{{port .Listen}} {
    bind {{host .Listen}}
    file {{.ZoneFile}}
    errors
}
`))

// PublicZone is example.com as the internet sees it: every name, through
// the wildcard, points at the load balancer. TTLs are short and the SOA
// minimum (the negative TTL) is 1 s, so that neither the public answers nor
// NXDOMAINs stick in CoreDNS's cache longer than its own 5 s floor.
//
// app.example.com also has a public AAAA and an HTTPS record with an
// ipv4hint, so that the test can show that hairpin hides both. The AAAA is a
// documentation address (RFC 3849); nothing ever dials it.
func PublicZone(lb netip.Addr) string {
	var b bytes.Buffer
	if err := zoneTmpl.Execute(&b, lb); err != nil {
		panic(err)
	}
	return b.String()
}

// PublicAAAA is the public AAAA record of app.example.com.
const PublicAAAA = "2001:db8::1"

var zoneTmpl = template.Must(template.New("zone").Parse(`$ORIGIN example.com.
$TTL 5
@    IN SOA ns.example.com. hostmaster.example.com. 1 7200 3600 1209600 1
@    IN NS  ns.example.com.
ns   IN A   {{.}}
@    IN A   {{.}}
*    IN A   {{.}}
app  IN A   {{.}}
app  IN AAAA ` + PublicAAAA + `
app  IN HTTPS 1 . alpn="h2,http/1.1" ipv4hint={{.}}
`))

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
