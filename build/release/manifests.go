package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// renderManifests renders the plain manifests from the pinned chart the
// way `make manifests` renders the committed ones (build/manifests.sh,
// with each manifests/rendered/NAME/values.yaml), and writes each as
// out/hairpin-NAME.yaml: the same objects, with the images pinned by
// digest. It returns the files written.
func renderManifests(ctx context.Context, root, helmBin, chart, out, tmp string, v version) ([]string, error) {
	dir := filepath.Join(tmp, "manifests")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "build", "manifests.sh"), dir)
	cmd.Env = append(os.Environ(), "HELM="+helmBin, "CHART="+chart,
		"RENDERED_BY=coredns-hairpin "+v.Chart()+" (appVersion "+v.Tag()+") by `make release`")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("manifests: build/manifests.sh: %w\n%s", err, b)
	}
	rendered, err := filepath.Glob(filepath.Join(dir, "*", "hairpin.yaml"))
	if err != nil || len(rendered) == 0 {
		return nil, fmt.Errorf("manifests: build/manifests.sh rendered nothing (%v)", err)
	}
	var files []string
	for _, f := range rendered {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		dst := filepath.Join(out, "hairpin-"+filepath.Base(filepath.Dir(f))+".yaml")
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		files = append(files, dst)
	}
	return files, nil
}
