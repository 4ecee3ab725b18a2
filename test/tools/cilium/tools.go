//go:build tools

// Package tools pins the main packages that build/tools.sh builds, so that
// `go mod tidy` keeps their dependencies in go.mod and go.sum.
package tools

import (
	_ "github.com/cilium/cilium/daemon"
	_ "github.com/cilium/cilium/plugins/cilium-cni"
)
