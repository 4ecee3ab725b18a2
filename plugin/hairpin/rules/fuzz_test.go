package rules

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The fuzz targets cover what any tenant writes: the hostnames of its
// objects and the annotations of a target Service. `go test` runs the
// seeds; `make fuzz` runs each for FUZZTIME.

func FuzzClassifyHosts(f *testing.F) {
	for _, seed := range []string{"app.example.com", "*.example.com", "App.Example.COM.", "", ".", "*", "a..b", "x_y.example.com", strings.Repeat("a", 300)} {
		f.Add(seed, "example.com")
	}
	f.Fuzz(func(t *testing.T, host, zone string) {
		zones := []string{ToFQDN(zone)}
		served, rejected := ClassifyHosts([]string{host, host}, []string{"."}, zones)
		if len(served)+len(rejected) > 1 {
			t.Fatalf("%q named twice was classified %d times", host, len(served)+len(rejected))
		}
		for _, h := range served {
			if h != strings.ToLower(h) || !strings.HasSuffix(h, ".") || !ValidHost(h) || !InZones(zones, h) {
				t.Fatalf("served %q (zone %q) is not a lowercase FQDN inside the zone", h, zone)
			}
		}
	})
}

// FuzzValidHost: the hand-written check accepts exactly what apimachinery's
// validation does.
func FuzzValidHost(f *testing.F) {
	for _, seed := range []string{"app.example.com.", "*.example.com.", "a", "-a.b", "a-.b", "a..b", "A.b", "*.*.b", "*", "*.", ".", "", "a_b.c", "0.0", strings.Repeat("a.", 127) + "b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, host string) {
		h := strings.TrimSuffix(host, ".")
		want := len(validation.IsDNS1123Subdomain(h)) == 0
		if strings.HasPrefix(h, "*.") {
			want = len(validation.IsWildcardDNS1123Subdomain(h)) == 0
		}
		if got := ValidHost(host); got != want {
			t.Fatalf("ValidHost(%q) = %v, apimachinery says %v", host, got, want)
		}
	})
}

func FuzzTargetAnnotations(f *testing.F) {
	f.Add("example.com, example.org", "nginx,*", "cilium", "infra/public")
	f.Add("", "", "", "")
	f.Add("a,,b", "Bad", "*", "x")
	f.Fuzz(func(t *testing.T, zones, ic, gc, gws string) {
		tgt := NewTarget("ns/t", map[string]string{
			ZonesAnnotation: zones, IngressClassesAnnotation: ic, GatewayClassesAnnotation: gc, GatewaysAnnotation: gws,
		})
		if tgt.Enabled() && len(tgt.Spec.Zones) == 0 {
			t.Fatal("an enabled target without zones")
		}
		for _, z := range tgt.Spec.Zones {
			if !strings.HasSuffix(z, ".") || strings.ContainsAny(z, " ,*") || strings.ToLower(z) != z {
				t.Fatalf("zone %q is not a normalised FQDN", z)
			}
		}
	})
}
