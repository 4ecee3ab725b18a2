package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TargetSpec is what a target's annotations select. Every list is sorted and
// holds each item once. A field added here is compared by Equal (a test
// holds the two in step) and its annotation is listed in targetAnnotations.
type TargetSpec struct {
	Zones          []string // lowercase FQDNs; empty serves nothing
	IngressClasses []string // "*" for every class
	GatewayClasses []string // "*" for every class
	Gateways       []string // "namespace/name"
	// Direct is the Service ("namespace/name") whose ClusterIPs a direct
	// target answers with; "" for a target that is answered with its own.
	Direct string
}

// ErrNoZones is the error of a target whose zones annotation is missing or
// empty: it would otherwise be free to answer any name, which is the hijack
// the zones guard exists for.
var ErrNoZones = errors.New("annotation " + ZonesAnnotation + " is missing or empty; a target without zones serves nothing")

// ParseTargetSpec reads a target Service's annotations. A malformed value is
// an error naming the key and the item; the spec then holds what was read
// before it. A target with an error is disabled, and only that target.
func ParseTargetSpec(ann map[string]string) (TargetSpec, error) {
	var s TargetSpec
	var err error
	if s.Zones, err = parseZoneList(ann[ZonesAnnotation]); err != nil {
		return s, err
	}
	if s.IngressClasses, err = parseNameList(IngressClassesAnnotation, ann[IngressClassesAnnotation], validation.IsDNS1123Subdomain); err != nil {
		return s, err
	}
	if s.GatewayClasses, err = parseNameList(GatewayClassesAnnotation, ann[GatewayClassesAnnotation], validation.IsDNS1123Subdomain); err != nil {
		return s, err
	}
	if s.Gateways, err = parseNameList(GatewaysAnnotation, ann[GatewaysAnnotation], isNamespacedName); err != nil {
		return s, err
	}
	if d := strings.TrimSpace(ann[DirectServiceAnnotation]); d != "" {
		if errs := isNamespacedName(d); len(errs) > 0 {
			return s, fmt.Errorf("annotation %s: %q: %s", DirectServiceAnnotation, d, errs[0])
		}
		s.Direct = d
	}
	if len(s.Zones) == 0 {
		return s, ErrNoZones
	}
	return s, nil
}

// Equal reports whether s and o select the same.
func (s TargetSpec) Equal(o TargetSpec) bool {
	return slices.Equal(s.Zones, o.Zones) && slices.Equal(s.IngressClasses, o.IngressClasses) &&
		slices.Equal(s.GatewayClasses, o.GatewayClasses) && slices.Equal(s.Gateways, o.Gateways) &&
		s.Direct == o.Direct
}

// SelectsGateways reports whether the spec fronts any Gateway, so that the
// Gateway API kinds are watched only when some target needs them.
func (s TargetSpec) SelectsGateways() bool {
	return len(s.GatewayClasses) > 0 || len(s.Gateways) > 0
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
	items, err := splitList(ZonesAnnotation, value)
	if err != nil {
		return nil, err
	}
	zones := make([]string, 0, len(items))
	for _, z := range items {
		fqdn := ToFQDN(z)
		if fqdn != "." && !ValidHost(fqdn) || strings.HasPrefix(fqdn, "*") {
			return nil, fmt.Errorf("annotation %s: zone %q is not a DNS name", ZonesAnnotation, z)
		}
		zones = append(zones, fqdn)
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
