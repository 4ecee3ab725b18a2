package node

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// resolvConf renders the Pod's /etc/resolv.conf per its dnsPolicy and
// dnsConfig, as kubelet's dns.Configurer does.
func (n *Node) resolvConf(pod *corev1.Pod) string {
	host := parseResolvConf(n.cfg.HostResolvConf)
	var rc resolv
	switch policy := pod.Spec.DNSPolicy; {
	case policy == corev1.DNSNone:
	case policy == corev1.DNSDefault,
		pod.Spec.HostNetwork && policy != corev1.DNSClusterFirstWithHostNet:
		rc = host
	default: // ClusterFirst, ClusterFirstWithHostNet, unset
		d := n.cfg.ClusterDomain
		rc = resolv{
			nameservers: []string{n.cfg.ClusterDNS.String()},
			searches:    append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, host.searches...),
			options:     []string{"ndots:5"},
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.nameservers = appendNew(rc.nameservers, c.Nameservers...)
		rc.searches = appendNew(rc.searches, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			rc.options = setOption(rc.options, opt)
		}
	}
	return rc.String()
}

// resolv is a parsed resolv.conf.
type resolv struct {
	nameservers, searches, options []string
}

func parseResolvConf(s string) resolv {
	var rc resolv
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.nameservers = append(rc.nameservers, f[1])
		case "search", "domain":
			rc.searches = f[1:]
		case "options":
			for _, o := range f[1:] {
				rc.options = setOption(rc.options, o)
			}
		}
	}
	return rc
}

func (rc resolv) String() string {
	var b strings.Builder
	if len(rc.searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.searches, " "))
	}
	for _, ns := range rc.nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.options, " "))
	}
	return b.String()
}

// appendNew appends the values not in list yet.
func appendNew(list []string, values ...string) []string {
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// setOption adds opt ("name" or "name:value"), replacing an option of the
// same name.
func setOption(opts []string, opt string) []string {
	name, _, _ := strings.Cut(opt, ":")
	for i, o := range opts {
		if n, _, _ := strings.Cut(o, ":"); n == name {
			opts[i] = opt
			return opts
		}
	}
	return append(opts, opt)
}

// hostname is the Pod's host name and, with a subdomain, its FQDN.
func (n *Node) hostname(pod *corev1.Pod) (name, fqdn string) {
	if pod.Spec.HostNetwork {
		return n.cfg.NodeName, ""
	}
	name = pod.Name
	if pod.Spec.Hostname != "" {
		name = pod.Spec.Hostname
	}
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	if pod.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", name, pod.Spec.Subdomain, pod.Namespace, n.cfg.ClusterDomain)
	}
	return name, fqdn
}

// etcHosts renders the Pod's /etc/hosts as kubelet writes it.
func (n *Node) etcHosts(pod *corev1.Pod, ip netip.Addr) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n")
	name, fqdn := n.hostname(pod)
	if fqdn != "" {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", ip, fqdn, name)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", ip, name)
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.String()
}
