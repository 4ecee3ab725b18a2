// Package netns makes the network namespaces that the real-dataplane test
// cluster lives in, and gets rid of them again.
//
// Every namespace it creates is named "hpt<PID>-<role>", where PID is the
// creating process. That keeps runs apart, lets [Sweep] remove what a killed
// run left behind (a namespace whose creator is gone), and lets a reader of
// `ip netns list` tell at once whose namespace it is.
//
// Nothing here touches the machine's own (root) network namespace: veths are
// created directly between two test namespaces, and addresses, routes and
// sysctls are set inside a namespace only. Sockets are opened inside a
// namespace by a goroutine locked to an OS thread that has entered it
// ([NS.Do]), so a test process can listen and dial in any of its namespaces
// while its own sockets stay in the root namespace.
package netns
