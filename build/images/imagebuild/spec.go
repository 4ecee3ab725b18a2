package imagebuild

import (
	"path/filepath"
	"strings"
)

// User is the numeric user and group every image runs as (distroless's
// "nonroot").
const User = "65532:65532"

// DefaultPath is the PATH of distroless's images, which the stock CoreDNS
// image inherits.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// DefaultRepository is the registry path the images are tagged under.
const DefaultRepository = "ghcr.io/coredns-hairpin"

// Source is the org.opencontainers.image.source label of every image.
const Source = "https://github.com/coredns-hairpin/hairpin"

// Licenses is the org.opencontainers.image.licenses label of every image.
const Licenses = "Apache-2.0"

// Platform is one OS/architecture an image is built for, with the static
// binary built for it.
type Platform struct {
	// OS and Arch are GOOS and GOARCH, which are also the OCI platform's
	// os and architecture ("linux", "amd64" or "arm64").
	OS, Arch string
	// Binary is the path of the static binary on disk.
	Binary string
}

// String returns "OS/ARCH".
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Arches are the architectures every image is built for, on linux.
var Arches = []string{"amd64", "arm64"}

// PlatformDir returns where `make images` puts the binaries of GOOS/GOARCH
// under binDir: binDir/OS-ARCH.
func PlatformDir(binDir, goos, goarch string) string {
	return filepath.Join(binDir, goos+"-"+goarch)
}

// platforms returns the linux platforms of Arches, each with the binary
// name under its PlatformDir.
func platforms(binDir, name string) []Platform {
	var ps []Platform
	for _, arch := range Arches {
		ps = append(ps, Platform{OS: "linux", Arch: arch, Binary: filepath.Join(PlatformDir(binDir, "linux", arch), name)})
	}
	return ps
}

// Spec describes one image: which binary goes where, and its configuration.
type Spec struct {
	// Name is the image's short name ("coredns"), its repository's last
	// element and the base name of the files Write writes.
	Name string
	// Platforms are the platforms of the image index, in order.
	Platforms []Platform
	// Path is where the binary lands in the image, and the entrypoint.
	Path string
	// Description is the org.opencontainers.image.description label.
	Description string
	// ExposedPorts are "PORT/PROTO" entries, e.g. "53/udp".
	ExposedPorts []string
	// NetBindService gives the binary the file capability
	// cap_net_bind_service (effective, permitted), so that it can bind
	// ports below 1024 as a non-root user, like the upstream CoreDNS image.
	NetBindService bool
	// Base, when set, is the system the binary finds around it (its CA
	// bundle, accounts, /tmp, timezone database), the image's first layer.
	// Nil: the binary alone on scratch.
	Base *Base
	// Env is the image's environment.
	Env []string
	// Version is the image's version label and tag.
	Version string
	// Repository is the registry path of the tag, e.g. DefaultRepository.
	Repository string
	// License is the text of the project's license, written at LicensePath
	// beside the binary: a released image carries the terms it is under,
	// not only the licenses label. Empty: no license file.
	License []byte
}

// LicensePath is where an image holds the project's license.
const LicensePath = "/LICENSE"

// CoreDNS returns the Spec of the coredns image for the binaries under
// binDir (binDir/linux-ARCH/coredns): what the stock CoreDNS image holds
// (Base, distroless's PATH and SSL_CERT_FILE), so that every Corefile it
// serves, `forward . tls://...` included, is served by ours too.
// Its ports are DNS (53), prometheus (9153), health (8080) and ready (8181).
func CoreDNS(binDir, version string) Spec {
	return Spec{
		Name:           "coredns",
		Platforms:      platforms(binDir, "coredns"),
		Path:           "/coredns",
		Description:    "CoreDNS with the hairpin plugin",
		ExposedPorts:   []string{"53/udp", "53/tcp", "9153/tcp", "8080/tcp", "8181/tcp"},
		NetBindService: true,
		Base:           &Base{},
		Env:            []string{DefaultPath, "SSL_CERT_FILE=" + CABundlePath},
		Version:        version,
		Repository:     DefaultRepository,
	}
}

// Proxy returns the Spec of the hairpin-proxy image for the binaries under
// binDir (binDir/linux-ARCH/hairpin-proxy): the binary alone, which
// originates no TLS and looks up nothing but DNS names (proxy/README.md).
// Its ports are the default routes' 8080 and 8443 and health 9090.
func Proxy(binDir, version string) Spec {
	return Spec{
		Name:         "hairpin-proxy",
		Platforms:    platforms(binDir, "hairpin-proxy"),
		Path:         "/hairpin-proxy",
		Description:  "PROXY-protocol forwarder for in-cluster traffic to ingress controllers",
		ExposedPorts: []string{"8080/tcp", "8443/tcp", "9090/tcp"},
		Version:      version,
		Repository:   DefaultRepository,
	}
}

// Labels returns the image's org.opencontainers.image.* labels.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       s.Name,
		"org.opencontainers.image.description": s.Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.licenses":    Licenses,
	}
}

// Tag returns the image reference the tarball carries, e.g.
// "ghcr.io/coredns-hairpin/coredns:v0.1.0". Characters that a tag cannot
// hold (such as "+") become "-".
func (s Spec) Tag() string {
	return s.Repository + "/" + s.Name + ":" + TagFor(s.Version)
}

// TagFor turns a version into a valid image tag: [A-Za-z0-9_.-], not
// starting with "." or "-", at most 128 characters; "dev" when empty.
func TagFor(version string) string {
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, version)
	t = strings.TrimLeft(t, ".-")
	if len(t) > 128 {
		t = t[:128]
	}
	if t == "" {
		return "dev"
	}
	return t
}
