// Package cluster runs a Kubernetes cluster whose dataplane is real, for
// the end-to-end tests and `make demo`: [New] starts it and
// [Cluster.Close] tears it down, in one ordered stack ([Start] for a test).
// One node runs; [Cluster.Nodes] holds each node's [NodePlan] and agent:
//
//   - a node: a network namespace holding the control plane (etcd,
//     kube-apiserver, kube-controller-manager, kube-scheduler, as a
//     control-plane node runs them on its host network), the service
//     dataplane, and the node agent (package node) that runs every Pod as
//     processes in a network namespace of its own, with a veth into the
//     node;
//   - the service dataplane, by [Options.Dataplane] (a [Dataplane]; a test
//     asks its [Capabilities], never its name): kube-proxy in iptables or
//     nftables mode ([KubeProxy]), or cilium-agent as kube-proxy
//     replacement ([Cilium]) with the values Cozystack's default networking
//     variant renders its chart with (testdata/cozystack/cilium: maglev,
//     IPAM from Node.spec.podCIDR, NodePort and externalIPs, the host
//     firewall, native routing with no masquerade), but for the one table
//     of deviations (ciliumdeviations.go), with its CRDs applied and no
//     kube-proxy; or a shape of it ([Shapes]): a Cozystack tenant's
//     ([CozyTenant]: packages/system/cilium/values.yaml alone and the
//     tenant's HelmRelease, Cilium the only CNI, tunnel routing,
//     masquerade), with its own files and deviation rows (ciliumshape.go,
//     cozytenant.go). The agent runs in the node's network namespace and a
//     mount namespace of its own (its own bpffs, the node's child of the
//     cgroup2 hierarchy as its cgroup root, a private /run, /proc/sys
//     read-only but for the node's /proc/sys/net), and reads its settings
//     from the cilium-config ConfigMap that the harness renders from
//     Cilium's chart into [CiliumNamespace], as --config-dir.
//     The cilium DaemonSet (Cozystack's image, [CiliumImage]) and the
//     cilium-operator Deployment (upstream's, [CiliumOperatorImage]) are
//     written too, as the chart leaves them, but are records only:
//     kube-controller-manager runs without its daemonset controller and
//     the Deployment is paused, so neither has Pods, and the agent is a
//     process of the harness, built from Cilium v1.19.5. The node agent
//     attaches each Pod by running the real cilium-cni (ADD and DEL, with
//     the conflist the agent writes and its API socket), which gives the
//     Pod its address. After teardown nothing of it is left: a cgroup or
//     device program that an agent which died left attached is detached
//     explicitly;
//   - outside: a network namespace for the world beyond the node: the public
//     DNS, and the load balancer itself, HAProxy with `send-proxy` on each
//     LoadBalancer IP in front of the Service's NodePorts, and on each
//     spec.externalIPs address from the pool in front of that address on
//     the node (Cozystack's publishing.externalIPs);
//   - a LoadBalancer IP allocator that writes Service status the way MetalLB
//     or Cilium LB-IPAM do (ipMode VIP), so kube-proxy or Cilium
//     short-circuits those addresses inside the node: the very bug hairpin
//     fixes.
//
// Addresses come from 198.18.0.0/15 (nodes, Pods, Services) and
// 203.0.113.0/24 (LoadBalancer and public addresses), inside the test's
// namespaces only ([plan.go]; a node's share from its index, [PlanNode]). Nothing is created in the machine's root network namespace but
// the loopback forwarders through which the test process reaches the
// apiserver, and everything is torn down when the test ends, also after a
// failure; a run that was killed is swept by the next one.
package cluster
