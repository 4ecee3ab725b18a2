// Package dataplane is the fix shown where the bug lives: on the real
// dataplane of package cluster (kube-proxy in iptables or nftables mode,
// LoadBalancer IPs short-circuited inside the node, Pods in network
// namespaces, HAProxy `send-proxy` outside), with our CoreDNS image
// deployed the way kubeadm deploys it and our chart installed with the real
// helm, as a cluster installs it.
//
// [Start] brings up the cluster as it is before our chart: two ingress
// controllers that require the PROXY protocol (nginx configured as
// ingress-nginx with use-proxy-protocol, each with its own class and zone,
// behind its own LoadBalancer Service), kube-dns with a distribution's stock
// Corefile (no hairpin line) on our image, and a client Pod. Its methods are
// the steps of the story that the end-to-end tests check and `make demo`
// tells.
package dataplane
