// Package cluster runs a single-node Kubernetes cluster whose dataplane is
// real, for the end-to-end tests and `make demo`:
//
//   - a node: a network namespace holding the control plane (etcd,
//     kube-apiserver, kube-controller-manager, kube-scheduler, as a
//     control-plane node runs them on its host network), kube-proxy in
//     iptables or nftables mode, and the node agent (package node) that runs
//     every Pod as processes in a network namespace of its own, with a veth
//     into the node;
//   - outside: a network namespace for the world beyond the node: the public
//     DNS, and the load balancer itself, HAProxy with `send-proxy` on each
//     LoadBalancer IP in front of the Service's NodePorts;
//   - a LoadBalancer IP allocator that writes Service status the way MetalLB
//     or Cilium LB-IPAM do (ipMode VIP), so kube-proxy short-circuits those
//     addresses inside the node: the very bug hairpin fixes.
//
// Addresses come from 198.18.0.0/15 (node, Pods, Services) and 203.0.113.0/24
// (LoadBalancer and public addresses), inside the test's namespaces only
// ([plan.go]). Nothing is created in the machine's root network namespace but
// the loopback forwarders through which the test process reaches the
// apiserver, and everything is torn down when the test ends, also after a
// failure; a run that was killed is swept by the next one.
package cluster
