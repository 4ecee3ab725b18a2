package harness

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// CodeBlock is one fenced code block of a Markdown file.
type CodeBlock struct {
	// Lang is the fence's info string ("sh", "yaml", "text", or "").
	Lang string
	// Body is the block's text, the fence's indentation taken off.
	Body string
	// Line is the 1-based line of the opening fence.
	Line int
	// Marker is the text of a `<!-- docs-test: ... -->` comment on the
	// line right before the fence (blank lines between allowed), "" if
	// there is none.
	Marker string
	// Prints are the outputs the page says the block's last command
	// prints: each X of "prints `X`" (or "print `X`") in the prose
	// between the previous block or heading and the fence, its spaces
	// and line breaks each one space.
	Prints []string
	// Until says the page has that command repeated until it prints
	// them ("until it prints `X`"): it waits for a state to come.
	Until bool
}

var (
	fence      = regexp.MustCompile("^(\\s*)```+\\s*([A-Za-z0-9_-]*)")
	prints     = regexp.MustCompile("(until it )?prints? `([^`]+)`")
	docsMarker = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)
)

// CodeBlocks returns the fenced code blocks of Markdown text, with the
// indentation of their fence (list items) taken off their lines.
func CodeBlocks(text string) []CodeBlock {
	var blocks []CodeBlock
	var prose []string // since the last block or heading
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.HasPrefix(lines[i], "#") {
				prose = nil
			}
			prose = append(prose, lines[i])
			continue
		}
		indent := m[1]
		b := CodeBlock{Lang: m[2], Line: i + 1}
		// One line of prose, wrapped and indented as it may be.
		text := strings.Join(strings.Fields(strings.Join(prose, " ")), " ")
		for _, p := range prints.FindAllStringSubmatch(text, -1) {
			b.Prints = append(b.Prints, p[2])
			b.Until = b.Until || p[1] != ""
		}
		prose = nil
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := docsMarker.FindStringSubmatch(lines[j]); mm != nil {
				b.Marker = mm[1]
			}
			break
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.Body = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// IsShell reports whether the block is a shell block: its commands are
// for a person to run.
func (b CodeBlock) IsShell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// SkipReason returns the reason of a `<!-- docs-test: skip REASON -->`
// marker, and whether the block has one.
func (b CodeBlock) SkipReason() (string, bool) {
	reason, ok := strings.CutPrefix(b.Marker, "skip")
	if !ok || (reason != "" && reason[0] != ' ') {
		return "", false
	}
	return strings.TrimSpace(reason), true
}

// ShellCommand is one command of a shell block.
type ShellCommand struct {
	// Text is the command, continuation lines joined with their "\\\n".
	Text string
	// Line is the line it starts on, relative to the block's first line.
	Line int
}

// ShellCommands returns the commands of a shell block, continuation lines
// joined, comment-only lines left out.
func ShellCommands(body string) []ShellCommand {
	var cmds []ShellCommand
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		start, text := i, lines[i]
		for strings.HasSuffix(strings.TrimRight(text, " "), "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimRight(text, " ") + "\n" + lines[i]
		}
		if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
			cmds = append(cmds, ShellCommand{Text: text, Line: start})
		}
	}
	return cmds
}

// ShellBackground reports whether a command line runs in the background,
// as sh does for one that ends with a lone `&` (not `&&`, not a
// redirection such as `2>&1`), and returns it without the `&`.
func ShellBackground(s string) (string, bool) {
	t := strings.TrimRight(s, " \t\n")
	if !strings.HasSuffix(t, "&") || strings.HasSuffix(t, "&&") || strings.HasSuffix(t, ">&") {
		return s, false
	}
	return strings.TrimRight(strings.TrimSuffix(t, "&"), " \t"), true
}

// ShellWords splits one shell command line into words, as sh does for the
// quoting the docs use ('...', "...", \-continued lines); a word starting
// with # ends the command.
func ShellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		case c == '\'' || c == '"':
			// The docs quote without escapes inside, so both quotes are
			// taken literally up to their closing twin.
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", c, s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// DocPages returns the Markdown pages whose shell blocks the docs test
// accounts for, relative to root: README.md, every page under docs/, the
// READMEs under manifests/, and the READMEs of the plugins and the proxy.
func DocPages(root string) ([]string, error) {
	pages := []string{"README.md"}
	walk := func(dir string, keep func(name string) bool) error {
		return filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !keep(d.Name()) {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, rel)
			return nil
		})
	}
	isMD := func(name string) bool { return strings.HasSuffix(name, ".md") }
	isREADME := func(name string) bool { return name == "README.md" }
	for _, w := range []struct {
		dir  string
		keep func(string) bool
	}{{"docs", isMD}, {"manifests", isREADME}, {"plugin", isREADME}, {"proxy", isREADME}} {
		if err := walk(w.dir, w.keep); err != nil {
			return nil, err
		}
	}
	return pages, nil
}
