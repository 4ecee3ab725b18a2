package dataplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// coreDNSModule is upstream CoreDNS, whose version our build is on.
const coreDNSModule = "github.com/coredns/coredns"

// StockCoreDNSImage is the reference of upstream CoreDNS at our CoreDNS
// version, as kubeadm names it: what kube-dns runs before an adoption.
func StockCoreDNSImage() string {
	return "registry.k8s.io/coredns/coredns:" + coreDNSVersion()
}

// coreDNSVersion is the version of github.com/coredns/coredns this binary
// was built with (our go.mod's).
func coreDNSVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == coreDNSModule {
				return d.Version
			}
		}
	}
	return "unknown"
}

var stock struct {
	once   sync.Once
	layout string
	err    error
}

// UseStockCoreDNS makes [StockCoreDNSImage] runnable on the node: upstream's
// main package built from the module cache (every stock plugin, no hairpin)
// into an image like ours around it. It is built once per test binary.
func (e *Env) UseStockCoreDNS(ctx context.Context) error {
	stock.once.Do(func() { stock.layout, stock.err = buildStockImage(ctx) })
	if stock.err != nil {
		return stock.err
	}
	return e.Nodes[0].AddImage(StockCoreDNSImage(), node.Image{OCILayout: stock.layout})
}

// buildStockImage builds upstream CoreDNS for this machine and writes its
// image; both land in a folder the suite removes at its end.
func buildStockImage(ctx context.Context) (string, error) {
	dir := filepath.Join(suite.TempDir(), "stock-coredns")
	bin := filepath.Join(imagebuild.PlatformDir(dir, "linux", runtime.GOARCH), "coredns")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-o", bin, coreDNSModule)
	cmd.Dir = harness.RepoDir(suite)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("dataplane: go build %s: %w\n%s", coreDNSModule, err, out)
	}
	spec := imagebuild.CoreDNS(dir, coreDNSVersion())
	spec.Name, spec.Repository, spec.Description = "coredns", "registry.k8s.io/coredns", "CoreDNS"
	spec.Platforms = []imagebuild.Platform{{OS: "linux", Arch: runtime.GOARCH, Binary: bin}}
	out, err := imagebuild.Write(spec, filepath.Join(dir, "images"))
	if err != nil {
		return "", fmt.Errorf("dataplane: stock CoreDNS image: %w", err)
	}
	return out.Layout, nil
}

// SetCoreDNSImage does what `kubectl -n kube-system set image
// deployment/coredns coredns=IMAGE` does, and waits until the rollout is
// complete: every replica updated and available, no old Pod left.
func (e *Env) SetCoreDNSImage(ctx context.Context, image string) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"coredns","image":%q}]}}}}`, image)
	return e.patchAndRollOut(ctx, "kube-system", "coredns", patch)
}

// RestartCoreDNS does what `kubectl -n kube-system rollout restart
// deployment/coredns` does, and waits until the rollout is complete.
func (e *Env) RestartCoreDNS(ctx context.Context) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	return e.patchAndRollOut(ctx, "kube-system", "coredns", patch)
}

// CoreDNSImageNow is the image kube-dns's Deployment runs.
func (e *Env) CoreDNSImageNow(ctx context.Context) (string, error) {
	d, err := e.CP.Clientset.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return d.Spec.Template.Spec.Containers[0].Image, nil
}

func (e *Env) patchAndRollOut(ctx context.Context, ns, name, patch string) error {
	deps := e.CP.Clientset.AppsV1().Deployments(ns)
	d, err := deps.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("dataplane: patch deployment %s/%s: %w", ns, name, err)
	}
	return e.WaitRolledOut(ctx, ns, name, d.Generation)
}

// WaitRolledOut waits as `kubectl rollout status` does: the Deployment's
// controller has seen generation, every replica is updated and available,
// and no Pod of an older template is left, not even a terminating one.
func (e *Env) WaitRolledOut(ctx context.Context, ns, name string, generation int64) error {
	return harness.Poll(ctx, func(ctx context.Context) error {
		d, err := e.CP.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := rolledOut(d, generation); err != nil {
			return err
		}
		pods, err := e.CP.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return err
		}
		if n := int32(len(pods.Items)); n != *d.Spec.Replicas {
			return fmt.Errorf("%s/%s has %d pods, wants %d", ns, name, n, *d.Spec.Replicas)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
		}
		return nil
	})
}

func rolledOut(d *appsv1.Deployment, generation int64) error {
	s := d.Status
	switch want := *d.Spec.Replicas; {
	case s.ObservedGeneration < generation:
		return fmt.Errorf("deployment %s: generation %d not observed yet", d.Name, generation)
	case s.UpdatedReplicas < want, s.AvailableReplicas < want, s.Replicas > want:
		return fmt.Errorf("deployment %s: %d updated, %d available, %d in all; want %d", d.Name, s.UpdatedReplicas, s.AvailableReplicas, s.Replicas, want)
	}
	return nil
}
