package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The chain of a conflist, run as a runtime runs it through libcni
// (SPEC.md, "Section 3: Execution of Network Configurations", and
// libcni/api.go's AddNetworkList and DelNetworkList, in
// containernetworking/cni at 3f51e88).

// cniTimeout bounds one plugin's ADD or DEL: the first ADD on a node can
// wait for the agent to compile the Pod's datapath. A kubelet gives its
// runtime 4 minutes.
const cniTimeout = 3 * time.Minute

// cniInvoker runs the plugins of a network for one attachment.
type cniInvoker struct {
	path    []string                    // CNI_PATH: where the plugins are, searched in order
	env     []string                    // the attachment's CNI_* variables, then the network's own
	command func(path string) *exec.Cmd // runs the plugin where the runtime would
}

// attach runs ADD through the list and returns the final result. When a
// plugin fails, ADD stops there, and the whole list gets its DEL: "A
// _delete_ must still be executed even if the _add_ fails" (SPEC.md,
// "Lifecycle & Ordering"), which is what a runtime does with libcni, whose
// AddNetworkList only halts.
func (l *cniConfList) attach(in cniInvoker) ([]byte, error) {
	result, err := l.add(in)
	if err != nil {
		return nil, errors.Join(err, l.del(in, nil))
	}
	return result, nil
}

// add runs ADD through the plugins in order, each with the result of the
// one before as its prevResult, and returns the last one's.
func (l *cniConfList) add(in cniInvoker) ([]byte, error) {
	var result json.RawMessage
	for i := range l.Plugins {
		stdin, err := l.request(i, result)
		if err != nil {
			return nil, err
		}
		if result, err = in.run("ADD", l.types[i], stdin); err != nil {
			return nil, err
		}
	}
	return result, nil
}

// del runs DEL through the plugins in reverse order, stopping at the first
// error. Each gets the ADD's final result as prevResult from spec 0.4.0
// on; before, none, as libcni's DelNetworkList does.
func (l *cniConfList) del(in cniInvoker, result []byte) error {
	var prev json.RawMessage
	if ok, _ := cniVersionAtLeast(l.CNIVersion, 0, 4); ok && len(result) > 0 {
		prev = result
	}
	for i := len(l.Plugins) - 1; i >= 0; i-- {
		stdin, err := l.request(i, prev)
		if err != nil {
			return err
		}
		if _, err := in.run("DEL", l.types[i], stdin); err != nil {
			return err
		}
	}
	return nil
}

// run executes plugin typ with command (ADD or DEL) and stdin, and returns
// its stdout; a failure carries the plugin's error result when it printed
// one.
func (in cniInvoker) run(command, typ string, stdin []byte) ([]byte, error) {
	plugin, err := in.find(typ)
	if err != nil {
		return nil, fmt.Errorf("cni %s %s: %w", typ, command, err)
	}
	cmd := in.command(plugin)
	cmd.Env = append(append(os.Environ(),
		"CNI_COMMAND="+command,
		"CNI_PATH="+strings.Join(in.path, string(filepath.ListSeparator)),
	), in.env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Start()
	if err == nil {
		stop := time.AfterFunc(cniTimeout, func() { _ = cmd.Process.Kill() })
		err = cmd.Wait()
		stop.Stop()
	}
	if err != nil {
		var e cniError
		if json.Unmarshal(stdout.Bytes(), &e) == nil && e.Msg != "" {
			return nil, fmt.Errorf("cni %s %s: %s (code %d): %s", typ, command, e.Msg, e.Code, e.Details)
		}
		return nil, fmt.Errorf("cni %s %s: %w: %s%s", typ, command, err, stdout.Bytes(), bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// find is the executable of plugin typ: the first in the path that has
// one, as libcni's FindInPath looks.
func (in cniInvoker) find(typ string) (string, error) {
	for _, dir := range in.path {
		if p := filepath.Join(dir, typ); harness.Executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no plugin %q in %v", typ, in.path)
}

// cniError is the error a plugin prints on stdout when it fails.
type cniError struct {
	Code    int    `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
}
