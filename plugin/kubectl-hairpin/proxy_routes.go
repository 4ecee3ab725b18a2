package kubectlhairpin

import (
	"net"
	"strconv"
	"strings"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// proxyRoute is one --route of a hairpin-proxy container, as far as the
// checks need it: LISTEN=UPSTREAM[,name=NAME]; the proxy names a route by
// its listen address when no name is given.
type proxyRoute struct {
	name, upstream string
	port           int32 // the listen port
}

// proxyRoutes reads the --route flags of a pod's containers.
func proxyRoutes(pod *core.Pod) []proxyRoute {
	var out []proxyRoute
	for _, c := range pod.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		for i := 0; i < len(args); i++ {
			v, ok := strings.CutPrefix(args[i], "--route=")
			if !ok && args[i] == "--route" && i+1 < len(args) {
				v, ok = args[i+1], true
				i++
			}
			if ok {
				if r, ok := parseRouteFlag(v); ok {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func parseRouteFlag(v string) (proxyRoute, bool) {
	parts := strings.Split(strings.TrimSpace(v), ",")
	listen, upstream, ok := strings.Cut(parts[0], "=")
	if !ok {
		return proxyRoute{}, false
	}
	r := proxyRoute{name: listen, upstream: upstream}
	if _, port, err := net.SplitHostPort(listen); err == nil {
		if p, err := strconv.Atoi(port); err == nil {
			r.port = int32(p)
		}
	}
	for _, opt := range parts[1:] {
		if name, ok := strings.CutPrefix(strings.TrimSpace(opt), "name="); ok {
			r.name = name
		}
	}
	return r, true
}

// routeOf finds the route behind a target Service's port in a proxy pod:
// the route listening on the port's targetPort (by number, or by the
// container port's name). Without one, it is the chart's name for it,
// SERVICE-PORTNAME, with no known upstream.
func routeOf(pod *core.Pod, svc *core.Service, p core.ServicePort) proxyRoute {
	port := p.TargetPort.IntVal
	if p.TargetPort.Type == intstr.String {
		port = 0
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal {
					port = cp.ContainerPort
				}
			}
		}
	}
	if port == 0 && p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" {
		port = p.Port
	}
	for _, r := range proxyRoutes(pod) {
		if r.port == port && port != 0 {
			return r
		}
	}
	return proxyRoute{name: svc.Name + "-" + p.Name, port: port}
}
