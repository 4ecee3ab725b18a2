package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// valuesTmpl is the operator's values file: one target per controller, on
// its own class and zone, as in examples/cozystack-management.yaml.
var valuesTmpl = template.Must(template.New("values.yaml").Parse(`# One target per ingress controller that speaks PROXY: its class, its zones, its Service.
# Targets are keyed by name; the chart's default ingress-nginx target is not one of them.
targets:
  ingress-nginx: {enabled: false}
{{- range .}}
  {{.Class}}:
    zones: [{{.Zone}}]
    ingressClasses: [{{.Class}}]
    upstream:
      namespace: {{.Class}}
      name: {{.Service}}
      ports:
        - {name: http, port: 80, containerPort: {{.HTTP}}}
        - {name: https, port: 443, containerPort: {{.HTTPS}}}
{{- end}}
`))

// valuesYAML renders the values file for the controllers.
func valuesYAML(ctls []*controller) (string, error) {
	type target struct {
		Class, Zone, Service string
		HTTP, HTTPS          int
	}
	var ts []target
	for i, ctl := range ctls {
		ts = append(ts, target{ctl.class, ctl.zone, ctl.service, 8080 + i, 8443 + i})
	}
	var b bytes.Buffer
	if err := valuesTmpl.Execute(&b, ts); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	return b.String(), nil
}

// install is step 2: `helm install` of our chart with two targets; the
// Corefile is not touched, and the proxy runs with the routes the chart
// rendered into its Deployment.
func (st *story) install(ctx context.Context, t testing.TB) error {
	c := st.c
	st.header("2. Install: helm install, two targets; the Corefile is not touched")
	values, err := valuesYAML(c.controllers)
	if err != nil {
		return err
	}
	valuesPath := harness.WriteFile(t, st.root, "values.yaml", values)
	st.cmd("cat %s", valuesPath)
	st.block(values)
	args := []string{"install", release, chartPath, "--namespace", namespace, "--create-namespace", "-f", valuesPath}
	st.cmd("helm %s", strings.Join(args, " "))
	args[2] = filepath.Join(repoDir, chartPath)
	out, err := st.helm.Run(ctx, args...)
	if err != nil {
		return err
	}
	st.block(out)

	svcs, err := targetServices(ctx, c.cp)
	if err != nil {
		return err
	}
	st.cmd("kubectl get svc -A -l %s -o custom-columns=%s", e2e.TargetLabel, targetColumns)
	st.block(targetTable(svcs))
	for _, ctl := range c.controllers {
		i := slices.IndexFunc(svcs, func(s targetService) bool { return s.name == ctl.class })
		if i < 0 || svcs[i].namespace != namespace || svcs[i].zones != ctl.zone || svcs[i].classes != ctl.class {
			return fmt.Errorf("no target %s/%s with zones %s and class %s among %+v", namespace, ctl.class, ctl.zone, ctl.class, svcs)
		}
		ctl.target = svcs[i].clusterIP
	}
	if len(svcs) != len(c.controllers) {
		return fmt.Errorf("%d target Services, want %d: %+v", len(svcs), len(c.controllers), svcs)
	}
	objs, err := releaseObjects(ctx, c.cp, rbac)
	if err != nil {
		return err
	}
	st.note("The chart's RBAC for CoreDNS (get/list/watch):")
	st.cmd("kubectl get %s -A -l %s -o name", rbacKinds, releaseSelector)
	st.block(listing(objs))
	if len(objs) == 0 {
		return fmt.Errorf("the release created no RBAC objects (%s)", releaseSelector)
	}

	st.note("What the release holds: no ConfigMap, so nothing of it can be a Corefile.")
	st.cmd("helm get manifest %s -n %s | grep '^kind:' | sort | uniq -c", release, namespace)
	manifest, err := st.helm.Run(ctx, "get", "manifest", release, "-n", namespace)
	if err != nil {
		return err
	}
	kinds := kindCounts(manifest)
	st.block(kinds)
	if strings.Contains(kinds, "kind: ConfigMap") {
		return fmt.Errorf("the release holds a ConfigMap:\n%s", kinds)
	}
	st.cmd("cmp %s %s && echo unchanged", c.corefile, c.stockPath)
	if err := c.corefileIsStock(); err != nil {
		return err
	}
	st.block("unchanged")

	return st.startProxy(ctx, t)
}

// startProxy plays kubelet for the chart's proxy Deployment: it reads the
// container's args back from the apiserver and runs bin/hairpin-proxy with
// them, made local (see proxyArgs).
func (st *story) startProxy(ctx context.Context, t testing.TB) error {
	c := st.c
	st.linef("")
	st.note("There is no kubelet here. The demo runs the proxy Deployment's container itself, with the args")
	st.note("the chart rendered, as the apiserver returns them:")
	st.cmd(`kubectl get deploy hairpin-proxy -n %s -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}'`, namespace)
	d, err := c.cp.Clientset.AppsV1().Deployments(namespace).Get(ctx, "hairpin-proxy", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the chart's proxy Deployment: %w", err)
	}
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		st.block(strings.Join(cs[0].Args, "\n"))
	}
	local := localAddrs{listen: map[int]string{}, upstream: map[string]string{}, health: harness.FreeAddr(t, "127.0.0.1")}
	list, err := c.cp.Clientset.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: e2e.TargetLabel})
	if err != nil {
		return fmt.Errorf("list the target Services: %w", err)
	}
	var ports []corev1.ContainerPort
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		ports = cs[0].Ports
	}
	for i := range list.Items {
		if err := targetListens(&list.Items[i], ports, local.listen); err != nil {
			return err
		}
	}
	for _, ctl := range c.controllers {
		name := ctl.service + "." + ctl.class + ".svc.cluster.local."
		local.upstream[net.JoinHostPort(name, "80")] = ctl.nginx.HTTPAddr
		local.upstream[net.JoinHostPort(name, "443")] = ctl.nginx.TLSAddr
	}
	args, err := proxyArgs(d, local)
	if err != nil {
		return err
	}
	st.note("kube-proxy would forward each target's ClusterIP:port to the pod's container port, and the")
	st.note("upstream's Service name to the controller; here each route listens on the ClusterIP itself and")
	st.note("dials the controller's address. The health port goes to loopback; no lameduck for a quick stop:")
	st.cmd("bin/hairpin-proxy \\\n    %s", strings.Join(args, " \\\n    "))
	st.proxy = harness.StartProcess(t, "hairpin-proxy", harness.RequireBinary(t, "hairpin-proxy"), args...)
	if err := ready(ctx, st.proxy, harness.HTTPProbe("http://"+local.health+"/readyz")); err != nil {
		return err
	}
	st.block(fmt.Sprintf("(ready: http://%s/readyz is 200)", local.health))
	// The proxy Pod is ready: kube-controller-manager would now list it in
	// the targets' EndpointSlices, which CoreDNS waits for.
	if err := harness.ServeEndpointsOf(ctx, c.cp.Clientset, namespace, e2e.TargetLabel); err != nil {
		return err
	}
	return nil
}

// kindCounts is `grep '^kind:' | sort | uniq -c` of a manifest.
func kindCounts(manifest string) string {
	counts := map[string]int{}
	var kinds []string
	for _, l := range strings.Split(manifest, "\n") {
		if strings.HasPrefix(l, "kind:") {
			if counts[l] == 0 {
				kinds = append(kinds, l)
			}
			counts[l]++
		}
	}
	slices.Sort(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%7d %s\n", counts[k], k)
	}
	return b.String()
}
