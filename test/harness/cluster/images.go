package cluster

import (
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// The node runs our images from the OCI layouts of `make images`, unpacked
// by the harness (which the node package cannot import).
func init() {
	node.UnpackImage = func(layoutDir, arch, dir string) (*node.Rootfs, error) {
		r, err := harness.UnpackImage(layoutDir, arch, dir)
		if err != nil {
			return nil, err
		}
		return &node.Rootfs{Dir: r.Dir, Entrypoint: r.Entrypoint, Cmd: r.Cmd, Env: r.Env, User: r.User, WorkingDir: r.WorkingDir}, nil
	}
}
