package imagebuild

import (
	"fmt"
	"io/fs"
)

// Base is the system around a program that the stock CoreDNS image gets
// from its base, gcr.io/distroless/static-debian12:nonroot: the CA bundle,
// passwd and group with root and nonroot (65532), nsswitch.conf, a
// world-writable /tmp, nonroot's home and the timezone database. It is
// built from pinned Go sources rather than Debian packages (build/images
// README, "What the image contains"):
//
//   - the CA bundle from golang.org/x/crypto/x509roots/fallback/bundle, the
//     Mozilla NSS roots at the module version go.mod pins (CABundle);
//   - the timezone database from the Go toolchain's lib/time/zoneinfo.zip,
//     the data time/tzdata embeds, fixed by the Go release that builds the
//     image (ZoneinfoFiles).
type Base struct {
	// Zoneinfo is the zip of TZif files /usr/share/zoneinfo is made of; empty
	// means the building Go toolchain's (GoZoneinfo).
	Zoneinfo string
}

// Paths of the base files a program reads.
const (
	// CABundlePath is where Go's crypto/x509, OpenSSL and most TLS stacks on
	// Linux look for the system roots first; SSL_CERT_FILE names it too.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// ZoneinfoDir is where Go's time package (and glibc) look for zones.
	ZoneinfoDir = "/usr/share/zoneinfo"
)

// NonrootUID is nonroot's user and group ID in passwd and group.
const NonrootUID = 65532

// passwd and group are distroless's (common/BUILD.bazel): root, nobody and
// nonroot, with no login shell.
const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
`

// nsswitch is distroless's nsswitch.conf. A static Go program reads only
// its hosts line: /etc/hosts first, then DNS.
const nsswitch = `# /etc/nsswitch.conf, as in distroless's static image.
passwd:         compat
group:          compat
shadow:         compat
gshadow:        files

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
ethers:         db files
rpc:            db files

netgroup:       nis
`

// Files returns the base's files, root-owned unless they are nonroot's.
func (b Base) Files() ([]File, error) {
	bundle, _, err := CABundle()
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	zoneinfo := b.Zoneinfo
	if zoneinfo == "" {
		if zoneinfo, err = GoZoneinfo(); err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
	}
	zones, err := ZoneinfoFiles(zoneinfo)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	files := []File{
		dir("/etc", 0o755),
		file("/etc/group", 0o644, group),
		file("/etc/nsswitch.conf", 0o644, nsswitch),
		file("/etc/passwd", 0o644, passwd),
		dir("/etc/ssl", 0o755),
		dir("/etc/ssl/certs", 0o755),
		{Path: CABundlePath, Mode: 0o644, Body: bundle},
		dir("/home", 0o755),
		{Path: "/home/nonroot", Mode: fs.ModeDir | 0o700, UID: NonrootUID, GID: NonrootUID},
		dir("/root", 0o700),
		dir("/tmp", fs.ModeSticky|0o777),
		dir("/usr", 0o755),
		dir("/usr/share", 0o755),
	}
	return append(files, zones...), nil
}

// dir is a root-owned folder.
func dir(path string, mode fs.FileMode) File {
	return File{Path: path, Mode: fs.ModeDir | mode}
}

// file is a root-owned regular file.
func file(path string, mode fs.FileMode, body string) File {
	return File{Path: path, Mode: mode, Body: []byte(body)}
}
