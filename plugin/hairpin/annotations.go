package hairpin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The label and annotation keys of a target Service (DESIGN.md, "Targets").
// They are a contract with the chart and the docs.
const (
	targetLabel              = "hairpin.coredns-hairpin.io/target"
	zonesAnnotation          = "hairpin.coredns-hairpin.io/zones"
	ingressClassesAnnotation = "hairpin.coredns-hairpin.io/ingress-classes"
	gatewayClassesAnnotation = "hairpin.coredns-hairpin.io/gateway-classes"
	gatewaysAnnotation       = "hairpin.coredns-hairpin.io/gateways"
)

// errNoZones disables a target that names no zones: it would otherwise be
// free to answer any name, which is the hijack the zones guard exists for.
var errNoZones = errors.New("annotation " + zonesAnnotation + " is missing or empty; a target without zones serves nothing")

// parseTargetAnnotations reads a target Service's annotations. A malformed
// value is returned in sel.err, naming the key and the item; the caller
// disables that target only.
func parseTargetAnnotations(ann map[string]string) targetSelection {
	var sel targetSelection
	var err error
	if sel.zones, err = parseZoneList(ann[zonesAnnotation]); err != nil {
		sel.err = err
		return sel
	}
	if sel.ingressClasses, err = parseNameList(ingressClassesAnnotation, ann[ingressClassesAnnotation], validation.IsDNS1123Subdomain); err != nil {
		sel.err = err
		return sel
	}
	if sel.gatewayClasses, err = parseNameList(gatewayClassesAnnotation, ann[gatewayClassesAnnotation], validation.IsDNS1123Subdomain); err != nil {
		sel.err = err
		return sel
	}
	if sel.gateways, err = parseNameList(gatewaysAnnotation, ann[gatewaysAnnotation], isNamespacedName); err != nil {
		sel.err = err
		return sel
	}
	if len(sel.zones) == 0 {
		sel.err = errNoZones
	}
	return sel
}

// splitList splits a comma-separated annotation value, ignoring whitespace
// around items. An empty item ("a,,b" or a trailing comma) is an error: it is
// almost always a typo, and guessing would widen or narrow a selection.
func splitList(key, value string) ([]string, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	parts := strings.Split(value, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("annotation %s=%q: empty item %d", key, value, i+1)
		}
	}
	return parts, nil
}

// parseZoneList reads the zones annotation into sorted, unique FQDNs.
func parseZoneList(value string) ([]string, error) {
	items, err := splitList(zonesAnnotation, value)
	if err != nil {
		return nil, err
	}
	zones := make([]string, 0, len(items))
	for _, z := range items {
		fqdn := toFQDN(z)
		if fqdn != "." && !validHost(fqdn) || strings.HasPrefix(fqdn, "*") {
			return nil, fmt.Errorf("annotation %s: zone %q is not a DNS name", zonesAnnotation, z)
		}
		zones = append(zones, plugin.Name(fqdn).Normalize())
	}
	slices.Sort(zones)
	return slices.Compact(zones), nil
}

// parseNameList reads a list of names, or "*" for all, into a sorted set.
func parseNameList(key, value string, valid func(string) []string) ([]string, error) {
	items, err := splitList(key, value)
	if err != nil {
		return nil, err
	}
	for _, n := range items {
		if n == "*" {
			continue
		}
		if errs := valid(n); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s: %q: %s", key, n, errs[0])
		}
	}
	slices.Sort(items)
	return slices.Compact(items), nil
}

// isNamespacedName validates "namespace/name".
func isNamespacedName(s string) []string {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(name, "/") {
		return []string{"want namespace/name"}
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return []string{"namespace: " + errs[0]}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return []string{"name: " + errs[0]}
	}
	return nil
}
