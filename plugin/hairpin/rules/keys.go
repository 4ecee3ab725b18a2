package rules

// The label and annotation keys of a target Service. They are a contract
// with the chart and the docs (plugin/hairpin/README.md, "Targets").
const (
	// TargetLabel marks a Service as a target; its value is free.
	TargetLabel = "hairpin.coredns-hairpin.io/target"
	// ZonesAnnotation lists the zones a target may answer.
	ZonesAnnotation = "hairpin.coredns-hairpin.io/zones"
	// IngressClassesAnnotation lists the Ingress classes a target fronts.
	IngressClassesAnnotation = "hairpin.coredns-hairpin.io/ingress-classes"
	// GatewayClassesAnnotation lists the GatewayClasses a target fronts.
	GatewayClassesAnnotation = "hairpin.coredns-hairpin.io/gateway-classes"
	// GatewaysAnnotation lists the Gateways (namespace/name) a target fronts.
	GatewaysAnnotation = "hairpin.coredns-hairpin.io/gateways"
	// DirectServiceAnnotation makes a target direct: it names the Service
	// (namespace/name) whose ClusterIPs answer the target's hosts, with no
	// proxy in between.
	DirectServiceAnnotation = "hairpin.coredns-hairpin.io/direct-service"
)

// targetAnnotations are the annotations ParseTargetSpec reads. A key added
// to the spec is added here, so that the plugin's informer keeps it.
var targetAnnotations = [...]string{ZonesAnnotation, IngressClassesAnnotation, GatewayClassesAnnotation, GatewaysAnnotation, DirectServiceAnnotation}

// TargetAnnotations returns the annotations of ann that ParseTargetSpec
// reads, or nil when there are none: what an informer needs to keep of a
// Service.
func TargetAnnotations(ann map[string]string) map[string]string {
	var out map[string]string
	for _, k := range targetAnnotations {
		if v, ok := ann[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
