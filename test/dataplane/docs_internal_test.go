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
