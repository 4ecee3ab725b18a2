package netns

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Veth creates a veth pair with one end, aName, in a and the other, bName, in
// b, both up. The pair is created inside a, so it never exists in the root
// namespace, not even for a moment.
func Veth(a *NS, aName string, b *NS, bName string) error {
	if _, err := a.IP("link", "add", aName, "type", "veth", "peer", "name", bName, "netns", b.Name); err != nil {
		return err
	}
	if _, err := a.IP("link", "set", aName, "up"); err != nil {
		return err
	}
	_, err := b.IP("link", "set", bName, "up")
	return err
}

// AddAddr assigns prefix (an address with its prefix length) to dev.
func (n *NS) AddAddr(dev string, prefix netip.Prefix) error {
	_, err := n.IP("addr", "add", prefix.String(), "dev", dev)
	return err
}

// AddRoute adds a route: `ip route add ARGS...`, e.g. ("default", "via", gw).
func (n *NS) AddRoute(args ...string) error {
	_, err := n.IP(append([]string{"route", "add"}, args...)...)
	return err
}

// Links returns the names of the namespace's network interfaces.
func (n *NS) Links() ([]string, error) {
	out, err := exec.Command("ip", "-n", n.Name, "-o", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("netns %s: links: %w", n.Name, err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		names = append(names, name)
	}
	return names, nil
}
