package activate

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seeds are the distribution Corefiles plus shapes the table tests cover.
func seeds(f *testing.F) {
	files, _ := filepath.Glob("../../../test/e2e/testdata/corefiles/*.Corefile")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		".:53 {\n    kubernetes cluster.local\n}\n",
		".:53\n{ kubernetes cluster.local\n}\n",
		".:53,\ncluster.local:53 { # c\n    kubernetes cluster.local {\n        kubeconfig \"/a b\" ctx\n    }\n}\n",
		"(s) {\n    kubernetes cluster.local\n}\n.:53 {\n    import s\n}\n",
		".:53\nkubernetes cluster.local\n",
		".:53 {\n    hairpin\n    kubernetes\n}\n",
		"foo#bar baz {\n kubernetes\n}\n",
		"a \"x\ny\" {\n\"kubernetes\" \"{\"\n}\n}\n",
		"\ufeff.:53 {\r\n    kubernetes cluster.local\r\n}\r\n",
		"{\n}\n.:53 {\n kubernetes {\n}\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzLex holds lex to caddy's own lexer, token for token.
func FuzzLex(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		sameTokens(t, src, lex(src), caddyTokens(src))
	})
}

// FuzzTransform: whatever the input, Transform does not panic, and what it
// returns is either the input unchanged or the input plus one hairpin
// directive in each block that holds kubernetes (checkActivation).
func FuzzTransform(f *testing.F) {
	seeds(f)
	log.SetOutput(io.Discard) // caddy's parser warns about empty import globs
	dir := f.TempDir()
	path := filepath.Join(dir, "Corefile")
	f.Fuzz(func(t *testing.T, src []byte) {
		// An import of a device or a kernel file would make caddy read
		// forever; that is caddy's behaviour, not ours to fuzz.
		for _, p := range []string{"dev/", "proc/", "sys/"} {
			if strings.Contains(string(src), p) {
				t.Skip()
			}
		}
		res := Transform(path, src)
		checkActivation(t, path, src, res)
	})
}
