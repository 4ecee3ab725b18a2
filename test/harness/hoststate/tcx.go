package hoststate

import (
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's BPF_PROG_QUERY for a device's tcx hook: Debian's bpftool
// (v7.1) neither lists tcx attachments in `net show` nor says which device
// a tcx link is on, and cilium-agent attaches its device programs through
// tcx.

// Values from include/uapi/linux/bpf.h (Linux 6.6 and later).
const (
	bpfProgQuery  = 16 // enum bpf_cmd BPF_PROG_QUERY
	bpfTCXIngress = 46 // enum bpf_attach_type BPF_TCX_INGRESS
	bpfTCXEgress  = 47 // BPF_TCX_EGRESS
)

// progQueryAttr is union bpf_attr's query member.
type progQueryAttr struct {
	targetIfindex   uint32
	attachType      uint32
	queryFlags      uint32
	attachFlags     uint32
	progIDs         uint64
	count           uint32
	_               uint32
	progAttachFlags uint64
	linkIDs         uint64
	linkAttachFlags uint64
	revision        uint64
}

// TCXPrograms returns the IDs of the programs attached to the tcx hook of
// device dev (its ingress, or its egress) in the calling thread's network
// namespace; run it in the device's (netns.NS.Do).
func TCXPrograms(dev string, egress bool) ([]int, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, fmt.Errorf("hoststate: %w", err)
	}
	attr := progQueryAttr{targetIfindex: uint32(ifi.Index), attachType: bpfTCXIngress}
	if egress {
		attr.attachType = bpfTCXEgress
	}
	ids := make([]uint32, 64)
	attr.progIDs = uint64(uintptr(unsafe.Pointer(&ids[0])))
	attr.count = uint32(len(ids))
	if _, _, errno := unix.Syscall(unix.SYS_BPF, bpfProgQuery, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)); errno != 0 {
		return nil, fmt.Errorf("hoststate: query the tcx programs of %s: %w", dev, errno)
	}
	runtime.KeepAlive(ids)
	out := make([]int, 0, attr.count)
	for _, id := range ids[:min(int(attr.count), len(ids))] {
		out = append(out, int(id))
	}
	return out, nil
}
