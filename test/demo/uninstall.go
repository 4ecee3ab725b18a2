package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/e2e"
)

// uninstall is step 5: `helm uninstall`; the names resolve publicly again,
// nothing of ours is left in the cluster, and the Corefile is still the
// stock one, byte for byte.
func (st *story) uninstall(ctx context.Context, _ testing.TB) error {
	c := st.c
	st.header("5. Uninstall: the public answers return, nothing of ours is left")
	st.cmd("helm uninstall %s --namespace %s --wait", release, namespace)
	out, err := st.helm.Run(ctx, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
	if err != nil {
		return err
	}
	st.block(out)
	st.note("The Deployment is gone, so kubelet would stop the proxy pod: the demo stops its process.")
	if err := st.proxy.Stop(); err != nil && !strings.Contains(err.Error(), "terminated") {
		return fmt.Errorf("stop the proxy: %w", err)
	}
	for _, ctl := range c.controllers {
		took, err := st.waitAnswer(ctx, ctl.host, ctl.lb)
		if err != nil {
			return err
		}
		if n := cacheNote(took); n != "" {
			st.note(fmt.Sprintf("%s: the public answer again%s", ctl.host, n))
		}
	}
	if err := st.answers(ctx, true, "after the uninstall: the public answer"); err != nil {
		return err
	}

	svcs, err := targetServices(ctx, c.cp)
	if err != nil {
		return err
	}
	st.cmd("kubectl get svc -A -l %s", e2e.TargetLabel)
	st.block(targetTable(svcs))
	if len(svcs) != 0 {
		return fmt.Errorf("target Services left after the uninstall: %+v", svcs)
	}
	for _, q := range []struct {
		kinds string
		list  func() ([]string, error)
	}{
		{rbacKinds, func() ([]string, error) { return releaseObjects(ctx, c.cp, rbac) }},
		{"deployments,services,serviceaccounts,configmaps,networkpolicies,poddisruptionbudgets", func() ([]string, error) {
			return releaseObjects(ctx, c.cp, workload)
		}},
	} {
		objs, err := q.list()
		if err != nil {
			return err
		}
		st.cmd("kubectl get %s -A -l %s -o name", q.kinds, releaseSelector)
		st.block(listing(objs))
		if len(objs) != 0 {
			return fmt.Errorf("objects of the release left after the uninstall: %v", objs)
		}
	}
	secrets, err := releaseSecrets(ctx, c.cp)
	if err != nil {
		return err
	}
	st.cmd("kubectl get secrets -A -l owner=helm,name=%s -o name", release)
	st.block(listing(secrets))
	if len(secrets) != 0 {
		return fmt.Errorf("helm's release records left after the uninstall: %v", secrets)
	}
	st.note(fmt.Sprintf("Namespace %s stays, as helm leaves every namespace that --create-namespace made.", namespace))

	st.note("And the Corefile was never touched: it is the stock file, byte for byte.")
	st.cmd("cmp %s %s && echo identical", c.corefile, c.stockPath)
	if err := c.corefileIsStock(); err != nil {
		return err
	}
	st.block("identical")
	return nil
}
