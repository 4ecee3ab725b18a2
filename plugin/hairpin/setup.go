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

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

const pluginName = "hairpin"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

const (
	defaultTargetsNamespace = "hairpin-system"
	defaultTTL              = 5
	maxTTL                  = 3600
	defaultStartupTimeout   = 5 * time.Second
)

// settings is one parsed hairpin stanza. With neither proxy nor proxy_ip,
// targets are discovered in targetsNamespace.
type settings struct {
	zones            []string
	targetsNamespace string
	proxyNamespace   string
	proxyName        string
	proxyIPs         []net.IP
	ingressClasses   []string
	gatewayClasses   []string
	namespaces       []string
	labels           labels.Selector
	ttl              uint32
	kubeconfig       string
	kubecontext      string
	startupTimeout   time.Duration
	// settle is how long a new target has been ready before it takes a
	// host that a Serving target answers (settle.go); 0 takes it at once.
	settle time.Duration
	// discoveryInterval is how often missing Gateway API kinds are looked
	// for again; 0 is defaultDiscoveryInterval. No directive sets it: it
	// is an option for tests, which wait for CRDs installed mid-test.
	discoveryInterval time.Duration
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
		s.targetsNamespace,
		s.proxyNamespace + "/" + s.proxyName,
		strings.Join(ips, ","),
		strings.Join(s.ingressClasses, ","),
		strings.Join(s.gatewayClasses, ","),
		strings.Join(s.namespaces, ","),
		s.labelString(),
		s.kubeconfig, s.kubecontext,
		s.settle.String(),
	}, "|")
}

// degrade handles a failure to reach the API. A stanza that names its
// kubeconfig is a configuration the operator wrote, so startup stops and
// names it; a bare hairpin line, as image-only activation adds it, must
// never stop CoreDNS: it stays inert, Ready and pure pass-through.
func (h *Hairpin) degrade(s settings, err error) error {
	if s.kubeconfig != "" {
		return plugin.Error(pluginName, err)
	}
	h.inert.Store(true)
	log.Errorf("inert, every query passes through: %v", err)
	return nil
}

// labelString is the labels option as a selector string; "" for none.
func (s settings) labelString() string {
	if s.labels == nil {
		return ""
	}
	return s.labels.String()
}

func setup(c *caddy.Controller) error {
	s, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	h := &Hairpin{Zones: s.zones, ttl: s.ttl}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	newClient, err := newClientFactory(s)
	if err != nil {
		return h.degrade(s, err)
	}

	var lease *cacheLease
	owner := instanceToken(c)
	// caddy discards an instance whose servers fail to start without
	// running its shutdown callbacks; the instance it was meant to replace
	// is told instead, and sweeps the leases of instances that are gone.
	c.OnRestartFailed(func() error { releaseOrphanLeases(); return nil })
	cfg := dnsserver.GetConfig(c)
	c.OnStartup(func() error {
		// The chain is built by now, so the block's rewrite is registered.
		h.rewrites = rewriteRules(cfg.Handler("rewrite"))
		rewritten.add(blocksOf(cfg), h)
		releaseOrphanLeases()
		var err error
		lease, err = acquireCache(s.cacheKey(), owner, func() (*hostCache, error) {
			client, err := newClient()
			if err != nil {
				return nil, err
			}
			return newHostCache(client, s), nil
		})
		if err != nil {
			return h.degrade(s, err)
		}
		h.cache.Store(lease.cache)
		lease.cache.waitOpen(s.startupTimeout)
		return nil
	})
	c.OnShutdown(func() error {
		rewritten.remove(blocksOf(cfg), h)
		if lease != nil {
			lease.release()
			lease = nil
		}
		return nil
	})
	return nil
}

// parse reads one hairpin stanza. Every mistake names the token or value.
func parse(c *caddy.Controller) (settings, error) {
	s := settings{
		targetsNamespace: defaultTargetsNamespace,
		labels:           labels.Everything(),
		ttl:              defaultTTL,
		startupTimeout:   defaultStartupTimeout,
		settle:           defaultSettle,
	}
	stanzas := 0
	for c.Next() {
		if stanzas++; stanzas > 1 {
			return s, plugin.ErrOnce
		}
		zoneArgs := c.RemainingArgs()
		s.zones = plugin.OriginsFromArgsOrServerBlock(zoneArgs, c.ServerBlockKeys)
		var forms []string // which of targets, proxy, proxy_ip were given
		var classProps []string
		for c.NextBlock() {
			prop := c.Val()
			args := c.RemainingArgs()
			if len(args) == 0 {
				return s, c.Errf("%s needs an argument", prop)
			}
			var err error
			switch prop {
			case "targets":
				if len(args) != 1 {
					return s, c.Errf("targets takes one NAMESPACE, got %d arguments", len(args))
				}
				if errs := validation.IsDNS1123Label(args[0]); len(errs) > 0 {
					err = fmt.Errorf("targets namespace %q: %s", args[0], errs[0])
				}
				s.targetsNamespace = args[0]
				forms = append(forms, prop)
			case "proxy":
				if len(args) != 1 {
					return s, c.Errf("proxy takes one NAMESPACE/NAME, got %d arguments", len(args))
				}
				s.proxyNamespace, s.proxyName, err = parseNamespacedName(args[0])
				forms = append(forms, prop)
			case "proxy_ip":
				s.proxyIPs, err = parseIPs(args)
				forms = append(forms, prop)
			case "ingress_class":
				s.ingressClasses, err = parseNames("ingress_class", args, true)
				classProps = append(classProps, prop)
			case "gateway_class":
				s.gatewayClasses, err = parseNames("gateway_class", args, true)
				classProps = append(classProps, prop)
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
			case "settle":
				s.settle, err = parseDuration("settle", args)
			default:
				return s, c.Errf("unknown property '%s'", prop)
			}
			if err != nil {
				return s, c.Errf("%v", err)
			}
		}
		if err := checkForms(&s, forms, classProps, len(zoneArgs) > 0); err != nil {
			return s, c.Errf("%v", err)
		}
	}
	if stanzas == 0 {
		return s, errors.New("no hairpin stanza")
	}
	return s, nil
}

// checkForms enforces the three mutually exclusive ways to name where hosts
// go, and the root-block zone rule of the explicit forms.
func checkForms(s *settings, forms, classProps []string, zonesNamed bool) error {
	if len(forms) > 1 {
		return fmt.Errorf("%s are mutually exclusive: discover targets in a namespace, or name one proxy Service, or fixed addresses", strings.Join(forms, " and "))
	}
	if !s.explicit() {
		if len(classProps) > 0 {
			return fmt.Errorf("%s needs proxy or proxy_ip; discovered targets select classes with their %s and %s annotations", classProps[0], rules.IngressClassesAnnotation, rules.GatewayClassesAnnotation)
		}
		return nil
	}
	s.targetsNamespace = ""
	// One explicit proxy for every Ingress in a root block would answer
	// any tenant's Ingress for any name: the zones are the hijack guard.
	if !zonesNamed && slices.Contains(s.zones, ".") {
		return fmt.Errorf("%s in a root server block must name its zones (hairpin example.com ... { %s ... }): without them any Ingress could claim any name", forms[0], forms[0])
	}
	return nil
}

// explicit reports whether the stanza names its one proxy (proxy or
// proxy_ip) instead of discovering targets.
func (s settings) explicit() bool { return s.proxyName != "" || len(s.proxyIPs) > 0 }

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
