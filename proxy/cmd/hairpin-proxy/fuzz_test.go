package main

import (
	"io"
	"strings"
	"testing"
)

// FuzzParseRoute feeds arbitrary --route values: each is refused with an
// error or yields a route whose parts are consistent; nothing panics.
func FuzzParseRoute(f *testing.F) {
	for _, seed := range []string{
		":8080=ingress-nginx-controller.ingress-nginx.svc.cluster.local.:80,name=http",
		"[::1]:8443=[::1]:443,header-port=443,dest-addr=203.0.113.7",
		"0.0.0.0:0=a:1", "=", ":80=:80", ":1=x:2,bogus=1", ":1=x:2,,", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRoute(s)
		if err != nil {
			return
		}
		if r.Listen == "" || r.Upstream == "" || r.Name == "" {
			t.Fatalf("%q parsed into an incomplete route %+v", s, r)
		}
	})
}

// FuzzParseArgs feeds arbitrary command lines and environments.
func FuzzParseArgs(f *testing.F) {
	f.Add("--route=:8080=upstream:80 --max-conns=10 --idle-timeout=1m", "HAIRPIN_PROXY_ROUTE=:9=a:1")
	f.Add("--proxy-protocol 3", "")
	f.Add("--dial-timeout=-1s --log-format xml", "HAIRPIN_PROXY_MAX_CONNS=x")
	f.Fuzz(func(t *testing.T, args, env string) {
		vars := map[string]string{}
		for _, kv := range strings.Fields(env) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
		_, _ = parseArgs(strings.Fields(args), lookup, io.Discard)
	})
}
