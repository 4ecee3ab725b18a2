//go:build tools

// Package tools pins the main packages that build/tools.sh builds, so that
// `go mod tidy` keeps their dependencies in go.mod and go.sum: the control
// plane of the test cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler), the node's dataplane (kube-proxy), and the kubectl the
// docs test runs the documented commands with.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
