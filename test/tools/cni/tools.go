//go:build tools

// Package tools pins the main packages that build/tools.sh builds, so that
// `go mod tidy` keeps their dependencies in go.mod and go.sum.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/ptp"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
