package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CNI is the CNI network that attaches the Pods, run as a kubelet's
// container runtime runs it: ADD when the sandbox is made, DEL when it
// goes.
type CNI struct {
	// ConfFile is the network's configuration list (a .conflist, as a
	// network's agent writes into /etc/cni/net.d), read at every ADD and
	// DEL; while it is missing, Pods wait in ContainerCreating, as behind a
	// runtime whose network is not ready. Its first plugin is run.
	ConfFile string
	// BinDir holds the plugins (CNI_PATH), each named by its type.
	BinDir string
	// Env is added to the plugin's environment (CILIUM_SOCK=..., say).
	Env []string
}

// cniConfList is the part of a .conflist the runtime reads.
type cniConfList struct {
	CNIVersion string            `json:"cniVersion"`
	Name       string            `json:"name"`
	Plugins    []json.RawMessage `json:"plugins"`
}

// pluginConf returns the plugin to run and the configuration it reads on
// stdin: the list's first plugin with the list's name and cniVersion, as
// libcni hands it over.
func (c *CNI) pluginConf() (string, []byte, error) {
	b, err := os.ReadFile(c.ConfFile)
	if err != nil {
		return "", nil, fmt.Errorf("cni: network not ready: %w", err)
	}
	var list cniConfList
	if err := json.Unmarshal(b, &list); err != nil {
		return "", nil, fmt.Errorf("cni: %s: %w", c.ConfFile, err)
	}
	if len(list.Plugins) == 0 {
		return "", nil, fmt.Errorf("cni: %s: no plugins", c.ConfFile)
	}
	var conf map[string]any
	if err := json.Unmarshal(list.Plugins[0], &conf); err != nil {
		return "", nil, fmt.Errorf("cni: %s: plugins[0]: %w", c.ConfFile, err)
	}
	typ, _ := conf["type"].(string)
	if typ == "" || strings.ContainsRune(typ, '/') {
		return "", nil, fmt.Errorf("cni: %s: plugins[0].type %q is not a plugin name", c.ConfFile, typ)
	}
	conf["name"], conf["cniVersion"] = list.Name, list.CNIVersion
	stdin, err := json.Marshal(conf)
	if err != nil {
		return "", nil, fmt.Errorf("cni: %s: %w", c.ConfFile, err)
	}
	return filepath.Join(c.BinDir, typ), stdin, nil
}

// cniTimeout bounds one ADD or DEL: the first ADD on a node can wait for
// the agent to compile the Pod's datapath. A kubelet gives its runtime 4
// minutes.
const cniTimeout = 3 * time.Minute

// cniResult is the part of a CNI result (spec 0.3.x and 1.0) the agent
// reads: the addresses the plugin gave eth0.
type cniResult struct {
	IPs []struct {
		Address string `json:"address"`
	} `json:"ips"`
}

// cniError is the error a plugin prints on stdout when it fails.
type cniError struct {
	Code    int    `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
}

// setUpCNINetwork creates the Pod's namespace and has the plugin attach it;
// the Pod's IP is the first IPv4 address of the plugin's result. Nothing is
// left on failure.
func (n *Node) setUpCNINetwork(pod *corev1.Pod) (_ *podNetwork, retErr error) {
	uid := string(pod.UID)
	ns, err := n.newPodNS(uid)
	if err != nil {
		return nil, err
	}
	pn := &podNetwork{ns: ns, owned: true, cni: n.cfg.CNI, cniArgs: cniArgs(pod), containerID: shortID(uid, 64), nodeNS: n.cfg.NodeNS}
	defer func() {
		if retErr != nil {
			_ = pn.tearDown()
		}
	}()
	out, err := pn.cniExec("ADD")
	if err != nil {
		return nil, err
	}
	var res cniResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("cni ADD: result: %w: %q", err, out)
	}
	for _, ip := range res.IPs {
		if p, err := netip.ParsePrefix(ip.Address); err == nil && p.Addr().Is4() {
			pn.ip = p.Addr()
			return pn, nil
		}
	}
	return nil, fmt.Errorf("cni ADD: no IPv4 address in the result %q", out)
}

// cniArgs are the CNI_ARGS a kubelet's runtime passes for pod.
func cniArgs(pod *corev1.Pod) string {
	return strings.Join([]string{
		"IgnoreUnknown=1",
		"K8S_POD_NAMESPACE=" + pod.Namespace,
		"K8S_POD_NAME=" + pod.Name,
		"K8S_POD_INFRA_CONTAINER_ID=" + shortID(string(pod.UID), 64),
		"K8S_POD_UID=" + string(pod.UID),
	}, ";")
}

// cniExec runs the plugin with command (ADD or DEL) for the Pod's namespace
// and returns its stdout. It runs in the node's network namespace, where a
// kubelet's runtime runs it: the host end of the Pod's link goes there.
func (pn *podNetwork) cniExec(command string) ([]byte, error) {
	plugin, conf, err := pn.cni.pluginConf()
	if err != nil {
		return nil, err
	}
	name := filepath.Base(plugin)
	cmd := pn.nodeNS.Command(plugin)
	cmd.Env = append(append(os.Environ(),
		"CNI_COMMAND="+command,
		"CNI_CONTAINERID="+pn.containerID,
		"CNI_NETNS="+pn.ns.Path(),
		"CNI_IFNAME=eth0",
		"CNI_ARGS="+pn.cniArgs,
		"CNI_PATH="+pn.cni.BinDir,
	), pn.cni.Env...)
	cmd.Stdin = bytes.NewReader(conf)
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
			return nil, fmt.Errorf("cni %s %s: %s (code %d): %s", name, command, e.Msg, e.Code, e.Details)
		}
		return nil, fmt.Errorf("cni %s %s: %w: %s%s", name, command, err, stdout.Bytes(), bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
