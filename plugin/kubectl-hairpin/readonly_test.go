package kubectlhairpin

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	rbac "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
)

// TestDocsRoleIsReadOnly: the role the docs give grants no write verb.
func TestDocsRoleIsReadOnly(t *testing.T) {
	for _, r := range docsClusterRole(t) {
		for _, v := range r.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("rule %v grants %q", r.Resources, v)
			}
		}
	}
}

// TestReadOnlyUserSeesWhatTheAdminSees: run as a user with only the docs'
// get/list/watch role (and get on pods/proxy), the report is the admin's,
// and every request the check makes is a GET.
func TestReadOnlyUserSeesWhatTheAdminSees(t *testing.T) {
	e := newEnv(t)
	e.apply(t, healthyCluster())
	admin := e.run(t, e.cp.Config)

	cfg := rest.CopyConfig(e.user(t, "checker", docsClusterRole(t)))
	var audit requestLog
	cfg.Wrap(audit.wrap)
	user := e.run(t, cfg)
	if !reflect.DeepEqual(user, admin) {
		t.Errorf("the read-only user's report differs from the admin's:\n%s\nadmin's:\n%s", table(t, user), table(t, admin))
	}
	if user.Failed() || user.Count(Warn) > 0 {
		t.Errorf("the read-only user's report is not clean:\n%s", table(t, user))
	}
	audit.mustBeReadOnly(t, true)
}

// TestUserWithoutRightsGetsAReportNotAnError: a user who may only list
// Services gets, instead of an error, a report that names each denied read
// and fails no check for want of facts.
func TestUserWithoutRightsGetsAReportNotAnError(t *testing.T) {
	e := newEnv(t)
	e.apply(t, healthyCluster())
	cfg := rest.CopyConfig(e.user(t, "nobody", []rbac.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}, ResourceNames: nil}}))
	var audit requestLog
	cfg.Wrap(audit.wrap)
	r := e.run(t, cfg)
	var denied []string
	for _, c := range r.Checks {
		if c.ID == idClusterAccess && c.Status == Warn {
			denied = append(denied, c.Message)
		}
	}
	for _, want := range []string{
		"may not list deployments.apps in all namespaces",
		"may not get services/kube-dns in kube-system",
		"may not list endpointslices.discovery.k8s.io in hairpin-system",
		"may not list ingresses.networking.k8s.io in all namespaces",
	} {
		if !slices.ContainsFunc(denied, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("no cluster-access warning %q; got:\n%s", want, strings.Join(denied, "\n"))
		}
	}
	// What could not be read is unknown, not broken.
	for _, c := range r.Checks {
		if c.Status == Fail {
			t.Errorf("%s fails on facts that could not be read: %s", c.ID, c.Message)
		}
	}
	audit.mustBeReadOnly(t, false)
}

// requestLog records the method and path of every request.
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.requests = append(l.requests, req.Method+" "+req.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// mustBeReadOnly fails t unless every request was a GET; withMetrics: and
// some read metrics through the pod proxy.
func (l *requestLog) mustBeReadOnly(t *testing.T, withMetrics bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.requests) == 0 {
		t.Fatal("no request was recorded")
	}
	proxied := false
	for _, r := range l.requests {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("request %s is not a read", r)
		}
		proxied = proxied || strings.HasSuffix(r, "/proxy/metrics")
	}
	if withMetrics && !proxied {
		t.Errorf("no metrics were read through the pod proxy: %v", l.requests)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
