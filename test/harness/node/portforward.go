package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// portForwardHandler serves `kubectl port-forward` as kubelet with a CRI
// runtime does (containerd's PortForward): it connects to the port on the
// loopback of the Pod's network namespace, so that a listener the Pod
// binds to localhost only is reached too, and relays the stream's bytes
// both ways. A port nothing listens on is refused at once, and the error
// goes back to kubectl on the stream pair's error stream.
func (n *Node) portForwardHandler(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	ns, ok := n.PodNetwork(namespace, pod)
	if !ok {
		return fmt.Errorf("node: port-forward: no running pod %s/%s on node %s", namespace, pod, n.cfg.NodeName)
	}
	conn, err := dialLoopback(ctx, ns.DialContext, port)
	if err != nil {
		return fmt.Errorf("node: port-forward to pod %s/%s: %w", namespace, pod, err)
	}
	return relay(stream, conn)
}

// dialLoopback connects to port on 127.0.0.1 and, failing that, on ::1,
// as containerd does: a Pod may listen on either family alone.
func dialLoopback(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), port int32) (net.Conn, error) {
	var errs []error
	for _, ip := range []string{"127.0.0.1", "::1"} {
		c, err := dial(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("nothing accepts on port %d of the pod's loopback: %w", port, errors.Join(errs...))
}

// relay copies between the client's stream and the Pod's connection until
// the Pod's side ends. The client's end of sending is passed on as a
// half-close, so that the Pod still answers a request that ends with it;
// the stream's own Close (by the caller) is the Pod's end in turn. The
// client's copy is not waited for: kubectl resets the stream once the
// error stream closes, which ends it.
func relay(stream io.ReadWriteCloser, conn net.Conn) error {
	defer conn.Close()
	go func() {
		_, err := io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok && err == nil {
			_ = cw.CloseWrite()
			return
		}
		// A client that failed, or a connection that cannot half-close,
		// ends the forward.
		_ = conn.Close()
	}()
	if _, err := io.Copy(stream, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("relaying from the pod: %w", err)
	}
	return nil
}
