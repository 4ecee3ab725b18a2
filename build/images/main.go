// Command images builds the coredns and hairpin-proxy container images from
// the static binaries that `make build` left in bin/, without a Docker
// engine, and writes them as `docker load` tarballs:
//
//	go run ./build/images -bin bin -out bin/images -version v0.1.0
//
// writes bin/images/coredns.tar and bin/images/hairpin-proxy.tar, tagged
// ghcr.io/coredns-hairpin/{coredns,hairpin-proxy}:VERSION.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
)

func main() {
	binDir := flag.String("bin", "bin", "folder with the static coredns and hairpin-proxy binaries")
	out := flag.String("out", "bin/images", "folder the image tarballs are written to")
	version := flag.String("version", "dev", "version label and tag of the images")
	repo := flag.String("repository", imagebuild.DefaultRepository, "registry path the images are tagged under")
	flag.Parse()

	for _, s := range []imagebuild.Spec{imagebuild.CoreDNS(*binDir, *version), imagebuild.Proxy(*binDir, *version)} {
		s.Repository = *repo
		path, err := imagebuild.Write(s, *out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Printf("images: %s -> %s\n", s.Tag(), path)
	}
}
