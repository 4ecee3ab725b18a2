package main

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/coredns-hairpin/hairpin/proxy"
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"
)

// TestRouteReaderKnowsEveryFlag: routeflag.FromContainer skips the value of
// every flag that takes one, so it must know which of the command's flags
// take none.
func TestRouteReaderKnowsEveryFlag(t *testing.T) {
	var o options
	fs := newFlagSet(&o)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		bf, ok := f.Value.(interface{ IsBoolFlag() bool })
		isBool := ok && bf.IsBoolFlag()
		if got := routeflag.IsBoolFlag(f.Name); got != isBool {
			t.Errorf("routeflag.IsBoolFlag(%q) = %v; the command's flag takes no value: %v", f.Name, got, isBool)
		}
	})
	if fs.Lookup(routeflag.Name) == nil || envName(routeflag.Name) != routeflag.Env {
		t.Errorf("the command's route flag is not --%s with env %s", routeflag.Name, routeflag.Env)
	}
	if n < 10 {
		t.Fatalf("the command has %d flags; want them all", n)
	}
}

// TestRouteReaderReadsWhatTheCommandServes: for every spelling the command
// accepts, routeflag.FromContainer yields the routes parseArgs configures.
func TestRouteReaderReadsWhatTheCommandServes(t *testing.T) {
	const a, b = ":8080=up:80", ":8443=up:443,name=https"
	cases := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"--route VALUE", []string{"--route", a, "--route", b}, nil},
		{"--route=VALUE", []string{"--route=" + a, "--route=" + b}, nil},
		{"-route VALUE and -route=VALUE", []string{"-route", a, "-route=" + b}, nil},
		{"after flags with values and a bool flag", []string{"--health-addr", ":9999", "--log-level=debug", "--version", "--route", a, "-max-conns", "7", "--route=" + b}, nil},
		{"the environment twin", nil, map[string]string{routeflag.Env: a + "\n  " + b}},
		{"a flag hides the environment twin", []string{"--route", a}, map[string]string{routeflag.Env: b}},
		{"nothing after the first argument that is not a flag", []string{"--route", a}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			o, err := parseArgs(tc.args, lookup, io.Discard)
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tc.args, err)
			}
			got, err := routeflag.FromContainer([]string{"/hairpin-proxy"}, append(slices.Clone(tc.args), "stray", "--route=:1=x:1"), lookup)
			if err != nil {
				t.Fatalf("FromContainer: %v", err)
			}
			if !slices.Equal(got, o.Config.Routes) || len(got) == 0 {
				t.Errorf("FromContainer read %v; the command serves %v", got, o.Config.Routes)
			}
		})
	}
	// Without a command the arguments follow the image's entrypoint.
	got, _ := routeflag.FromContainer(nil, []string{"--route", a}, nil)
	if want := []proxy.Route{{Name: ":8080", Listen: ":8080", Upstream: "up:80", HeaderPort: 80}}; !slices.Equal(got, want) {
		t.Errorf("FromContainer without a command = %v; want %v", got, want)
	}
}
