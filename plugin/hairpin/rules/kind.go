package rules

// Kind is the kind of an object that names hosts. The constants are in the
// order of the kinds' names, so that objects sort as "kind/key" strings
// would.
type Kind uint8

// The kinds of objects that name hosts.
const (
	KindGateway Kind = iota
	KindGRPCRoute
	KindHTTPRoute
	KindIngress
	KindTLSRoute
	// KindCount is the number of kinds, for tables indexed by Kind.
	KindCount
)

var kindNames = [KindCount]string{"gateway", "grpcroute", "httproute", "ingress", "tlsroute"}

// String is the kind's lowercase name, as in the kind label of
// MetricUnselected and in "kind/namespace/name".
func (k Kind) String() string { return kindNames[k] }
