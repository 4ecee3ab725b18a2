package activate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"
)

// corefileIn writes the Corefile and the files it imports into a fresh
// folder and returns the Corefile's path.
func corefileIn(t *testing.T, corefile string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(p, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func keysOf(bs []Block) []string {
	var ks []string
	for _, b := range bs {
		ks = append(ks, b.Keys)
	}
	return ks
}

func TestTransform(t *testing.T) {
	for _, tc := range []struct {
		name         string
		corefile     string
		files        map[string]string
		want         string // "" means unchanged
		wantBlocks   []string
		wantExplicit bool
		wantImported []string
	}{
		{
			name:       "adds hairpin on the line of the opening brace",
			corefile:   ".:53 {\n    errors\n    kubernetes cluster.local\n}\n",
			want:       ".:53 { hairpin\n    errors\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "brace on the next line",
			corefile:   ".:53\n{\n    kubernetes cluster.local\n}\n",
			want:       ".:53\n{ hairpin\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a comment after the brace stays a comment",
			corefile:   ".:53 { # the cluster\n    kubernetes cluster.local\n}\n",
			want:       ".:53 { hairpin # the cluster\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a directive on the brace line gets hairpin its own line",
			corefile:   ".:53 { kubernetes cluster.local\n}\n",
			want:       ".:53 { hairpin\nkubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a comment glued to the brace ends at the next space, as in caddy",
			corefile:   ".:53 {#c kubernetes cluster.local\n}\n",
			want:       ".:53 {#c hairpin\nkubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			// A directive named "{" (CoreDNS rejects it) would become the
			// block of an added directive.
			name:     "a line starting with a brace is left to CoreDNS",
			corefile: ".:53 {  {\n}\n    kubernetes cluster.local\n}\n",
		},
		{
			name:       "several keys on one line",
			corefile:   ".:53 cluster.local:53 {\n    kubernetes cluster.local\n}\n",
			want:       ".:53 cluster.local:53 { hairpin\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53 cluster.local:53"},
		},
		{
			name:       "keys continued with a trailing comma",
			corefile:   ".:53,\ncluster.local:53 {\n    kubernetes cluster.local\n}\n",
			want:       ".:53,\ncluster.local:53 { hairpin\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53 cluster.local:53"},
		},
		{
			name:       "only blocks that hold kubernetes",
			corefile:   "example.org:53 {\n    forward . 127.0.0.1:5300\n}\n.:53 {\n    kubernetes cluster.local\n}\n.:5353 {\n    kubernetes cluster.local\n}\n",
			want:       "example.org:53 {\n    forward . 127.0.0.1:5300\n}\n.:53 { hairpin\n    kubernetes cluster.local\n}\n.:5353 { hairpin\n    kubernetes cluster.local\n}\n",
			wantBlocks: []string{".:53", ".:5353"},
		},
		{
			name:     "no block holds kubernetes",
			corefile: ".:53 {\n    forward . 127.0.0.1:5300\n}\n",
		},
		{
			name:         "an explicit directive is used as written",
			corefile:     ".:53 {\n    hairpin example.com\n    kubernetes cluster.local\n}\n",
			wantExplicit: true,
		},
		{
			name:         "an explicit directive in another block counts",
			corefile:     "example.com:53 {\n    hairpin\n}\n.:53 {\n    kubernetes cluster.local\n}\n",
			wantExplicit: true,
		},
		{
			name:         "an explicit directive from an override import counts",
			corefile:     ".:53 {\n    kubernetes cluster.local\n    import custom/*.override\n}\n",
			files:        map[string]string{"custom/hairpin.override": "hairpin {\n    targets edge\n}\n"},
			wantExplicit: true,
		},
		{
			name:         "an explicit directive from a top-level server import counts",
			corefile:     ".:53 {\n    kubernetes cluster.local\n}\nimport custom/*.server\n",
			files:        map[string]string{"custom/a.server": "example.com:53 {\n    hairpin\n}\n"},
			wantExplicit: true,
		},
		{
			name:       "kubernetes brought in by an override import",
			corefile:   ".:53 {\n    errors\n    import custom/*.override\n}\n",
			files:      map[string]string{"custom/k.override": "kubernetes cluster.local\n"},
			want:       ".:53 { hairpin\n    errors\n    import custom/*.override\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "an override glob that matches nothing",
			corefile:   ".:53 {\n    kubernetes cluster.local\n    import custom/*.override\n}\nimport custom/*.server\n",
			want:       ".:53 { hairpin\n    kubernetes cluster.local\n    import custom/*.override\n}\nimport custom/*.server\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "kubernetes brought in by a snippet",
			corefile:   "(cluster) {\n    kubernetes cluster.local\n}\n.:53 {\n    import cluster\n}\n",
			want:       "(cluster) {\n    kubernetes cluster.local\n}\n.:53 { hairpin\n    import cluster\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:     "hairpin in a snippet nobody imports is not a directive",
			corefile: "(unused) {\n    hairpin\n}\n.:53 {\n    kubernetes cluster.local\n}\n",
			want:     "(unused) {\n    hairpin\n}\n.:53 { hairpin\n    kubernetes cluster.local\n}\n", wantBlocks: []string{".:53"},
		},
		{
			name:         "a block from a top-level import is reported, not edited",
			corefile:     "example.org:53 {\n    forward . 127.0.0.1:5300\n}\nimport custom/*.server\n",
			files:        map[string]string{"custom/a.server": "cluster.local:5353 {\n    kubernetes cluster.local\n}\n"},
			wantImported: []string{"cluster.local:5353"},
		},
		{
			name:       "hairpin as an argument or in a comment is not a directive",
			corefile:   "# hairpin is added by the image\n.:53 {\n    kubernetes cluster.local\n    log hairpin\n}\n",
			want:       "# hairpin is added by the image\n.:53 { hairpin\n    kubernetes cluster.local\n    log hairpin\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "braces inside quotes and nested blocks are not structure",
			corefile:   ".:53 {\n    template IN A example.com {\n        answer \"{{ .Name }} 60 IN A 127.0.0.1\"\n    }\n    kubernetes cluster.local {\n        pods insecure\n    }\n}\n",
			want:       ".:53 { hairpin\n    template IN A example.com {\n        answer \"{{ .Name }} 60 IN A 127.0.0.1\"\n    }\n    kubernetes cluster.local {\n        pods insecure\n    }\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "the file's last brace closes a plugin's block and the server block",
			corefile:   ".:53 {\n    kubernetes cluster.local {\n        pods insecure\n}\n",
			want:       ".:53 { hairpin\n    kubernetes cluster.local {\n        pods insecure\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a single block without braces",
			corefile:   ".:53\nkubernetes cluster.local\nforward . 127.0.0.1:5300 # upstream\n",
			want:       ".:53\nkubernetes cluster.local\nforward . 127.0.0.1:5300\nhairpin # upstream\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "the kubernetes stanza's kubeconfig is reused",
			corefile:   ".:53 {\n    kubernetes cluster.local {\n        kubeconfig /etc/k/config admin@local\n    }\n}\n",
			want:       ".:53 { hairpin {\n        kubeconfig /etc/k/config admin@local\n    }\n    kubernetes cluster.local {\n        kubeconfig /etc/k/config admin@local\n    }\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a kubeconfig path with a space is quoted",
			corefile:   ".:53 {\n    kubernetes cluster.local {\n        kubeconfig \"/etc/my k/config\"\n    }\n}\n",
			want:       ".:53 { hairpin {\n        kubeconfig \"/etc/my k/config\"\n    }\n    kubernetes cluster.local {\n        kubeconfig \"/etc/my k/config\"\n    }\n}\n",
			wantBlocks: []string{".:53"},
		},
		{
			name:       "a byte order mark and CRLF line ends",
			corefile:   "\ufeff.:53 {\r\n    kubernetes cluster.local\r\n}\r\n",
			want:       "\ufeff.:53 { hairpin\r\n    kubernetes cluster.local\r\n}\r\n",
			wantBlocks: []string{".:53"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := corefileIn(t, tc.corefile, tc.files)
			res := Transform(path, []byte(tc.corefile))
			want := tc.want
			if want == "" {
				want = tc.corefile
			}
			if got := string(res.Corefile); got != want {
				t.Errorf("Corefile:\n%s\nwant:\n%s", got, want)
			}
			if got := keysOf(res.Activated); !slices.Equal(got, tc.wantBlocks) {
				t.Errorf("activated in %q, want %q", got, tc.wantBlocks)
			}
			if res.Explicit != tc.wantExplicit {
				t.Errorf("explicit = %v, want %v", res.Explicit, tc.wantExplicit)
			}
			if got := keysOf(res.Imported); !slices.Equal(got, tc.wantImported) {
				t.Errorf("imported blocks with kubernetes %q, want %q", got, tc.wantImported)
			}
			if res.Unplaced != nil {
				t.Errorf("unplaced: %v", res.Unplaced)
			}
			checkActivation(t, path, []byte(tc.corefile), res)
		})
	}
}

// TestMalformedIsLeftToCaddy: what caddy rejects is returned byte for byte,
// so CoreDNS reports its own error, naming the token and line.
func TestMalformedIsLeftToCaddy(t *testing.T) {
	for _, tc := range []struct{ name, corefile, caddySays string }{
		{"unclosed server block", ".:53 {\n    kubernetes cluster.local\n", "Corefile:2 - Syntax error: Unexpected token 'cluster.local', expecting '}'"},
		{"unclosed plugin block", ".:53 {\n    kubernetes cluster.local {\n        pods insecure\n", "Unexpected EOF"},
		{"a stray closing brace", ".:53 {\n    kubernetes cluster.local }\n}\n", "Unexpected '}'"},
		{"a missing import", ".:53 {\n    kubernetes cluster.local\n    import nothere.conf\n}\n", "File to import not found: nothere.conf"},
		{"a trailing comma before the brace", ".:53, {\n    kubernetes cluster.local\n}\n", "Expected another address"},
		{"a snippet without braces", "(x)\n.:53 {\n    kubernetes cluster.local\n}\n", "Corefile:2 - Syntax error: Unexpected token '.:53', expecting '{'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := corefileIn(t, tc.corefile, nil)
			res := Transform(path, []byte(tc.corefile))
			if string(res.Corefile) != tc.corefile {
				t.Fatalf("malformed Corefile was changed:\n%s", res.Corefile)
			}
			if len(res.Activated) != 0 || res.Unplaced != nil {
				t.Errorf("activated %v, unplaced %v; want neither", keysOf(res.Activated), res.Unplaced)
			}
			_, err := caddyfile.Parse(path, bytes.NewReader(res.Corefile), nil)
			if err == nil || !strings.Contains(err.Error(), tc.caddySays) {
				t.Errorf("caddy's error %v, want it to say %q", err, tc.caddySays)
			}
		})
	}
}

// TestDistributionCorefiles: the Corefiles distributions ship each get one
// hairpin directive in their one block, on the line of its brace, and not a
// single line of the operator's file moves.
func TestDistributionCorefiles(t *testing.T) {
	files, err := filepath.Glob("../../../test/e2e/testdata/corefiles/*.Corefile")
	if err != nil || len(files) < 4 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res := Transform(f, src)
			if got := keysOf(res.Activated); !slices.Equal(got, []string{".:53"}) {
				t.Fatalf("activated in %q, want [.:53]", got)
			}
			if n := bytes.Count(res.Corefile, []byte("\n")); n != bytes.Count(src, []byte("\n")) {
				t.Errorf("line count %d, want %d: lines moved", n, bytes.Count(src, []byte("\n")))
			}
			want := bytes.Replace(src, []byte(".:53 {"), []byte(".:53 { hairpin"), 1)
			if !bytes.Equal(res.Corefile, want) {
				t.Errorf("Corefile:\n%s", res.Corefile)
			}
			checkActivation(t, f, src, res)
		})
	}
}

// checkActivation holds a Transform result to its contract through caddy's
// parser: the output parses to the input's blocks, each holding the same
// directives with the same arguments, plus one hairpin directive in exactly
// the blocks reported as activated. It is shared with the fuzz target.
func checkActivation(t *testing.T, path string, in []byte, res Result) {
	t.Helper()
	before, errBefore := caddyfile.Parse(path, bytes.NewReader(in), nil)
	after, errAfter := caddyfile.Parse(path, bytes.NewReader(res.Corefile), nil)
	if bytes.Equal(in, res.Corefile) {
		if len(res.Activated) != 0 {
			t.Fatalf("unchanged Corefile but activated in %v", keysOf(res.Activated))
		}
		return
	}
	if errBefore != nil {
		t.Fatalf("changed a Corefile that caddy rejects (%v)", errBefore)
	}
	if errAfter != nil {
		t.Fatalf("the activated Corefile does not parse: %v\n%s", errAfter, res.Corefile)
	}
	if len(after) != len(before) {
		t.Fatalf("%d server blocks after, %d before", len(after), len(before))
	}
	var withHairpin []string
	for i := range before {
		b, a := before[i], after[i]
		if !slices.Equal(a.Keys, b.Keys) {
			t.Fatalf("block %d keys %v, were %v", i, a.Keys, b.Keys)
		}
		if len(b.Tokens[Directive]) != 0 {
			t.Fatalf("block %v already named hairpin, and was changed", b.Keys)
		}
		if len(a.Tokens[Directive]) > 0 {
			withHairpin = append(withHairpin, strings.Join(a.Keys, " "))
			if len(a.Tokens[kubernetesDirective]) == 0 {
				t.Fatalf("hairpin added to %v, which has no kubernetes", a.Keys)
			}
			if n := countDirective(a.Tokens[Directive]); n != 1 {
				t.Fatalf("block %v has %d hairpin directives", a.Keys, n)
			}
		}
		for dir, toks := range b.Tokens {
			if !sameTexts(toks, a.Tokens[dir]) {
				t.Fatalf("block %v directive %s changed: %v -> %v", b.Keys, dir, toks, a.Tokens[dir])
			}
		}
		if len(a.Tokens) != len(b.Tokens)+min(1, len(a.Tokens[Directive])) {
			t.Fatalf("block %v: directives %d after, %d before", a.Keys, len(a.Tokens), len(b.Tokens))
		}
	}
	if got := keysOf(res.Activated); !slices.Equal(withHairpin, got) {
		t.Fatalf("blocks with hairpin %q, reported activated %q", withHairpin, got)
	}
}

func countDirective(toks []caddyfile.Token) int {
	n := 0
	for i := range toks {
		if toks[i].Text == Directive && tokenStartsLine(toks, i) {
			n++
		}
	}
	return n
}

func sameTexts(a, b []caddyfile.Token) bool {
	return slices.EqualFunc(a, b, func(x, y caddyfile.Token) bool { return x.Text == y.Text && x.File == y.File })
}

// TestTransformWithTargets: the added stanza discovers the targets in the
// namespace it is given, next to a kubeconfig when the kubernetes plugin
// names one; a Corefile that names hairpin is still used as written.
func TestTransformWithTargets(t *testing.T) {
	for _, tc := range []struct {
		name, corefile, want string
	}{
		{
			name:     "targets namespace",
			corefile: ".:53 {\n    kubernetes cluster.local\n}\n",
			want:     ".:53 { hairpin {\n        targets edge\n    }\n    kubernetes cluster.local\n}\n",
		},
		{
			name:     "targets namespace and kubeconfig",
			corefile: ".:53 {\n    kubernetes cluster.local {\n        kubeconfig /k/config\n    }\n}\n",
			want:     ".:53 { hairpin {\n        kubeconfig /k/config\n        targets edge\n    }\n    kubernetes cluster.local {\n        kubeconfig /k/config\n    }\n}\n",
		},
		{
			name:     "explicit hairpin is kept",
			corefile: ".:53 {\n    hairpin\n    kubernetes cluster.local\n}\n",
			want:     ".:53 {\n    hairpin\n    kubernetes cluster.local\n}\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := corefileIn(t, tc.corefile, nil)
			res := Options{Targets: "edge"}.Transform(path, []byte(tc.corefile))
			if got := string(res.Corefile); got != tc.want {
				t.Errorf("Corefile:\n%s\nwant:\n%s", got, tc.want)
			}
			if _, err := caddyfile.Parse(path, bytes.NewReader(res.Corefile), nil); err != nil {
				t.Errorf("the result does not parse: %v", err)
			}
		})
	}
}
