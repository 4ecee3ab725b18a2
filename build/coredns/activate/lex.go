package activate

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// token is one Corefile token with the byte range it occupies in the source,
// so that an insertion can be placed next to it without moving anything else.
type token struct {
	text       string // as caddy sees it: quotes removed, \" unescaped
	line       int    // 1-based line where the token starts
	start, end int    // byte offsets in the source: [start, end)
}

// lex splits src into tokens exactly the way caddy's Corefile lexer
// (github.com/coredns/caddy/caddyfile, lexer.next) does, rule for rule, since
// any difference would put an insertion in the wrong place:
//   - a leading byte order mark is dropped;
//   - tokens are separated by Unicode white space; '\r' is skipped and does
//     not end a token;
//   - '#' outside quotes starts a comment, also in the middle of a word. The
//     comment runs to the end of the line, except that caddy forgets it once
//     it has returned a token: "foo#bar baz" is the tokens foo and baz;
//   - a token that starts with '"' runs to the next unescaped '"', across
//     lines; inside quotes only \" is an escape, every other backslash stays;
//   - at EOF an unterminated token is returned only if it has text.
//
// TestLexMatchesCaddy and FuzzLex hold this to caddy's own lexer.
func lex(src []byte) []token {
	var (
		toks                            []token
		val                             strings.Builder
		inTok, quoted, escaped, comment bool
		line                            = 1
		tokLine, tokStart, wordEnd, pos int
	)
	if r, n := utf8.DecodeRune(src); r == 0xFEFF {
		pos = n
	}
	emit := func(end int) {
		toks = append(toks, token{text: val.String(), line: tokLine, start: tokStart, end: end})
		val.Reset()
		inTok, comment = false, false
	}
	for pos < len(src) {
		ch, n := utf8.DecodeRune(src[pos:])
		pos += n

		if quoted {
			if !escaped {
				if ch == '\\' {
					escaped = true
					continue
				}
				if ch == '"' {
					quoted = false
					emit(pos)
					continue
				}
			}
			if ch == '\n' {
				line++
			}
			if escaped && ch != '"' {
				val.WriteByte('\\')
			}
			val.WriteRune(ch)
			escaped = false
			continue
		}

		if unicode.IsSpace(ch) {
			if ch == '\r' {
				continue
			}
			if ch == '\n' {
				line++
				comment = false
			}
			if inTok {
				emit(wordEnd)
			}
			continue
		}
		if ch == '#' {
			comment = true
		}
		if comment {
			continue
		}
		if !inTok {
			inTok, tokLine, tokStart = true, line, pos-n
			if ch == '"' {
				quoted = true
				continue
			}
		}
		val.WriteRune(ch)
		wordEnd = pos
	}
	if inTok && val.Len() > 0 {
		end := wordEnd
		if quoted {
			end = len(src)
		}
		emit(end)
	}
	return toks
}

// newLine reports whether toks[i] starts a new line, as caddy's
// Dispenser.isNewLine does: the previous token ended (counting the line
// breaks inside a quoted token) on an earlier line.
func newLine(toks []token, i int) bool {
	if i == 0 {
		return true
	}
	if i >= len(toks) {
		return false
	}
	prev := toks[i-1]
	return prev.line+strings.Count(prev.text, "\n") < toks[i].line
}
