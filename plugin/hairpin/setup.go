package hairpin

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

const pluginName = "hairpin"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

const (
	defaultProxyNamespace = "hairpin-system"
	defaultProxyName      = "hairpin-proxy"
	defaultTTL            = 5
	maxTTL                = 3600
	defaultStartupTimeout = 5 * time.Second
)

// settings is one parsed hairpin stanza.
type settings struct {
	zones          []string
	proxyNamespace string
	proxyName      string
	proxyIPs       []net.IP
	ingressClasses []string
	gatewayClasses []string
	namespaces     []string
	labels         labels.Selector
	ttl            uint32
	kubeconfig     string
	kubecontext    string
	startupTimeout time.Duration
}

// cacheKey identifies the watches and index that settings need. Two server
// blocks whose keys are equal share one cache; ttl and startup_timeout only
// shape how a block uses the cache, so they are not part of it.
func (s settings) cacheKey() string {
	ips := make([]string, len(s.proxyIPs))
	for i, ip := range s.proxyIPs {
		ips[i] = ip.String()
	}
	return strings.Join([]string{
		strings.Join(s.zones, ","),
		s.proxyNamespace + "/" + s.proxyName,
		strings.Join(ips, ","),
		strings.Join(s.ingressClasses, ","),
		strings.Join(s.gatewayClasses, ","),
		strings.Join(s.namespaces, ","),
		s.labels.String(),
		s.kubeconfig, s.kubecontext,
	}, "|")
}

func setup(c *caddy.Controller) error {
	s, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	silenceKlog()

	newClient, err := newClientFactory(s)
	if err != nil {
		return plugin.Error(pluginName, err)
	}

	h := &Hairpin{Zones: s.zones, ttl: s.ttl}
	var lease *cacheLease
	c.OnStartup(func() error {
		lease, err = acquireCache(s.cacheKey(), func() (*hostCache, error) {
			client, err := newClient()
			if err != nil {
				return nil, err
			}
			return newHostCache(client, s), nil
		})
		if err != nil {
			return plugin.Error(pluginName, err)
		}
		h.cache.Store(lease.cache)
		if !lease.cache.waitForSync(s.startupTimeout) {
			log.Warningf("starting server with unsynced Kubernetes API after %s; queries pass through until synced", s.startupTimeout)
		}
		return nil
	})
	c.OnShutdown(func() error {
		if lease != nil {
			lease.release()
			lease = nil
		}
		return nil
	})

	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	return nil
}

// parse reads one hairpin stanza. Every mistake names the token or value.
func parse(c *caddy.Controller) (settings, error) {
	s := settings{
		proxyNamespace: defaultProxyNamespace,
		proxyName:      defaultProxyName,
		labels:         labels.Everything(),
		ttl:            defaultTTL,
		startupTimeout: defaultStartupTimeout,
	}
	stanzas := 0
	for c.Next() {
		if stanzas++; stanzas > 1 {
			return s, plugin.ErrOnce
		}
		s.zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
		proxySet := false
		for c.NextBlock() {
			prop := c.Val()
			args := c.RemainingArgs()
			if len(args) == 0 {
				return s, c.Errf("%s needs an argument", prop)
			}
			var err error
			switch prop {
			case "proxy":
				if len(args) != 1 {
					return s, c.Errf("proxy takes one NAMESPACE/NAME, got %d arguments", len(args))
				}
				s.proxyNamespace, s.proxyName, err = parseNamespacedName(args[0])
				proxySet = true
			case "proxy_ip":
				s.proxyIPs, err = parseIPs(args)
			case "ingress_class":
				s.ingressClasses, err = parseNames("ingress_class", args, true)
			case "gateway_class":
				s.gatewayClasses, err = parseNames("gateway_class", args, true)
			case "namespaces":
				s.namespaces, err = parseNames("namespaces", args, false)
			case "labels":
				s.labels, err = labels.Parse(strings.Join(args, " "))
				if err != nil {
					err = fmt.Errorf("labels %q: %w", strings.Join(args, " "), err)
				}
			case "ttl":
				s.ttl, err = parseTTL(args)
			case "kubeconfig":
				if len(args) > 2 {
					return s, c.Errf("kubeconfig takes PATH [CONTEXT], got %d arguments", len(args))
				}
				s.kubeconfig = args[0]
				if len(args) == 2 {
					s.kubecontext = args[1]
				}
			case "startup_timeout":
				s.startupTimeout, err = parseDuration("startup_timeout", args)
			default:
				return s, c.Errf("unknown property '%s'", prop)
			}
			if err != nil {
				return s, c.Errf("%v", err)
			}
		}
		if proxySet && len(s.proxyIPs) > 0 {
			return s, c.Err("proxy and proxy_ip are mutually exclusive: answer either a Service's ClusterIPs or fixed addresses")
		}
	}
	if stanzas == 0 {
		return s, errors.New("no hairpin stanza")
	}
	return s, nil
}

func parseNamespacedName(arg string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(arg, "/")
	if !ok || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("proxy %q is not NAMESPACE/NAME", arg)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", "", fmt.Errorf("proxy %q: namespace %q: %s", arg, ns, errs[0])
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", "", fmt.Errorf("proxy %q: service name %q: %s", arg, name, errs[0])
	}
	return ns, name, nil
}

func parseIPs(args []string) ([]net.IP, error) {
	ips := make([]net.IP, 0, len(args))
	for _, a := range args {
		ip := net.ParseIP(a)
		if ip == nil {
			return nil, fmt.Errorf("proxy_ip %q is not an IP address", a)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// parseNames validates Kubernetes object names; allowAll accepts "*".
func parseNames(prop string, args []string, allowAll bool) ([]string, error) {
	for _, a := range args {
		if allowAll && a == "*" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: %s", prop, a, errs[0])
		}
	}
	names := slices.Clone(args)
	slices.Sort(names)
	return slices.Compact(names), nil
}

func parseTTL(args []string) (uint32, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("ttl takes one value, got %d", len(args))
	}
	t, err := strconv.Atoi(args[0])
	if err != nil {
		return 0, fmt.Errorf("ttl %q: %w", args[0], err)
	}
	if t < 0 || t > maxTTL {
		return 0, fmt.Errorf("ttl %d: must be in range [0, %d]", t, maxTTL)
	}
	return uint32(t), nil
}

func parseDuration(prop string, args []string) (time.Duration, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("%s takes one duration, got %d", prop, len(args))
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", prop, args[0], err)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %q: must not be negative", prop, args[0])
	}
	return d, nil
}
