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
