package main

import (
	"io"
	"strings"
	"testing"
)

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
