package kubectlhairpin

import (
	"fmt"
	"strings"
	"testing"
)

// TestReadCorefileFollowsImports: the rewrite rules of each server block,
// with the imports of mounted ConfigMaps and snippets spliced in, where
// each is written and who wrote it; what cannot be read is an error.
func TestReadCorefileFollowsImports(t *testing.T) {
	const conf = "/etc/coredns/Corefile"
	file := func(key, text string) mountedFile {
		return mountedFile{configMap: "kube-system/coredns", key: key, text: text}
	}
	custom := func(key, text string) mountedFile {
		return mountedFile{configMap: "kube-system/coredns-custom", key: key, text: text}
	}
	for _, tc := range []struct {
		name   string
		files  map[string]mountedFile
		opaque []string
		// want is per block: its zones, then "KEY:LINE:AUTHOR" per rule.
		want    []string
		wantErr string
	}{
		{name: "ImportOfAMountedGlob", files: map[string]mountedFile{
			conf:                                     file("Corefile", ".:53 {\n    errors\n    import custom/*.override\n}\nimport /etc/coredns/custom/*.server\n"),
			"/etc/coredns/custom/a.override":         custom("a.override", "rewrite name a.example.com b.example.com\n"),
			"/etc/coredns/custom/ouroboros.override": custom("ouroboros.override", "rewrite name c.example.com d.\n"),
			"/etc/coredns/custom/x.server":           custom("x.server", "example.org:53 {\n  rewrite name exact x.example.org y.\n}\n"),
		}, want: []string{". a.override:1: ouroboros.override:1:ouroboros", "example.org. x.server:2:"}},
		{name: "Snippet", files: map[string]mountedFile{
			conf: file("Corefile", "(leftovers) {\n    rewrite name a.example.com b.\n}\nexample.com:53 tenant.org:5353 {\n    import leftovers\n}\n"),
		}, want: []string{"example.com. tenant.org. Corefile:2:"}},
		{name: "OuroborosMarkersAndHairpinProxyMark", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n    rewrite name a.example.com hairpin-proxy.hairpin-proxy.svc.cluster.local # Added by hairpin-proxy\n    # === BEGIN ouroboros (do not edit by hand) ===\n    rewrite name b.example.com o.\n    # === END ouroboros ===\n    rewrite name c.example.com other.\n}\n"),
		}, want: []string{". Corefile:2:hairpin-proxy Corefile:4:ouroboros Corefile:6:"}},
		{name: "OtherFieldsAreNotKept", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n    rewrite type ANY HINFO\n    rewrite stop {\n        name regex (.*)\\.example\\.com\\. {1}.x.\n        answer auto\n    }\n}\n"),
		}, want: []string{". Corefile:3:"}},
		{name: "ImportOfASecretVolume", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n    import /etc/coredns/secret/*.override\n}\n"),
		}, opaque: []string{"/etc/coredns/secret"}, wantErr: "reads a volume that is not a ConfigMap"},
		{name: "ImportOfAMissingFile", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n    import /etc/coredns/extra.conf\n}\n"),
		}, wantErr: "no such file is mounted"},
		{name: "SelfImport", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n}\nimport Corefile\n"),
		}, wantErr: "more than 100 imports"},
		{name: "UnclosedBlock", files: map[string]mountedFile{
			conf: file("Corefile", ".:53 {\n    errors\n"),
		}, wantErr: "is not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, _, err := readCorefile(conf, podFiles{files: tc.files, opaque: tc.opaque})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range blocks {
				var words []string
				for _, k := range b.Keys {
					words = append(words, k.Zone)
				}
				for _, r := range b.Rewrites {
					words = append(words, fmt.Sprintf("%s:%d:%s", r.Key, r.Line, r.Author))
				}
				got = append(got, strings.Join(words, " "))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("blocks %q; want %q", got, tc.want)
			}
		})
	}
}

// TestRewriteAppliesInTheBlockThatServesTheHost: CoreDNS gives a query to
// the block of the longest zone on its port, so a rule in the root block
// does not reach a host that a more specific block serves.
func TestRewriteAppliesInTheBlockThatServesTheHost(t *testing.T) {
	blocks := []ServerBlock{
		{Keys: []ServerKey{{".", "53"}}},
		{Keys: []ServerKey{{"example.com.", "53"}}},
		{Keys: []ServerKey{{"example.com.", "5353"}, {"tenant.org.", "5353"}}},
	}
	for _, tc := range []struct {
		block int
		host  string
		want  bool
	}{
		{0, "app.other.org.", true},
		{0, "app.example.com.", false},
		{1, "app.example.com.", true},
		{1, "*.example.com.", true},
		{2, "app.example.com.", true},
		{2, "app.other.org.", false},
	} {
		if got := servesAny(blocks, tc.block, []string{tc.host}); got != tc.want {
			t.Errorf("block %d serves %s: %v; want %v", tc.block, tc.host, got, tc.want)
		}
	}
}
