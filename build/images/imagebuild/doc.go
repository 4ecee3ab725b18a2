// Package imagebuild builds the coredns-hairpin container images without a
// Docker engine: each image is one layer holding an already-built static
// binary, on an empty (scratch) base, written as a tarball that `docker load`
// accepts. `make images` (build/images) and the tests in test/images use it.
//
// The Dockerfiles beside this package build the same images with Docker,
// from source, on a distroless base.
package imagebuild
