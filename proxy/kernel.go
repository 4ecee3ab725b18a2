package proxy

import (
	"errors"

	"github.com/coredns-hairpin/hairpin/proxy/internal/sockmap"
)

// Label values of hairpin_proxy_kernel_relay{state}.
const (
	kernelOff      = "off"      // not asked for
	kernelActive   = "active"   // the kernel relays connections
	kernelFallback = "fallback" // asked for, unavailable: userspace relays
)

// openKernelRelay is sockmap.Open; tests replace it to see the fallback.
var openKernelRelay = sockmap.Open

// startKernelRelay loads the in-kernel relay if the configuration asks for
// it, and otherwise, or if the kernel or the privileges are missing, leaves
// the userspace relay in place: one log line and the gauge say which.
func (s *Server) startKernelRelay() {
	if !s.cfg.KernelRelay {
		s.metrics.setKernelRelay(kernelOff)
		return
	}
	r, err := openKernelRelay(sockmap.Options{MaxPairs: s.cfg.MaxConns})
	if err != nil {
		s.metrics.setKernelRelay(kernelFallback)
		msg := "in-kernel relay failed to load; using the userspace relay"
		if errors.Is(err, sockmap.ErrUnsupported) {
			msg = "in-kernel relay unsupported here (needs CAP_BPF and CAP_NET_ADMIN, and sockhash support); using the userspace relay"
		}
		s.log.Warn(msg, "err", err)
		return
	}
	s.kernel = r
	s.metrics.setKernelRelay(kernelActive)
	s.log.Info("in-kernel relay active: connections are relayed by a BPF sockhash")
}

// closeKernelRelay frees the relay's program and maps; every connection is
// closed by then.
func (s *Server) closeKernelRelay() {
	if s.kernel == nil {
		return
	}
	if err := s.kernel.Close(); err != nil {
		s.log.Warn("in-kernel relay: close", "err", err)
	}
	s.kernel = nil
}
