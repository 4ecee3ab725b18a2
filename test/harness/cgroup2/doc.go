// Package cgroup2 makes the one cgroup a test node may have: a child of
// the cgroup2 hierarchy that holds the node's processes and nothing else,
// so that what a dataplane attaches to it (Cilium's socket load balancer)
// acts on the node and not on the machine.
//
// The machine keeps cgroup v1 for its controllers and may have no cgroup2
// mount at all. The hierarchy is therefore mounted in a mount namespace of
// a short-lived helper, opened through /proc/PID/root, and held by a
// directory descriptor: no mount is added to the machine, and no
// controller is enabled in the child.
//
// A child is named "hpt<PID>-<role>", PID the creating process, as the
// network namespaces of package netns are: [Sweep] removes what a killed
// run left behind.
package cgroup2
