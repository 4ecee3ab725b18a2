package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
)

// proxyAnnotations are the well-known LoadBalancer Service annotations
// that make a cloud load balancer send PROXY headers, so that the
// controller behind it must require them. on says whether a value turns
// PROXY on.
var proxyAnnotations = []struct {
	provider, key string
	on            func(string) bool
}{
	// "*" for every port; the in-tree provider and AWS LB Controller.
	{"AWS", "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol", func(v string) bool { return v != "" }},
	{"Hetzner", "load-balancer.hetzner.cloud/uses-proxyprotocol", isTrue},
	{"DigitalOcean", "service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol", isTrue},
	// "*" or a list of ports, per PROXY version.
	{"Scaleway", "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v1", notOff},
	{"Scaleway", "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2", notOff},
	// The OCI load balancer takes a version; the network load balancer a flag.
	{"OCI", "service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version", notOff},
	{"OCI", "oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled", isTrue},
	// "v1" or "v2"; "none" is off.
	{"Linode", "service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol", notOff},
	{"Linode", "service.beta.kubernetes.io/linode-loadbalancer-proxy-protocol", notOff},
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

func notOff(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v != "" && !slices.Contains([]string{"false", "none", "0", "off"}, v)
}

// lbProxyReasons returns one reason per annotation of svc that turns PROXY
// on; none for a Service that is not of type LoadBalancer.
func lbProxyReasons(svc *core.Service) []Reason {
	if svc.Spec.Type != core.ServiceTypeLoadBalancer {
		return nil
	}
	var out []Reason
	for _, a := range proxyAnnotations {
		if v, ok := svc.Annotations[a.key]; ok && a.on(v) {
			out = append(out, Reason{
				Text:   fmt.Sprintf("%s load balancer: annotation %s: %q on Service %s/%s", a.provider, a.key, v, svc.Namespace, svc.Name),
				Object: serviceObject(svc),
			})
		}
	}
	return out
}

func serviceObject(svc *core.Service) string { return "service/" + svc.Namespace + "/" + svc.Name }
