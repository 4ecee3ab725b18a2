package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// licenseFile is the project's license at the repository's root. Every
// archive a release publishes carries it (the plugin's, the chart's), as
// every image does (build/images): a legal review reads the terms in what
// it received, not in the repository.
const licenseFile = "LICENSE"

// licensePath returns the path of root's license. Without one nothing is
// released: an archive without its terms cannot be redistributed.
func licensePath(root string) (string, error) {
	p := filepath.Join(root, licenseFile)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("license: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return "", fmt.Errorf("license: %s is not a file with the license's text", p)
	}
	return p, nil
}

// addLicense copies the license at path into the chart folder, where `helm
// package` takes it into the chart's archive.
func addLicense(path, chart string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("license: %w", err)
	}
	if err := os.WriteFile(filepath.Join(chart, licenseFile), b, 0o644); err != nil {
		return fmt.Errorf("license: %w", err)
	}
	return nil
}
