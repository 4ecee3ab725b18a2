package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// docBlock is one shell block of a page and what the docs test does with it.
type docBlock struct {
	page  string
	block harness.CodeBlock
	// how: "run", "render", "skip" or "on" (a shape of its own); reason
	// is the marker's: for "on", the shape and the step.
	how, reason string
}

// docBlocks reads every page the docs test accounts for and sorts its
// shell blocks into run, rendered (`<!-- docs-test: render REASON -->`)
// skipped (`<!-- docs-test: skip REASON -->`) and run on a cluster of
// the shape they describe (`<!-- docs-test: on SHAPE STEP -->`, one of
// [dataplane.Shapes], whose test runs the blocks of each STEP). A fence
// without a language, a marker without a reason, an unknown marker or
// shape is an error: nothing on a page escapes the accounting.
func docBlocks(t *testing.T) (pages []string, blocks []docBlock) {
	t.Helper()
	root := harness.RepoDir(t)
	pages, err := harness.DocPages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range harness.CodeBlocks(string(text)) {
			where := fmt.Sprintf("%s:%d", page, b.Line)
			if b.Lang == "" {
				t.Errorf("%s: a fence without a language; name it (sh for commands, yaml, text, ...)", where)
				continue
			}
			if !b.IsShell() {
				continue
			}
			db := docBlock{page: page, block: b, how: "run"}
			if b.Marker != "" {
				how, reason, _ := strings.Cut(b.Marker, " ")
				db.how, db.reason = how, strings.TrimSpace(reason)
				if how != "skip" && how != "render" && how != "on" {
					t.Errorf("%s: unknown marker <!-- docs-test: %s -->; want skip REASON, render REASON or on SHAPE STEP", where, b.Marker)
				}
				if shape, step, _ := strings.Cut(db.reason, " "); how == "on" && (!slices.Contains(dataplane.Shapes, shape) || step == "") {
					t.Errorf("%s: <!-- docs-test: %s -->: want on SHAPE STEP, SHAPE one of %v", where, b.Marker, dataplane.Shapes)
				}
				if db.reason == "" {
					t.Errorf("%s: <!-- docs-test: %s --> names no reason", where, how)
				}
			}
			blocks = append(blocks, db)
		}
	}
	return pages, blocks
}

// TestEveryDocCommandRunsOrIsMarked runs every shell block of README.md,
// docs/, the READMEs under manifests/ and of the plugins and the proxy, in
// page order, on the shared iptables cluster, as a user runs them from a
// checkout (kubectl from `make tools`, helm, kubectl-hairpin; placeholders
// per [dataplane.DocPlaceholders]). A block marked `<!-- docs-test: render
// REASON -->` is a helm install rendered with `helm template` and validated
// with `kubectl apply --dry-run=server`; a block marked `<!-- docs-test:
// skip REASON -->` is not run (a cloud CLI, a Talos node, a release that is
// not published here); a block marked `<!-- docs-test: on SHAPE STEP -->`
// runs in the test of that shape (TestMigrateFromOuroboros). Where the
// page says what a block's last command prints ("prints `gone`"), its
// output must hold it (dataplane.DocsRun.RunBlock). It fails when a block
// is neither run nor marked, or when a command fails or prints otherwise
// than the page says, and logs blocks run / rendered / on a shape /
// marked per page.
func TestEveryDocCommandRunsOrIsMarked(t *testing.T) {
	pages, blocks := docBlocks(t)
	if len(blocks) < 30 {
		t.Fatalf("found %d shell blocks; the extraction is broken", len(blocks))
	}
	if testing.Short() {
		t.Skip("runs the docs' commands on a whole cluster")
	}
	ran := map[string]map[string]int{}
	t.Run("iptables", func(t *testing.T) {
		e := dataplane.Shared(t, "iptables")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
		defer cancel()
		d, err := e.StartDocs(ctx, t)
		t.Cleanup(func() {
			if d == nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := d.Close(ctx); err != nil {
				t.Errorf("leaving the cluster as it was: %v", err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, page := range pages {
			t.Run(page, func(t *testing.T) {
				if err := d.StartPage(ctx, page); err != nil {
					t.Fatal(err)
				}
				for _, b := range blocks {
					if b.page != page || b.how == "skip" || b.how == "on" {
						continue
					}
					if err := d.RunBlock(ctx, page, b.block, b.how == "render", t.Logf); err != nil {
						t.Fatal(err)
					}
					if ran[page] == nil {
						ran[page] = map[string]int{}
					}
					ran[page][b.how]++
				}
				if err := d.EndPage(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "page\trun\trendered\ton a shape\tmarked\ttotal\t")
	var sum [5]int
	for _, page := range pages {
		var n [5]int
		for _, b := range blocks {
			if b.page != page {
				continue
			}
			n[4]++
			switch b.how {
			case "on":
				n[2]++
			case "skip":
				n[3]++
			}
		}
		n[0], n[1] = ran[page]["run"], ran[page]["render"]
		for i := range n {
			sum[i] += n[i]
		}
		if n[4] > 0 {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t\n", page, n[0], n[1], n[2], n[3], n[4])
		}
	}
	fmt.Fprintf(w, "all pages\t%d\t%d\t%d\t%d\t%d\t\n", sum[0], sum[1], sum[2], sum[3], sum[4])
	w.Flush()
	t.Logf("docs: shell blocks run / rendered / on a shape / marked per page:\n%s", sb.String())
	if !t.Failed() && !testing.Short() && sum[0]+sum[1]+sum[2]+sum[3] != sum[4] {
		t.Errorf("%d of %d blocks were neither run nor marked", sum[4]-sum[0]-sum[1]-sum[2]-sum[3], sum[4])
	}
}
