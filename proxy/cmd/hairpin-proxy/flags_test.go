package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy"
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseArgs(t *testing.T) {
	const up = "ingress-nginx-controller.ingress-nginx.svc"
	withDefaults := func(mod func(*proxy.Config)) proxy.Config {
		c := proxy.DefaultConfig()
		mod(&c)
		return c
	}
	tests := []struct {
		name    string
		args    []string
		env     func(string) (string, bool)
		want    *proxy.Config
		wantErr string
	}{
		{
			name: "defaults with one route",
			args: []string{"--route", ":8080=" + up + ":80"},
			want: ptr(withDefaults(func(c *proxy.Config) {
				c.Routes = []proxy.Route{{Name: ":8080", Listen: ":8080", Upstream: up + ":80", HeaderPort: 80}}
			})),
		},
		{
			name: "every flag",
			args: []string{
				"--route=:8080=" + up + ":80", "--route", ":8443=" + up + ":443,header-port=443,name=https",
				"--proxy-protocol=2", "--dial-timeout=1s", "--idle-timeout=0", "--max-conns=0",
				"--drain-timeout=1m", "--lameduck=0s", "--health-addr=127.0.0.1:9999", "--ready-interval=250ms",
				"--log-format=json", "--log-level=debug",
			},
			want: &proxy.Config{
				Routes: []proxy.Route{
					{Name: ":8080", Listen: ":8080", Upstream: up + ":80", HeaderPort: 80},
					{Name: "https", Listen: ":8443", Upstream: up + ":443", HeaderPort: 443},
				},
				ProxyProtocol: 2, DialTimeout: time.Second, IdleTimeout: 0, MaxConns: 0,
				DrainTimeout: time.Minute, Lameduck: 0, HealthAddr: "127.0.0.1:9999", ReadyInterval: 250 * time.Millisecond,
			},
		},
		{
			name: "environment twins, whitespace-separated routes",
			env: env(
				"HAIRPIN_PROXY_ROUTE", ":8080="+up+":80\n  :8443="+up+":443,name=https",
				"HAIRPIN_PROXY_PROXY_PROTOCOL", "2",
				"HAIRPIN_PROXY_DRAIN_TIMEOUT", "3s",
				"HAIRPIN_PROXY_MAX_CONNS", "7",
			),
			want: ptr(withDefaults(func(c *proxy.Config) {
				c.Routes = []proxy.Route{
					{Name: ":8080", Listen: ":8080", Upstream: up + ":80", HeaderPort: 80},
					{Name: "https", Listen: ":8443", Upstream: up + ":443", HeaderPort: 443},
				}
				c.ProxyProtocol = 2
				c.DrainTimeout = 3 * time.Second
				c.MaxConns = 7
			})),
		},
		{
			name: "flags win over environment",
			args: []string{"--route", ":9000=a:1", "--drain-timeout", "1s"},
			env:  env("HAIRPIN_PROXY_ROUTE", ":8080=b:2", "HAIRPIN_PROXY_DRAIN_TIMEOUT", "9s"),
			want: ptr(withDefaults(func(c *proxy.Config) {
				c.Routes = []proxy.Route{{Name: ":9000", Listen: ":9000", Upstream: "a:1", HeaderPort: 1}}
				c.DrainTimeout = time.Second
			})),
		},

		{name: "no routes", wantErr: "no routes"},
		{name: "route missing port", args: []string{"--route", ":8080=ingress"}, wantErr: `invalid value ":8080=ingress" for flag -route: route ":8080=ingress": upstream: "ingress": address ingress: missing port in address`},
		{name: "route unparsable listen", args: []string{"--route", "nonsense=ingress:80"}, wantErr: `route "nonsense=ingress:80": listen address: "nonsense"`},
		{name: "header port out of range", args: []string{"--route", ":8080=ingress:80,header-port=99999"}, wantErr: "header-port: port 99999 out of range 1-65535"},
		{name: "two routes on one listen address", args: []string{"--route", ":8080=a:80", "--route", ":8080=b:80,name=b"}, wantErr: `route ":8080=b:80,name=b": listen address :8080 already used by route ":8080=a:80"`},
		{name: "wildcard and specific listen collide", args: []string{"--route", ":8080=a:80", "--route", "127.0.0.1:8080=b:80"}, wantErr: "listen address 127.0.0.1:8080 already used"},
		{name: "duplicate route name", args: []string{"--route", ":8080=a:80,name=x", "--route", ":8081=b:80,name=x"}, wantErr: `name "x" used by two routes`},
		{name: "upstream is own listen address (loopback)", args: []string{"--route", ":8080=127.0.0.1:8080"}, wantErr: "upstream 127.0.0.1:8080 is the route's own listen address"},
		{name: "upstream is own listen address (localhost)", args: []string{"--route", "127.0.0.1:8080=localhost:8080"}, wantErr: "is the route's own listen address"},
		{name: "upstream is own listen address (same IP)", args: []string{"--route", "[::1]:8080=[::1]:8080"}, wantErr: "is the route's own listen address"},
		{name: "upstream is another route", args: []string{"--route", ":8080=127.0.0.1:8081", "--route", ":8081=b:80"}, wantErr: `upstream 127.0.0.1:8081 is the listen address of route ":8081=b:80"`},
		{name: "dest-addr unspecified", args: []string{"--route", ":8080=a:80,dest-addr=0.0.0.0"}, wantErr: `route ":8080=a:80,dest-addr=0.0.0.0": dest-addr: 0.0.0.0: unspecified address`},
		{name: "dest-addr with zone", args: []string{"--route", ":8080=a:80,dest-addr=fe80::1%eth0"}, wantErr: "dest-addr: fe80::1%eth0: a zone cannot be written in a PROXY header"},
		{name: "dest-addr IPv6 on IPv4 listener", args: []string{"--route", "127.0.0.1:8080=a:80,dest-addr=2001:db8::1"}, wantErr: "dest-addr: 2001:db8::1 is IPv6 but listen address 127.0.0.1:8080 only accepts IPv4 clients"},
		{name: "unknown protocol version", args: []string{"--route", ":8080=a:80", "--proxy-protocol", "3"}, wantErr: "proxy-protocol: unknown version 3 (want 1 or 2)"},
		{name: "protocol version not a number", args: []string{"--route", ":8080=a:80", "--proxy-protocol", "v2"}, wantErr: `invalid value "v2" for flag -proxy-protocol: "v2" is not an integer`},
		{name: "negative drain timeout", args: []string{"--route", ":8080=a:80", "--drain-timeout=-1s"}, wantErr: `invalid value "-1s" for flag -drain-timeout: negative duration -1s`},
		{name: "negative idle timeout", args: []string{"--route", ":8080=a:80", "--idle-timeout=-5m"}, wantErr: "flag -idle-timeout: negative duration"},
		{name: "negative lameduck", args: []string{"--route", ":8080=a:80", "--lameduck=-1ms"}, wantErr: "flag -lameduck: negative duration"},
		{name: "the removed in-kernel relay says to drop it", args: []string{"--route", ":8080=a:80", "--kernel-relay"}, wantErr: "--kernel-relay was removed (the in-kernel relay of pre-release builds): delete it from the proxy's arguments (chart: proxy.extraArgs)"},
		{name: "the removed in-kernel relay with a value says to drop it", args: []string{"--route", ":8080=a:80", "--kernel-relay=true"}, wantErr: "--kernel-relay was removed"},
		{name: "zero dial timeout", args: []string{"--route", ":8080=a:80", "--dial-timeout=0"}, wantErr: "dial-timeout: must be greater than zero"},
		{name: "zero ready interval", args: []string{"--route", ":8080=a:80", "--ready-interval=0s"}, wantErr: "ready-interval: must be greater than zero"},
		{name: "bad duration", args: []string{"--route", ":8080=a:80", "--dial-timeout=5"}, wantErr: `flag -dial-timeout: invalid duration "5"`},
		{name: "negative max conns", args: []string{"--route", ":8080=a:80", "--max-conns=-1"}, wantErr: "max-conns: negative value -1"},
		{name: "bad health addr", args: []string{"--route", ":8080=a:80", "--health-addr=9090"}, wantErr: "health-addr: \"9090\""},
		{name: "health addr collides with route", args: []string{"--route", ":9090=a:80"}, wantErr: "collides with health-addr :9090"},
		{name: "bad log format", args: []string{"--route", ":8080=a:80", "--log-format=xml"}, wantErr: `flag -log-format: unknown value "xml" (want text or json)`},
		{name: "bad log level", args: []string{"--route", ":8080=a:80", "--log-level=loud"}, wantErr: `unknown value "loud"`},
		{name: "unknown flag", args: []string{"--route", ":8080=a:80", "--colour"}, wantErr: "flag provided but not defined: -colour"},
		{name: "stray argument", args: []string{"--route", ":8080=a:80", "extra"}, wantErr: `unexpected argument "extra"`},
		{name: "bad env route named", env: env("HAIRPIN_PROXY_ROUTE", ":8080=a:80 :8081=b"), wantErr: `HAIRPIN_PROXY_ROUTE: route ":8081=b": upstream`},
		{name: "bad env duration named", args: []string{"--route", ":8080=a:80"}, env: env("HAIRPIN_PROXY_DRAIN_TIMEOUT", "-3s"), wantErr: `HAIRPIN_PROXY_DRAIN_TIMEOUT="-3s": negative duration -3s`},
		{name: "bad env protocol named", args: []string{"--route", ":8080=a:80"}, env: env("HAIRPIN_PROXY_PROXY_PROTOCOL", "3"), wantErr: "proxy-protocol: unknown version 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lookup := tc.env
			if lookup == nil {
				lookup = env()
			}
			var out bytes.Buffer
			got, err := parseArgs(tc.args, lookup, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseArgs: %v", err)
			}
			if !reflect.DeepEqual(got.Config, *tc.want) {
				t.Fatalf("config\n got %+v\nwant %+v", got.Config, *tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestHelpDocumentsEveryFlagWithEnvAndDefault(t *testing.T) {
	var out bytes.Buffer
	_, err := parseArgs([]string{"--help"}, env(), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	help := out.String()
	for _, want := range []string{
		"--route " + routeflag.Syntax, "HAIRPIN_PROXY_ROUTE",
		"--proxy-protocol", "HAIRPIN_PROXY_PROXY_PROTOCOL", `default "1"`,
		"--dial-timeout", "HAIRPIN_PROXY_DIAL_TIMEOUT", `default "5s"`,
		"--idle-timeout", "HAIRPIN_PROXY_IDLE_TIMEOUT", `default "10m0s"`,
		"--max-conns", "HAIRPIN_PROXY_MAX_CONNS", fmt.Sprintf("default %q", strconv.Itoa(proxy.DefaultMaxConns())), "RLIMIT_NOFILE",
		"--drain-timeout", "HAIRPIN_PROXY_DRAIN_TIMEOUT", `default "25s"`,
		"--lameduck", "HAIRPIN_PROXY_LAMEDUCK",
		"--health-addr", "HAIRPIN_PROXY_HEALTH_ADDR", `default ":9090"`,
		"--ready-interval", "HAIRPIN_PROXY_READY_INTERVAL",
		"--log-format", "HAIRPIN_PROXY_LOG_FORMAT", `default "text"`,
		"--log-level", "HAIRPIN_PROXY_LOG_LEVEL", `default "info"`,
		"--version",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestVersionFlagSkipsValidation(t *testing.T) {
	o, err := parseArgs([]string{"--version"}, env(), &bytes.Buffer{})
	if err != nil || !o.Version {
		t.Fatalf("got %+v, %v", o, err)
	}
}
