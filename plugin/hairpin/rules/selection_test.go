package rules

import (
	"errors"
	"slices"
	"testing"
)

func TestTargetSelectionRules(t *testing.T) {
	mk := func(name string, spec TargetSpec, err error) *Target {
		if spec.Zones == nil {
			spec.Zones = []string{"example.com."}
		}
		return &Target{Name: name, Spec: spec, Err: err}
	}
	all := mk("ns/all", TargetSpec{IngressClasses: []string{"*"}, GatewayClasses: []string{"*"}}, nil)
	nginx := mk("ns/nginx", TargetSpec{IngressClasses: []string{"nginx"}}, nil)
	nginx2 := mk("ns/nginx-b", TargetSpec{IngressClasses: []string{"nginx"}}, nil)
	cilium := mk("ns/cilium", TargetSpec{GatewayClasses: []string{"cilium"}}, nil)
	named := mk("ns/tenant-gw", TargetSpec{Gateways: []string{"tenant/web"}}, nil)
	disabled := mk("ns/a-disabled", TargetSpec{IngressClasses: []string{"nginx"}}, errors.New("bad"))
	waiting := mk("ns/a-waiting", TargetSpec{IngressClasses: []string{"nginx"}}, nil)
	waiting.Waiting = true
	settling := mk("ns/a-settling", TargetSpec{IngressClasses: []string{"nginx"}}, nil)
	settling.Settling = true
	crashed := mk("ns/nginx-crashed", TargetSpec{IngressClasses: []string{"nginx"}}, nil)
	crashed.Unready = true
	catchAll := mk("ns/z-all", TargetSpec{IngressClasses: []string{"*"}}, nil)
	set := func(ts ...*Target) Set {
		s := Set{}
		for _, t := range ts {
			s[t.Name] = t
		}
		return s
	}

	cases := []struct {
		name         string
		ts           Set
		pick         func(Set) Selection[*Target]
		want         *Target
		wantConflict bool
	}{
		{"class beats wildcard", set(all, nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nginx, true},
		{"wildcard takes other classes", set(all, nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("traefik") }, all, false},
		{"no target selects", set(nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("traefik") }, nil, false},
		{"no class matches only wildcard", set(nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("") }, nil, false},
		{"tie goes to the first name", set(nginx2, nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nginx, true},
		{"disabled target never selects", set(disabled), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nil, false},
		{"waiting target never selects", set(waiting), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nil, false},
		{"waiting target leaves the object to the one it would beat", set(waiting, nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nginx, false},
		{"settling target leaves the object to a serving one it would beat", set(settling, nginx), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, nginx, true},
		{"settling target leaves the object to a serving catch-all", set(settling, catchAll), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, catchAll, true},
		{"settling target takes what no other target selects", set(settling), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, settling, false},
		{"settling target takes the object from an unready one", set(settling, crashed), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, settling, true},
		{"settling target does not wait for a waiting one", set(settling, waiting), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, settling, false},
		{"unready target keeps the object it wins", set(crashed, catchAll), func(ts Set) Selection[*Target] { return ts.ForIngress("nginx") }, crashed, true},
		{"gateway by name beats class", set(cilium, named), func(ts Set) Selection[*Target] { return ts.ForGateway("tenant", "web", "cilium") }, named, true},
		{"gateway by class", set(cilium, named), func(ts Set) Selection[*Target] { return ts.ForGateway("infra", "public", "cilium") }, cilium, false},
		{"gateway class is not an ingress class", set(cilium), func(ts Set) Selection[*Target] { return ts.ForIngress("cilium") }, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.pick(tc.ts)
			if got.Target != tc.want || got.Conflict != tc.wantConflict {
				want := Selection[*Target]{Target: tc.want}
				t.Fatalf("picked %q (conflict %v), want %q (conflict %v)", got.Name(), got.Conflict, want.Name(), tc.wantConflict)
			}
		})
	}
	if !SelectsGateways(set(nginx, cilium)) || SelectsGateways(set(nginx, all.withErr())) {
		t.Error("SelectsGateways: want true with a Gateway class target, false when the only one is disabled")
	}
}

func (t *Target) withErr() *Target { c := *t; c.Err = errors.New("bad"); return &c }

// TestSetSelectsAsThePluginDoes: a Set read from annotations keeps disabled
// targets with their reason, and zones bound the hosts.
func TestSetSelectsAsThePluginDoes(t *testing.T) {
	ts := Set{}
	for _, tg := range []struct {
		name string
		ann  map[string]string
	}{
		{"ns/b-all", map[string]string{ZonesAnnotation: "example.com", IngressClassesAnnotation: "*", GatewayClassesAnnotation: "*"}},
		{"ns/a-nginx", map[string]string{ZonesAnnotation: "example.com", IngressClassesAnnotation: "nginx"}},
		{"ns/c-nginx", map[string]string{ZonesAnnotation: "example.com", IngressClassesAnnotation: "nginx"}},
		{"ns/gw", map[string]string{ZonesAnnotation: "tenant.org", GatewaysAnnotation: "t/gw"}},
	} {
		if tgt := ts.Add(tg.name, tg.ann); tgt.Err != nil {
			t.Fatal(tgt.Err)
		}
	}
	off := ts.Add("ns/off", map[string]string{IngressClassesAnnotation: "off"})
	if !errors.Is(off.Err, ErrNoZones) || !slices.Equal(off.Spec.IngressClasses, []string{"off"}) || off.Enabled() {
		t.Fatalf("target without zones: %+v; want its classes and ErrNoZones", off)
	}
	for _, tc := range []struct {
		what         string
		got          Selection[*Target]
		want         string
		wantConflict bool
	}{
		{"class over wildcard, first name", ts.ForIngress("nginx"), "ns/a-nginx", true},
		{"wildcard", ts.ForIngress("traefik"), "ns/b-all", false},
		{"disabled selects nothing", ts.ForIngress("off"), "ns/b-all", false},
		{"gateway name over class wildcard", ts.ForGateway("t", "gw", "eg"), "ns/gw", true},
	} {
		if tc.got.Name() != tc.want || tc.got.Conflict != tc.wantConflict {
			t.Errorf("%s: %q (conflict %v); want %q (conflict %v)", tc.what, tc.got.Name(), tc.got.Conflict, tc.want, tc.wantConflict)
		}
	}
	for host, want := range map[string]string{"app.example.com": "", "App.Example.COM.": "", "login.other.org": ReasonOutsideZones, "bad_host.example.com": ReasonInvalid} {
		if got := ts.Rejection("ns/a-nginx", host); got != want {
			t.Errorf("Rejection(%s) = %q; want %q", host, got, want)
		}
	}
	if got := ts.Rejection("ns/unknown", "login.other.org"); got != "" {
		t.Errorf("Rejection by an unknown target = %q; want none", got)
	}
}
