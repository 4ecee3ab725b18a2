package node

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// token is a service-account token as last requested.
type token struct {
	value           string
	issued, expires time.Time
}

// fresh reports whether t is younger than 80% of its lifetime, kubelet's
// refresh point.
func (t *token) fresh(now time.Time) bool {
	return t != nil && now.Before(t.issued.Add(t.expires.Sub(t.issued)*8/10))
}

// tokenFile adds a projected serviceAccountToken: a TokenRequest for the
// Pod's service account, bound to the Pod, kept until it needs refreshing.
func (p *pod) tokenFile(out map[string]file, key string, src *corev1.ServiceAccountTokenProjection, dm os.FileMode, owner fileOwner) error {
	p.mu.Lock()
	t := p.tokens[key]
	p.mu.Unlock()
	if !t.fresh(time.Now()) {
		var err error
		if t, err = p.requestToken(src); err != nil {
			return err
		}
		p.mu.Lock()
		p.tokens[key] = t
		p.mu.Unlock()
	}
	m := dm
	uid := p.commonRunAsUser()
	if uid >= 0 || owner.gid >= 0 {
		m = 0o600
	}
	f := owner.file([]byte(t.value), m)
	f.uid = uid
	out[src.Path] = f
	return nil
}

func (p *pod) requestToken(src *corev1.ServiceAccountTokenProjection) (*token, error) {
	obj := p.object()
	sa := obj.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: obj.Name, UID: obj.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := p.n.cfg.Client.CoreV1().ServiceAccounts(obj.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s/%s: %w", obj.Namespace, sa, err)
	}
	return &token{value: tr.Status.Token, issued: time.Now(), expires: tr.Status.ExpirationTimestamp.Time}, nil
}

// commonRunAsUser is the runAsUser every container of the Pod runs with,
// or -1: kubelet then makes it the token file's owner.
func (p *pod) commonRunAsUser() int {
	spec := p.object().Spec
	uid := -1
	for i, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		u := runAsUser(spec.SecurityContext, c.SecurityContext)
		if u == nil || (i > 0 && int(*u) != uid) {
			return -1
		}
		uid = int(*u)
	}
	return uid
}

// runAsUser is the container's runAsUser, else the Pod's, else nil.
func runAsUser(psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) *int64 {
	if sc != nil && sc.RunAsUser != nil {
		return sc.RunAsUser
	}
	if psc != nil {
		return psc.RunAsUser
	}
	return nil
}
