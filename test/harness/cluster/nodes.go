package cluster

import "github.com/coredns-hairpin/hairpin/test/harness/node"

// Node is one node of the cluster: its share of the address plan and the
// node agent that registers it and runs its Pods.
type Node struct {
	NodePlan
	// Node is the node agent; nil until it has started.
	*node.Node
}

// planNodes gives the cluster its nodes' plans before anything starts.
// One node runs; the plan has room for more.
func (c *Cluster) planNodes() error {
	p, err := PlanNode(0)
	if err != nil {
		return err
	}
	c.Nodes = []*Node{{NodePlan: p}}
	return nil
}
