package e2e

import (
	"strings"
	"testing"
)

// TestLocalCorefile: each distribution's Corefile takes every required
// substitution, and nothing of the cluster's is left for the test to touch.
func TestLocalCorefile(t *testing.T) {
	env := LocalEnv{
		Listen: "127.0.0.1:15301", Health: "127.0.0.1:15302", Ready: "127.0.0.1:15303", Metrics: "127.0.0.1:15304",
		Kubeconfig: "/tmp/kubeconfig", Upstream: "127.0.0.1:15305", Dir: "/tmp/etc-coredns",
	}
	for _, name := range Distributions {
		t.Run(name, func(t *testing.T) {
			src, err := DistributionCorefile(name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(src, "hairpin") {
				t.Fatalf("the %s fixture names hairpin; the image is what must add it", name)
			}
			got, err := LocalCorefile(src, env)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{".:15301 {\n    bind 127.0.0.1\n", "health 127.0.0.1:15302", "ready 127.0.0.1:15303", "prometheus 127.0.0.1:15304", "kubeconfig /tmp/kubeconfig", "forward . 127.0.0.1:15305"} {
				if !strings.Contains(got, want) {
					t.Errorf("local Corefile lacks %q:\n%s", want, got)
				}
			}
			for _, gone := range []string{":53 ", "/etc/resolv.conf", "/etc/coredns/", ":9153"} {
				if strings.Contains(got, gone) {
					t.Errorf("local Corefile still has %q:\n%s", gone, got)
				}
			}
		})
	}
}

func TestLocalCorefileRefusesAFixtureItCannotPointAtLoopback(t *testing.T) {
	_, err := LocalCorefile(".:53 {\n    kubernetes cluster.local\n}\n", LocalEnv{Listen: "127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "health: 0 matches") {
		t.Fatalf("error %v, want one naming the missing health directive", err)
	}
}

// TestInClusterDomain: Talos's Corefile rendered for cozy.local serves that
// domain wherever Talos writes it, and a Corefile with no cluster domain to
// render is an error that says so.
func TestInClusterDomain(t *testing.T) {
	src, err := DistributionCorefile("talos")
	if err != nil {
		t.Fatal(err)
	}
	got, err := InClusterDomain(src, "cozy.local")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kubernetes cozy.local in-addr.arpa ip6.arpa {", "disable success cozy.local\n", "disable denial cozy.local\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("Talos's Corefile for cozy.local lacks %q:\n%s", want, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !strings.HasPrefix(l, "#") && strings.Contains(l, "cluster.local") {
			t.Errorf("Talos's Corefile for cozy.local still has %q", l)
		}
	}
	if _, err := InClusterDomain(".:53 {\n    forward . /etc/resolv.conf\n}\n", "cozy.local"); err == nil || !strings.Contains(err.Error(), "cluster.local") {
		t.Errorf("a Corefile without a cluster domain: err %v; want one naming cluster.local", err)
	}
}
