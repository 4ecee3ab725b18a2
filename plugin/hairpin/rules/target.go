package rules

// Target is one target as the rules see it: its name, what its annotations
// select, and why it is disabled.
type Target struct {
	Name string // "namespace/name", or "proxy_ip"
	Spec TargetSpec
	Err  error // a malformed annotation, or ErrNoZones: the target is disabled
	Readiness
}

// Readiness is what a target's Service says of the path through it: its
// EndpointSlices, as the plugin reads them. The zero Readiness is a path
// that works (proxy_ip, a direct target, no EndpointSlices to read).
type Readiness struct {
	// Waiting is a target whose Service has not yet had a ready endpoint
	// for each of its ports: it selects nothing, so whatever answered its
	// objects' hosts before (another target, the next plugin) goes on
	// answering them until the path through it works.
	Waiting bool
	// Settling is a target that has had a ready endpoint for each port
	// for less than the settle time: the node's dataplane may not send its
	// ClusterIP there yet. It takes only the objects that no Serving
	// target selects, which have no working path to lose.
	Settling bool
	// Unready is a target whose Service has no ready endpoint for each of
	// its ports now. One that has settled keeps its objects (its only
	// proxy replica crashed: the public address fails the same way), but
	// a Settling target need not wait for it.
	Unready bool
}

// Serving reports whether the path through the target works: its Service
// has been ready for the settle time and is ready now.
func (r Readiness) Serving() bool { return !r.Waiting && !r.Settling && !r.Unready }

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
