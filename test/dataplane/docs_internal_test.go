package dataplane

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestDocsBackgroundJobRunsUntilThePageEnds starts a page's background
// command as the docs runner does: the command counts as run once the job
// has written a line, a job that fails before fails the command, and the
// page's end stops the job with everything it started.
func TestDocsBackgroundJobRunsUntilThePageEnds(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		wantOut       string
		wantErr       bool
	}{
		{name: "ReadyOnceItWritesALine", command: "echo listening; exec sleep 600", wantOut: "listening\n"},
		{name: "WhatItStartsStopsWithIt", command: "sleep 600 & echo $!; wait"},
		{name: "FailureBeforeItWritesFailsTheCommand", command: "exit 3", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &DocsRun{root: t.TempDir(), env: []string{"PATH=/usr/bin:/bin"}}
			out, err := d.startJob(tc.command)
			if (err != nil) != tc.wantErr || tc.wantOut != "" && out != tc.wantOut {
				t.Fatalf("startJob(%q) = %q, %v; want %q, an error: %v", tc.command, out, err, tc.wantOut, tc.wantErr)
			}
			pids := []int{d.jobs[0].cmd.Process.Pid}
			if child, err := strconv.Atoi(strings.TrimSpace(out)); err == nil {
				pids = append(pids, child)
			}
			if err := d.stopJobs(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			for _, pid := range pids {
				if err := harness.Poll(ctx, func(context.Context) error {
					if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
						return errors.New("still running")
					}
					return nil
				}); err != nil {
					t.Errorf("process %d of the job after the page's end: %v", pid, err)
				}
			}
		})
	}
}

// TestDocsExportSetsTheVariableForThePagesNextCommands runs an export
// line of the docs and then a command that reads the variable.
func TestDocsExportSetsTheVariableForThePagesNextCommands(t *testing.T) {
	root := t.TempDir()
	d := &DocsRun{root: root, env: []string{"PATH=/usr/bin:/bin", "KUBECONFIG=/elsewhere"}}
	command := "export KUBECONFIG=$PWD/foo-admin.conf"
	words, err := harness.ShellWords(command)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.export(t.Context(), command, words); err != nil {
		t.Fatal(err)
	}
	out, err := d.bash(t.Context(), `printf %s "$KUBECONFIG"`)
	if want := root + "/foo-admin.conf"; err != nil || out != want {
		t.Fatalf("KUBECONFIG after %q = %q, %v; want %q", command, out, err, want)
	}
	if n := strings.Count(strings.Join(d.env, "\n"), "KUBECONFIG="); n != 1 {
		t.Errorf("the environment has KUBECONFIG %d times: %q", n, d.env)
	}
	_ = os.Remove(root + "/foo-admin.conf")
}

// migrateCheckBlock is docs/migrate.md's check of ouroboros's block as
// the page wrote it up to 20d5324 (its step 4 of the Cozystack section):
// the prose says what the command must print.
const migrateCheckBlock = "4. **Check that the block is gone** (the command must print `gone`), and\n" +
	"   remove it by hand if the hook did not run ([the marked\n" +
	"   block](#finding-and-removing-the-leftovers) below):\n\n" +
	"   ```sh\n" +
	"   kubectl -n kube-system get cm coredns -o jsonpath='{.data.Corefile}' | grep -q 'BEGIN ouroboros' && echo 'still there' || echo gone\n" +
	"   ```\n"

// TestDocsBlockMustPrintWhatThePageSays runs that block as the docs test
// does, with a kubectl that prints the Corefile: with ouroboros's block
// in it, as the docs test's cluster held it when the page's step ran (the
// package's deletion, which would have stripped it, is marked skip), the
// block exits 0 and prints `still there`, which fails now; without the
// block it prints `gone` and passes.
func TestDocsBlockMustPrintWhatThePageSays(t *testing.T) {
	blocks := harness.CodeBlocks(migrateCheckBlock)
	if len(blocks) != 1 || len(blocks[0].Prints) != 1 || blocks[0].Prints[0] != "gone" {
		t.Fatalf("blocks %+v; want one that prints gone", blocks)
	}
	for _, tc := range []struct {
		name, corefile string
		wantErr        bool
	}{
		{"BlockLeftPrintsStillThere", ".:53 {\n    errors\n" + ouroborosBlock + "}\n", true},
		{"BlockGonePrintsGone", ".:53 {\n    errors\n}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			corefile := harness.WriteFile(t, dir, "corefile", tc.corefile)
			if err := os.Chmod(harness.WriteFile(t, dir, "kubectl", "#!/bin/sh\ncat "+corefile+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			d := &DocsRun{root: t.TempDir(), env: []string{"PATH=" + dir + ":/usr/bin:/bin"}}
			err := d.RunBlock(t.Context(), "docs/migrate.md", blocks[0], false, t.Logf)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RunBlock: %v; want an error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), `it printed "still there"`) {
				t.Errorf("the error does not say what it printed: %v", err)
			}
		})
	}
}
