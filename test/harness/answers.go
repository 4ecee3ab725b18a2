package harness

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/miekg/dns"
)

// ARecords returns the addresses of the A records in r's answer section, in
// order; CNAMEs and other types are skipped.
func ARecords(r *dns.Msg) []netip.Addr {
	return addrRecords(r, dns.TypeA)
}

func addrRecords(r *dns.Msg, qtype uint16) []netip.Addr {
	if r == nil {
		return nil
	}
	var addrs []netip.Addr
	for _, rr := range r.Answer {
		var ip []byte
		switch rr := rr.(type) {
		case *dns.A:
			if qtype == dns.TypeA {
				ip = rr.A.To4()
			}
		case *dns.AAAA:
			if qtype == dns.TypeAAAA {
				ip = rr.AAAA.To16()
			}
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// AProbe is ready when the DNS server at server answers name's A query with
// NOERROR and exactly the addresses want, in any order. Poll it with [Poll]
// or [PollEvery] to wait for a change to be served; its error says what the
// server answered last.
func AProbe(server, name string, want ...netip.Addr) Probe {
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	return func(ctx context.Context) error {
		r, err := Exchange(ctx, server, name, dns.TypeA)
		if err != nil {
			return err
		}
		got := ARecords(r)
		slices.SortFunc(got, netip.Addr.Compare)
		if r.Rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
			return fmt.Errorf("%s A at %s: %s %v, want NOERROR %v", name, server, dns.RcodeToString[r.Rcode], got, want)
		}
		return nil
	}
}
