package activate

import (
	"os"
	"strings"
)

// block is one server block written in the Corefile itself (not one that a
// top-level import brings in), with the place a directive can be added to it.
type block struct {
	keys []string
	// at is the byte offset where a directive line is inserted.
	at int
	// sameLine is true when at ends a line that holds nothing but the
	// block's opening '{' (and maybe a comment): the directive then goes on
	// that line, and no other line of the Corefile moves.
	sameLine bool
	// braceless is true for a single server block written without braces;
	// at is then the end of its last token.
	braceless bool
	// unsafe is true when a line starting with '{' follows: caddy would read
	// that '{' as opening the added directive's block. (Such a line is a
	// directive named "{", which CoreDNS rejects anyway.)
	unsafe bool
}

// serverBlocks walks the top level of the Corefile's tokens the way caddy's
// parser does (parser.begin, addresses, blockContents) and returns the server
// blocks written in it, in order. Top-level imports and snippet definitions
// are stepped over. ok is false when the structure is not what caddy would
// accept (an unclosed brace, a missing '{' after a snippet name, …): the
// Corefile is then left to caddy, which reports the error.
func serverBlocks(toks []token) (blocks []block, ok bool) {
	i := 0
	for i < len(toks) {
		var keys []string
		expectingAnother := false
		eof := false
		// addresses: keys up to '{' or the end of the line.
		for {
			if i >= len(toks) {
				eof = true
				break
			}
			t := expandEnv(toks[i].text)
			if t == "import" && newLine(toks, i) {
				// A top-level import: caddy splices the file's (or
				// snippet's) tokens in here; blocks that come from another
				// file are not ours to edit.
				i++
				if i < len(toks) && !newLine(toks, i) {
					i++
				}
				continue
			}
			if t == "{" {
				if expectingAnother {
					return nil, false
				}
				break
			}
			if t != "" {
				expectingAnother = strings.HasSuffix(t, ",")
				keys = append(keys, strings.TrimSuffix(t, ","))
			}
			i++
			if i >= len(toks) {
				if expectingAnother {
					return nil, false
				}
				eof = true
				break
			}
			if !expectingAnother && newLine(toks, i) {
				break
			}
		}
		if eof {
			// Only addresses (or only imports) until EOF: nothing to add to.
			return blocks, !expectingAnother
		}
		if len(keys) == 0 {
			// A block with no keys (a '{' right after an import, say):
			// caddy parses and drops it.
			end, ok := bracedEnd(toks, i)
			if !ok {
				return nil, false
			}
			i = end + 1
			continue
		}
		if len(keys) == 1 && strings.HasPrefix(keys[0], "(") && strings.HasSuffix(keys[0], ")") {
			// A snippet definition: it must have braces.
			if toks[i].text != "{" {
				return nil, false
			}
			end, ok := matchBrace(toks, i)
			if !ok {
				return nil, false
			}
			i = end + 1
			continue
		}
		if toks[i].text == "{" {
			end, ok := bracedEnd(toks, i)
			if !ok {
				return nil, false
			}
			// On the brace's own line when nothing else is on it; else in
			// front of the first directive, which then starts the next line.
			b := block{keys: keys, at: toks[i].end, sameLine: i+1 >= len(toks) || newLine(toks, i+1)}
			if !b.sameLine {
				b.at = toks[i+1].start
			}
			b.unsafe = i+1 < end && toks[i+1].text == "{"
			blocks = append(blocks, b)
			i = end + 1
			continue
		}
		last, next, ok := bracelessEnd(toks, i)
		if !ok {
			return nil, false
		}
		blocks = append(blocks, block{keys: keys, at: toks[last].end, braceless: true})
		i = next
	}
	return blocks, true
}

// bracelessEnd finds the end of a server block written without braces,
// whose first directive is toks[i]. It returns the block's last token and
// where the walk goes on.
func bracelessEnd(toks []token, i int) (last, next int, ok bool) {
	closeAt, last, ok := directives(toks, i)
	if !ok {
		return 0, 0, false
	}
	if closeAt < 0 {
		return last, len(toks), true
	}
	return last, closeAt + 1, true
}

// bracedEnd returns the index of the '}' that ends the server block opened
// by the '{' at toks[open]. As in caddy, the last '}' of the file may close
// a plugin's block and the server block at once.
func bracedEnd(toks []token, open int) (int, bool) {
	closeAt, last, ok := directives(toks, open+1)
	switch {
	case !ok:
		return 0, false
	case closeAt >= 0:
		return closeAt, true
	case last == len(toks)-1 && last > open && toks[last].text == "}":
		return last, true
	}
	return 0, false
}

// directives steps over the directives of a server block from toks[j] the
// way caddy's parser.directives and parser.directive do: a directive runs to
// the end of its line, or to the '}' that closes its own braces. It returns
// the index of the '}' that ends the block (-1 at EOF) and the block's last
// token. Imports inside the block are stepped over: what they bring in is
// caddy's to parse.
func directives(toks []token, j int) (closeAt, last int, ok bool) {
	last = j - 1
	for j < len(toks) {
		if toks[j].text == "}" {
			return j, last, true
		}
		if toks[j].text == "import" {
			j = skipImport(toks, j)
			last = j - 1
			continue
		}
		nesting := 0
		last = j
	directive:
		for j++; j < len(toks); j++ {
			v := toks[j].text
			switch {
			case v == "{":
				nesting++
			case newLine(toks, j) && nesting == 0:
				break directive
			case v == "}" && nesting > 0:
				nesting--
			case v == "}":
				return 0, 0, false
			case v == "import" && newLine(toks, j):
				j = skipImport(toks, j) - 1
				last = j
				continue
			}
			last = j
		}
		if nesting > 0 {
			return 0, 0, false
		}
	}
	return -1, last, true
}

// skipImport returns the index after `import ARG` at toks[j].
func skipImport(toks []token, j int) int {
	if j+1 < len(toks) && !newLine(toks, j+1) {
		return j + 2
	}
	return j + 1
}

// matchBrace returns the index of the '}' that closes the '{' at toks[open].
func matchBrace(toks []token, open int) (int, bool) {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}

// expandEnv replaces {$NAME} and {%NAME%} the way caddy does for server
// block addresses (caddyfile.replaceEnvVars), so that a key written as an
// environment reference is seen as caddy sees it.
func expandEnv(s string) string {
	s = expandRefs(s, "{%", "%}")
	return expandRefs(s, "{$", "}")
}

func expandRefs(s, refStart, refEnd string) string {
	index := strings.Index(s, refStart)
	for index != -1 {
		endIndex := strings.Index(s[index:], refEnd)
		if endIndex == -1 {
			break
		}
		endIndex += index
		if endIndex <= index+len(refStart) {
			return s
		}
		ref := s[index : endIndex+len(refEnd)]
		s = strings.ReplaceAll(s, ref, os.Getenv(ref[len(refStart):len(ref)-len(refEnd)]))
		index = strings.Index(s, refStart)
	}
	return s
}
