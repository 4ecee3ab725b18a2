package plugincfg

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestParseRejectsBadLinesNamingTheLine(t *testing.T) {
	cases := []struct {
		name, cfg, wantErr string
	}{
		{"no colon", "log:log\ncache\n", "line 2: \"cache\" is not name:package"},
		{"empty package", "# c\n\nlog:\n", "line 3: invalid package \"\""},
		{"bad name", "Log:log\n", "line 1: invalid plugin name \"Log\""},
		{"space in package", "log:lo g\n", "line 1: invalid package \"lo g\""},
		{"duplicate name", "log:log\ncache:cache\nlog:other/log\n", "line 3: duplicate plugin \"log\" (first on line 1)"},
		{"duplicate package", "log:log\nlog2:log\n", "line 2: duplicate package"},
		{"nothing listed", "# only comments\n", "no plugins listed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseResolvesPackages(t *testing.T) {
	got, err := Parse(strings.NewReader("# comment\nprometheus:metrics\n\non:github.com/coredns/caddy/onevent\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Plugin{
		{Name: "prometheus", Package: "github.com/coredns/coredns/plugin/metrics", Line: 2},
		{Name: "on", Package: "github.com/coredns/caddy/onevent", Line: 4},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Parse() = %+v, want %+v", got, want)
	}
}

// TestGeneratedMainIsCurrent fails when plugin.cfg changed without
// `make generate`.
func TestGeneratedMainIsCurrent(t *testing.T) {
	cfg, err := os.ReadFile("../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Generate("main", bytes.NewReader(cfg))
	if err != nil {
		t.Fatalf("plugin.cfg: %v", err)
	}
	got, err := os.ReadFile("../coredns/zplugin.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("build/coredns/zplugin.go is stale: run `make generate` after editing plugin.cfg")
	}
}

// TestPluginCfgPlacesHairpinImmediatelyBeforeCache: after rewrite, autopath
// and acl, which must still apply to hairpin hosts; immediately before
// cache, so that no cached answer hides a change; before every backend.
func TestPluginCfgPlacesHairpinImmediatelyBeforeCache(t *testing.T) {
	f, err := os.Open("../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plugins, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, p := range plugins {
		pos[p.Name] = i
	}
	hp, ok := pos["hairpin"]
	if !ok {
		t.Fatal("plugin.cfg does not list hairpin")
	}
	for _, before := range []string{"rewrite", "autopath", "acl"} {
		if pos[before] >= hp {
			t.Errorf("%s must come before hairpin", before)
		}
	}
	if c, ok := pos["cache"]; !ok || c != hp+1 {
		t.Errorf("cache must come immediately after hairpin (hairpin at %d, cache at %d)", hp, c)
	}
	for _, after := range []string{"hosts", "kubernetes", "forward"} {
		if pos[after] <= hp {
			t.Errorf("%s must come after hairpin", after)
		}
	}
}
