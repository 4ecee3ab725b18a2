package main

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func deployment(args ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hairpin-proxy"}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "hairpin-proxy", Args: args}}
	return d
}

var testLocal = localAddrs{
	listen:   map[int]string{8080: "127.77.0.10:80", 8443: "127.77.0.10:443"},
	upstream: map[string]string{"ctl.tenant.svc.cluster.local.:80": "127.9.9.9:8080", "ctl.tenant.svc.cluster.local.:443": "127.9.9.9:443"},
	health:   "127.0.0.1:9999",
}

func TestProxyArgs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{
			name: "RoutesListenOnTheClusterIPAndDialTheControllerKeepingTheHeaderPort",
			args: []string{"--route=:8080=ctl.tenant.svc.cluster.local.:80,name=t-http", "--route=:8443=ctl.tenant.svc.cluster.local.:443,name=t-https,header-port=8443"},
			want: []string{"--route=127.77.0.10:80=127.9.9.9:8080,name=t-http,header-port=80", "--route=127.77.0.10:443=127.9.9.9:443,name=t-https,header-port=8443"},
		},
		{
			name: "HealthGoesToLoopbackAndTeardownIsQuickOtherFlagsStay",
			args: []string{"--route=:8080=ctl.tenant.svc.cluster.local.:80", "--health-addr=:9090", "--lameduck=5s", "--drain-timeout=25s", "--proxy-protocol=2"},
			want: []string{"--route=127.77.0.10:80=127.9.9.9:8080,header-port=80", "--health-addr=127.0.0.1:9999", "--lameduck=0s", "--drain-timeout=1s", "--proxy-protocol=2"},
		},
		{name: "NoRouteIsAnError", args: []string{"--health-addr=:9090"}, wantErr: "no --route"},
		{name: "ContainerPortOfNoTargetIsAnError", args: []string{"--route=:9000=ctl.tenant.svc.cluster.local.:80"}, wantErr: "container port 9000"},
		{name: "UnknownUpstreamIsAnError", args: []string{"--route=:8080=other.tenant.svc.cluster.local.:80"}, wantErr: "no controller of the demo"},
		{name: "ListenWithAHostIsAnError", args: []string{"--route=0.0.0.0:8080=ctl.tenant.svc.cluster.local.:80"}, wantErr: "is not :PORT"},
		{name: "RouteWithoutUpstreamIsAnError", args: []string{"--route=:8080"}, wantErr: "want LISTEN=UPSTREAM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proxyArgs(deployment(tc.args...), testLocal)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTargetListens(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "127.77.0.10", Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)},
	}}}
	got := map[int]string{}
	if err := targetListens(svc, nil, got); err != nil {
		t.Fatal(err)
	}
	if want := testLocal.listen; len(got) != len(want) || got[8080] != want[8080] || got[8443] != want[8443] {
		t.Errorf("got %v, want %v", got, want)
	}
	// The chart names each route's container port (hairpin.routePort).
	svc.Spec.Ports[0].TargetPort = intstr.FromString("hp-1")
	got = map[int]string{}
	if err := targetListens(svc, []corev1.ContainerPort{{Name: "hp-1", ContainerPort: 8080}}, got); err != nil || got[8080] != testLocal.listen[8080] {
		t.Errorf("a named targetPort: got %v (%v), want 8080 to %s", got, err, testLocal.listen[8080])
	}
	if err := targetListens(svc, nil, map[int]string{}); err == nil || !strings.Contains(err.Error(), `targetPort "hp-1"`) {
		t.Errorf("a named targetPort the container lacks: err = %v, want one naming it", err)
	}
}
