package proxy

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// proxyTrouble matches what nginx writes when a connection's PROXY header
// is missing or malformed.
var proxyTrouble = regexp.MustCompile(`broken header|PROXY protocol`)

// settledLog returns the error log once StartNginx's own readiness checks,
// which connect to each listener and close without a header, have been
// logged: one complaint per listener.
func settledLog(t *testing.T, ngx *harness.Nginx) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := harness.Poll(ctx, func(context.Context) error {
		if n := len(proxyTrouble.FindAllString(ngx.ErrorLog(), -1)); n < 2 {
			return fmt.Errorf("%d of the harness's 2 header-less checks logged", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	return ngx.ErrorLog()
}

// TestReadinessProbesLeaveNginxErrorLogClean runs the background upstream
// check against a real nginx with proxy_protocol on a plain and a TLS
// listener, as ingress-nginx configures them, for many probe intervals in
// both header versions. nginx's error log (at info, which is more verbose
// than ingress-nginx's default notice) must hold no PROXY-protocol
// complaint, and nothing above info that names a client connection.
func TestReadinessProbesLeaveNginxErrorLogClean(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ngx := harness.StartNginx(t, harness.NginxOptions{ErrorLogLevel: "info"})
			before := settledLog(t, ngx)
			cfg := DefaultConfig()
			cfg.ProxyProtocol = version
			cfg.HealthAddr = ""
			cfg.Lameduck = 0
			cfg.ReadyInterval = 20 * time.Millisecond
			cfg.Routes = []Route{
				{Name: "http", Listen: "127.0.0.1:0", Upstream: ngx.HTTPAddr},
				{Name: "https", Listen: "127.0.0.1:0", Upstream: ngx.TLSAddr},
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := harness.Poll(ctx, func(context.Context) error {
				if !s.ready() {
					return fmt.Errorf("proxy not ready")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * cfg.ReadyInterval) // ~50 probes per listener
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			// nginx logs a connection when it closes it; give the last
			// probes time to be logged.
			time.Sleep(200 * time.Millisecond)
			log := strings.TrimPrefix(ngx.ErrorLog(), before)
			for _, line := range strings.Split(log, "\n") {
				if proxyTrouble.MatchString(line) {
					t.Errorf("nginx logged PROXY-protocol trouble: %s", line)
				}
				if strings.Contains(line, "client:") && !strings.Contains(line, "[info]") {
					t.Errorf("nginx logged a client connection above info: %s", line)
				}
			}
			if !strings.Contains(log, "client:") {
				t.Fatalf("nginx logged no probe connection at all at info; is the check reaching it?\n%s", log)
			}
		})
	}
}
