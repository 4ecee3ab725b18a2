package kubectlhairpin

import (
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// proxyRoutes reads the routes of a pod's hairpin-proxy containers, as the
// proxy reads its command line and environment. A route that does not
// parse is left out: the proxy refuses to start with it.
func proxyRoutes(pod *core.Pod) []routeflag.Route {
	var out []routeflag.Route
	for _, c := range pod.Spec.Containers {
		env := func(name string) (string, bool) {
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom == nil {
					return e.Value, true
				}
			}
			return "", false
		}
		routes, _ := routeflag.FromContainer(c.Command, c.Args, env)
		out = append(out, routes...)
	}
	return out
}

// routeOf finds the route behind a target Service's port in a proxy pod:
// the route listening on the port's targetPort (by number, or by the
// container port's name). Without one, it is the chart's name for it,
// SERVICE-PORTNAME, with no known upstream.
func routeOf(pod *core.Pod, svc *core.Service, p core.ServicePort) routeflag.Route {
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
		if r.ListenPort() == int(port) && port != 0 {
			return r
		}
	}
	return routeflag.Route{Name: svc.Name + "-" + p.Name}
}
