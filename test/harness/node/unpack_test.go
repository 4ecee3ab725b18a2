package node_test

// The node runs our images through the adapter of harness.UnpackImage that
// package cluster installs, the same one the cluster runs with.
import _ "github.com/coredns-hairpin/hairpin/test/harness/cluster"
