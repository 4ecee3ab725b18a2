package hairpin

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"

	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func apiserverSlice(port int32, ready bool, addrs ...string) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{Ports: []discovery.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}}}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{a}, Conditions: discovery.EndpointConditions{Ready: ptr.To(ready)}})
	}
	return s
}

func TestAPIServerDialerLearnsFromTheServicesEndpointSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slices []*discovery.EndpointSlice
		want   []string
	}{
		{"ready endpoints on the https port", []*discovery.EndpointSlice{apiserverSlice(6443, true, "10.0.0.2", "10.0.0.1")}, []string{"10.0.0.1:6443", "10.0.0.2:6443"}},
		{"an apiserver shutting down empties the slice: the last addresses stay", []*discovery.EndpointSlice{apiserverSlice(6443, true, "10.0.0.1"), apiserverSlice(6443, true)}, []string{"10.0.0.1:6443"}},
		{"not ready endpoints are not learned", []*discovery.EndpointSlice{apiserverSlice(6443, true, "10.0.0.1"), apiserverSlice(6443, false, "10.0.0.9")}, []string{"10.0.0.1:6443"}},
		{"a move replaces the addresses", []*discovery.EndpointSlice{apiserverSlice(6443, true, "10.0.0.1"), apiserverSlice(443, true, "10.0.0.3")}, []string{"10.0.0.3:443"}},
		{"a slice without the https port teaches nothing", []*discovery.EndpointSlice{{Endpoints: []discovery.Endpoint{{Addresses: []string{"10.0.0.1"}}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newAPIServerDialer()
			for _, s := range tc.slices {
				d.learn(s)
			}
			if got := d.alternatives("198.19.0.1:443"); !slices.Equal(got, tc.want) {
				t.Errorf("addresses %v, want %v", got, tc.want)
			}
		})
	}
}

// refusingAddr is a loopback address where nothing listens.
func refusingAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestAPIServerDialerGoesAroundARefusingServiceAddress(t *testing.T) {
	apiserver, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer apiserver.Close()
	host, port, _ := net.SplitHostPort(apiserver.Addr().String())
	service := refusingAddr(t)

	d := newAPIServerDialer()
	if c, err := d.DialContext(context.Background(), "tcp", service); err == nil {
		c.Close()
		t.Fatal("dialled a refusing address with no apiserver address learned")
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	d.learn(apiserverSlice(int32(p), true, host))
	c, err := d.DialContext(context.Background(), "tcp", service)
	if err != nil {
		t.Fatalf("the Service address refuses and the apiserver's own answers: %v", err)
	}
	defer c.Close()
	if got := c.RemoteAddr().String(); got != apiserver.Addr().String() {
		t.Errorf("connected to %s, want the apiserver at %s", got, apiserver.Addr())
	}
}
