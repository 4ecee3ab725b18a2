package activate

import (
	"bytes"
	"testing"

	"github.com/coredns/caddy/caddyfile"
)

// caddyTokens is what caddy's own lexer makes of src, through the exported
// Dispenser.
func caddyTokens(src []byte) []token {
	d := caddyfile.NewDispenser("Corefile", bytes.NewReader(src))
	var toks []token
	for d.Next() {
		toks = append(toks, token{text: d.Val(), line: d.Line()})
	}
	return toks
}

// sameTokens compares text and line only: caddy does not record offsets.
func sameTokens(t *testing.T, src []byte, got, want []token) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("lex(%q): %d tokens %v, caddy has %d %v", src, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].text != want[i].text || got[i].line != want[i].line {
			t.Fatalf("lex(%q) token %d: %q line %d, caddy has %q line %d", src, i, got[i].text, got[i].line, want[i].text, want[i].line)
		}
	}
}

func TestLexMatchesCaddy(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"words and braces", ".:53 {\n    errors\n}\n"},
		{"brace on the next line", ".:53\n{\n    errors\n}\n"},
		{"comment after a word", "errors # no\nready\n"},
		{"comment glued to a word ends at the next space", "foo#bar baz\nqux\n"},
		{"comment at line start", "# all of this\nfoo\n"},
		{"quoted with spaces", `kubeconfig "/a b/c" ctx` + "\n"},
		{"quoted across lines", "a \"x\ny\" b\nc\n"},
		{"escaped quote", `a "x\"y" "z\w"` + "\n"},
		{"empty quoted", `a "" b` + "\n"},
		{"quote glued to a word", `a"b" c`},
		{"quoted then word", `"ab"cd e`},
		{"carriage returns", ".:53 {\r\n    errors\r\n}\r\n"},
		{"carriage return inside a word", "ab\rcd e\n"},
		{"byte order mark", "\ufeff.:53 {\n}\n"},
		{"unterminated quote", `a "bc`},
		{"lone quote at EOF", `a "`},
		{"no final newline", ".:53 {\n    errors\n}"},
		{"unicode space", "a\u00a0b\u2003c\n"},
		{"invalid utf-8", "a\xffb c\n"},
		{"env placeholders", "{$HOME}:53 {\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src)
			sameTokens(t, src, lex(src), caddyTokens(src))
		})
	}
}

func TestLexOffsetsCoverTheToken(t *testing.T) {
	src := []byte(".:53 { # c\n    kubeconfig \"/a b\" x#y\n}\n")
	want := []string{".:53", "{", "kubeconfig", `"/a b"`, "x"}
	toks := lex(src)
	for i, w := range want {
		if got := string(src[toks[i].start:toks[i].end]); got != w {
			t.Errorf("token %d: source range %q, want %q", i, got, w)
		}
	}
}
