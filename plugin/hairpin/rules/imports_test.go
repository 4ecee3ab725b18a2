package rules

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyTypes keeps the package a leaf: the standard library, the
// Kubernetes and Gateway API types and apimachinery. A tool that imports it
// must not link CoreDNS, client-go or a DNS server.
func TestImportsOnlyTypes(t *testing.T) {
	allowed := []string{"k8s.io/api/", "k8s.io/apimachinery/", "sigs.k8s.io/gateway-api/apis/"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") {
				continue // the standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(path, a)
			}
			if !ok {
				t.Errorf("%s imports %s; package rules imports only %v", f, path, allowed)
			}
		}
	}
}
