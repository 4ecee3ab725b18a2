package hairpin

import (
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

func TestParseGoodStanzas(t *testing.T) {
	cases := []struct {
		name  string
		input string
		check func(t *testing.T, s settings)
	}{
		{"defaults: discover targets in hairpin-system", `hairpin`, func(t *testing.T, s settings) {
			if s.targetsNamespace != "hairpin-system" || s.explicit() {
				t.Errorf("targets %q explicit %v, want discovery in hairpin-system", s.targetsNamespace, s.explicit())
			}
			if s.ttl != 5 || s.startupTimeout != 5*time.Second || s.settle != 2*time.Second {
				t.Errorf("ttl %d startup_timeout %s settle %s, want 5, 5s and 2s", s.ttl, s.startupTimeout, s.settle)
			}
			if len(s.zones) != 1 || s.zones[0] != "example.com." {
				t.Errorf("zones = %v, want the server block's", s.zones)
			}
		}},
		{"zones from arguments", `hairpin Example.ORG a.example.com`, func(t *testing.T, s settings) {
			if strings.Join(s.zones, " ") != "example.org. a.example.com." {
				t.Errorf("zones = %v", s.zones)
			}
		}},
		{"every property", `hairpin {
			proxy ingress/hp
			ingress_class nginx internal nginx
			gateway_class cilium
			namespaces team-a team-b
			labels env in (prod, staging),tier=web
			ttl 30
			kubeconfig /etc/kube.conf admin@prod
			startup_timeout 250ms
			settle 0
		}`, func(t *testing.T, s settings) {
			if s.proxyNamespace != "ingress" || s.proxyName != "hp" {
				t.Errorf("proxy = %s/%s", s.proxyNamespace, s.proxyName)
			}
			if strings.Join(s.ingressClasses, ",") != "internal,nginx" {
				t.Errorf("ingress_class = %v, want sorted and deduplicated", s.ingressClasses)
			}
			if strings.Join(s.namespaces, ",") != "team-a,team-b" || strings.Join(s.gatewayClasses, ",") != "cilium" {
				t.Errorf("namespaces %v gateway_class %v", s.namespaces, s.gatewayClasses)
			}
			if s.labels.String() != "env in (prod,staging),tier=web" {
				t.Errorf("labels = %q", s.labels.String())
			}
			if s.ttl != 30 || s.kubeconfig != "/etc/kube.conf" || s.kubecontext != "admin@prod" || s.startupTimeout != 250*time.Millisecond || s.settle != 0 {
				t.Errorf("ttl %d kubeconfig %q context %q startup_timeout %s settle %s", s.ttl, s.kubeconfig, s.kubecontext, s.startupTimeout, s.settle)
			}
		}},
		{"fixed proxy addresses", "hairpin {\nproxy_ip 127.77.0.5 fd00::5\n}", func(t *testing.T, s settings) {
			if len(s.proxyIPs) != 2 || s.proxyIPs[1].String() != "fd00::5" {
				t.Errorf("proxy_ip = %v", s.proxyIPs)
			}
		}},
		{"targets namespace", "hairpin {\ntargets tenant-root\n}", func(t *testing.T, s settings) {
			if s.targetsNamespace != "tenant-root" {
				t.Errorf("targets = %q", s.targetsNamespace)
			}
		}},
		{"every class", "hairpin {\nproxy_ip 127.77.0.5\ningress_class *\n}", func(t *testing.T, s settings) {
			if filtersClasses(s.ingressClasses) {
				t.Error("ingress_class * filters classes")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = []string{"example.com.:53"}
			s, err := parse(c)
			if err != nil {
				t.Fatalf("parse(%q): %v", tc.input, err)
			}
			tc.check(t, s)
		})
	}
}

func TestParseBadStanzasNameTheMistake(t *testing.T) {
	cases := []struct {
		input   string
		wantErr string
	}{
		{"hairpin {\nbogus 1\n}", "unknown property 'bogus'"},
		{"hairpin {\nttl\n}", "ttl needs an argument"},
		{"hairpin {\nttl abc\n}", `ttl "abc"`},
		{"hairpin {\nttl 3601\n}", "ttl 3601: must be in range [0, 3600]"},
		{"hairpin {\nttl -1\n}", "ttl -1"},
		{"hairpin {\nstartup_timeout 5\n}", `startup_timeout "5"`},
		{"hairpin {\nstartup_timeout -1s\n}", "must not be negative"},
		{"hairpin {\nsettle 2\n}", `settle "2"`},
		{"hairpin {\nsettle -2s\n}", `settle "-2s": must not be negative`},
		{"hairpin {\nsettle 1s 2s\n}", "settle takes one duration, got 2"},
		{"hairpin {\nlabels a=b=c\n}", `labels "a=b=c"`},
		{"hairpin {\nproxy hairpin-proxy\n}", `proxy "hairpin-proxy" is not NAMESPACE/NAME`},
		{"hairpin {\nproxy a/b/c\n}", `proxy "a/b/c" is not NAMESPACE/NAME`},
		{"hairpin {\nproxy NS/name\n}", `namespace "NS"`},
		{"hairpin {\nproxy ns/a b/c\n}", "proxy takes one NAMESPACE/NAME"},
		{"hairpin {\nproxy_ip 10.0.0.300\n}", `proxy_ip "10.0.0.300" is not an IP address`},
		{"hairpin {\nproxy ns/name\nproxy_ip 127.0.0.1\n}", "mutually exclusive"},
		{"hairpin {\nproxy ns/name\ningress_class Bad_Class\n}", `ingress_class "Bad_Class"`},
		{"hairpin {\ningress_class nginx\n}", "ingress_class needs proxy or proxy_ip"},
		{"hairpin {\ngateway_class cilium\n}", "gateway_class needs proxy or proxy_ip"},
		{"hairpin {\ntargets ns\nproxy ns/name\n}", "targets and proxy are mutually exclusive"},
		{"hairpin {\ntargets Not_A_Namespace\n}", `targets namespace "Not_A_Namespace"`},
		{"hairpin {\ntargets a b\n}", "targets takes one NAMESPACE"},
		{"hairpin {\nnamespaces ok NOT_OK\n}", `namespaces "NOT_OK"`},
		{"hairpin {\nkubeconfig a b c\n}", "kubeconfig takes PATH [CONTEXT]"},
		{"hairpin\nhairpin", "plugin"},
	}
	for _, tc := range cases {
		t.Run(tc.wantErr, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = []string{"example.com.:53"}
			_, err := parse(c)
			if err == nil {
				t.Fatalf("parse(%q) succeeded, want error containing %q", tc.input, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parse(%q) = %q, want it to contain %q", tc.input, err, tc.wantErr)
			}
		})
	}
}

func TestSetupErrorsArePrefixedWithPluginName(t *testing.T) {
	c := caddy.NewTestController("dns", "hairpin {\nttl x\n}")
	err := setup(c)
	if err == nil || !strings.HasPrefix(err.Error(), "plugin/hairpin: ") {
		t.Fatalf("setup error = %v, want it prefixed with plugin/hairpin", err)
	}
}

func TestSetupWithMissingKubeconfigFails(t *testing.T) {
	c := caddy.NewTestController("dns", "hairpin {\nkubeconfig /nonexistent/kubeconfig\n}")
	err := setup(c)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Fatalf("setup error = %v, want it to name the kubeconfig path", err)
	}
}

func TestBareStanzaWithoutAPIClientIsInertNotFatal(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	c := caddy.NewTestController("dns", "hairpin")
	c.ServerBlockKeys = []string{".:53"}
	if err := setup(c); err != nil {
		t.Fatalf("a bare hairpin outside a cluster stopped startup: %v", err)
	}
	plugins := dnsserver.GetConfig(c).Plugin
	if len(plugins) != 1 {
		t.Fatalf("%d plugins registered, want the hairpin handler", len(plugins))
	}
	h, ok := plugins[0](nil).(*Hairpin)
	if !ok {
		t.Fatal("no hairpin handler registered")
	}
	if !h.Ready() {
		t.Error("an inert hairpin is not Ready")
	}
}

func TestRootBlockExplicitProxyMustNameZones(t *testing.T) {
	for _, stanza := range []string{
		"hairpin {\n proxy hairpin-system/hairpin-proxy\n}",
		"hairpin {\n proxy_ip 127.77.0.10\n}",
	} {
		c := caddy.NewTestController("dns", stanza)
		c.ServerBlockKeys = []string{".:53"}
		_, err := parse(c)
		if err == nil || !strings.Contains(err.Error(), "zones") {
			t.Errorf("%q in a root block: err = %v, want a refusal that names the zones", stanza, err)
		}
	}
}
