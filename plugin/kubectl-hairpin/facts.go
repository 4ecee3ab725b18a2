package kubectlhairpin

import (
	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
)

// Facts is what Gather read from the cluster; the checks judge only these.
type Facts struct {
	Options Options
	// Denied lists the reads the caller may not make; the facts they would
	// have given are missing.
	Denied []Denied

	// KubeDNSRead is false when the kube-dns Service could not be read.
	KubeDNSRead bool
	// KubeDNS is CoreDNS's Service, nil when it does not exist.
	KubeDNS *core.Service
	// CoreDNSPodsRead is false when the pods could not be listed.
	CoreDNSPodsRead bool
	// CoreDNSDeployments are the Deployments ("deployment/ns/name") whose
	// Pods kube-dns selects: how the distribution names its CoreDNS.
	CoreDNSDeployments []string
	// CoreDNS are the pods the Service selects, with their metrics.
	CoreDNS []PodFacts
	// ManagedDNS says how a cloud or an addon manager owns the cluster DNS.
	ManagedDNS []Managed
	// Corefile is the configuration CoreDNS's first pod mounts; nil when
	// no pod was read.
	Corefile *Corefile

	// TargetsRead is false when the target Services could not be listed.
	TargetsRead bool
	// Targets are the labelled Services in the targets namespace.
	Targets []TargetFacts
	// TargetSet holds the same targets with the plugin's selection rules.
	TargetSet rules.Set

	// Controllers are the controllers found to require PROXY.
	Controllers []Controller
	// HostObjects are the objects that name hosts, with the target each
	// one is selected by.
	HostObjects []HostObject

	// NodeLocalDNS are the node-local-dns DaemonSets.
	NodeLocalDNS []NodeLocalDNS

	// Dataplane is what short-circuits the load balancers' addresses.
	Dataplane Dataplane

	// hints is the report's plan of the targets its hints add.
	hints *hintPlan
}

// Options says where to look.
type Options struct {
	// TargetsNamespace holds the target Services (default hairpin-system).
	TargetsNamespace string
	// CoreDNSNamespace holds CoreDNS's kube-dns Service (default kube-system).
	CoreDNSNamespace string
	// Version is the plugin's own version, used in image hints.
	Version string
}

// The defaults of Options.
const (
	DefaultTargetsNamespace = "hairpin-system"
	DefaultCoreDNSNamespace = "kube-system"
)

func (o Options) withDefaults() Options {
	if o.TargetsNamespace == "" {
		o.TargetsNamespace = DefaultTargetsNamespace
	}
	if o.CoreDNSNamespace == "" {
		o.CoreDNSNamespace = DefaultCoreDNSNamespace
	}
	return o
}

// Denied is one read the caller may not make.
type Denied struct {
	// Read says what was read: "list deployments.apps in all namespaces".
	Read string
	// Impact says which facts are missing because of it.
	Impact string
}

// PodFacts is a pod and its metrics.
type PodFacts struct {
	Pod *core.Pod
	// Port is the metrics port that was scraped.
	Port int32
	// Metrics is nil when the scrape failed or was not tried.
	Metrics Samples
	// Err says why there are no metrics.
	Err error
}

// TargetFacts is one target Service.
type TargetFacts struct {
	Service *core.Service
	// Spec is what its annotations select; Err is why it is disabled.
	Spec rules.TargetSpec
	Err  error
	// ReadyEndpoints and Endpoints count its EndpointSlices' endpoints.
	ReadyEndpoints, Endpoints int
	// EndpointsRead is false when the EndpointSlices could not be read.
	EndpointsRead bool
	// Proxies are the ready proxy pods behind it, with their metrics.
	Proxies []PodFacts

	// Direct is the namespace/name of its direct-service annotation: a
	// direct target answers with that Service's ClusterIPs, no proxy in
	// between. DirectErr says why the annotation does not parse.
	Direct    string
	DirectErr error
	// DirectService is the Service named; nil when it does not exist or
	// could not be read (DirectRead false).
	DirectService *core.Service
	DirectRead    bool
}

// Controller is one ingress controller or Gateway data plane that requires
// PROXY from its load balancer.
type Controller struct {
	// Kind names the software: ingress-nginx, Envoy Gateway, NGINX Gateway
	// Fabric, or a load balancer whose controller was not recognised.
	Kind string
	// Object is the controller's own object: its Deployment, its Gateway,
	// or the LoadBalancer Service.
	Object string
	// Reasons say why it requires PROXY, each naming its object.
	Reasons []Reason
	// IngressClasses and Gateways are what it serves.
	IngressClasses []string
	Gateways       []GatewayRef
	// LBs are its Services that outside clients reach: LoadBalancer
	// Services and any with externalIPs, at an address the dataplane
	// knows, and NodePort Services, through a load balancer outside.
	LBs []*core.Service
	// Upstream is the Service a target's proxy should relay to; nil when
	// none was found.
	Upstream *core.Service
}

// Reason is one piece of evidence that a controller requires PROXY.
type Reason struct {
	Text   string
	Object string
}

// GatewayRef is a Gateway and its class.
type GatewayRef struct {
	Namespace, Name, Class string
}

// Key is namespace/name, as in the gateways annotation.
func (g GatewayRef) Key() string { return g.Namespace + "/" + g.Name }

// HostObject is an Ingress, a Gateway, or a route through one Gateway,
// and the hosts it names.
type HostObject struct {
	// Object is "ingress/ns/name", "gateway/ns/name", "httproute/ns/name".
	Object string
	// IngressClass is set for an Ingress, Gateway for the others.
	IngressClass string
	Gateway      *GatewayRef
	// Hosts are lowercase FQDNs.
	Hosts []string
	// Selection is the target that answers the hosts.
	Selection rules.Selection[*rules.Target]
}

// Managed is evidence that the cluster DNS is managed for the user.
type Managed struct {
	// Provider is EKS, AKS, GKE or "addon manager".
	Provider string
	// Evidence says what showed it.
	Evidence string
	// Anchor is the section of docs/install/managed.md; "" for the page.
	Anchor string
	Object string
}

// NodeLocalDNS is one node-local-dns DaemonSet and the zones its Corefile
// sends to CoreDNS.
type NodeLocalDNS struct {
	Object string
	// Forwarded are the server blocks' zones, nil when the Corefile could
	// not be read (CorefileErr says why).
	Forwarded   []string
	CorefileErr error
}

// Corefile is CoreDNS's configuration as its pods read it: the Corefile
// and the files it imports, each a key of a ConfigMap mounted into the pod.
type Corefile struct {
	// Pod is the pod whose spec says where the files come from.
	Pod string
	// ConfigMap ("namespace/name") and Key hold the Corefile.
	ConfigMap, Key string
	// Blocks are its server blocks, with the imported files spliced in.
	Blocks []ServerBlock
	// Imports are its imports of files (not of snippets), in order.
	Imports []Import
	// Err says why the Corefile, or a file it imports, could not be read;
	// Blocks then hold what was read before it.
	Err error
}

// Import is one import of files in a Corefile, and what it read.
type Import struct {
	// Pattern is the import's argument, as written.
	Pattern string
	// Files are the mounted ConfigMap keys it matched, in path order:
	// "ConfigMap namespace/name key KEY".
	Files []string
	// ConfigMap ("namespace/name") is mounted where a pattern that matched
	// nothing points, "" for none: an optional ConfigMap with no data.
	ConfigMap string
}

// ServerBlock is one server block of a Corefile: its addresses and the
// rules of its rewrite directives.
type ServerBlock struct {
	Keys     []ServerKey
	Rewrites []RewriteRule
	// Kubernetes are the zones of its kubernetes directive (lowercase
	// FQDNs), empty when the directive names none; nil without one.
	Kubernetes []string
}

// ServerKey is one address of a server block.
type ServerKey struct {
	// Zone is a lowercase FQDN; Port is "53" when the address names none.
	Zone, Port string
}

// RewriteRule is one rewrite directive of a server block that rewrites
// the question's name, or that could not be read.
type RewriteRule struct {
	// Text is the directive as written, a block form on one line.
	Text string
	// ConfigMap ("namespace/name"), Key and Line say where it is written.
	ConfigMap, Key string
	Line           int
	// Author is the tool whose rendering it is: ouroboros, hairpin-proxy,
	// or "" for any other.
	Author string
	// Err says why the rule could not be read: what it covers is unknown.
	Err error

	name nameRewrite
}
