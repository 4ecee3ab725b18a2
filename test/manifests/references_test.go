package manifests

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideDocument is a document that is not part of the repository; no
// file of ours may send the reader to it. It is spelled in two parts so
// that this file does not name it.
const outsideDocument = "DESIGN" + ".md"

var (
	// repoPath is a path from the repository's root: it starts with one of
	// our top-level folders, and is not the tail of a longer path, an
	// import path or a URL.
	repoPath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./\\-])((?:plugin|proxy|build|manifests|test|docs|\.github)/[A-Za-z0-9_.\-/]*[A-Za-z0-9_\-/])`)
	// upstreamRepo ends the text before a path that is another
	// repository's, as in "k3s-io/k3s `manifests/coredns.yaml`".
	upstreamRepo = regexp.MustCompile("[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+[ `'\"(]*$")
	placeholder  = regexp.MustCompile(`(^|/)[A-Z][A-Z0-9_]*(/|$|\.)`)
	scanned      = regexp.MustCompile(`(\.go|\.md|\.ya?ml|\.sh|\.tpl|\.txt|Makefile|go\.mod)$`)
)

// TestFilesNameOnlyWhatTheRepositoryHolds: no comment, document, workflow
// or module file cites a document the repository lacks, or names a path
// from the repository's root that does not exist (a renamed or deleted
// file). Go files are read for their comments only; paths with a
// placeholder (NAME, *) and paths in another repository are left alone.
func TestFilesNameOnlyWhatTheRepositoryHolds(t *testing.T) {
	root := repoDir(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	checked := 0
	for _, f := range strings.Fields(string(out)) {
		if !scanned.MatchString(f) {
			continue
		}
		text, err := scannedText(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the working tree
			}
			t.Fatal(err)
		}
		if strings.Contains(text, outsideDocument) {
			t.Errorf("%s names %s, which is not in the repository; cite docs/architecture.md or a README", f, outsideDocument)
		}
		for _, line := range strings.Split(text, "\n") {
			for _, m := range repoPath.FindAllStringSubmatchIndex(line, -1) {
				p := strings.TrimRight(line[m[2]:m[3]], ".")
				rest := line[m[2]+len(p):]
				if strings.HasPrefix(strings.TrimLeft(rest, "."), "*") || placeholder.MatchString(p) || upstreamRepo.MatchString(line[:m[2]]) {
					continue
				}
				checked++
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s names %s, which does not exist", f, p)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d paths; the scan is broken", checked)
	}
}

// scannedText is the text of path that may name files: a Go file's
// comments, any other file whole.
func scannedText(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".go") {
		return string(src), err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, g := range f.Comments {
		b.WriteString(g.Text())
		b.WriteByte('\n')
	}
	return b.String(), nil
}
