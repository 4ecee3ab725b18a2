package dataplane_test

import "testing"

func TestBrokenHeadersReadsMultilineEntries(t *testing.T) {
	log := `2026/12/07 14:47:53 [notice] 10#10: nginx/1.22.1
2026/12/07 14:47:59 [error] 10#10: *10 broken header: "GET / HTTP/1.1
Host: keycloak.example.org
Accept: */*

" while reading PROXY protocol, client: 198.18.1.243, server: 0.0.0.0:80
2026/12/07 14:48:01 [error] 10#10: *11 broken header: "GET / HTTP/1.1
" while reading PROXY protocol, client: 198.18.0.10, server: 0.0.0.0:80
`
	for _, tc := range []struct {
		name, addr string
		want       int
	}{
		{"TheClientItNames", "198.18.1.243", 1},
		{"AnotherClient", "198.18.0.10", 1},
		{"AnyClient", "", 2},
		{"NotAPrefixOfAnother", "198.18.1.24", 0},
		{"NoSuchClient", "198.18.1.9", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := brokenHeaders(log, tc.addr); len(got) != tc.want {
				t.Errorf("brokenHeaders(%q) = %d entries %q; want %d", tc.addr, len(got), got, tc.want)
			}
		})
	}
}
