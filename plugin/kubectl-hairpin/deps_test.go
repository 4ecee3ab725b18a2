package kubectlhairpin

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestCommandLinksNoDNSServer: kubectl-hairpin reads the plugin's rules
// from package rules, not from the plugin, so it links neither CoreDNS, nor
// a DNS library, nor caddy's server. The Corefile lexer
// (github.com/coredns/caddy/caddyfile) is the one part of caddy it reads
// node-local-dns's Corefile with.
func TestCommandLinksNoDNSServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages; want the command's whole graph", len(deps))
	}
	for _, pkg := range deps {
		switch {
		case pkg == "github.com/coredns/caddy/caddyfile":
		case strings.HasPrefix(pkg, "github.com/coredns/"), strings.HasPrefix(pkg, "github.com/miekg/dns"),
			pkg == "github.com/coredns-hairpin/hairpin/plugin/hairpin":
			t.Errorf("kubectl-hairpin depends on %s", pkg)
		}
	}
}

// maxBinarySize bounds bin/kubectl-hairpin, as `make build` links it: a
// kubectl plugin is downloaded by every user of krew.
const maxBinarySize = 30_000_000

func TestBinaryIsAtMost30MB(t *testing.T) {
	bin := harness.RequireBinary(t, "kubectl-hairpin")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxBinarySize {
		t.Errorf("%s is %d bytes; want at most %d", bin, fi.Size(), maxBinarySize)
	}
}
