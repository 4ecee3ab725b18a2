// Package node is the node agent of the real-dataplane test cluster: a
// kubelet for one Node whose Pods run as processes on this machine, each in
// its own network namespace, from their PodSpec.
//
// virtual-kubelet's node library keeps the Node object, its lease and the
// Pods' lifecycle against the apiserver; this package is its provider. A
// Pod gets what kubelet and a ptp CNI plugin would give it:
//
//   - a network namespace with eth0, an address from the node's pod CIDR
//     and a default route to the gateway (.1), whose host end (vethXXXX)
//     lives in the node's namespace with the gateway as a /32 and a /32
//     route back to the Pod: no bridge, nothing in the root namespace; or,
//     with [Config.CNI], the namespace attached by a real CNI plugin (ADD
//     when the sandbox is made, DEL when it goes, CNI_NETNS and CNI_ARGS
//     as a kubelet's runtime passes them), whose result gives the Pod its
//     address;
//   - per container: an overlay root on the image's files (an OCI layout
//     unpacked once, or read-only binds of this machine's /usr, /etc, ...
//     for [Image.Host]), the Pod's /etc/hosts, /etc/hostname and
//     /etc/resolv.conf (per dnsPolicy), its volumes (configMap, secret,
//     emptyDir, downwardAPI, projected with a bound service-account token)
//     written with kubelet's atomic-writer layout and kept up to date, and
//     the command, arguments and environment (valueFrom, envFrom, service
//     links, $(VAR) expansion) resolved as kubelet resolves them;
//   - the user, group and capabilities of its securityContext or image,
//     restarts with back-off per restartPolicy, and startup, readiness and
//     liveness probes (httpGet, tcpSocket, exec) reported as Pod
//     conditions and container statuses;
//   - stdout and stderr as pipes that the node drains into the container's
//     log, and a stdin pipe for stdin: true, served through the kubelet
//     API (containerLogs, exec, attach) that the apiserver proxies
//     `kubectl logs`, `kubectl exec` and `kubectl run -i` to;
//   - `kubectl port-forward` through the same API, to the port on the
//     loopback of the Pod's network namespace, as a CRI runtime forwards.
//
// Each container process is started by a copy of the running binary acting
// as its shim (see internal/shim), so the package works the same from a
// test binary and from the demo. It needs root, and everything it creates
// is gone after [Node.Stop]; if the process is killed, the kernel kills
// every container (each is a PID namespace whose init dies with its
// parent) and netns.Sweep removes the namespaces left.
//
// OCI images are unpacked by package rootfs, a leaf that the harness
// imports too.
package node
