package node

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// serviceEnv is kubelet's getServiceEnvVarMap: the variables of the
// "kubernetes" Service of the default namespace, always, and, with service
// links enabled, those of every Service in the Pod's namespace.
func (n *Node) serviceEnv(pod *corev1.Pod) (map[string]string, error) {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	all, err := n.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	chosen := map[string]*corev1.Service{}
	for _, s := range all {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes":
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == pod.Namespace && links:
			chosen[s.Name] = s
		}
	}
	env := map[string]string{}
	for _, s := range chosen {
		serviceLinkVars(env, s)
	}
	return env, nil
}

// serviceLinkVars adds a Service's NAME_SERVICE_HOST/PORT variables and its
// Docker-link variables (NAME_PORT_80_TCP_ADDR, ...), as kubelet's envvars
// package makes them.
func serviceLinkVars(env map[string]string, s *corev1.Service) {
	name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	host := s.Spec.ClusterIP
	env[name+"_SERVICE_HOST"] = host
	if len(s.Spec.Ports) == 0 {
		return
	}
	first := s.Spec.Ports[0]
	env[name+"_SERVICE_PORT"] = strconv.Itoa(int(first.Port))
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = strconv.Itoa(int(p.Port))
		}
	}
	env[name+"_PORT"] = linkURL(first, host)
	for _, p := range s.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		prefix := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, strings.ToUpper(proto))
		env[prefix] = linkURL(p, host)
		env[prefix+"_PROTO"] = proto
		env[prefix+"_PORT"] = strconv.Itoa(int(p.Port))
		env[prefix+"_ADDR"] = host
	}
}

func linkURL(p corev1.ServicePort, host string) string {
	proto := strings.ToLower(string(p.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	return proto + "://" + net.JoinHostPort(host, strconv.Itoa(int(p.Port)))
}
