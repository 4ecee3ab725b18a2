package node

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// envList is an environment that keeps the order in which names were
// first set.
type envList struct {
	names []string
	m     map[string]string
}

func (e *envList) set(k, v string) {
	if e.m == nil {
		e.m = map[string]string{}
	}
	if _, ok := e.m[k]; !ok {
		e.names = append(e.names, k)
	}
	e.m[k] = v
}

// list returns "NAME=value" entries in order.
func (e *envList) list() []string {
	out := make([]string, 0, len(e.names))
	for _, k := range e.names {
		out = append(out, k+"="+e.m[k])
	}
	return out
}

// envNameRE is what kubelet accepts as a variable name from envFrom
// (a C identifier, or any printable without "=" since 1.31).
var envNameRE = regexp.MustCompile(`^[ -<>-~]+$`)

// containerEnv resolves c's environment as kubelet's
// makeEnvironmentVariables: envFrom, then env in order ($(VAR) expanded
// against what is defined so far and the service variables), then the
// service variables not defined otherwise.
func (n *Node) containerEnv(pod *corev1.Pod, c *corev1.Container, ip netip.Addr) (*envList, error) {
	svc, err := n.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	env := &envList{m: map[string]string{}}
	for _, from := range c.EnvFrom {
		data, err := n.envFromSource(pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if name := from.Prefix + k; envNameRE.MatchString(name) {
				env.set(name, data[k])
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env.set(e.Name, expand(e.Value, lookupIn(env.m, svc)))
			continue
		}
		v, ok, err := n.envValueFrom(pod, c, e.ValueFrom, ip)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env.set(e.Name, v)
		}
	}
	keys := make([]string, 0, len(svc))
	for k := range svc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := env.m[k]; !ok {
			env.set(k, svc[k])
		}
	}
	return env, nil
}

// envFromSource returns the data of an envFrom ConfigMap or Secret; an
// optional one that is missing gives nothing.
func (n *Node) envFromSource(ns string, from corev1.EnvFromSource) (map[string]string, error) {
	var data map[string][]byte
	var err error
	switch {
	case from.ConfigMapRef != nil:
		data, err = n.objectData(ns, kindConfigMap, from.ConfigMapRef.Name, isTrue(from.ConfigMapRef.Optional))
	case from.SecretRef != nil:
		data, err = n.objectData(ns, kindSecret, from.SecretRef.Name, isTrue(from.SecretRef.Optional))
	}
	if err != nil {
		return nil, fmt.Errorf("envFrom: %w", err)
	}
	out := map[string]string{}
	for k, v := range data {
		out[k] = string(v)
	}
	return out, nil
}

// envValueFrom resolves one valueFrom; ok is false for an optional key
// that is missing, which leaves the variable unset.
func (n *Node) envValueFrom(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, ip netip.Addr) (v string, ok bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := n.fieldValue(pod, from.FieldRef.FieldPath, ip)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := n.resourceValue(pod, c, from.ResourceFieldRef)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		return n.objectKey(pod.Namespace, kindConfigMap, ref.Name, ref.Key, isTrue(ref.Optional))
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		return n.objectKey(pod.Namespace, kindSecret, ref.Name, ref.Key, isTrue(ref.Optional))
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// fieldValue is the downward API value of a Pod field path.
func (n *Node) fieldValue(pod *corev1.Pod, path string, ip netip.Addr) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return n.cfg.NodeIP.String(), nil
	case "status.podIP", "status.podIPs":
		if !ip.IsValid() {
			return "", nil
		}
		return ip.String(), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels or annotations as a downwardAPI file does:
// sorted `key="value"` lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

func isTrue(b *bool) bool { return b != nil && *b }
