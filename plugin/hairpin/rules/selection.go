package rules

import "slices"

// Candidate is a target that selection chooses among: a Target, or a type
// that carries one (the plugin's target, with its addresses).
type Candidate interface {
	comparable
	Rules() *Target
}

// Selection is the target chosen for one object.
type Selection[T Candidate] struct {
	Target   T    // the zero T when no enabled target selects the object
	Conflict bool // more than one target selected it; Target won
}

// Name is the name of the chosen target, "" for none.
func (s Selection[T]) Name() string {
	var none T
	if s.Target == none {
		return ""
	}
	return s.Target.Rules().Name
}

// Match ranks: a more specific selection wins over a broader one, so that a
// tenant's own target beats a catch-all.
const (
	rankNone     = iota
	rankWildcard // "*"
	rankClass    // the object's class by name
	rankName     // the Gateway by namespace/name
)

// ForIngress chooses the target of an Ingress of the given class.
func ForIngress[M ~map[string]T, T Candidate](ts M, class string) Selection[T] {
	return pick(ts, func(s *TargetSpec) int { return listRank(s.IngressClasses, class) })
}

// ForGateway chooses the target of a Gateway, by name first, then by class.
func ForGateway[M ~map[string]T, T Candidate](ts M, namespace, name, class string) Selection[T] {
	key := namespace + "/" + name
	return pick(ts, func(s *TargetSpec) int {
		if slices.Contains(s.Gateways, key) {
			return rankName
		}
		return listRank(s.GatewayClasses, class)
	})
}

// SelectsGateways reports whether any enabled target fronts Gateways.
func SelectsGateways[M ~map[string]T, T Candidate](ts M) bool {
	for _, t := range ts {
		if r := t.Rules(); r.Enabled() && r.Spec.SelectsGateways() {
			return true
		}
	}
	return false
}

// pick returns the best-ranked enabled target that is not waiting; ties go
// to the lexically first name, so the winner does not depend on the order
// of events. A Settling winner yields to the best Serving target that also
// selects the object: the object's hosts move to it once it has settled.
func pick[M ~map[string]T, T Candidate](ts M, rank func(*TargetSpec) int) Selection[T] {
	sel := best(ts, rank, func(r *Target) bool { return !r.Waiting })
	var none T
	if sel.Target == none || !sel.Target.Rules().Settling {
		return sel
	}
	if serving := best(ts, rank, func(r *Target) bool { return r.Serving() }); serving.Target != none {
		sel.Target = serving.Target
	}
	return sel
}

// best returns the best-ranked enabled target that eligible allows, and
// whether more than one matched.
func best[M ~map[string]T, T Candidate](ts M, rank func(*TargetSpec) int, eligible func(*Target) bool) Selection[T] {
	var winner T
	var bestName string
	bestRank, matches := rankNone, 0
	for _, t := range ts {
		r := t.Rules()
		if !r.Enabled() || !eligible(r) {
			continue
		}
		n := rank(&r.Spec)
		if n == rankNone {
			continue
		}
		matches++
		if matches == 1 || n > bestRank || (n == bestRank && r.Name < bestName) {
			winner, bestRank, bestName = t, n, r.Name
		}
	}
	return Selection[T]{Target: winner, Conflict: matches > 1}
}

func listRank(list []string, name string) int {
	switch {
	case name != "" && slices.Contains(list, name):
		return rankClass
	case slices.Contains(list, "*"):
		return rankWildcard
	}
	return rankNone
}

// Set is a set of targets by name, for a tool that reads the target
// Services once instead of watching them.
type Set map[string]*Target

// Add reads a target Service's annotations under name and returns the
// target; a disabled one is kept, as in the plugin, and its Err says why.
func (s Set) Add(name string, annotations map[string]string) *Target {
	t := NewTarget(name, annotations)
	s[name] = t
	return t
}

// ForIngress chooses the target of an Ingress of class.
func (s Set) ForIngress(class string) Selection[*Target] { return ForIngress(s, class) }

// ForGateway chooses the target of a Gateway, by name first, then by class.
func (s Set) ForGateway(namespace, name, class string) Selection[*Target] {
	return ForGateway(s, namespace, name, class)
}

// Rejection returns why target does not answer host: "" when it does (or
// the target is unknown), else ReasonOutsideZones or ReasonInvalid.
func (s Set) Rejection(target, host string) string {
	t, ok := s[target]
	if !ok {
		return ""
	}
	_, rejected := ClassifyHosts([]string{host}, []string{"."}, t.Spec.Zones)
	if len(rejected) == 0 {
		return ""
	}
	return rejected[0].Reason
}
