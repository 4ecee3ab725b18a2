package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// registry is where a release goes: HOST[:PORT]/PATH, as in
// REGISTRY/coredns:TAG and oci://REGISTRY/charts/coredns-hairpin.
type registry struct {
	path     string // HOST[:PORT]/PATH
	loopback bool   // plain HTTP: go-containerregistry's name.Insecure, helm's --plain-http
}

// parseRegistry checks that s names a registry host and a path in it.
func parseRegistry(s string) (registry, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "oci://"), "/")
	host, path, ok := strings.Cut(s, "/")
	if !ok || host == "" || path == "" {
		return registry{}, fmt.Errorf("registry %q: want HOST[:PORT]/PATH, e.g. ghcr.io/coredns-hairpin", s)
	}
	if _, err := name.NewRepository(s+"/coredns", name.StrictValidation); err != nil {
		return registry{}, fmt.Errorf("registry %q: %w", s, err)
	}
	return registry{path: s, loopback: isLoopback(host)}, nil
}

// isLoopback reports whether a registry host (HOST or HOST:PORT) is this
// machine: localhost, 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nameOptions are the options every reference into r is parsed with.
func (r registry) nameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if r.loopback {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// ref returns REGISTRY/repo:tag.
func (r registry) ref(repo, tag string) (name.Tag, error) {
	return name.NewTag(r.path+"/"+repo+":"+tag, r.nameOptions()...)
}

// remoteOptions authenticate as docker and crane do (the credentials of
// `docker login`, which CI writes for ghcr.io).
func remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}
