package node

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/node/internal/shim"
)

// devices are bound from the host into every container's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mounts lists what a container instance gets mounted, in order: /proc,
// /dev, /sys as a runtime mounts them; for a Host image the host's
// directories; the Pod's /etc files; the termination-message file; and the
// container's volumeMounts.
func (p *pod) mounts(c *container, img *image, inst *instance, env *envList) ([]shim.Mount, error) {
	ms := []shim.Mount{
		{Type: "proc", Source: "proc", Target: "/proc", NoSuidDevExec: true},
		{Type: "tmpfs", Source: "tmpfs", Target: "/dev", Data: "mode=755,size=65536k"},
	}
	for _, d := range devices {
		ms = append(ms, shim.Mount{Type: "bind", Source: "/dev/" + d, Target: "/dev/" + d})
	}
	for link, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		ms = append(ms, shim.Mount{Type: "symlink", Source: target, Target: "/dev/" + link})
	}
	ms = append(ms,
		shim.Mount{Type: "tmpfs", Source: "shm", Target: "/dev/shm", Data: "mode=1777,size=65536k", NoSuidDevExec: true},
		shim.Mount{Type: "sysfs", Source: "sysfs", Target: "/sys", ReadOnly: true, NoSuidDevExec: true},
	)
	if img.host {
		ms = append(ms, hostMounts(img, inst)...)
	}
	for _, name := range []string{"hosts", "hostname", "resolv.conf"} {
		ms = append(ms, shim.Mount{Type: "bind", Source: filepath.Join(p.dir, "etc", name), Target: "/etc/" + name})
	}
	termPath := c.spec.TerminationMessagePath
	if termPath == "" {
		termPath = "/dev/termination-log"
	}
	ms = append(ms, shim.Mount{Type: "bind", Source: inst.termPath, Target: termPath})
	for i, vm := range c.spec.VolumeMounts {
		src := p.volumeDir(vm.Name)
		if _, err := os.Stat(src); err != nil {
			return nil, &configError{fmt.Sprintf("volumeMount %s: no volume %q", vm.MountPath, vm.Name)}
		}
		if err := p.mountPointIn(c.spec.VolumeMounts[:i], vm.MountPath); err != nil {
			return nil, err
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, lookupIn(env.m))
		}
		if sub != "" {
			if filepath.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
				return nil, &configError{fmt.Sprintf("volumeMount %s: subPath %q must be a relative path without '..'", vm.MountPath, sub)}
			}
			src = filepath.Join(src, sub)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		ms = append(ms, shim.Mount{Type: "bind", Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	return ms, nil
}

// mountPointIn creates the mount point of path in the volume of the last of
// earlier whose mount holds it, as a runtime does: that mount may be
// read-only in the container (kube-dns's /etc/coredns, which holds the
// custom ConfigMap's /etc/coredns/custom), the volume's folder is not.
func (p *pod) mountPointIn(earlier []corev1.VolumeMount, path string) error {
	for _, vm := range slices.Backward(earlier) {
		rel, err := filepath.Rel(vm.MountPath, path)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || vm.SubPath != "" || vm.SubPathExpr != "" {
			continue
		}
		return os.MkdirAll(filepath.Join(p.volumeDir(vm.Name), rel), 0o755)
	}
	return nil
}

// hostMounts shows the host's system directories in a Host image's root:
// read-only binds, and overlays for the ones a Pod may write or mount on.
func hostMounts(img *image, inst *instance) []shim.Mount {
	var ms []shim.Mount
	for _, name := range hostTop {
		if fi, err := os.Lstat("/" + name); err == nil && fi.IsDir() {
			ms = append(ms, shim.Mount{Type: "bind", Source: "/" + name, Target: "/" + name, ReadOnly: true})
		}
	}
	for _, name := range hostCopyOnWrite {
		upper, work := filepath.Join(inst.dir, name+".upper"), filepath.Join(inst.dir, name+".work")
		_ = os.MkdirAll(upper, 0o755)
		_ = os.MkdirAll(work, 0o755)
		ms = append(ms, shim.Mount{Type: "overlay", Source: "overlay", Target: "/" + name,
			Data: "lowerdir=/" + name + ",upperdir=" + upper + ",workdir=" + work})
	}
	for _, hp := range img.paths {
		ms = append(ms, shim.Mount{Type: "bind", Source: hp, Target: hp, ReadOnly: true})
	}
	return ms
}

// writeEtcFiles writes the Pod's /etc/hosts, /etc/hostname and
// /etc/resolv.conf, which every container gets bound in.
func (p *pod) writeEtcFiles() error {
	obj := p.object()
	dir := filepath.Join(p.dir, "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name, _ := p.n.hostname(obj)
	files := map[string]string{
		"hosts":       p.n.etcHosts(obj, p.podIP()),
		"hostname":    name + "\n",
		"resolv.conf": p.n.resolvConf(obj),
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
