package node

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// maxPods is the Node's pod capacity, kubelet's default.
const maxPods = 110

// KubeletVersion is what the Node reports as its kubelet's version: that
// of the apiserver and kube-proxy the cluster runs.
var KubeletVersion = "v1.37.2"

// nodeObject is the Node as registered: Ready, with its InternalIP, pod
// CIDR, kubelet endpoint and this machine's CPUs and memory.
func (n *Node) nodeObject() *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	cidr := n.cfg.PodCIDR.String()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.cfg.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:   n.cfg.NodeName,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: runtime.GOARCH,
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "hairpin node agent is posting ready status"},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"},
			},
			// No Hostname address: the apiserver prefers it by default for
			// reaching the kubelet (logs, exec), and no DNS resolves it.
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.cfg.NodeIP.String()}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{
				KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(n.cfg.KubeletPort)},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          KubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            runtime.GOARCH,
				KernelVersion:           unix.ByteSliceToString(uts.Release[:]),
				OSImage:                 "hairpin test node",
				ContainerRuntimeVersion: "hairpin-node://" + KubeletVersion,
			},
		},
	}
}

// nodeStatusError re-registers the Node when someone deleted it, as
// kubelet does; any other error is returned to be retried.
func (n *Node) nodeStatusError(ctx context.Context, err error) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	if _, cerr := n.cfg.Client.CoreV1().Nodes().Create(ctx, n.nodeObject(), metav1.CreateOptions{}); cerr != nil {
		return fmt.Errorf("re-register node: %w", cerr)
	}
	return nil
}

// onNode restricts a list or watch to the Pods bound to node.
func onNode(node string) func(*metav1.ListOptions) {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	return func(o *metav1.ListOptions) { o.FieldSelector = sel }
}

// memTotal is this machine's memory in bytes (MemTotal of /proc/meminfo).
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 1 << 30
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 1 << 30
}
