package dataplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// Target is one entry of the chart's targets: the proxy Service named Name
// in front of Controller, answering Zone, with its routes on two container
// ports of the proxy.
type Target struct {
	Name                string
	Controller          cluster.IngressController
	Zone                string
	HTTPPort, HTTPSPort int
}

// DefaultTargets are the targets of [Values]: one per controller, named
// after its namespace.
func DefaultTargets() []Target {
	var ts []Target
	for i, ic := range Controllers {
		ts = append(ts, Target{Name: ic.Namespace, Controller: ic, Zone: Zones[i], HTTPPort: 8080 + i, HTTPSPort: 8443 + i})
	}
	return ts
}

// Values is the chart's values file for this cluster: one target per
// controller, nothing else changed.
func Values() string { return ValuesFor(DefaultTargets()) }

// ValuesFor is the chart's values file with targets, nothing else changed.
func ValuesFor(targets []Target) string {
	v := "targets:\n  ingress-nginx:\n    enabled: false\n"
	for _, t := range targets {
		v += fmt.Sprintf(`  %[1]s:
    zones: [%[2]s]
    ingressClasses: [%[3]s]
    upstream:
      namespace: %[4]s
      name: %[5]s
      ports:
        - name: http
          port: 80
          containerPort: %[6]d
        - name: https
          port: 443
          containerPort: %[7]d
`, t.Name, t.Zone, t.Controller.Class, t.Controller.Namespace, cluster.ControllerService, t.HTTPPort, t.HTTPSPort)
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

// InstallValues is [Env.Install] with values as the values file, and any
// further flags (--set-json ...).
func (e *Env) InstallValues(ctx context.Context, t testing.TB, values string, flags ...string) (string, error) {
	file, err := e.valuesFile(t, values)
	if err != nil {
		return "", err
	}
	args := append([]string{"install", "hairpin", e.Chart, "-n", "hairpin-system", "--create-namespace", "-f", file, "--wait", "--timeout", "3m"}, flags...)
	return e.Helm.Run(ctx, args...)
}

// Upgrade runs `helm upgrade hairpin CHART -n hairpin-system -f values.yaml
// --wait` with values, and any further flags (--set ...), and returns its
// output.
func (e *Env) Upgrade(ctx context.Context, t testing.TB, values string, flags ...string) (string, error) {
	path, err := e.valuesFile(t, values)
	if err != nil {
		return "", err
	}
	args := append([]string{"upgrade", "hairpin", e.Chart, "-n", "hairpin-system", "-f", path, "--wait", "--timeout", "3m"}, flags...)
	return e.Helm.Run(ctx, args...)
}

// Uninstall runs `helm uninstall hairpin -n hairpin-system --wait`.
func (e *Env) Uninstall(ctx context.Context) (string, error) {
	return e.Helm.Run(ctx, "uninstall", "hairpin", "-n", "hairpin-system", "--wait", "--timeout", "2m")
}
