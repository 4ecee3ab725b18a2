package routeflag

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRoute(t *testing.T) {
	tests := []struct {
		in      string
		want    Route
		wantErr string
	}{
		{in: ":8080=ingress-nginx-controller.ingress-nginx.svc:80",
			want: Route{Name: ":8080", Listen: ":8080", Upstream: "ingress-nginx-controller.ingress-nginx.svc:80", HeaderPort: 80}},
		{in: ":8443=ingress-nginx-controller.ingress-nginx.svc:443,header-port=8443,name=https",
			want: Route{Name: "https", Listen: ":8443", Upstream: "ingress-nginx-controller.ingress-nginx.svc:443", HeaderPort: 8443}},
		{in: "[::1]:8080=[::1]:80",
			want: Route{Name: "[::1]:8080", Listen: "[::1]:8080", Upstream: "[::1]:80", HeaderPort: 80}},
		{in: ":8443=ingress:443,dest-addr=203.0.113.10",
			want: Route{Name: ":8443", Listen: ":8443", Upstream: "ingress:443", HeaderPort: 443, DestAddr: netip.MustParseAddr("203.0.113.10")}},
		{in: ":8443=ingress:443,dest-addr=2001:db8::10,name=v6",
			want: Route{Name: "v6", Listen: ":8443", Upstream: "ingress:443", HeaderPort: 443, DestAddr: netip.MustParseAddr("2001:db8::10")}},
		{in: " 127.0.0.1:0=10.0.0.1:443 ",
			want: Route{Name: "127.0.0.1:0", Listen: "127.0.0.1:0", Upstream: "10.0.0.1:443", HeaderPort: 443}},

		{in: "", wantErr: "empty route"},
		{in: ":8080", wantErr: "want LISTEN=UPSTREAM"},
		{in: ":8080=ingress", wantErr: `upstream: "ingress": address ingress: missing port in address`},
		{in: "8080=ingress:80", wantErr: `listen address: "8080": address 8080: missing port in address`},
		{in: ":8080=ingress:", wantErr: "missing port"},
		{in: ":8080=:80", wantErr: "missing host"},
		{in: ":http=ingress:80", wantErr: `port "http" is not a number`},
		{in: ":8080=ingress:80x", wantErr: `port "80x" is not a number`},
		{in: ":8080=ingress:0", wantErr: "port 0 out of range 1-65535"},
		{in: ":70000=ingress:80", wantErr: "port 70000 out of range 0-65535"},
		{in: "localhost:8080=ingress:80", wantErr: "host must be an IP address or empty"},
		{in: "1.2.3:8080=ingress:80", wantErr: "host must be an IP address or empty"},
		{in: "::1:8080=ingress:80", wantErr: "too many colons"},
		{in: ":8080=ingress:80,header-port=0", wantErr: "header-port: port 0 out of range 1-65535"},
		{in: ":8080=ingress:80,header-port=65536", wantErr: "header-port: port 65536 out of range 1-65535"},
		{in: ":8080=ingress:80,header-port=-1", wantErr: "header-port: port -1 out of range"},
		{in: ":8080=ingress:80,header-port=", wantErr: "header-port: missing port"},
		{in: ":8080=ingress:80,header-port=80,header-port=81", wantErr: `option "header-port" given twice`},
		{in: ":8080=ingress:80,colour=blue", wantErr: `unknown option "colour"`},
		{in: ":8080=ingress:80,name=", wantErr: "name is empty"},
		{in: ":8080=ingress:80,junk", wantErr: `option "junk": want key=value`},
		{in: ":8080=ingress:80,dest-addr=lb.example.com", wantErr: `dest-addr: "lb.example.com" is not an IP address`},
		{in: ":8080=ingress:80,dest-addr=", wantErr: `dest-addr: "" is not an IP address`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			back, err := Parse(got.String())
			if err != nil || back != got {
				t.Fatalf("String() %q does not parse back: %+v, %v", got.String(), back, err)
			}
		})
	}
}

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
		r, err := Parse(s)
		if err != nil {
			return
		}
		if r.Listen == "" || r.Upstream == "" || r.Name == "" {
			t.Fatalf("%q parsed into an incomplete route %+v", s, r)
		}
	})
}
