package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes out/SHA256SUMS for files, in the form `sha256sum -c`
// reads ("HASH  NAME", names relative to out, sorted).
func writeSums(out string, files []string) (string, error) {
	var lines []string
	for _, f := range files {
		sum, err := fileSHA256(f)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(out, f)
		if err != nil {
			return "", err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel))
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	path := filepath.Join(out, "SHA256SUMS")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	return path, nil
}
