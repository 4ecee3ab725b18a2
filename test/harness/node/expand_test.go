package node

import "testing"

func TestExpandFollowsKubeletRules(t *testing.T) {
	vars := lookupIn(map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}, map[string]string{"A": "shadowed", "S": "svc"})
	for _, tc := range []struct{ in, want string }{
		{"$(A)", "alpha"},
		{"x$(A)y$(B)z", "xalphaybetaz"},
		{"$(S)", "svc"},
		{"$(EMPTY)|", "|"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"cost: 5$", "cost: 5$"},
		{"", ""},
	} {
		if got := expand(tc.in, vars); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
