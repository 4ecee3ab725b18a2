package rules

import "testing"

func TestMatchZoneIsTheLongestZoneOnALabelBoundary(t *testing.T) {
	zones := []string{".", "example.com.", "a.example.com."}
	cases := []struct{ name, want string }{
		{"x.a.example.com.", "a.example.com."},
		{"a.example.com.", "a.example.com."},
		{"ba.example.com.", "example.com."},
		{"*.example.com.", "example.com."},
		{"example.com.", "example.com."},
		{"notexample.com.", "."},
		{"other.org.", "."},
	}
	for _, tc := range cases {
		if got := MatchZone(zones, tc.name); got != tc.want {
			t.Errorf("MatchZone(%q) = %q; want %q", tc.name, got, tc.want)
		}
	}
	if got := MatchZone([]string{"example.com."}, "notexample.com."); got != "" {
		t.Errorf("MatchZone outside every zone = %q; want none", got)
	}
	if InZones(nil, "example.com.") {
		t.Error("no zones contain a name")
	}
}

func BenchmarkMatchZone(b *testing.B) {
	zones := []string{"example.com.", "example.org.", "tenant.example.net."}
	b.ReportAllocs()
	for b.Loop() {
		MatchZone(zones, "app.tenant.example.net.")
	}
}
