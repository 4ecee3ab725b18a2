package imagebuild

import (
	"path/filepath"
	"strings"
)

// User is the numeric user and group every image runs as (distroless's
// "nonroot").
const User = "65532:65532"

// UID and GID own the files in the image layer.
const (
	UID = 65532
	GID = 65532
)

// DefaultRepository is the registry path the images are tagged under.
const DefaultRepository = "ghcr.io/coredns-hairpin"

// Source is the org.opencontainers.image.source label of every image.
const Source = "https://github.com/coredns-hairpin/hairpin"

// Licenses is the org.opencontainers.image.licenses label of every image.
const Licenses = "Apache-2.0"

// Spec describes one image: which binary goes where, and its configuration.
type Spec struct {
	// Name is the image's short name ("coredns"), its repository's last
	// element and the tarball's base name.
	Name string
	// Binary is the path of the static binary on disk.
	Binary string
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
	// Version is the image's version label and tag.
	Version string
	// Repository is the registry path of the tag, e.g. DefaultRepository.
	Repository string
}

// CoreDNS returns the Spec of the coredns image for the binary in binDir.
// Its ports are DNS (53), prometheus (9153), health (8080) and ready (8181).
func CoreDNS(binDir, version string) Spec {
	return Spec{
		Name:           "coredns",
		Binary:         filepath.Join(binDir, "coredns"),
		Path:           "/coredns",
		Description:    "CoreDNS with the hairpin plugin",
		ExposedPorts:   []string{"53/udp", "53/tcp", "9153/tcp", "8080/tcp", "8181/tcp"},
		NetBindService: true,
		Version:        version,
		Repository:     DefaultRepository,
	}
}

// Proxy returns the Spec of the hairpin-proxy image for the binary in
// binDir. Its ports are the default routes' 8080 and 8443 and health 9090.
func Proxy(binDir, version string) Spec {
	return Spec{
		Name:         "hairpin-proxy",
		Binary:       filepath.Join(binDir, "hairpin-proxy"),
		Path:         "/hairpin-proxy",
		Description:  "PROXY-protocol forwarder for in-cluster traffic to ingress-nginx",
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
