package kubectlhairpin

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coredns/caddy/caddyfile"
)

// mountedFile is one key of a ConfigMap, as a file in CoreDNS's container.
type mountedFile struct {
	configMap, key, text string
}

// podFiles is what a CoreDNS container can read: the ConfigMap keys
// mounted into it, by path, and the mount paths of other volumes, whose
// files the API does not show.
type podFiles struct {
	files  map[string]mountedFile
	opaque []string
	// configMaps are the ConfigMaps ("namespace/name") by mount path,
	// also those with no key: an import of one reads nothing.
	configMaps map[string]string
}

// maxImports bounds the imports spliced into one Corefile, as caddy's
// parser bounds them, so that a file importing itself ends.
const maxImports = 100

// corefileReader splits a Corefile into server blocks and their rewrite
// directives, the way caddy's parser (github.com/coredns/caddy v1.1.4,
// caddyfile/parse.go) does, except that import reads the mounted
// ConfigMaps instead of the local disk: the files are in CoreDNS's pods,
// not here.
type corefileReader struct {
	fs       podFiles
	toks     []caddyfile.Token
	i        int
	snippets map[string][]caddyfile.Token
	imports  int
	// read are the imports of files, in the order they were spliced.
	read []Import
}

// readCorefile reads the server blocks of the Corefile at conf, and the
// imports of files it spliced into them. What was read before an error is
// returned with it.
func readCorefile(conf string, fs podFiles) ([]ServerBlock, []Import, error) {
	toks, err := fs.tokens(conf)
	if err != nil {
		return nil, nil, err
	}
	r := &corefileReader{fs: fs, toks: toks, snippets: map[string][]caddyfile.Token{}}
	var blocks []ServerBlock
	for r.i < len(r.toks) {
		t := r.toks[r.i]
		switch {
		case t.Text == "import" && r.newLine():
			err = r.splice()
		case strings.HasPrefix(t.Text, "(") && strings.HasSuffix(t.Text, ")"):
			err = r.snippet()
		default:
			var b ServerBlock
			b, err = r.serverBlock()
			if err == nil {
				blocks = append(blocks, b)
			}
		}
		if err != nil {
			return blocks, r.read, err
		}
	}
	return blocks, r.read, nil
}

// tokens lexes the file at p, each token marked with its path.
func (fs podFiles) tokens(p string) ([]caddyfile.Token, error) {
	f, ok := fs.files[p]
	if !ok {
		return nil, fmt.Errorf("%s is not a key of a ConfigMap mounted into CoreDNS", p)
	}
	d := caddyfile.NewDispenser(p, strings.NewReader(f.text))
	var toks []caddyfile.Token
	for d.Next() {
		toks = append(toks, caddyfile.Token{File: p, Line: d.Line(), Text: d.Val()})
	}
	return toks, nil
}

// newLine reports whether the current token starts a line (caddyfile's
// Dispenser.isNewLine), also when an import put it after a later line of
// its own file: a snippet's first token follows the import's line.
func (r *corefileReader) newLine() bool {
	if r.i == 0 {
		return true
	}
	prev, cur := r.toks[r.i-1], r.toks[r.i]
	return prev.File != cur.File || prev.Line+strings.Count(prev.Text, "\n") != cur.Line
}

// splice replaces `import PATTERN` with the tokens of the snippet or of
// the mounted files it names (caddyfile's parser.doImport).
func (r *corefileReader) splice() error {
	at := r.toks[r.i]
	r.i++
	if r.i == len(r.toks) || r.newLine() {
		return fmt.Errorf("%s:%d: import names no file", at.File, at.Line)
	}
	pattern := r.toks[r.i].Text
	if r.imports++; r.imports > maxImports {
		return fmt.Errorf("%s:%d: more than %d imports (does a file import itself?)", at.File, at.Line, maxImports)
	}
	imported, ok := r.snippets[pattern]
	if !ok {
		var err error
		var read Import
		if imported, read, err = r.fs.glob(at, pattern); err != nil {
			return err
		}
		r.read = append(r.read, read)
	}
	r.toks = slices.Concat(r.toks[:r.i-1], imported, r.toks[r.i+1:])
	r.i--
	return nil
}

// glob returns the tokens of the mounted files that pattern matches,
// relative to the importing file's directory, in path order, and what the
// import read.
func (fs podFiles) glob(at caddyfile.Token, pattern string) ([]caddyfile.Token, Import, error) {
	read := Import{Pattern: pattern}
	p := pattern
	if !path.IsAbs(p) {
		p = path.Join(path.Dir(at.File), p)
	}
	var matches []string
	for f := range fs.files {
		ok, err := path.Match(p, f)
		if err != nil {
			return nil, read, fmt.Errorf("%s:%d: import %s: %w", at.File, at.Line, pattern, err)
		}
		if ok {
			matches = append(matches, f)
		}
	}
	if len(matches) == 0 {
		for _, m := range fs.opaque {
			if path.Dir(p) == m || strings.HasPrefix(path.Dir(p), m+"/") {
				return nil, read, fmt.Errorf("%s:%d: import %s reads a volume that is not a ConfigMap", at.File, at.Line, pattern)
			}
		}
		// caddy warns and goes on for a glob without files, and fails for
		// a file that is not there: CoreDNS would not load this Corefile.
		if !strings.ContainsAny(pattern, "*?[") {
			return nil, read, fmt.Errorf("%s:%d: import %s: no such file is mounted", at.File, at.Line, pattern)
		}
		read.ConfigMap = fs.configMaps[path.Dir(p)]
	}
	slices.Sort(matches)
	var toks []caddyfile.Token
	for _, m := range matches {
		t, _ := fs.tokens(m) // m is a key of fs.files
		toks = append(toks, t...)
		f := fs.files[m]
		read.Files = append(read.Files, "ConfigMap "+f.configMap+" key "+f.key)
	}
	return toks, read, nil
}

// snippet keeps a top-level `(name) { ... }` for import name.
func (r *corefileReader) snippet() error {
	name := strings.TrimSuffix(strings.TrimPrefix(r.toks[r.i].Text, "("), ")")
	r.i++
	body, err := r.braced()
	if err != nil {
		return fmt.Errorf("snippet %s: %w", name, err)
	}
	r.snippets[name] = body
	return nil
}

// braced reads `{ ... }` from the current token and returns the tokens
// between the braces.
func (r *corefileReader) braced() ([]caddyfile.Token, error) {
	if r.i == len(r.toks) || r.toks[r.i].Text != "{" {
		return nil, errors.New("expected {")
	}
	start, depth := r.i+1, 0
	for ; r.i < len(r.toks); r.i++ {
		switch r.toks[r.i].Text {
		case "{":
			depth++
		case "}":
			if depth--; depth == 0 {
				r.i++
				return r.toks[start : r.i-1], nil
			}
		}
	}
	return nil, errors.New("unclosed {")
}

// serverBlock reads the addresses up to "{", then the directives up to the
// matching "}", splicing the imports of directive lines and keeping the
// rewrite directives.
func (r *corefileReader) serverBlock() (ServerBlock, error) {
	var b ServerBlock
	first := r.toks[r.i]
	for ; r.i < len(r.toks) && r.toks[r.i].Text != "{"; r.i++ {
		if k := strings.TrimSuffix(r.toks[r.i].Text, ","); k != "" {
			b.Keys = append(b.Keys, serverKeyOf(k))
		}
	}
	if r.i == len(r.toks) {
		return b, fmt.Errorf("%s:%d: server block %s has no {", first.File, first.Line, first.Text)
	}
	r.i++
	for depth := 1; r.i < len(r.toks); {
		t := r.toks[r.i]
		switch {
		case t.Text == "{":
			depth++
		case t.Text == "}":
			if depth--; depth == 0 {
				r.i++
				return b, nil
			}
		case depth == 1 && t.Text == "import" && r.newLine():
			if err := r.splice(); err != nil {
				return b, err
			}
			continue
		case depth == 1 && t.Text == "rewrite" && r.newLine():
			if rule, ok := r.rewrite(); ok {
				b.Rewrites = append(b.Rewrites, rule)
			}
			continue
		case depth == 1 && t.Text == "kubernetes" && r.newLine():
			// Its zones are the cluster's domain and the reverse zones;
			// none on the line means the server block's own.
			b.Kubernetes = []string{}
			for r.i++; r.i < len(r.toks) && !r.newLine() && r.toks[r.i].Text != "{"; r.i++ {
				b.Kubernetes = append(b.Kubernetes, strings.ToLower(strings.TrimSuffix(r.toks[r.i].Text, "."))+".")
			}
			continue
		}
		r.i++
	}
	return b, fmt.Errorf("%s:%d: server block %s is not closed", first.File, first.Line, first.Text)
}

// rewrite reads one rewrite directive as CoreDNS's rewriteParse does: the
// words on its line and, when fewer than two, the words of its block. ok
// is false for a valid rule of a field other than the name.
func (r *corefileReader) rewrite() (RewriteRule, bool) {
	at := r.toks[r.i]
	words := []string{at.Text}
	var args []string
	for r.i++; r.i < len(r.toks) && !r.newLine() && r.toks[r.i].Text != "{"; r.i++ {
		args = append(args, r.toks[r.i].Text)
	}
	words = append(words, args...)
	var err error
	if r.i < len(r.toks) && !r.newLine() && r.toks[r.i].Text == "{" {
		var body []caddyfile.Token
		if body, err = r.braced(); err == nil && len(args) < 2 {
			for _, t := range body {
				args = append(args, t.Text)
			}
		}
		words = append(words, "{")
		for _, t := range body {
			words = append(words, t.Text)
		}
		words = append(words, "}")
	}
	rule := RewriteRule{Text: quoteWords(words), Line: at.Line}
	if f, ok := r.fs.files[at.File]; ok {
		rule.ConfigMap, rule.Key = f.configMap, f.key
		rule.Author = authorOf(f, at.Line)
	}
	if err == nil {
		rule.name, err = parseRewrite(args)
	}
	if errors.Is(err, errNoNameRewrite) {
		return rule, false
	}
	rule.Err = err
	return rule, true
}

// quoteWords joins words as a Corefile line, quoting those with spaces.
func quoteWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w
		if w == "" || strings.ContainsAny(w, " \t") {
			out[i] = fmt.Sprintf("%q", w)
		}
	}
	return strings.Join(out, " ")
}

// serverKeyOf reads a server block's address: [scheme://]zone[:port].
func serverKeyOf(k string) ServerKey {
	if _, rest, ok := strings.Cut(k, "://"); ok {
		k = rest
	}
	port := "53"
	if i := strings.LastIndex(k, ":"); i >= 0 {
		k, port = k[:i], k[i+1:]
	}
	return ServerKey{Zone: strings.ToLower(strings.TrimSuffix(k, ".")) + ".", Port: port}
}
