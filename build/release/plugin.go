package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pluginName is the kubectl plugin's binary, and so its command
// (`kubectl hairpin`).
const pluginName = "kubectl-hairpin"

// pluginPlatform is one OS/architecture the plugin is released for.
type pluginPlatform struct{ OS, Arch string }

// pluginPlatforms are the platforms of the plugin's release archives.
var pluginPlatforms = []pluginPlatform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// pluginArchive is one released archive of the plugin.
type pluginArchive struct {
	pluginPlatform
	Path   string // out/kubectl-hairpin_VERSION_OS_ARCH.tar.gz
	SHA256 string
}

// archiveName is the file name of the plugin's archive for p.
func archiveName(v version, p pluginPlatform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", pluginName, v.Tag(), p.OS, p.Arch)
}

// buildPlugin cross-compiles the plugin's main package pkg (a path inside
// the module at root) for every platform as a static binary and writes one
// tar.gz per platform into out, holding the binary and the license at
// license (as LICENSE).
func buildPlugin(ctx context.Context, root, pkg, license, out, tmp string, v version, platforms []pluginPlatform) ([]pluginArchive, error) {
	if st, err := os.Stat(filepath.Join(root, pkg)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("plugin: %s is not a package folder (%v)", pkg, err)
	}
	var archives []pluginArchive
	for _, p := range platforms {
		bin := filepath.Join(tmp, "plugin", p.OS+"-"+p.Arch, pluginName)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+v.Tag(), "-o", bin, "./"+filepath.ToSlash(filepath.Clean(pkg)))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("plugin: go build for %s/%s: %w\n%s", p.OS, p.Arch, err, b)
		}
		files := []archiveFile{{name: pluginName, path: bin, mode: 0o755}, {name: licenseFile, path: license, mode: 0o644}}
		a := pluginArchive{pluginPlatform: p, Path: filepath.Join(out, archiveName(v, p))}
		if err := writeTarGz(a.Path, files); err != nil {
			return nil, fmt.Errorf("plugin: %w", err)
		}
		sum, err := fileSHA256(a.Path)
		if err != nil {
			return nil, fmt.Errorf("plugin: %w", err)
		}
		a.SHA256 = sum
		archives = append(archives, a)
		fmt.Printf("release: %s sha256:%s\n", a.Path, sum)
	}
	return archives, nil
}

// archiveFile is one file of a tar.gz: its name inside, where it is read
// from, and its mode.
type archiveFile struct {
	name, path string
	mode       int64
}

// writeTarGz writes files into a gzip-compressed tar at path, with fixed
// owners and times, so that the same binaries give the same archive.
func writeTarGz(path string, files []archiveFile) (err error) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path + ".tmp")
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, af := range files {
		if err := addFile(tw, af); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func addFile(tw *tar.Writer, af archiveFile) error {
	src, err := os.Open(af.path)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: af.name, Mode: af.mode, Size: st.Size(), ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatUSTAR}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", af.name, err)
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("%s: %w", af.name, err)
	}
	return nil
}

// downloadURL expands "{version}" in a release download URL template.
func downloadURL(template string, v version) string {
	return strings.TrimSuffix(strings.ReplaceAll(template, "{version}", v.Tag()), "/")
}
