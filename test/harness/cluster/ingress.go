package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// NginxImage is the image reference of the ingress controllers' Pods; the
// node runs it from the machine's nginx ([node.Image].Host).
const NginxImage = "registry.k8s.io/ingress-nginx/controller:v1.13.3"

// IngressController is one ingress controller as ingress-nginx deploys
// itself with use-proxy-protocol: "true", serving one IngressClass and one
// zone: the ingress-nginx-controller ConfigMap, Deployment and
// LoadBalancer Service in its own namespace. Its Pods run nginx with the
// configuration ingress-nginx renders for that setting (every listener
// requires a PROXY header, the client address comes from it) and log each
// request as JSON to stdout.
type IngressController struct {
	// Namespace holds the controller; Class is its IngressClass.
	Namespace, Class string
	// Hosts are the Ingress hosts it serves (one Ingress each).
	Hosts []string
	// LBIP is the LoadBalancer IP it asks for (from LBPool), or with
	// ExternalIP its Service's externalIP.
	LBIP netip.Addr
	// Name is the controller's Service, Deployment and ConfigMap, as
	// ingress-nginx names them from its fullname (Cozystack's
	// root-ingress-controller); default [ControllerService].
	Name string
	// ExternalIP exposes it as Cozystack's publishing.externalIPs does: a
	// ClusterIP Service with spec.externalIPs [LBIP], no LoadBalancer, and
	// LBIP an address of the node's own (those are the nodes' addresses).
	ExternalIP bool
}

// ControllerService is the name of the controller's Service, as
// ingress-nginx names it by default.
const ControllerService = "ingress-nginx-controller"

// Service is the name of ic's Service (and Deployment and ConfigMap).
func (ic IngressController) Service() string {
	if ic.Name != "" {
		return ic.Name
	}
	return ControllerService
}

// InstallIngressController creates ic's objects and Ingresses, points each
// host at its LoadBalancer IP in the public DNS, and waits until the
// controller is available and HAProxy fronts it.
func (c *Cluster) InstallIngressController(ctx context.Context, ic IngressController) error {
	cs := c.CP.Clientset
	labels := map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller", "app.kubernetes.io/instance": ic.Namespace}
	conf, err := ingressNginxConf(ic)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := selfSignedPEM(c.dir, ic)
	if err != nil {
		return err
	}
	controllerClass := "k8s.io/ingress-nginx-" + ic.Class
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ic.Namespace}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
				ObjectMeta: metav1.ObjectMeta{Name: ic.Class, Labels: labels},
				Spec:       networkingv1.IngressClassSpec{Controller: controllerClass},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			// What ingress-nginx reads; the Pods' nginx.conf below is what it
			// renders from it.
			_, err := cs.CoreV1().ConfigMaps(ic.Namespace).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ic.Service(), Namespace: ic.Namespace, Labels: labels},
				Data:       map[string]string{"use-proxy-protocol": "true"},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ConfigMaps(ic.Namespace).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx-rendered", Namespace: ic.Namespace, Labels: labels},
				Data:       map[string]string{"nginx.conf": conf},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ic.Namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "default-tls", Namespace: ic.Namespace},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().Deployments(ic.Namespace).Create(ctx, ingressNginxDeployment(ic, labels, controllerClass), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(ic.Namespace).Create(ctx, controllerService(ic, labels), metav1.CreateOptions{})
			return err
		},
	}
	for _, h := range ic.Hosts {
		objects = append(objects, func() error {
			_, err := cs.NetworkingV1().Ingresses(ic.Namespace).Create(ctx, hostIngress(ic, h), metav1.CreateOptions{})
			return err
		}, func() error { return c.SetPublicName(h, ic.LBIP) })
	}
	if ic.ExternalIP {
		objects = append(objects, func() error { return c.NodeNS.AddAddr(c.Nodes[0].Dev, netip.PrefixFrom(ic.LBIP, 32)) })
	}
	for _, create := range objects {
		if err := create(); err != nil {
			return fmt.Errorf("cluster: ingress controller %s: %w", ic.Namespace, err)
		}
	}
	if err := c.WaitDeployment(ctx, ic.Namespace, ic.Service()); err != nil {
		return err
	}
	if !ic.ExternalIP {
		if _, err := c.LoadBalancerIP(ctx, ic.Namespace, ic.Service()); err != nil {
			return err
		}
	}
	// HAProxy fronts it once the load balancer has synced.
	return harness.Poll(ctx, func(ctx context.Context) error {
		conn, err := c.Outside.DialContext(ctx, "tcp", netip.AddrPortFrom(ic.LBIP, 80).String())
		if err == nil {
			conn.Close()
		}
		return err
	})
}

// AccessLog returns the requests that the controller's Pods logged.
func (c *Cluster) AccessLog(ctx context.Context, ic IngressController) ([]harness.AccessLogEntry, error) {
	access, _, err := c.podLogs(ctx, ic.Namespace, "app.kubernetes.io/component=controller", "controller")
	return access, err
}

// ErrorLog returns what the controller's nginx wrote to stderr, e.g.
// "broken header".
func (c *Cluster) ErrorLog(ctx context.Context, ic IngressController) (string, error) {
	_, errors, err := c.podLogs(ctx, ic.Namespace, "app.kubernetes.io/component=controller", "controller")
	return errors, err
}

// controllerService is ic's Service: a LoadBalancer asking for LBIP, or
// with ExternalIP a ClusterIP Service with the externalIP LBIP.
func controllerService(ic IngressController, labels map[string]string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ic.Service(), Namespace: ic.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("https")},
			},
		},
	}
	if ic.ExternalIP {
		svc.Spec.Type, svc.Spec.ExternalIPs = corev1.ServiceTypeClusterIP, []string{ic.LBIP.String()}
	} else {
		svc.Annotations = map[string]string{LBIPsAnnotation: ic.LBIP.String()}
	}
	return svc
}

func hostIngress(ic IngressController, host string) *networkingv1.Ingress {
	pathType := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(host, ".", "-"), Namespace: ic.Namespace},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(ic.Class),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}},
				}}},
			}}}},
		},
	}
}

// ingressNginxDeployment runs nginx with ingress-nginx's command line kept
// as the arguments a shell ignores, so that the Deployment reads as
// ingress-nginx's does (its --configmap, --ingress-class and
// --controller-class) to anyone inspecting the cluster.
func ingressNginxDeployment(ic IngressController, labels map[string]string, controllerClass string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ic.Service(), Namespace: ic.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "controller",
						Image:   NginxImage,
						Command: []string{"/bin/sh", "-c", "exec /usr/sbin/nginx -c /etc/ingress-nginx/nginx.conf -e stderr", "/nginx-ingress-controller"},
						Args: []string{
							"--publish-service=$(POD_NAMESPACE)/" + ic.Service(),
							"--election-id=ingress-nginx-leader",
							"--controller-class=" + controllerClass,
							"--ingress-class=" + ic.Class,
							"--configmap=$(POD_NAMESPACE)/" + ic.Service(),
						},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
						},
						Ports: []corev1.ContainerPort{
							{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
							{Name: "https", ContainerPort: 443, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(10254), Scheme: corev1.URISchemeHTTP}},
							PeriodSeconds: 1, FailureThreshold: 3,
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(10254), Scheme: corev1.URISchemeHTTP}},
							InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 5,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/ingress-nginx", ReadOnly: true},
							{Name: "tls", MountPath: "/etc/ingress-tls", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ingress-nginx-rendered"}}}},
						{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "default-tls"}}},
					},
				},
			},
		},
	}
}

// ingressNginxConf is nginx as ingress-nginx renders it for
// use-proxy-protocol: "true" (proxy-real-ip-cidr 0.0.0.0/0, its default), a
// server per host, and its health endpoint on :10254.
func ingressNginxConf(ic IngressController) (string, error) {
	var b bytes.Buffer
	err := ingressNginxTemplate.Execute(&b, map[string]any{"IC": ic, "LogFormat": harness.NginxLogFormat, "UserNS": userns.Inside()})
	if err != nil {
		return "", fmt.Errorf("cluster: nginx.conf of %s: %w", ic.Namespace, err)
	}
	return b.String(), nil
}

// nginxPrelude is what the controllers' nginx.conf files share: one
// worker, logs to the container's stdout and stderr (the access log as
// [harness.NginxLogFormat]), temp files in /tmp, and the opening of the
// http block. The template's data has UserNS and LogFormat.
const nginxPrelude = `worker_processes 1;
{{- if .UserNS}}
# In a user namespace that maps only root, nginx cannot chown its temp
# folders to its default user (written by the rootless test cluster).
user root root;
{{- end}}
pid /tmp/nginx.pid;
error_log stderr notice;

events {
    worker_connections 1024;
}

http {
    default_type text/plain;
    server_tokens off;
    client_body_temp_path /tmp/client_body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;

    {{.LogFormat}}
    access_log /dev/stdout hairpin;
`

var ingressNginxTemplate = template.Must(template.New("nginx.conf").Parse(`# nginx as ingress-nginx renders it with use-proxy-protocol: "true" (written by the coredns-hairpin test cluster)
daemon off;
master_process off;
` + nginxPrelude + `
    real_ip_header proxy_protocol;
    set_real_ip_from 0.0.0.0/0;

    ssl_certificate /etc/ingress-tls/tls.crt;
    ssl_certificate_key /etc/ingress-tls/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;

    server {
        listen 80 proxy_protocol default_server;
        listen 443 ssl proxy_protocol default_server;
        server_name _;
        location / {
            return 404 "default backend - 404\n";
        }
    }
{{range .IC.Hosts}}
    server {
        listen 80 proxy_protocol;
        listen 443 ssl proxy_protocol;
        server_name {{.}};
        location / {
            return 200 "ok host=$host client=$remote_addr controller={{$.IC.Namespace}}\n";
        }
        # Files that Cluster.BulkFile writes, for long downloads.
        location /bulk/ {
            default_type application/octet-stream;
            alias /tmp/bulk/;
        }
    }
{{end}}
    server {
        listen 10254;
        access_log off;
        location /healthz {
            return 200 "ok\n";
        }
    }
}
`))

// selfSignedPEM makes the controller's default certificate, for its hosts
// and LoadBalancer IP, and returns it and its key as PEM.
func selfSignedPEM(dir string, ic IngressController) (certPEM, keyPEM []byte, err error) {
	d, err := os.MkdirTemp(dir, "tls-"+ic.Namespace)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %s certificate: %w", ic.Namespace, err)
	}
	cert, err := harness.NewSelfSignedCert(d, append([]string{ic.LBIP.String()}, ic.Hosts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %s certificate: %w", ic.Namespace, err)
	}
	if certPEM, err = os.ReadFile(cert.CertFile); err != nil {
		return nil, nil, fmt.Errorf("cluster: %s certificate: %w", ic.Namespace, err)
	}
	if keyPEM, err = os.ReadFile(cert.KeyFile); err != nil {
		return nil, nil, fmt.Errorf("cluster: %s certificate: %w", ic.Namespace, err)
	}
	return certPEM, keyPEM, nil
}
