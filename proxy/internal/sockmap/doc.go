// Package sockmap is the proxy's opt-in in-kernel relay.
//
// Once the proxy has written the PROXY header to the upstream, both sockets
// of a connection go into a BPF sockhash that has an SK_SKB stream-verdict
// program attached. The program redirects every segment a socket receives to
// the send side of its peer (bpf_sk_redirect_hash, egress), so the payload
// never reaches the process and no goroutine wakes for it. The program is
// assembled in Go (prog.go); nothing is compiled at build time.
//
// Each socket's sockhash entry is keyed by its own socket cookie and holds
// its peer, so the program looks up the cookie of the socket a segment
// arrived on and lands on the socket to send it out of. A second hash, keyed
// by the same cookie, counts the bytes redirected from each socket and the
// time of the last one: the byte counts, the idle clock and the flush check
// below read it, with no system call per segment.
//
// What the kernel does not do, the pair does in userspace:
//
//   - A FIN is not redirected. Each direction keeps one goroutine parked in
//     a read of its source, which returns only at end of stream, the
//     program having taken all data. Copy then waits until the peer has
//     accepted every byte redirected to it (the kernel sends them from a
//     work queue after the program returns), so that the peer's write side
//     can be shut down.
//   - A FIN-only segment reaches the program as an empty skb. Redirected, the
//     kernel's sender sees a 0-byte send as a hard error, reports EPIPE on
//     the peer and stops sending (sk_psock_backlog), so the program drops
//     empty skbs.
//   - Segments queued before the handover, or arriving during it, must not
//     meet the program while one socket of the pair is still missing from
//     the map. The receive low-water mark holds them back (TCP does not
//     signal data-ready below it) until both sockets are in, and lowering
//     it signals data-ready, which hands the queue to the program in order.
//   - The kernel admits only established sockets: one whose peer has
//     already sent its FIN is refused (ErrNotEstablished), and the caller
//     relays that connection in userspace.
//
// A redirected segment waits for the peer's send buffer in a kernel queue
// that has no limit and does not close the sender's window: there is no
// backpressure toward a slow receiver (proxy/README.md, "Known limit"). An
// opt-in bound that handed a lagging direction to userspace was removed: it
// stalled, and under load it once duplicated a segment.
//
// Two ways in: Attach hands the sockets over and leaves the lifecycle to
// the caller, who runs Copy per direction (the proxy's relay does, so its
// idle timeout, byte metrics, half-close and drain apply unchanged);
// Splice runs the whole lifecycle itself.
//
// Loading needs CAP_BPF and CAP_NET_ADMIN. Open reports missing support or
// privileges as an error wrapping ErrUnsupported, so the caller can fall
// back to the userspace relay.
package sockmap
