package kubectlhairpin

import "strings"

// The tools that write rewrite rules for hairpin traffic, by what they
// leave in CoreDNS's configuration.
const (
	// ouroboros v0.8.1 (github.com/lexfrei/ouroboros at 7c9201ee34a1,
	// internal/coredns/corefile.go BlockBegin and BlockEnd) writes its
	// rules between these lines in the Corefile ("coredns" mode), or under
	// the key ouroboros.override of the ConfigMap coredns-custom
	// ("coredns-import" mode: import_reconciler.go, and the chart's
	// corednsImport.key).
	authorOuroboros      = "ouroboros"
	ouroborosBegin       = "# === BEGIN ouroboros (do not edit by hand) ==="
	ouroborosEnd         = "# === END ouroboros ==="
	ouroborosOverrideKey = "ouroboros.override"
	// compumike's hairpin-proxy (github.com/compumike/hairpin-proxy at
	// 10ef5fd0ed8b, hairpin-proxy-controller/src/main.rb
	// COMMENT_LINE_SUFFIX) ends each of its rewrite lines with this.
	authorHairpinProxy = "hairpin-proxy"
	hairpinProxyMark   = "# Added by hairpin-proxy"
)

// authorOf says which tool wrote the rule on line (1-based) of f.
func authorOf(f mountedFile, line int) string {
	if f.key == ouroborosOverrideKey {
		return authorOuroboros
	}
	lines := strings.Split(f.text, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	if strings.HasSuffix(strings.TrimSpace(lines[line-1]), hairpinProxyMark) {
		return authorHairpinProxy
	}
	inside := false
	for _, l := range lines[:line-1] {
		switch strings.TrimSpace(l) {
		case ouroborosBegin:
			inside = true
		case ouroborosEnd:
			inside = false
		}
	}
	if inside {
		return authorOuroboros
	}
	return ""
}
