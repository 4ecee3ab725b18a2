package harness

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The rewrite rules that the tools hairpin replaces leave in CoreDNS's
// configuration, rendered as their code renders them. Neither tool can be
// built here, so these are written from their source and cite it.

// OuroborosTarget is the rewrite target of ouroboros's chart with its
// defaults: <service>.<namespace>.svc.<domain>. (lexfrei/ouroboros v0.8.1,
// README.md, "coredns mode").
const OuroborosTarget = "ouroboros-proxy.ouroboros.svc.cluster.local."

// The marker lines of ouroboros's block (v0.8.1, 7c9201ee34a1,
// internal/coredns/corefile.go BlockBegin, BlockEnd).
const (
	OuroborosBegin = "# === BEGIN ouroboros (do not edit by hand) ==="
	OuroborosEnd   = "# === END ouroboros ==="
)

// ouroborosServerBlock is its serverBlockOpener: the root block on :53.
var ouroborosServerBlock = regexp.MustCompile(`^\s*\.:53\s*\{\s*$`)

// ouroborosHosts is its normalizeHosts: lowercase, trimmed, wildcards and
// empty names dropped, sorted, each once.
func ouroborosHosts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h != "" && !strings.ContainsAny(h, "*?") && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// OuroborosCorefile is corefile as ouroboros's coredns mode writes it
// (corefile.go Apply, on a Corefile without its block yet): the marked
// block of one `rewrite name HOST TARGET` line per host goes last into the
// .:53 server block, indented as that block's last line.
func OuroborosCorefile(corefile string, hosts []string, target string) (string, error) {
	lines := strings.Split(corefile, "\n")
	open := slices.IndexFunc(lines, ouroborosServerBlock.MatchString)
	if open < 0 {
		return "", fmt.Errorf("ouroboros: no .:53 server block found")
	}
	closing, depth := -1, 1
	for i := open + 1; i < len(lines) && closing < 0; i++ {
		code, _, _ := strings.Cut(lines[i], "#")
		if depth += strings.Count(code, "{") - strings.Count(code, "}"); depth == 0 {
			closing = i
		}
	}
	if closing < 0 {
		return "", fmt.Errorf("ouroboros: unclosed CoreDNS server block at .:53")
	}
	indent := "    "
	for i := closing - 1; i > open; i-- {
		if t := strings.TrimLeft(lines[i], " \t"); t != "" {
			indent = lines[i][:len(lines[i])-len(t)]
			break
		}
	}
	block := []string{indent + OuroborosBegin}
	for _, h := range ouroborosHosts(hosts) {
		block = append(block, indent+"rewrite name "+h+" "+target)
	}
	block = append(block, indent+OuroborosEnd)
	return strings.Join(slices.Concat(lines[:closing], block, lines[closing:]), "\n"), nil
}

// OuroborosOverride is the value ouroboros's coredns-import mode writes
// under the key ouroboros.override of coredns-custom
// (import_reconciler.go BuildImportSnippet): one line per host.
func OuroborosOverride(hosts []string, target string) string {
	var b strings.Builder
	for _, h := range ouroborosHosts(hosts) {
		b.WriteString("rewrite name " + h + " " + target + "\n")
	}
	return b.String()
}

// HairpinProxyCorefile is corefile as compumike's hairpin-proxy writes it
// (compumike/hairpin-proxy at 10ef5fd0ed8b,
// hairpin-proxy-controller/src/main.rb coredns_corefile_with_rewrite_rules):
// the Corefile stripped, one marked line per host right after the first
// line that starts with ".:53 {", joined without a final newline.
func HairpinProxyCorefile(corefile string, hosts []string) (string, error) {
	lines := strings.Split(strings.TrimSpace(corefile), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), ".:53 {") })
	if at < 0 {
		return "", fmt.Errorf("hairpin-proxy: can't find main server line! '.:53 {' in Corefile")
	}
	var rules []string
	for _, h := range hosts {
		rules = append(rules, "    rewrite name "+h+" hairpin-proxy.hairpin-proxy.svc.cluster.local # Added by hairpin-proxy")
	}
	return strings.Join(slices.Concat(lines[:at+1], rules, lines[at+1:]), "\n"), nil
}

// OuroborosStripped is corefile without ouroboros's marked block, markers
// included, as its chart's pre-delete hook strips it (v0.8.1,
// charts/ouroboros/templates/coredns-cleanup-hook.yaml: `sed '/# === BEGIN
// ouroboros/,/# === END ouroboros/d'` over the ConfigMap's YAML), and as
// docs/migrate.md has an operator strip it.
func OuroborosStripped(corefile string) string {
	var out []string
	in := false
	for _, l := range strings.Split(corefile, "\n") {
		switch {
		case !in && strings.Contains(l, "# === BEGIN ouroboros"):
			in = true
		case in:
			if strings.Contains(l, "# === END ouroboros") {
				in = false
			}
		default:
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
