package imagebuild

import (
	"encoding/hex"
	"strings"
	"testing"
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
