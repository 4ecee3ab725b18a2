package kubectlhairpin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestHintPlanComposes: the add-a-target hints of one report take names
// and container ports that no target and no other hint has; a selection
// hinted twice gets the same target both times; a new report starts over.
func TestHintPlanComposes(t *testing.T) {
	existing := service("hairpin-system", "ingress-nginx", nil, "", namedPort("http", 80, "8080"), namedPort("https", 443, "8443"))
	f := &Facts{Targets: []TargetFacts{{Service: existing}}}
	upstream := service("tenant-a", "ingress-nginx-controller", nil, "", port("http", 80, 80), port("https", 443, 443))
	none := func(HostObject) bool { return false }
	hint := func(name string, sel chartTarget) map[string]chartTarget {
		t.Helper()
		m := setJSON.FindStringSubmatch(addTargetHint(f, name, sel, upstream, none))
		if m == nil {
			t.Fatalf("no --set-json in the hint for %s", name)
		}
		key, value, _ := strings.Cut(m[1], "=")
		var ct chartTarget
		if err := json.Unmarshal([]byte(value), &ct); err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		return map[string]chartTarget{key: ct}
	}
	f.hints = newHintPlan(f)
	a := hint("tenant-a", chartTarget{IngressClasses: []string{"tenant-a"}})
	b := hint("tenant-a", chartTarget{IngressClasses: []string{"tenant-a-2"}}) // the same wished name
	again := hint("tenant-a", chartTarget{IngressClasses: []string{"tenant-a"}})

	if len(a) != 1 || len(b) != 1 || !mapsEqualKeys(a, again) {
		t.Fatalf("the same selection got different targets: %v and %v", a, again)
	}
	used := []int32{8080, 8443, healthPort}
	names := []string{"targets.ingress-nginx"}
	for _, h := range []map[string]chartTarget{a, b} {
		for name, ct := range h {
			if slices.Contains(names, name) {
				t.Errorf("target name %s is given twice", name)
			}
			names = append(names, name)
			for _, p := range ct.Upstream.Ports {
				if slices.Contains(used, p.ContainerPort) {
					t.Errorf("%s: containerPort %d is already used (%v)", name, p.ContainerPort, used)
				}
				used = append(used, p.ContainerPort)
			}
		}
	}
	f.hints = newHintPlan(f)
	if fresh := hint("tenant-a", chartTarget{IngressClasses: []string{"tenant-a"}}); !mapsEqualKeys(fresh, a) || fresh["targets.tenant-a"].Upstream.Ports[0] != a["targets.tenant-a"].Upstream.Ports[0] {
		t.Errorf("a new report's first hint differs from the first report's: %v and %v", fresh, a)
	}
}

func mapsEqualKeys(a, b map[string]chartTarget) bool {
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return len(a) == len(b)
}
