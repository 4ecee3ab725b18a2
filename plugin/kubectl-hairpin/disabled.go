package kubectlhairpin

import (
	"slices"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// disabledFor lists the disabled targets whose annotations name an
// IngressClass (when g is nil) or the Gateway g: they would select it if
// they were enabled, so the fix is theirs, not a new target.
func disabledFor(f *Facts, class string, g *GatewayRef) []string {
	var out []string
	for _, t := range f.Targets {
		if t.Err != nil && specNames(t.Spec, class, g) {
			out = append(out, targetName(t))
		}
	}
	return out
}

// specNames reports whether a target's annotations name the class or the
// Gateway g, by name, class or "*".
func specNames(s rules.TargetSpec, class string, g *GatewayRef) bool {
	if g != nil {
		return slices.Contains(s.Gateways, g.Key()) || slices.Contains(s.GatewayClasses, g.Class) || slices.Contains(s.GatewayClasses, "*")
	}
	return slices.Contains(s.IngressClasses, class) || slices.Contains(s.IngressClasses, "*")
}
