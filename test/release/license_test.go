package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// checkLicense checks that everything the release published carries the
// checkout's LICENSE byte for byte: each platform's image of both pushed
// indexes at imagebuild.LicensePath, and each archive in out (the
// plugin's, at its top; the chart's, in the chart's folder).
func checkLicense(t *testing.T, registry, out string, s summary) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(harness.RepoDir(t), "LICENSE"))
	if err != nil {
		t.Fatalf("the checkout has no LICENSE: %v", err)
	}
	for _, spec := range []imagebuild.Spec{imagebuild.CoreDNS("", testVersion), imagebuild.Proxy("", testVersion)} {
		tag := registry + "/" + spec.Name + ":" + testVersion
		idx, err := remote.Index(ref(t, tag), remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, desc := range m.Manifests {
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			got, err := binaryOf(img, imagebuild.LicensePath)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s %s: %s is %d bytes (%v); want the checkout's LICENSE", tag, desc.Platform, imagebuild.LicensePath, len(got), err)
			}
		}
	}
	archives := 0
	for _, f := range s.Files {
		var inside string
		switch {
		case strings.HasSuffix(f, ".tar.gz"):
			inside = "LICENSE"
		case strings.HasSuffix(f, ".tgz"):
			inside = "coredns-hairpin/LICENSE"
		default:
			continue
		}
		archives++
		got, err := fileInTarGz(filepath.Join(out, f), inside)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %s is %d bytes (%v); want the checkout's LICENSE", f, inside, len(got), err)
		}
	}
	if archives == 0 {
		t.Errorf("release.json lists no archive: %v", s.Files)
	}
}

// fileInTarGz returns the file name in the gzip-compressed tar at path.
func fileInTarGz(path, name string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("not in the archive")
		}
		if err != nil {
			return nil, err
		}
		if hdr.Name == name {
			return io.ReadAll(tr)
		}
	}
}
