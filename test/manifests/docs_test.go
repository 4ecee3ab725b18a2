package manifests

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The docs tests read what the documentation tells a user to run or to
// write (helm commands, values files, kustomize overlays, YAML of other
// projects' objects) and run it or check it against what the chart and the
// images really are, so that a documented command that the chart refuses,
// or a documented value that means something else, fails `make test`.

// docFiles returns the Markdown files a user reads, relative to the
// repository: README.md, CHANGELOG.md, docs/ and the READMEs under
// manifests/.
func docFiles(t testing.TB) []string {
	t.Helper()
	root := repoDir(t)
	files := []string{"README.md", "CHANGELOG.md"}
	for _, dir := range []string{"docs", "manifests"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".md") {
				return nil
			}
			if dir == "manifests" && d.Name() != "README.md" {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// readDoc returns the text of a file relative to the repository.
func readDoc(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeBlock is one fenced code block of a Markdown file.
type codeBlock struct {
	lang string
	body string
	line int // of the opening fence
}

var fence = regexp.MustCompile("^(\\s*)```+\\s*([A-Za-z0-9_-]*)")

// codeBlocks returns the fenced code blocks of Markdown text, with the
// indentation of their fence (list items) taken off their lines.
func codeBlocks(text string) []codeBlock {
	var blocks []codeBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := m[1]
		b := codeBlock{lang: m[2], line: i + 1}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.body = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// yamlBlocks returns the YAML code blocks of a doc.
func yamlBlocks(t testing.TB, rel string) []codeBlock {
	t.Helper()
	var out []codeBlock
	for _, b := range codeBlocks(readDoc(t, rel)) {
		if b.lang == "yaml" {
			out = append(out, b)
		}
	}
	return out
}

// shellWords splits one shell command line into words, as sh does for the
// quoting the docs use ('...', "...", \-continued lines); a word starting
// with # ends the command.
func shellWords(s string) ([]string, error) {
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

// shellCommands returns the commands of a shell code block, continuation
// lines joined, each with the line it starts on (relative to the block).
func shellCommands(body string) []struct {
	text string
	line int
} {
	var cmds []struct {
		text string
		line int
	}
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		start, text := i, lines[i]
		for strings.HasSuffix(strings.TrimRight(text, " "), "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimRight(text, " ") + "\n" + lines[i]
		}
		if strings.TrimSpace(text) != "" {
			cmds = append(cmds, struct {
				text string
				line int
			}{text, start})
		}
	}
	return cmds
}

// TestShellWordsSplitsAsShDoes is a table test of the docs' command parser.
func TestShellWordsSplitsAsShDoes(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`helm install hairpin chart -n ns`, []string{"helm", "install", "hairpin", "chart", "-n", "ns"}},
		{`--set-json 'targets.a.zones=["x.org"]'`, []string{"--set-json", `targets.a.zones=["x.org"]`}},
		{"a \\\n  b", []string{"a", "b"}},
		{`a "b c" d # comment`, []string{"a", "b c", "d"}},
		{`--set x=a#b`, []string{"--set", "x=a#b"}},
	}
	for _, tt := range tests {
		got, err := shellWords(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("shellWords(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if _, err := shellWords(`a 'b`); err == nil {
		t.Errorf("an unterminated quote was accepted")
	}
}
