package main

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// There is no kubelet and no kube-proxy here, so the demo plays both for the
// proxy Deployment the chart created: it runs bin/hairpin-proxy with the
// container's args as the apiserver returns them, and changes only what a
// pod network would have done for it.

// localAddrs are where a route's two ends live on this machine.
type localAddrs struct {
	// listen maps the proxy's container port to the target Service's
	// ClusterIP:port: kube-proxy would forward that to the pod's port.
	listen map[int]string
	// upstream maps "NAME.NAMESPACE.svc.DOMAIN.:PORT" to the controller's
	// own address: cluster DNS and kube-proxy would take the proxy there.
	upstream map[string]string
	// health is the loopback address of the proxy's health port.
	health string
}

// proxyArgs returns the proxy container's args from d, the chart's
// Deployment, with each route's ends made local (see localAddrs), the
// health port on loopback, and lameduck and drain off so that the demo's
// teardown is quick (a pod needs them; a process we stop does not). A route
// that keeps its upstream port as the PROXY header's destination port by
// default gets it written out, since the local upstream's port may differ.
func proxyArgs(d *appsv1.Deployment, local localAddrs) ([]string, error) {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return nil, fmt.Errorf("deployment %s/%s: %d containers, want 1", d.Namespace, d.Name, len(cs))
	}
	var out []string
	routes := 0
	for _, arg := range cs[0].Args {
		name, val, _ := strings.Cut(arg, "=")
		switch name {
		case "--route":
			r, err := localRoute(val, local)
			if err != nil {
				return nil, err
			}
			out = append(out, "--route="+r)
			routes++
		case "--health-addr":
			out = append(out, "--health-addr="+local.health)
		case "--lameduck":
			out = append(out, "--lameduck=0s")
		case "--drain-timeout":
			out = append(out, "--drain-timeout=1s")
		default:
			out = append(out, arg)
		}
	}
	if routes == 0 {
		return nil, fmt.Errorf("deployment %s/%s: no --route in %q", d.Namespace, d.Name, cs[0].Args)
	}
	return out, nil
}

// localRoute rewrites one --route value, ":PORT=UPSTREAM[,options]".
func localRoute(route string, local localAddrs) (string, error) {
	spec, opts, _ := strings.Cut(route, ",")
	listen, upstream, ok := strings.Cut(spec, "=")
	if !ok {
		return "", fmt.Errorf("route %q: want LISTEN=UPSTREAM", route)
	}
	port, err := strconv.Atoi(strings.TrimPrefix(listen, ":"))
	if err != nil || !strings.HasPrefix(listen, ":") {
		return "", fmt.Errorf("route %q: listen %q is not :PORT", route, listen)
	}
	l, ok := local.listen[port]
	if !ok {
		return "", fmt.Errorf("route %q: no target Service port leads to container port %d", route, port)
	}
	u, ok := local.upstream[upstream]
	if !ok {
		return "", fmt.Errorf("route %q: upstream %s is no controller of the demo", route, upstream)
	}
	if !strings.Contains(","+opts, ",header-port=") {
		_, p, err := net.SplitHostPort(upstream)
		if err != nil {
			return "", fmt.Errorf("route %q: upstream: %w", route, err)
		}
		opts = strings.TrimPrefix(opts+",header-port="+p, ",")
	}
	return l + "=" + u + "," + opts, nil
}

// targetListens maps each container port that target Service svc leads to
// onto the Service's ClusterIP and port. A named targetPort is looked up
// among ports, the proxy container's, as the EndpointSlice controller
// resolves it for a Pod.
func targetListens(svc *corev1.Service, ports []corev1.ContainerPort, into map[int]string) error {
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		return fmt.Errorf("target %s/%s: ClusterIP %q: %w", svc.Namespace, svc.Name, svc.Spec.ClusterIP, err)
	}
	for _, p := range svc.Spec.Ports {
		tp := p.TargetPort.IntValue()
		if p.TargetPort.Type == intstr.String {
			if i := slices.IndexFunc(ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.StrVal }); i >= 0 {
				tp = int(ports[i].ContainerPort)
			}
		}
		if tp == 0 {
			return fmt.Errorf("target %s/%s: port %s: targetPort %q is no port of the proxy container", svc.Namespace, svc.Name, p.Name, p.TargetPort.String())
		}
		into[tp] = netip.AddrPortFrom(ip, uint16(p.Port)).String()
	}
	return nil
}
