//go:build tools

// Package tools pins the main package that build/tools.sh builds, so that
// `go mod tidy` keeps its dependencies in go.mod and go.sum.
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
