package cluster

import (
	"slices"
	"testing"
)

func TestParseDataplanesKeepsTheRunsOrderAndNamesAnUnknownOne(t *testing.T) {
	for _, tc := range []struct {
		name, v    string
		want       []string
		wantChosen bool
		wantErr    bool
	}{
		{"UnsetIsAll", "", AllDataplanes, false, false},
		{"BlankIsAll", " , ", AllDataplanes, false, false},
		{"InTheRunsOrder", "cilium, nftables", []string{"nftables", "cilium"}, true, false},
		{"UnknownIsAnError", "nftables,ipvs", []string{"nftables"}, true, true},
		{"OptInOnlyWhenNamed", "cilium-per-packet,nftables", []string{"nftables", "cilium-per-packet"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, chosen, err := parseDataplanes(tc.v)
			if !slices.Equal(got, tc.want) || chosen != tc.wantChosen || (err != nil) != tc.wantErr {
				t.Errorf("parseDataplanes(%q) = %v, %v, %v; want %v, %v, error %v", tc.v, got, chosen, err, tc.want, tc.wantChosen, tc.wantErr)
			}
		})
	}
}

// TestShapesAreSelectedByTheirMode: a shape is no mode of its own (the
// stories that loop over the modes do not run on it), HAIRPIN_DATAPLANES
// selects it by its agent's mode, and what it does follows from its
// values: the Cozystack tenant's Cilium masquerades its Pods, the cilium
// mode's does not.
func TestShapesAreSelectedByTheirMode(t *testing.T) {
	for _, tc := range []struct {
		name, mode  string
		masquerades bool
	}{
		{CozyTenant, ciliumName, true},
		{ciliumName, ciliumName, false},
		{"nftables", "nftables", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp, err := DataplaneNamed(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if dp.Name() != tc.name || dp.Mode() != tc.mode {
				t.Errorf("%s is named %q with mode %q; want %q and %q", tc.name, dp.Name(), dp.Mode(), tc.name, tc.mode)
			}
			if isShape := slices.Contains(Shapes, tc.name); isShape == slices.Contains(AllDataplanes, tc.name) {
				t.Errorf("%s: in Shapes %v, in AllDataplanes %v; want exactly one", tc.name, isShape, !isShape)
			}
			if got := dp.Capabilities().MasqueradesPods; got != tc.masquerades {
				t.Errorf("%s masquerades its Pods: %v; want %v", tc.name, got, tc.masquerades)
			}
		})
	}
}

func TestHostResolvConfPutsTheNodesSearchDomainsFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		search []string
		want   string
	}{
		{"None", nil, "nameserver 203.0.113.53\n"},
		{"CozyLocal", []string{"cozy.local"}, "search cozy.local\nnameserver 203.0.113.53\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hostResolvConf(tc.search); got != tc.want {
				t.Errorf("hostResolvConf(%v) = %q; want %q", tc.search, got, tc.want)
			}
		})
	}
}
