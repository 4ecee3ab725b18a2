package kubectlhairpin

import (
	"errors"
	"strings"
	"testing"
)

// TestRewriteCoversHosts: each form of CoreDNS's name rewrite, as its
// arguments are written after "rewrite", matched against exact and
// wildcard hosts as CoreDNS v1.15.0 matches query names
// (coredns/coredns plugin/rewrite/name.go): lowercase FQDNs, FROM
// normalised except for regex.
func TestRewriteCoversHosts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rule    string
		covers  []string
		misses  []string
		wantErr bool
	}{
		{name: "ImplicitExact", rule: "name app.example.com proxy.ns.svc.cluster.local.",
			covers: []string{"app.example.com.", "*.example.com."}, misses: []string{"www.app.example.com.", "example.com.", "*.app.example.com."}},
		{name: "ExactIsCaseInsensitive", rule: "name exact App.Example.COM. proxy.ns.svc.cluster.local.",
			covers: []string{"app.example.com."}, misses: []string{"*.other.com."}},
		{name: "ExactWithAnswerAuto", rule: "name exact app.example.com proxy.ns.svc.cluster.local answer auto",
			covers: []string{"app.example.com."}},
		{name: "StopFlag", rule: "stop name app.example.com proxy.ns.svc.cluster.local.",
			covers: []string{"app.example.com."}},
		{name: "ContinueFlag", rule: "continue name exact app.example.com proxy.ns.svc.cluster.local.",
			covers: []string{"app.example.com."}},
		// Normalize gives the prefix its closing dot: "app" is "app.".
		{name: "PrefixIsALabel", rule: "name prefix app proxy",
			covers: []string{"app.example.com.", "*.example.com."}, misses: []string{"apple.example.com."}},
		{name: "PrefixThroughTheZone", rule: "name prefix app.example. proxy.",
			covers: []string{"app.example.com.", "*.example.com."}, misses: []string{"app.other.com.", "*.other.com.", "*.sub.example.com."}},
		{name: "Suffix", rule: "name suffix .example.com proxy.ns.svc.cluster.local answer auto",
			covers: []string{"app.example.com.", "*.example.com.", "*.a.example.com."}, misses: []string{"example.com.", "app.example.org.", "*.example.org."}},
		{name: "SuffixInsideTheWildcardLabel", rule: "name suffix -api.example.com. proxy.",
			covers: []string{"shop-api.example.com.", "*.example.com."}, misses: []string{"shop.example.com.", "*.x.example.com."}},
		{name: "SuffixOfTheZone", rule: "name suffix com. net.",
			covers: []string{"*.example.com.", "app.example.com."}, misses: []string{"*.example.org."}},
		// "example" is "example.", which the wildcard's label can end with.
		{name: "Substring", rule: "name substring example proxy",
			covers: []string{"app.example.com.", "*.example.com.", "*.other.org."}, misses: []string{"app.examples.com.", "example-app.com."}},
		{name: "SubstringOfTheZone", rule: "name substring .example.com. proxy.",
			covers: []string{"app.example.com.", "*.example.com.", "*.a.example.com."}, misses: []string{"*.example.org.", "app.myexample.com."}},
		{name: "SubstringAcrossTheLabel", rule: "name substring -v1.example.com. proxy.",
			covers: []string{"shop-v1.example.com.", "*.example.com."}, misses: []string{"shop.example.com."}},
		{name: "Regex", rule: `name regex (.*)\.example\.com\. {1}.proxy.ns.svc.cluster.local. answer auto`,
			covers: []string{"app.example.com.", "*.example.com.", "*.a.example.com."}, misses: []string{"app.example.org.", "*.example.org."}},
		{name: "RegexAnchoredToOneName", rule: `name regex ^app\.example\.com\.$ proxy.`,
			covers: []string{"app.example.com.", "*.example.com."}, misses: []string{"www.example.com.", "*.other.com."}},
		{name: "RegexWithMetadata", rule: `name regex (.*)\.example\.com\. {1}.{/kubernetes/client-namespace}.svc.cluster.local metadata`,
			covers: []string{"app.example.com."}},
		{name: "RegexWithAnswerName", rule: `name regex (.*)\.example\.com\. {1}.proxy. answer name (.*)\.proxy\. {1}.example.com.`,
			covers: []string{"*.example.com."}},
		{name: "BlockForm", rule: `stop name regex (.*)\.example\.com\. {1}.proxy. answer name (.*)\.proxy\. {1}.example.com.`,
			covers: []string{"shop.example.com."}},
		{name: "UnknownMatchType", rule: "name glob *.example.com proxy.", wantErr: true},
		{name: "BadRegex", rule: "name regex (app proxy.", wantErr: true},
		{name: "TooFewArguments", rule: "name app.example.com", wantErr: true},
		{name: "StopWithoutRule", rule: "stop", wantErr: true},
		{name: "AnswerWithoutAnswerWord", rule: "name exact a.example.com b.example.com auto", wantErr: true},
		{name: "AutoWithAnswerName", rule: "name regex (.*) {1} answer auto answer name a b", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRewrite(strings.Fields(tc.rule))
			if tc.wantErr {
				if err == nil || errors.Is(err, errNoNameRewrite) {
					t.Fatalf("parseRewrite(%q) = %+v, %v; want an error", tc.rule, r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseRewrite(%q): %v", tc.rule, err)
			}
			for _, h := range tc.covers {
				if !r.covers(h) {
					t.Errorf("%q does not cover %s", tc.rule, h)
				}
			}
			for _, h := range tc.misses {
				if r.covers(h) {
					t.Errorf("%q covers %s", tc.rule, h)
				}
			}
		})
	}
}

// TestRewriteOfOtherFieldsIsNoNameRewrite: rules that leave the name alone
// are valid and are not name rewrites.
func TestRewriteOfOtherFieldsIsNoNameRewrite(t *testing.T) {
	for _, rule := range []string{"type ANY HINFO", "continue class CH IN", "ttl app.example.com. 30", "edns0 local set 0xffee hello", "cname exact a. b.", "rcode servfail nxdomain"} {
		if _, err := parseRewrite(strings.Fields(rule)); !errors.Is(err, errNoNameRewrite) {
			t.Errorf("parseRewrite(%q): %v; want errNoNameRewrite", rule, err)
		}
	}
}
