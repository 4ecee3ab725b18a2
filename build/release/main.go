// Command release publishes a coredns-hairpin release (docs/architecture.md,
// "Releases"); `make release REGISTRY=HOST[:PORT]/PATH VERSION=vX.Y.Z` runs
// it after `make images`:
//
//	go run ./build/release -registry ghcr.io/coredns-hairpin -version v0.1.0
//
// It pushes:
//   - REGISTRY/coredns:VERSION and REGISTRY/hairpin-proxy:VERSION, the OCI
//     image indexes (linux/amd64 and linux/arm64) of the layouts that `make
//     images` wrote into bin/images/NAME/;
//   - the chart as oci://REGISTRY/charts/coredns-hairpin, version X.Y.Z and
//     appVersion vX.Y.Z, whose default images are those indexes,
//     REGISTRY/NAME:VERSION@DIGEST (values proxy.image and tenant.image);
//
// and writes into -out (bin/release/): the chart archive, the plain
// manifests rendered from that chart (hairpin-cluster.yaml,
// hairpin-tenant.yaml: images pinned by digest), the kubectl-hairpin
// archives for linux and darwin on amd64 and arm64 with their krew manifest
// hairpin.yaml, SHA256SUMS, and
// release.json, which names every pushed reference and digest (what CI signs).
//
// Everything that can fail here is done before anything is pushed. A
// loopback registry (localhost, 127.0.0.0/8, ::1) is plain HTTP.
// Credentials are docker's (`docker login`) for the images and helm's
// (`helm registry login`) for the chart.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var c config
	flag.StringVar(&c.registry, "registry", "", "where to push: HOST[:PORT]/PATH (images REGISTRY/NAME, chart oci://REGISTRY/charts/coredns-hairpin)")
	flag.StringVar(&c.version, "version", "", "release version vX.Y.Z: the images' tag and the chart's appVersion (chart version X.Y.Z)")
	flag.BoolVar(&c.check, "check", false, "only check -registry and -version")
	flag.StringVar(&c.images, "images", "bin/images", "folder of the OCI layouts `make images` wrote (NAME/)")
	flag.StringVar(&c.chart, "chart", "manifests/coredns-hairpin", "the chart to release")
	flag.StringVar(&c.out, "out", "bin/release", "folder the release artifacts are written to (replaced)")
	flag.StringVar(&c.helm, "helm", os.Getenv("HELM"), "helm binary (build/tools.sh --helm)")
	flag.StringVar(&c.root, "root", ".", "the repository: build/manifests.sh, the plugin's module")
	flag.StringVar(&c.plugin, "plugin", "plugin/kubectl-hairpin/cmd/kubectl-hairpin", "main package of kubectl-hairpin, under -root; skipped when absent")
	flag.StringVar(&c.downloadURL, "download-url", homepage+"/releases/download/{version}", "where the plugin archives are downloaded from, for the krew manifest")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "release: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
