package cluster

import (
	"fmt"
	"net/netip"
	"testing"
)

// TestPlanNodeCountsOutEachNodesShareFromItsIndex: node 0 keeps the
// single-node cluster's addresses, and each further node takes the next
// address on the link and the next Pod range, apart from the Services.
func TestPlanNodeCountsOutEachNodesShareFromItsIndex(t *testing.T) {
	plans := map[int]NodePlan{
		0: {Name: "node-1", IP: netip.MustParseAddr("198.18.0.10"), PodCIDR: netip.MustParsePrefix("198.18.1.0/24"),
			Gateway: OutsideIP, Dev: "eth0", OutsideDev: "node0"},
		1: {Name: "node-2", IP: netip.MustParseAddr("198.18.0.11"), PodCIDR: netip.MustParsePrefix("198.18.2.0/24"),
			Gateway: OutsideIP, Dev: "eth0", OutsideDev: "node1"},
		maxNodes - 1: {Name: "node-245", IP: netip.MustParseAddr("198.18.0.254"), PodCIDR: netip.MustParsePrefix("198.18.245.0/24"),
			Gateway: OutsideIP, Dev: "eth0", OutsideDev: "node244"},
	}
	for i, want := range plans {
		t.Run(want.Name, func(t *testing.T) {
			got, err := PlanNode(i)
			if err != nil || got != want {
				t.Fatalf("PlanNode(%d) = %+v, %v; want %+v", i, got, err, want)
			}
			if !NodeLink.Contains(got.IP) || NodeLink.Overlaps(got.PodCIDR) || ServiceCIDR.Overlaps(got.PodCIDR) {
				t.Errorf("PlanNode(%d) = %+v: the node must be on NodeLink, its Pods apart from the link and the Services", i, got)
			}
		})
	}
}

// TestPlanNodeRefusesAnIndexOutsideThePlan: past the link's last address,
// or below 0, there is no node to plan, and PlanNode says so.
func TestPlanNodeRefusesAnIndexOutsideThePlan(t *testing.T) {
	for _, i := range []int{-1, maxNodes} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if p, err := PlanNode(i); err == nil {
				t.Errorf("PlanNode(%d) = %+v, want an error", i, p)
			}
		})
	}
}
