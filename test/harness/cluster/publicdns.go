package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// publicDNS is the world's DNS, outside: the public names of the cluster's
// hosts, pointing at their LoadBalancer IPs. The node's resolv.conf names
// it, so the cluster's CoreDNS forwards to it. It is a CoreDNS (our binary,
// with no kubernetes plugin and so no hairpin) serving a hosts file that it
// re-reads every second, and a root zone of nothing but its SOA for every
// other name: NXDOMAIN, as the world answers a name nobody has (a Pod's
// search-path expansion, app.example.com.cozy.local), where the hosts
// plugin alone answers SERVFAIL, on which dig's search stops.
type publicDNS struct {
	hostsPath string
	proc      *harness.Process

	mu      sync.Mutex
	records map[string]netip.Addr
}

func startPublicDNS(t testing.TB, c *Cluster, records map[string]netip.Addr) (*publicDNS, error) {
	p := &publicDNS{hostsPath: filepath.Join(c.dir, "public.hosts"), records: map[string]netip.Addr{}}
	for name, ip := range records {
		p.records[dns.Fqdn(name)] = ip
	}
	if err := p.write(); err != nil {
		return nil, err
	}
	rootZone := filepath.Join(c.dir, "public.root.zone")
	if err := os.WriteFile(rootZone, []byte(publicRootZone), 0o644); err != nil {
		return nil, fmt.Errorf("cluster: public DNS: %w", err)
	}
	corefile := fmt.Sprintf(". {\n    bind %s\n    hosts %s {\n        reload 1s\n        fallthrough\n    }\n    file %s .\n    errors\n}\n", PublicDNSIP, p.hostsPath, rootZone)
	path := filepath.Join(c.dir, "public.Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		return nil, fmt.Errorf("cluster: public DNS: %w", err)
	}
	p.proc = harness.StartCmd(t, "public-dns", c.topo.outside.Command(harness.RequireBinary(t, "coredns"), "-conf", path, "-dns.port", "53"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	probe := func(ctx context.Context) error {
		_, err := c.OutsideExchange(ctx, PublicDNSIP.String()+":53", "localhost.", dns.TypeA)
		return err
	}
	if err := p.proc.Ready(ctx, probe); err != nil {
		return nil, fmt.Errorf("cluster: public DNS: %w", err)
	}
	return p, nil
}

// publicRootZone is the public DNS's root zone: its SOA, which an NXDOMAIN
// carries, and nothing else.
const publicRootZone = ". 60 IN SOA ns.public-dns. hostmaster.public-dns. 1 7200 3600 1209600 60\n" +
	". 60 IN NS ns.public-dns.\n"

// Set points name at ip in the public DNS (served within about a second).
func (p *publicDNS) Set(name string, ip netip.Addr) error {
	p.mu.Lock()
	p.records[dns.Fqdn(name)] = ip
	p.mu.Unlock()
	return p.write()
}

// Delete removes name from the public DNS.
func (p *publicDNS) Delete(name string) error {
	p.mu.Lock()
	delete(p.records, dns.Fqdn(name))
	p.mu.Unlock()
	return p.write()
}

func (p *publicDNS) write() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var lines []string
	for name, ip := range p.records {
		lines = append(lines, ip.String()+" "+name)
	}
	sort.Strings(lines)
	tmp := p.hostsPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("cluster: public DNS: %w", err)
	}
	return os.Rename(tmp, p.hostsPath)
}
