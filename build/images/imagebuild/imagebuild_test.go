package imagebuild

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestTagForMakesVersionsValidTags(t *testing.T) {
	tests := []struct {
		name, version, want string
	}{
		{"release tag kept", "v0.1.0", "v0.1.0"},
		{"git describe kept", "v0.1.0-3-gabc1234-dirty", "v0.1.0-3-gabc1234-dirty"},
		{"plus becomes dash", "v1.0.0+build.1", "v1.0.0-build.1"},
		{"leading dot trimmed", ".x", "x"},
		{"empty is dev", "", "dev"},
		{"long is cut to 128", strings.Repeat("a", 200), strings.Repeat("a", 128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TagFor(tt.version); got != tt.want {
				t.Errorf("TagFor(%q) = %q; want %q", tt.version, got, tt.want)
			}
		})
	}
}

// The value `setcap cap_net_bind_service=+ep` writes, as getfattr -e hex
// shows it: revision 2 with the effective flag, bit 10 permitted.
func TestNetBindServiceCapabilityIsWhatSetcapWrites(t *testing.T) {
	const want = "0100000200040000000000000000000000000000"
	if got := hex.EncodeToString(NetBindServiceCapability()); got != want {
		t.Errorf("capability %s; want %s", got, want)
	}
}

func TestIndexDescribesEveryPlatformWithItsOwnImage(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range Arches {
		pd := PlatformDir(dir, "linux", arch)
		if err := os.MkdirAll(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pd, "hairpin-proxy"), []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := Index(Proxy(dir, "v1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != len(Arches) {
		t.Fatalf("index %s with %d manifests; want an OCI index of %d", m.MediaType, len(m.Manifests), len(Arches))
	}
	for i, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if desc.Platform == nil || desc.Platform.Architecture != Arches[i] || cf.Architecture != Arches[i] || cf.OS != "linux" {
			t.Errorf("manifest %d: platform %v, config %s/%s; want linux/%s", i, desc.Platform, cf.OS, cf.Architecture, Arches[i])
		}
	}
	if m.Manifests[0].Digest == m.Manifests[1].Digest {
		t.Errorf("both platforms share one image")
	}
}

func TestIndexRefusesAMissingBinary(t *testing.T) {
	_, err := Index(Proxy(t.TempDir(), "v1"))
	if err == nil || !strings.Contains(err.Error(), "linux/amd64") {
		t.Fatalf("error %v; want one naming the platform whose binary is missing", err)
	}
}
