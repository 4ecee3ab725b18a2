// Package shim is the first process of every container that the node agent
// runs: the init of the container's PID namespace. The agent starts it as a
// copy of its own binary (/proc/self/exe) in new mount, PID, UTS and IPC
// namespaces with [EnvSpec] naming a [Spec] file; the package's init function
// then takes over before main runs, so the test binary and the demo binary
// carry it alike, and nothing is built or installed at run time.
//
// The shim joins the pod's network namespace, builds the container's root
// (an overlay on the image's files, its volumes, /proc, /dev, /sys),
// and starts the container process through a second copy of the binary
// (stage 2), which chroots, takes the container's user and capabilities as
// runc does, and execs the entrypoint. The shim stays behind as PID 1: it
// forwards signals to the container process, reaps orphans and, when the
// container process exits, kills what is left and exits with its status.
// The agent starts it with Pdeathsig, and a PID namespace whose init dies
// is killed whole by the kernel, so no container outlives the agent.
package shim

import (
	"encoding/json"
	"fmt"
	"os"
)

// EnvSpec names the environment variable holding the path of the Spec file.
// A process started with it set runs as the shim instead of its main.
const EnvSpec = "HAIRPIN_NODE_SHIM"

// envStage2 makes a process run as stage 2 of the Spec file it names.
const envStage2 = "HAIRPIN_NODE_STAGE2"

// EnvExec makes a process run as stage 2 of the Spec file it names for a
// command executed in a running container (kubectl exec): started by
// nsenter(1) in the container's namespaces, it chroots, takes the
// container's user and capabilities and execs the command, with no
// StatusFD.
const EnvExec = "HAIRPIN_NODE_EXEC"

// StatusFD is the descriptor on which the shim reports a failure to start
// the container, as one line of text. The agent passes the write end of a
// pipe: it reads EOF without a message once the container's execve
// succeeded.
const StatusFD = 3

// Spec is everything the shim needs to start one container.
type Spec struct {
	// NetNS is the path of the network namespace to join ("" stays).
	NetNS string `json:"netns,omitempty"`
	// Hostname is the UTS namespace's host name.
	Hostname string `json:"hostname,omitempty"`
	// Root is the (empty) directory the container's root is mounted on.
	Root string `json:"root"`
	// Lower, Upper and Work make the root an overlay: Lower holds the
	// image's files and is never written, Upper receives the container's
	// writes.
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// ReadOnlyRoot makes the root read-only once everything is mounted.
	ReadOnlyRoot bool `json:"readOnlyRoot,omitempty"`
	// Mounts are made in order; their targets are paths inside the root.
	Mounts []Mount `json:"mounts,omitempty"`
	// Args is the command line; Args[0] without a slash is looked up in
	// the PATH of Env, inside the root.
	Args []string `json:"args"`
	// Env is the container process's whole environment.
	Env []string `json:"env"`
	// Dir is the working directory inside the root ("" is "/").
	Dir string `json:"dir,omitempty"`
	// UID, GID and Groups are the container process's credentials.
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	// Caps are the capability numbers left in the bounding, permitted and
	// effective sets, as a container runtime sets them.
	Caps []uint `json:"caps"`
	// NoNewPrivs sets no_new_privs (allowPrivilegeEscalation: false).
	NoNewPrivs bool `json:"noNewPrivs,omitempty"`
}

// Mount is one mount inside the container's root.
type Mount struct {
	// Type is "bind", "symlink" (Target becomes a link to Source), or a
	// file system type such as "proc", "sysfs", "tmpfs" or "overlay".
	Type string `json:"type"`
	// Source is the host path for "bind", the link text for "symlink", and
	// the device name otherwise.
	Source string `json:"source,omitempty"`
	// Target is the absolute path inside the root.
	Target string `json:"target"`
	// Data are the file system's options (e.g. "mode=755").
	Data string `json:"data,omitempty"`
	// ReadOnly mounts read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// NoSuidDevExec adds nosuid,nodev,noexec (for /proc, /sys, /dev/shm).
	NoSuidDevExec bool `json:"noSuidDevExec,omitempty"`
}

// Write stores s at path for a shim to read.
func (s *Spec) Write(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("shim spec: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("shim spec: %w", err)
	}
	return nil
}

func readSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("spec %s: %w", path, err)
	}
	if len(s.Args) == 0 {
		return nil, fmt.Errorf("spec %s: no command", path)
	}
	return &s, nil
}
