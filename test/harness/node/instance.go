package node

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/test/harness/node/internal/shim"
	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// containerIDPrefix is the runtime part of the container IDs reported.
const containerIDPrefix = "hairpin://"

// instance is one run of a container: its directory, log and shim spec.
// A restart is a new instance with a fresh writable layer, as a runtime
// creates a new container.
type instance struct {
	id, imageID string
	dir         string // upper and work layers, the spec
	logPath     string
	termPath    string // the termination message file, on the host
	pid         int    // the container process, once started
	stdin       bool   // the container has a stdin pipe (stdin: true)
	spec        shim.Spec
}

// prepare resolves everything a new instance of c needs: image,
// environment, command, user, capabilities and mounts.
func (n *Node) prepare(c *container) (*instance, error) {
	p := c.p
	obj := p.object()
	img, err := n.images.get(c.spec.Image)
	if err != nil {
		return nil, err
	}
	env, err := n.containerEnv(obj, &c.spec, p.podIP())
	if err != nil {
		return nil, &configError{err.Error()}
	}
	cred, err := containerUser(obj, &c.spec, img)
	if err != nil {
		return nil, err
	}
	caps, err := containerCaps(c.spec.SecurityContext)
	if err != nil {
		return nil, &configError{err.Error()}
	}
	args, err := commandLine(&c.spec, img, env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.runs++
	run := c.runs
	c.mu.Unlock()
	inst := &instance{
		id:      fmt.Sprintf("%s-%s-%d", shortID(string(obj.UID), 12), c.spec.Name, run),
		imageID: img.id,
		dir:     filepath.Join(p.dir, "containers", c.spec.Name, fmt.Sprint(run)),
		logPath: filepath.Join(p.dir, "logs", c.spec.Name, fmt.Sprintf("%d.log", run)),
		stdin:   c.spec.Stdin,
	}
	inst.termPath = filepath.Join(inst.dir, "termination-log")
	for _, d := range []string{"root", "upper", "work", "logs"} {
		if d == "logs" {
			err = os.MkdirAll(filepath.Dir(inst.logPath), 0o755)
		} else {
			err = os.MkdirAll(filepath.Join(inst.dir, d), 0o755)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(inst.termPath, nil, 0o666); err != nil {
		return nil, err
	}
	name, _ := n.hostname(obj)
	// As containerd: HOSTNAME, then the image's, then the container's.
	full := mergeEnv(append([]string{"HOSTNAME=" + name}, img.config.Env...), env.list())
	sc := c.spec.SecurityContext
	p.mu.Lock()
	netPath := p.net.ns.Path()
	p.mu.Unlock()
	inst.spec = shim.Spec{
		NetNS:        netPath,
		Hostname:     name,
		Root:         filepath.Join(inst.dir, "root"),
		Lower:        img.config.Dir,
		Upper:        filepath.Join(inst.dir, "upper"),
		Work:         filepath.Join(inst.dir, "work"),
		ReadOnlyRoot: sc != nil && isTrue(sc.ReadOnlyRootFilesystem),
		Args:         args,
		Env:          full,
		Dir:          firstNonEmpty(c.spec.WorkingDir, img.config.WorkingDir),
		UID:          userns.ID(cred.uid),
		GID:          userns.GID(cred.gid),
		Groups:       mappedGroups(cred.groups),
		Caps:         caps,
		NoNewPrivs:   sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
	}
	mounts, err := p.mounts(c, img, inst, env)
	if err != nil {
		return nil, err
	}
	inst.spec.Mounts = mounts
	return inst, nil
}

// commandLine is the process's argv by Kubernetes' rules: command replaces
// the image's Entrypoint, args replace its Cmd (and command alone drops
// Cmd); $(VAR) in command and args is expanded against the environment.
func commandLine(c *corev1.Container, img *image, env *envList) ([]string, error) {
	look := lookupIn(env.m)
	exp := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = expand(s, look)
		}
		return out
	}
	var argv []string
	switch {
	case len(c.Command) > 0:
		argv = append(exp(c.Command), exp(c.Args)...)
	case len(c.Args) > 0:
		argv = append(append([]string{}, img.config.Entrypoint...), exp(c.Args)...)
	default:
		argv = append(append([]string{}, img.config.Entrypoint...), img.config.Cmd...)
	}
	if len(argv) == 0 {
		return nil, &configError{fmt.Sprintf("no command specified for image %q", c.Image)}
	}
	return argv, nil
}

// mergeEnv is base with over's values replacing those of the same name.
func mergeEnv(base, over []string) []string {
	names := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	var out []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// terminationMessage is what kubelet reports as the termination message:
// the container's terminationMessagePath file, or with
// FallbackToLogsOnError and an empty file after a failure, the log's tail.
func (inst *instance) terminationMessage(c *corev1.Container, exit int32) string {
	const max = 4096
	b, _ := os.ReadFile(inst.termPath)
	if len(b) == 0 && exit != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		b, _ = os.ReadFile(inst.logPath)
		if len(b) > 2048 {
			b = b[len(b)-2048:]
		}
	}
	if len(b) > max {
		b = b[:max]
	}
	return string(b)
}

// mappedGroups is groups as this user namespace can hold them
// (userns.GID), without repeats.
func mappedGroups(groups []uint32) []uint32 {
	var out []uint32
	for _, g := range groups {
		if m := userns.GID(g); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}
