package sockmap

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// counter is the value of the counters map: what the verdict program has
// redirected from one socket. Field order and sizes are the program's
// offsets below.
type counter struct {
	Bytes  uint64 // payload bytes redirected to the peer
	LastNs uint64 // CLOCK_MONOTONIC of the last redirect, in nanoseconds
}

const (
	counterBytesOff  = 0
	counterLastNsOff = 8

	skDrop = 0 // SK_DROP: free the skb
	skPass = 1 // SK_PASS: keep the skb (or follow the redirect just set)

	skbLenOff = 0 // offsetof(struct __sk_buff, len)
)

// Every map is keyed by a socket cookie (8 bytes).
func mapSpec(name string, typ ebpf.MapType, valueSize, maxEntries uint32) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: typ, KeySize: 8, ValueSize: valueSize, MaxEntries: maxEntries}
}

// sockhashSpec holds the sockets: key is a socket's own cookie, value (on
// update, a socket fd) is its peer.
func sockhashSpec(n uint32) *ebpf.MapSpec { return mapSpec("hairpin_peers", ebpf.SockHash, 8, n) }

// countersSpec holds one counter per socket.
func countersSpec(n uint32) *ebpf.MapSpec { return mapSpec("hairpin_bytes", ebpf.Hash, 16, n) }

// holdSpec marks the sockets whose segments stay on their own socket, for
// userspace to relay (copy.go, and the proxy's loop_kernel.go).
func holdSpec(n uint32) *ebpf.MapSpec { return mapSpec("hairpin_hold", ebpf.Hash, 8, n) }

// verdictSpec is the stream verdict, in C:
//
//	if (skb->len == 0)
//		return SK_DROP;        // a bare FIN: TCP has taken it already
//	u64 key = bpf_get_socket_cookie(skb);
//	if (bpf_map_lookup_elem(&hold, &key))
//		return SK_PASS;        // userspace relays this direction now
//	if (bpf_sk_redirect_hash(skb, &peers, &key, 0) != SK_PASS)
//		return SK_PASS;        // no peer (yet, or any more): keep it here
//	struct counter *c = bpf_map_lookup_elem(&bytes, &key);
//	if (c) {
//		__sync_fetch_and_add(&c->bytes, skb->len);
//		c->last_ns = bpf_ktime_get_ns();
//	}
//	return SK_PASS;            // follow the redirect
//
// A segment kept on its socket is read by the pair's reader. Held, it relays
// it; with no peer it aborts the connection, a loud reset rather than bytes
// silently dropped or reordered.
func verdictSpec(peers, bytes, hold *ebpf.Map) *ebpf.ProgramSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // r6 = skb
		asm.LoadMem(asm.R1, asm.R6, skbLenOff, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "drop"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),

		asm.LoadMapPtr(asm.R1, hold.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),

		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, peers.FD()),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 0), // flags 0: egress of the peer
		asm.FnSkRedirectHash.Call(),
		asm.JNE.Imm(asm.R0, skPass, "pass"),

		asm.LoadMapPtr(asm.R1, bytes.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R6, skbLenOff, asm.Word),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, counterBytesOff),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R7, counterLastNsOff, asm.R0, asm.DWord),

		asm.Mov.Imm(asm.R0, skPass).WithSymbol("pass"),
		asm.Return(),

		asm.Mov.Imm(asm.R0, skDrop).WithSymbol("drop"),
		asm.Return(),
	}
	return &ebpf.ProgramSpec{
		Name:         "hairpin_verdict",
		Type:         ebpf.SkSKB,
		AttachType:   ebpf.AttachSkSKBStreamVerdict,
		Instructions: insns,
		License:      "GPL",
	}
}
