package main

import (
	"strings"
	"testing"
)

func TestParseVersionTakesTagsAndGitDescribe(t *testing.T) {
	tests := []struct {
		in, tag, chart string
	}{
		{"v0.1.0", "v0.1.0", "0.1.0"},
		{"v0.0.0-test", "v0.0.0-test", "0.0.0-test"},
		{"v1.2.3-rc.1", "v1.2.3-rc.1", "1.2.3-rc.1"},
		{"v0.1.0-3-gabc1234-dirty", "v0.1.0-3-gabc1234-dirty", "0.1.0-3-gabc1234-dirty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := parseVersion(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if v.Tag() != tt.tag || v.Chart() != tt.chart {
				t.Errorf("tag %q chart %q; want %q %q", v.Tag(), v.Chart(), tt.tag, tt.chart)
			}
		})
	}
}

func TestParseVersionRefusesWhatIsNoRelease(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a bare commit (git describe without a tag)", "092c6d9", "want vX.Y.Z"},
		{"no v", "0.1.0", "want vX.Y.Z"},
		{"two parts", "v0.1", "want vX.Y.Z"},
		{"leading zero", "v01.0.0", "want vX.Y.Z"},
		{"empty", "", "want vX.Y.Z"},
		{"build metadata", "v0.1.0+build.1", "build metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseVersion(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseRegistryMarksLoopbackPlainHTTP(t *testing.T) {
	tests := []struct {
		in, path string
		loopback bool
	}{
		{"ghcr.io/coredns-hairpin", "ghcr.io/coredns-hairpin", false},
		{"127.0.0.1:5000/hairpin", "127.0.0.1:5000/hairpin", true},
		{"127.1.2.3:5000/a/b", "127.1.2.3:5000/a/b", true},
		{"localhost:5000/hairpin", "localhost:5000/hairpin", true},
		{"[::1]:5000/hairpin", "[::1]:5000/hairpin", true},
		{"oci://registry.example.com/hairpin/", "registry.example.com/hairpin", false},
		{"10.0.0.1:5000/hairpin", "10.0.0.1:5000/hairpin", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := parseRegistry(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if r.path != tt.path || r.loopback != tt.loopback {
				t.Errorf("registry %+v; want path %q loopback %v", r, tt.path, tt.loopback)
			}
		})
	}
	for _, bad := range []string{"", "ghcr.io", "/hairpin", "ghcr.io/Upper"} {
		if _, err := parseRegistry(bad); err == nil || !strings.Contains(err.Error(), "registry") {
			t.Errorf("parseRegistry(%q) = %v; want an error naming the registry", bad, err)
		}
	}
}
