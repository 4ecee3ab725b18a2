package kubectlhairpin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The chart's values of one target (manifests/coredns-hairpin/values.yaml,
// targets.NAME), as a fix hint renders them.
type chartTarget struct {
	Zones          []string      `json:"zones"`
	IngressClasses []string      `json:"ingressClasses,omitempty"`
	Gateways       []string      `json:"gateways,omitempty"`
	Upstream       chartUpstream `json:"upstream"`
}

type chartUpstream struct {
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	PodSelector map[string]string `json:"podSelector,omitempty"`
	Ports       []chartPort       `json:"ports"`
}

type chartPort struct {
	Name          string `json:"name"`
	Port          int32  `json:"port"`
	ContainerPort int32  `json:"containerPort"`
	PodPort       int32  `json:"podPort,omitempty"`
}

// The first container port a new route is given, and the chart's health
// port, which no route may take.
const (
	firstContainerPort = 8080
	healthPort         = 9090
)

// addTargetHint is the --set-json that adds a target selecting what sel
// sets, relaying to upstream, answering the zones of the hosts that match
// names (example.com when none is known). The hints of one report compose:
// each selection gets its own name and container ports, the same each time
// it is asked for (see hintPlan).
func addTargetHint(f *Facts, name string, sel chartTarget, upstream *core.Service, names func(HostObject) bool) string {
	return fmt.Sprintf("add a target (zones are yours to check): --set-json '%s'", targetValue(f, name, sel, upstream, names))
}

// targetValue is the targets.NAME=JSON value of addTargetHint.
func targetValue(f *Facts, name string, sel chartTarget, upstream *core.Service, names func(HostObject) bool) string {
	name, sel.Upstream = f.plan().target(f, name, sel, upstream)
	sel.Zones = suggestZones(f, names)
	b, _ := json.Marshal(sel) // plain strings and numbers always marshal
	return fmt.Sprintf("targets.%s=%s", name, b)
}

// freeTargetName makes name a DNS label that no target has.
func freeTargetName(f *Facts, name string) string {
	name = strings.ToLower(name)
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, name)
	name = strings.Trim(name, "-")
	if len(validation.IsDNS1123Label(name)) > 0 {
		name = "target"
	}
	taken := func(n string) bool {
		return slices.ContainsFunc(f.Targets, func(t TargetFacts) bool { return t.Service.Name == n })
	}
	for i, base := 2, name; taken(name); i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// suggestZones are the parent domains of the matching hosts.
func suggestZones(f *Facts, match func(HostObject) bool) []string {
	var zones []string
	for _, o := range f.HostObjects {
		if !match(o) {
			continue
		}
		for _, h := range o.Hosts {
			if z, ok := parentZone(hostName(h)); ok && !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	if len(zones) == 0 {
		return []string{"example.com"}
	}
	slices.Sort(zones)
	return zones
}

// chartUpstreamOf fills the upstream from the controller's Service, with
// the container ports that free gives.
func chartUpstreamOf(svc *core.Service, free func() int32) chartUpstream {
	if svc == nil {
		return chartUpstream{Namespace: "NAMESPACE", Name: "SERVICE", Ports: []chartPort{
			{Name: "http", Port: 80, ContainerPort: free()}, {Name: "https", Port: 443, ContainerPort: free()},
		}}
	}
	u := chartUpstream{Namespace: svc.Namespace, Name: svc.Name, PodSelector: svc.Spec.Selector}
	for i, p := range svc.Spec.Ports {
		if p.Protocol != "" && p.Protocol != core.ProtocolTCP {
			continue
		}
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("port-%d", i)
		}
		cp := chartPort{Name: name, Port: p.Port, ContainerPort: free()}
		if p.TargetPort.IntVal != 0 && p.TargetPort.IntVal != p.Port {
			cp.PodPort = p.TargetPort.IntVal
		}
		u.Ports = append(u.Ports, cp)
	}
	return u
}

// parentZone is a host's domain without its first label ("app.example.com"
// is in "example.com"), when that still has two labels.
func parentZone(host string) (string, bool) {
	_, parent, ok := strings.Cut(strings.TrimPrefix(host, "*."), ".")
	return parent, ok && strings.Contains(parent, ".")
}

// jsonList renders names as a JSON list for --set-json.
func jsonList(names []string) string {
	b, _ := json.Marshal(names) // strings always marshal
	return string(b)
}
