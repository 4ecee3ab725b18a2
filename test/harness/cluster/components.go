package cluster

import (
	"path/filepath"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// startComponents starts kube-controller-manager, kube-scheduler and the
// service dataplane inside the node, each
// with the admin kubeconfig (inside the node, its 127.0.0.1 is the
// apiserver itself).
func (c *Cluster) startComponents(t testing.TB) error {
	bin := func(name string) string { return filepath.Join(c.opts.AssetsDir, name) }
	kc := c.CP.Kubeconfig
	// The controllers are the dataplane's to say (Dataplane.controllers).
	c.kcm = harness.StartCmd(t, "kube-controller-manager", c.topo.node.Command(bin("kube-controller-manager"),
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=10257",
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--root-ca-file="+c.CP.CAFile,
		"--service-account-private-key-file="+c.CP.ServiceAccountKeyFile,
		"--use-service-account-credentials=false",
		"--controllers="+c.opts.Dataplane.controllers(),
		"--concurrent-deployment-syncs=5",
		"-v=1",
	))
	c.scheduler = harness.StartCmd(t, "kube-scheduler", c.topo.node.Command(bin("kube-scheduler"),
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=10259",
		"-v=1",
	))
	return c.opts.Dataplane.start(t, c)
}
