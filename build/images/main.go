// Command images builds the coredns and hairpin-proxy container images for
// linux/amd64 and linux/arm64 from the static binaries that `make images`
// cross-compiles into bin/linux-ARCH/, without a Docker engine or network:
//
//	go run ./build/images -bin bin -out bin/images -version v0.1.0
//
// (-arch amd64 builds one platform: what `make demo` runs on this machine.)
// writes, for NAME in coredns and hairpin-proxy, tagged
// ghcr.io/coredns-hairpin/NAME:VERSION:
//
//   - bin/images/NAME/: an OCI image layout holding one image index with
//     both platforms. Push it with
//     `skopeo copy --all oci:bin/images/NAME:VERSION docker://REGISTRY/NAME:VERSION`
//     or `crane push --index bin/images/NAME REGISTRY/NAME:VERSION`;
//   - bin/images/NAME-linux-ARCH.tar: one `docker load` tarball per
//     platform.
//
// Each image carries the project's license (-license, LICENSE) at /LICENSE.
// The coredns image carries what the stock CoreDNS image carries around its
// binary (imagebuild.Base: CA bundle, passwd and group, nsswitch.conf, /tmp,
// the timezone database); hairpin-proxy is its binary alone. README.md
// beside this file lists both, side by side with the stock image.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
)

func main() {
	binDir := flag.String("bin", "bin", "folder whose linux-ARCH/ subfolders hold the static coredns and hairpin-proxy binaries")
	out := flag.String("out", "bin/images", "folder the image tarballs are written to")
	version := flag.String("version", "dev", "version label and tag of the images")
	repo := flag.String("repository", imagebuild.DefaultRepository, "registry path the images are tagged under")
	arches := flag.String("arch", strings.Join(imagebuild.Arches, ","), "comma-separated architectures to build (`make demo` builds its own machine's only)")
	zoneinfo := flag.String("zoneinfo", "", "zip of TZif files the coredns image's /usr/share/zoneinfo is made of (default: $(go env GOROOT)/lib/time/zoneinfo.zip)")
	licenseFile := flag.String("license", "LICENSE", "the project's license, which every image carries at "+imagebuild.LicensePath)
	flag.Parse()

	// An image without its license cannot be released: no fallback.
	license, err := os.ReadFile(*licenseFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}

	for _, s := range []imagebuild.Spec{imagebuild.CoreDNS(*binDir, *version), imagebuild.Proxy(*binDir, *version)} {
		s.Repository = *repo
		s.License = license
		s.Platforms = slices.DeleteFunc(s.Platforms, func(p imagebuild.Platform) bool {
			return !slices.Contains(strings.Split(*arches, ","), p.Arch)
		})
		if len(s.Platforms) == 0 {
			fmt.Fprintf(os.Stderr, "images: -arch %q names none of %v\n", *arches, imagebuild.Arches)
			os.Exit(2)
		}
		if s.Base != nil && *zoneinfo != "" {
			s.Base.Zoneinfo = *zoneinfo
		}
		out, err := imagebuild.Write(s, *out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Printf("images: %s -> %s (index of %d platforms)\n", s.Tag(), out.Layout, len(s.Platforms))
		for _, p := range s.Platforms {
			fmt.Printf("images: %s %s -> %s\n", s.Tag(), p, out.DockerTarballs[p.String()])
		}
	}
}
