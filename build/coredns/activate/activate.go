// Package activate adds the hairpin plugin to a Corefile that does not name
// it: one `hairpin` line in every server block that holds the kubernetes
// plugin. It is what lets an operator adopt coredns-hairpin by pinning the
// image alone, on distributions that re-render the Corefile (docs/architecture.md,
// "Activation").
//
// The decision is made on the Corefile as CoreDNS will see it, after every
// `import` (files, globs, snippets) is expanded, using caddy's own parser.
// The edit is made on the text: one directive next to a block's opening
// brace, on the same line when that line holds nothing else, so that every
// line number CoreDNS reports later still points at the operator's file.
// Anything that caddy would reject is returned untouched, for CoreDNS to
// report with its own message.
package activate

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/coredns/caddy/caddyfile"
)

// Directive is the plugin's directive name.
const Directive = "hairpin"

// kubernetesDirective marks the server blocks that serve the cluster.
const kubernetesDirective = "kubernetes"

// probePrefix names the placeholder directives that find out which written
// block each parsed block is. No real plugin has a name like it.
const probePrefix = "hairpin-activation-probe-"

// Result says what Transform did and why.
type Result struct {
	// Corefile is the text to load: the input with the added directives, or
	// the input unchanged.
	Corefile []byte
	// Activated lists, in order, the server blocks that got a hairpin
	// directive, each as its keys joined by a space (".:53 cluster.local:53").
	Activated []Block
	// Explicit is true when the Corefile (after imports) names hairpin
	// itself; it is then used as written.
	Explicit bool
	// Imported lists server blocks that hold kubernetes but come from an
	// imported file, which this package does not edit.
	Imported []Block
	// Unplaced is set when the Corefile parses but a directive could not be
	// placed in it; the input is then returned unchanged.
	Unplaced error
}

// Block names one server block.
type Block struct {
	// Keys is the block's keys joined by a space, as written.
	Keys string
	// File is the file that holds the block.
	File string
	// Kubeconfig is the `kubeconfig PATH [CONTEXT]` arguments of the
	// block's kubernetes stanza, if it names one; the added hairpin stanza
	// then watches the same API.
	Kubeconfig []string
}

// Options change the hairpin stanza that Transform adds.
type Options struct {
	// Targets is the namespace the added stanza discovers targets in
	// (`targets NAMESPACE`); empty leaves the plugin's default.
	Targets string
}

// Transform returns the Corefile with hairpin activated where it applies.
// filename is the Corefile's path: caddy resolves relative imports against
// it. Transform never fails; every way of not activating is in the Result.
func Transform(filename string, src []byte) Result {
	return Options{}.Transform(filename, src)
}

// Transform is the package's Transform, adding the stanza that o describes.
func (o Options) Transform(filename string, src []byte) Result {
	res := Result{Corefile: src}
	toks := lex(src)
	written, ok := serverBlocks(toks)
	if !ok || slices.ContainsFunc(written, func(b block) bool { return b.unsafe }) {
		return res // caddy reports the syntax error
	}
	probed := insert(src, written, func(i int, _ block) string { return probeName(i) })
	parsed, err := caddyfile.Parse(filename, bytes.NewReader(probed), nil)
	if err != nil {
		if _, origErr := caddyfile.Parse(filename, bytes.NewReader(src), nil); origErr == nil {
			res.Unplaced = fmt.Errorf("the Corefile parses, but not with the added directive: %w", err)
		}
		return res
	}

	selected := map[int]Block{}
	for _, sb := range parsed {
		if len(sb.Tokens[Directive]) > 0 {
			res.Explicit = true
		}
	}
	for _, sb := range parsed {
		k8s := sb.Tokens[kubernetesDirective]
		probe, hasProbe := probeIndex(sb)
		if len(k8s) == 0 {
			continue
		}
		b := Block{Keys: strings.Join(sb.Keys, " "), File: k8s[0].File, Kubeconfig: kubeconfigArgs(k8s)}
		if !hasProbe {
			res.Imported = append(res.Imported, b)
			continue
		}
		b.File = filename
		selected[probe] = b
	}
	if res.Explicit || len(selected) == 0 {
		return res
	}
	res.Corefile = insert(src, written, func(i int, w block) string {
		b, ok := selected[i]
		if !ok {
			return ""
		}
		return stanza(b.Kubeconfig, o.Targets)
	})
	for i := range written {
		if b, ok := selected[i]; ok {
			res.Activated = append(res.Activated, b)
		}
	}
	return res
}

// insert returns src with the directive text that what returns for each
// written block placed in it ("" places nothing). A directive that fits on
// the line of the block's '{' goes there; otherwise it gets a line of its
// own.
func insert(src []byte, written []block, what func(int, block) string) []byte {
	var out bytes.Buffer
	out.Grow(len(src) + 32*len(written))
	last := 0
	for i, w := range written {
		d := what(i, w)
		if d == "" {
			continue
		}
		out.Write(src[last:w.at])
		switch {
		case w.braceless:
			out.WriteString("\n" + d)
		case w.sameLine:
			out.WriteString(" " + d)
		default:
			out.WriteString(d + "\n")
		}
		last = w.at
	}
	out.Write(src[last:])
	return out.Bytes()
}

func probeName(i int) string { return fmt.Sprintf("%s%d", probePrefix, i) }

// probeIndex returns the written block a parsed block is, by the probe
// directive it holds. A parsed block with no probe came from an import.
func probeIndex(sb caddyfile.ServerBlock) (int, bool) {
	best, found := 0, false
	for name := range sb.Tokens {
		var i int
		if _, err := fmt.Sscanf(name, probePrefix+"%d", &i); err != nil || name != probeName(i) {
			continue
		}
		if !found || i < best {
			best, found = i, true
		}
	}
	return best, found
}

// stanza is the hairpin directive to add: bare (target discovery in the
// plugin's default namespace, in-cluster credentials), or with the targets
// namespace it was given, and with the kubernetes plugin's kubeconfig when
// that stanza names one, so that both plugins read the same API server.
func stanza(kubeconfig []string, targets string) string {
	var lines []string
	if len(kubeconfig) > 0 {
		args := make([]string, len(kubeconfig))
		for i, a := range kubeconfig {
			args[i] = quote(a)
		}
		lines = append(lines, "kubeconfig "+strings.Join(args, " "))
	}
	if targets != "" {
		lines = append(lines, "targets "+quote(targets))
	}
	if len(lines) == 0 {
		return Directive
	}
	return Directive + " {\n        " + strings.Join(lines, "\n        ") + "\n    }"
}

// kubeconfigArgs returns the arguments of `kubeconfig` directly inside the
// kubernetes stanza whose tokens are toks, or nil.
func kubeconfigArgs(toks []caddyfile.Token) []string {
	depth := 0
	for i, t := range toks {
		switch t.Text {
		case "{":
			depth++
			continue
		case "}":
			depth--
			continue
		}
		if depth != 1 || t.Text != "kubeconfig" || !tokenStartsLine(toks, i) {
			continue
		}
		var args []string
		for j := i + 1; j < len(toks) && !tokenStartsLine(toks, j) && toks[j].Text != "}" && len(args) < 2; j++ {
			args = append(args, toks[j].Text)
		}
		if len(args) == 0 {
			return nil
		}
		for _, a := range args {
			if !quotable(a) {
				return nil
			}
		}
		return args
	}
	return nil
}

func tokenStartsLine(toks []caddyfile.Token, i int) bool {
	if i == 0 {
		return true
	}
	prev := toks[i-1]
	return prev.File != toks[i].File || prev.Line+strings.Count(prev.Text, "\n") < toks[i].Line
}

// quote writes a token so that caddy's lexer reads it back as s.
func quote(s string) string {
	if s != "" && s != "{" && s != "}" && strings.IndexFunc(s, unicode.IsSpace) < 0 && !strings.ContainsAny(s, `"#`) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// quotable reports whether quote(s) reads back as s: inside quotes caddy
// takes \" as a quote, so a backslash right before a quote, or at the end,
// cannot be written.
func quotable(s string) bool {
	if quote(s) == s {
		return true
	}
	return !strings.HasSuffix(s, `\`) && !strings.Contains(s, `\"`)
}
