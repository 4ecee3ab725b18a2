package kubectlhairpin

import (
	"encoding/json"
	"fmt"
	"slices"

	core "k8s.io/api/core/v1"
)

// hintPlan hands out the names and container ports of the targets that one
// report's hints add. A user pastes every hint of a report into one helm
// command, so no two may take the same port or name, and a selection that
// two checks hint at (its class's line and its hosts' line) gets the same
// target both times, which the second --set-json then merely repeats.
type hintPlan struct {
	used  []int32                // container ports of the targets and of the hints so far
	names map[string]string      // target name -> the selection it was given to
	given map[string]plannedHint // selection -> what it was given
}

type plannedHint struct {
	name     string
	upstream chartUpstream
}

// plan is the report's hint plan; Judge starts a new one per report.
func (f *Facts) plan() *hintPlan {
	if f.hints == nil {
		f.hints = newHintPlan(f)
	}
	return f.hints
}

func newHintPlan(f *Facts) *hintPlan {
	p := &hintPlan{used: []int32{healthPort}, names: map[string]string{}, given: map[string]plannedHint{}}
	for _, t := range f.Targets {
		for _, port := range t.Service.Spec.Ports {
			p.used = append(p.used, port.TargetPort.IntVal)
		}
		// The chart's targetPorts are names (hairpin.routePort): the
		// numbers are the proxy container's.
		for _, pf := range t.Proxies {
			for _, c := range pf.Pod.Spec.Containers {
				for _, cp := range c.Ports {
					p.used = append(p.used, cp.ContainerPort)
				}
			}
		}
	}
	// Before the chart is installed, the chart's default target is the
	// one for its own class and controller, if the cluster has them: the
	// hint for that class completes it under its own name, and no other
	// target takes its class or ports. Otherwise the install command
	// disables it, and no hint may take its name.
	if f.TargetsRead && len(f.Targets) == 0 {
		if up := defaultTargetUpstream(f); up != nil {
			sel := chartTarget{IngressClasses: []string{defaultTargetClass}}
			p.target(f, defaultTargetName, sel, up)
		} else {
			p.names[defaultTargetName] = "the chart's default target, disabled"
		}
	}
	return p
}

// target returns the name and upstream of the target that selects sel and
// relays to upstream: new ones the first time, the same ones after.
func (p *hintPlan) target(f *Facts, name string, sel chartTarget, upstream *core.Service) (string, chartUpstream) {
	key := selectionKey(sel, upstream)
	if h, ok := p.given[key]; ok {
		return h.name, h.upstream
	}
	base := name
	if name != defaultTargetName || len(f.Targets) > 0 {
		base = freeTargetName(f, name)
	}
	name = base
	for i := 2; p.names[name] != ""; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	next := int32(firstContainerPort)
	free := func() int32 {
		for slices.Contains(p.used, next) {
			next++
		}
		p.used = append(p.used, next)
		return next
	}
	h := plannedHint{name: name, upstream: chartUpstreamOf(upstream, free)}
	p.names[name], p.given[key] = key, h
	return h.name, h.upstream
}

// selectionKey identifies what a hinted target selects and where it relays.
func selectionKey(sel chartTarget, upstream *core.Service) string {
	var up string
	if upstream != nil {
		up = upstream.Namespace + "/" + upstream.Name
	}
	b, _ := json.Marshal([]any{sel.IngressClasses, sel.Gateways, up}) // strings always marshal
	return string(b)
}
