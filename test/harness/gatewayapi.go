package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GatewayAPIModule is the module whose CRD manifests the control plane
// installs; its version is the one the main go.mod requires.
const GatewayAPIModule = "sigs.k8s.io/gateway-api"

// Gateway API release channels, as laid out under config/crd in the
// gateway-api module.
const (
	// GatewayStandard installs the standard channel (GatewayClass, Gateway,
	// HTTPRoute, GRPCRoute, ReferenceGrant, ...).
	GatewayStandard = "standard"
	// GatewayExperimental installs the experimental channel, a superset of
	// standard with experimental fields and kinds (TCPRoute, UDPRoute, X*).
	GatewayExperimental = "experimental"
)

// GatewayAPICRDDir returns the folder with the Gateway API CRD manifests of
// channel ("standard" or "experimental") in the module cache, located with
// `go list -m` from the current directory (inside this repository).
func GatewayAPICRDDir(channel string) (string, error) {
	if channel != GatewayStandard && channel != GatewayExperimental {
		return "", fmt.Errorf("gateway API channel %q: want %q or %q", channel, GatewayStandard, GatewayExperimental)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", GatewayAPIModule)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", GatewayAPIModule, err, strings.TrimSpace(stderr.String()))
	}
	modDir := strings.TrimSpace(string(out))
	if modDir == "" {
		return "", fmt.Errorf("%s is not in the module cache; run `go mod download %s`", GatewayAPIModule, GatewayAPIModule)
	}
	dir := filepath.Join(modDir, "config", "crd", channel)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("gateway API CRDs: %w", err)
	}
	return dir, nil
}
