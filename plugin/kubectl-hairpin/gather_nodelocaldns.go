package kubectlhairpin

import (
	"context"
	"fmt"
	"strings"

	"github.com/coredns/caddy/caddyfile"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// node-local-dns's upstream manifest: the DaemonSet's label and its
// Corefile's ConfigMap, both in kube-system.
const (
	nodeLocalDNSLabel     = "k8s-app"
	nodeLocalDNSValue     = "node-local-dns"
	nodeLocalDNSConfigMap = "node-local-dns"
	nodeLocalDNSNamespace = "kube-system"
)

// gatherNodeLocalDNS finds node-local-dns DaemonSets and reads the zones
// of their Corefile's server blocks: a zone without a block of its own
// goes past CoreDNS (docs/node-local-dns.md).
func (g *gatherer) gatherNodeLocalDNS(ctx context.Context) error {
	for _, ds := range g.cache.daemonSets {
		if ds.Namespace != nodeLocalDNSNamespace || ds.Labels[nodeLocalDNSLabel] != nodeLocalDNSValue {
			continue
		}
		n := NodeLocalDNS{Object: "daemonset/" + ds.Namespace + "/" + ds.Name}
		cm, err := g.c.Kube.CoreV1().ConfigMaps(ds.Namespace).Get(ctx, nodeLocalDNSConfigMap, meta.GetOptions{})
		ok, err := g.read(err, "get configmaps/"+nodeLocalDNSConfigMap+" in "+ds.Namespace, "the zones node-local-dns forwards are unknown")
		switch {
		case err != nil:
			return err
		case !ok:
			n.CorefileErr = fmt.Errorf("ConfigMap %s/%s could not be read", ds.Namespace, nodeLocalDNSConfigMap)
		default:
			n.Forwarded, n.CorefileErr = corefileZones(cm.Data["Corefile"])
		}
		g.f.NodeLocalDNS = append(g.f.NodeLocalDNS, n)
	}
	return nil
}

// corefileZones returns the zones of a Corefile's server blocks, lowercase
// FQDNs without scheme or port.
func corefileZones(corefile string) ([]string, error) {
	blocks, err := caddyfile.Parse("Corefile", strings.NewReader(corefile), nil)
	if err != nil {
		return nil, fmt.Errorf("node-local-dns Corefile: %w", err)
	}
	zones := []string{}
	for _, b := range blocks {
		for _, k := range b.Keys {
			zones = append(zones, serverKeyOf(k).Zone)
		}
	}
	return zones, nil
}
