package dataplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// untilPrints is how long a command that a page has repeated until it
// prints what the page says may take: a state that CoreDNS's reload
// brings (kubelet's ConfigMap sync, then the reload plugin's 30 s ±15 s)
// comes within it.
const untilPrints = 3 * time.Minute

// Shapes are the clusters, other than the docs test's shared one, that a
// page's block can be marked to run on (`<!-- docs-test: on SHAPE STEP
// -->`): the test of that shape runs the page's blocks of each STEP as
// that step.
var Shapes = []string{"cozystack-management", "cozystack-tenant"}

// RunBlock runs a shell block of a page: each command (rendered, for a
// block marked render), and holds the last command's output to what the
// page says it prints (harness.CodeBlock.Prints), instead of its exit
// status alone. A command that the page has repeated until it prints
// that is repeated every 5 s for up to untilPrints. logf, if not nil, is
// given each command with its output.
func (d *DocsRun) RunBlock(ctx context.Context, page string, b harness.CodeBlock, render bool, logf func(format string, args ...any)) error {
	cmds := harness.ShellCommands(b.Body)
	for i, c := range cmds {
		where := fmt.Sprintf("%s:%d", page, b.Line+1+c.Line)
		run := d.Run
		if render {
			run = d.Render
		}
		out, err := run(ctx, c.Text)
		if err == nil && i == len(cmds)-1 && len(b.Prints) > 0 {
			err = printsWhatThePageSays(out, b.Prints)
			if err != nil && b.Until {
				out, err = d.runUntilItPrints(ctx, c.Text, b.Prints)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %s\n%w\n%s", where, c.Text, err, out)
		}
		if logf != nil {
			logf("%s: %s\n%s", where, d.Substitute(c.Text), out)
		}
	}
	return nil
}

// runUntilItPrints runs command again until it prints each of prints.
func (d *DocsRun) runUntilItPrints(ctx context.Context, command string, prints []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, untilPrints)
	defer cancel()
	// The last try that ended says why, not the one the deadline cut.
	var out string
	var last error
	err := harness.PollEvery(ctx, 5*time.Second, func(ctx context.Context) error {
		o, err := d.Run(ctx, command)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			err = printsWhatThePageSays(o, prints)
		}
		out, last = o, err
		return err
	})
	if err != nil && last != nil {
		err = fmt.Errorf("repeated for %s: %w", untilPrints, last)
	}
	return out, err
}

// printsWhatThePageSays returns an error unless each of prints, what a
// page says a command prints, is in a line of out.
func printsWhatThePageSays(out string, prints []string) error {
	lines := strings.Split(out, "\n")
	for _, p := range prints {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, p)
		}
		if !found {
			return fmt.Errorf("docs: the page says it prints %q; it printed %q", p, strings.TrimSpace(out))
		}
	}
	return nil
}
