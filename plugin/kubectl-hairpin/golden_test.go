package kubectlhairpin

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// brokenCluster is healthyCluster with one fault per group: a class
// without a target, a target without zones, an upstream down, a foreign
// host, node-local-dns without the zones.
func brokenCluster(t *testing.T) *cluster {
	c := healthyCluster()
	addTenantIngressNginx(c, "tenant-a", "203.0.113.40")
	c.add(ingress("default", "hijack", "nginx", "login.other.org"))
	delete(find[*core.Service](t, c, "hairpin-system", "tenant-gw").Annotations, rules.ZonesAnnotation)
	for _, ip := range []string{proxyA, proxyB} {
		c.metrics[ip+":9090"] = strings.Replace(c.metrics[ip+":9090"], `route="ingress-nginx-https"} 1`, `route="ingress-nginx-https"} 0`, 1)
	}
	for _, ip := range []string{corednsA, corednsB} {
		m := strings.Replace(c.metrics[ip+":9153"], `state="disabled"} 0`, `state="disabled"} 1`, 1)
		m = strings.Replace(m, `state="serving"} 2`, `state="serving"} 1`, 1)
		m = strings.Replace(m, `reason="outside_zones"} 0`, `reason="outside_zones"} 1`, 1)
		for _, kind := range []string{"ingress", "gateway", "httproute"} {
			m = strings.Replace(m, `kind="`+kind+`"} 0`, `kind="`+kind+`"} 1`, 1)
		}
		c.metrics[ip+":9153"] = m
	}
	addNodeLocalDNS(c, "")
	return c
}

// TestGoldenOutput compares the table and the JSON of a healthy and of a
// broken cluster with testdata/golden (go test -update rewrites them).
func TestGoldenOutput(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		state func(*testing.T) *cluster
	}{
		{"healthy", func(*testing.T) *cluster { return healthyCluster() }},
		{"broken", brokenCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.apply(t, tc.state(t))
			r := e.run(t, e.cp.Config)
			for _, out := range []struct {
				ext   string
				write func(*bytes.Buffer, Report) error
			}{
				{"txt", func(b *bytes.Buffer, r Report) error { return WriteTable(b, r) }},
				{"json", func(b *bytes.Buffer, r Report) error { return WriteJSON(b, r) }},
			} {
				var got bytes.Buffer
				if err := out.write(&got, r); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", "golden", tc.name+"."+out.ext), got.Bytes())
			}
		})
	}
}

// goldenTable compares the table of healthyCluster with change applied
// to testdata/golden/NAME.txt.
func (e *env) goldenTable(t *testing.T, name string, change func(*testing.T, *cluster)) {
	c := healthyCluster()
	change(t, c)
	e.apply(t, c)
	var got bytes.Buffer
	if err := WriteTable(&got, e.run(t, e.cp.Config)); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "golden", name+".txt"), got.Bytes())
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}
