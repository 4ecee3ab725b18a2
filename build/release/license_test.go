package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLicensePathRefusesAReleaseWithoutItsLicense(t *testing.T) {
	tests := []struct {
		name    string
		license func(root string) error // nil: no LICENSE at all
		err     string
	}{
		{"none", nil, "no such file"},
		{"empty", func(root string) error { return os.WriteFile(filepath.Join(root, "LICENSE"), nil, 0o644) }, "not a file with the license's text"},
		{"a folder", func(root string) error { return os.Mkdir(filepath.Join(root, "LICENSE"), 0o755) }, "not a file with the license's text"},
		{"the text", func(root string) error { return os.WriteFile(filepath.Join(root, "LICENSE"), []byte("terms\n"), 0o644) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.license != nil {
				if err := tt.license(root); err != nil {
					t.Fatal(err)
				}
			}
			p, err := licensePath(root)
			if tt.err == "" {
				if err != nil || p != filepath.Join(root, "LICENSE") {
					t.Fatalf("licensePath = %q, %v; want the root's LICENSE", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v; want one saying %q", err, tt.err)
			}
		})
	}
}

func TestTheRepositoryHasTheApacheLicense(t *testing.T) {
	p, err := licensePath(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Chart.yaml and the images' licenses label say Apache-2.0; the file
	// must be that license's whole text, appendix included.
	for _, want := range []string{"Apache License\n                           Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(string(b), want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
}
