package release

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// startRegistry serves an in-memory OCI registry on a loopback port and
// returns its HOST:PORT; it is stopped when t ends.
func startRegistry(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("registry: %v", err)
		}
	})
	return ln.Addr().String()
}

// ref parses a reference into the loopback registry (plain HTTP).
func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure, name.StrictValidation)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

// resolve returns the digest the registry serves for a reference.
func resolve(t *testing.T, s string) (v1.Hash, error) {
	t.Helper()
	d, err := remote.Head(ref(t, s), remote.WithContext(t.Context()))
	if err != nil {
		return v1.Hash{}, err
	}
	return d.Digest, nil
}

// binaryOf returns the file at path (without its leading "/") in img's
// flattened file system.
func binaryOf(img v1.Image, path string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path, "/")
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s in the image", path)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(hdr.Name, "./") == want {
			var b bytes.Buffer
			if _, err := io.Copy(&b, tr); err != nil {
				return nil, err
			}
			return b.Bytes(), nil
		}
	}
}
