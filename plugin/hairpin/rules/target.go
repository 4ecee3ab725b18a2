package rules

// Target is one target as the rules see it: its name, what its annotations
// select, and why it is disabled.
type Target struct {
	Name string // "namespace/name", or "proxy_ip"
	Spec TargetSpec
	Err  error // a malformed annotation, or ErrNoZones: the target is disabled
	// Waiting is a target whose Service has not yet had a ready endpoint
	// for each of its ports: it selects nothing, so whatever answered its
	// objects' hosts before (another target, the next plugin) goes on
	// answering them until the path through it works.
	Waiting bool
}

// NewTarget reads a target Service's annotations under name. A target whose
// annotations do not parse, or that names no zones, is disabled, and its Err
// says why.
func NewTarget(name string, annotations map[string]string) *Target {
	spec, err := ParseTargetSpec(annotations)
	return &Target{Name: name, Spec: spec, Err: err}
}

// Rules returns t itself: a Target is its own Candidate.
func (t *Target) Rules() *Target { return t }

// Enabled reports whether the target may serve anything at all, once it
// is not Waiting.
func (t *Target) Enabled() bool { return t.Err == nil && len(t.Spec.Zones) > 0 }

// Same reports whether t and o select the same and are both enabled or both
// disabled.
func (t *Target) Same(o *Target) bool {
	return t.Spec.Equal(o.Spec) && (t.Err == nil) == (o.Err == nil)
}
