package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// reloadDone is what CoreDNS (caddy) logs once a reload has replaced the
// running server with one built from the Corefile read again. The reload
// plugin's "Running configuration SHA512" line would say more, but CoreDNS
// 1.15.0 logs it only at the first start (see TestActivationOnDistributionCorefiles).
const reloadDone = "[INFO] Reloading complete"

// rerender is step 4: the distribution writes its stock Corefile again and
// CoreDNS reloads it; the answers do not change.
func (st *story) rerender(ctx context.Context, _ testing.TB) error {
	c := st.c
	st.header("4. Survives a re-render: the stock Corefile is written again and reloaded")
	st.note(fmt.Sprintf("What %s does on every upgrade: render its Corefile, replace the file, reload CoreDNS.", distributionName))
	before := strings.Count(c.coredns.Output(), reloadDone)
	st.cmd("cp %s %s", c.stockPath, c.corefile)
	if err := os.WriteFile(c.corefile, []byte(c.stock), 0o644); err != nil {
		return fmt.Errorf("write the Corefile: %w", err)
	}
	st.cmd("kill -USR1 %d", c.coredns.Cmd.Process.Pid)
	if err := c.coredns.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := harness.Poll(wait, func(context.Context) error {
		if n := strings.Count(c.coredns.Output(), reloadDone); n <= before {
			return fmt.Errorf("%d reloads logged, want %d", n, before+1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reload (log %s): %w", c.coredns.LogPath, err)
	}
	st.cmd("grep -e Reloading -e plugin/hairpin %s", c.coredns.LogPath)
	st.block(strings.Join(grepLines(c.coredns.Output(), "Reloading", "plugin/hairpin"), "\n"))
	if err := c.corefileIsStock(); err != nil {
		return err
	}
	st.note("The reloaded server is built afresh from the stock Corefile, its cache empty; our image has")
	st.note("activated hairpin in it again (a repeated activation is not logged twice). The answers:")
	return st.answers(ctx, false, "after the reload: still its own target")
}
