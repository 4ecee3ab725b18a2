package node

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
)

// grpcProbe asks the gRPC health service on the Pod's port, as kubelet's
// gRPC probe does: SERVING passes.
func (n *Node) grpcProbe(ctx context.Context, g *corev1.GRPCAction, ip string) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return n.cfg.NodeNS.DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("gRPC probe: %w", err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("gRPC probe: service unhealthy (responded with %q)", resp.Status)
	}
	return nil
}
