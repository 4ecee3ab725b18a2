package dataplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// Values is the chart's values file for this cluster: one target per
// controller, nothing else changed.
func Values() string {
	v := "targets:\n  ingress-nginx:\n    enabled: false\n"
	for i, ic := range Controllers {
		v += fmt.Sprintf(`  %[1]s:
    zones: [%[2]s]
    ingressClasses: [%[3]s]
    upstream:
      namespace: %[1]s
      name: %[4]s
      ports:
        - name: http
          port: 80
          containerPort: %[5]d
        - name: https
          port: 443
          containerPort: %[6]d
`, ic.Namespace, Zones[i], ic.Class, cluster.ControllerService, 8080+i, 8443+i)
	}
	return v
}

func (e *Env) valuesFile(t testing.TB, values string) (string, error) {
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		return "", fmt.Errorf("dataplane: %w", err)
	}
	return path, nil
}

// Install runs `helm install hairpin CHART -n hairpin-system
// --create-namespace -f values.yaml --wait` and returns its output.
func (e *Env) Install(ctx context.Context, t testing.TB) (string, error) {
	return e.InstallValues(ctx, t, Values())
}

// InstallValues is [Env.Install] with values as the values file.
func (e *Env) InstallValues(ctx context.Context, t testing.TB, values string) (string, error) {
	file, err := e.valuesFile(t, values)
	if err != nil {
		return "", err
	}
	return e.Helm.Run(ctx, "install", "hairpin", e.Chart, "-n", "hairpin-system", "--create-namespace", "-f", file, "--wait", "--timeout", "3m")
}

// Uninstall runs `helm uninstall hairpin -n hairpin-system --wait`.
func (e *Env) Uninstall(ctx context.Context) (string, error) {
	return e.Helm.Run(ctx, "uninstall", "hairpin", "-n", "hairpin-system", "--wait", "--timeout", "2m")
}
