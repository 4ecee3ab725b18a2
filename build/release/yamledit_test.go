package main

import (
	"strings"
	"testing"
)

func TestSetScalarsChangesOnlyTheValues(t *testing.T) {
	src := `# header comment
version: 0.1.0
appVersion: "v0.1.0"
proxy:
  image:
    # the repository
    repository: ghcr.io/coredns-hairpin/hairpin-proxy
    tag: ""   # trailing comment
    digest: ''
`
	got, err := setScalars([]byte(src), map[string]string{
		"version":                "0.0.0-test",
		"appVersion":             "v0.0.0-test",
		"proxy.image.repository": "127.0.0.1:5000/hairpin/hairpin-proxy",
		"proxy.image.tag":        "v0.0.0-test",
		"proxy.image.digest":     "sha256:abc",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# header comment
version: "0.0.0-test"
appVersion: "v0.0.0-test"
proxy:
  image:
    # the repository
    repository: "127.0.0.1:5000/hairpin/hairpin-proxy"
    tag: "v0.0.0-test"   # trailing comment
    digest: "sha256:abc"
`
	if string(got) != want {
		t.Errorf("edited\n%s\nwant\n%s", got, want)
	}
}

func TestSetScalarsRefusesWhatItCannotEditInPlace(t *testing.T) {
	tests := []struct {
		name, src, path, want string
	}{
		{"missing key", "a: 1\n", "b", `no key "b"`},
		{"not a scalar", "a:\n  b: 1\n", "a", "is not a scalar"},
		{"below a scalar", "a: 1\n", "a.b", "is not inside a mapping"},
		{"block scalar", "a: |\n  text\n", "a", "cannot be replaced in place"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := setScalars([]byte(tt.src), map[string]string{tt.path: "x"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}
