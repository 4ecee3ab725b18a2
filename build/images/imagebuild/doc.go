// Package imagebuild builds the coredns-hairpin container images without a
// Docker engine, reproducibly (the same inputs give the same digests): each
// image holds an already-built static binary in its own layer, on an empty
// (scratch) base; the coredns image has, below it, a layer with the system
// the stock CoreDNS image gets from distroless (Base). It writes OCI layouts
// and tarballs that `docker load` accepts. `make images` (build/images) and
// the tests in test/images use it.
//
// The Dockerfiles beside this package build the same images with Docker,
// from source: coredns on distroless's static-debian12:nonroot, whose files
// Base reproduces, hairpin-proxy on scratch.
package imagebuild
