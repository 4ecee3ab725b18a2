package cluster

// Deviation is one way a test cluster of a shape differs from what
// Cozystack renders, and why: a row of the shape's deviation table. The
// Cilium rows are chart values or objects of Cozystack's Cilium
// ([ciliumDeviations], [cozyTenantDeviations]); a shape's other rows (its
// CoreDNS, its ingress) are kept by the test of that shape.
type Deviation struct {
	// Path is the chart value's path, or, where the difference is no
	// chart value, what differs.
	Path string
	// Cozystack is what Cozystack has; Ours is what the harness has. For
	// a chart value, Cozystack is the value its files or else the chart's
	// defaults give (nil: neither sets it), and Ours is passed to the
	// chart (nil unsets the path).
	Cozystack, Ours any
	// Reason says why the harness cannot have Cozystack's.
	Reason string
	// Value says Path is a chart value, rendered with Ours.
	Value bool
	// Config are the cilium-config keys the value changes (added,
	// removed or changed) from Cozystack's rendering.
	Config []string
	// record changes the objects the harness records from the chart's
	// rendering; nil for most rows.
	record func(*ciliumInstall)
}
