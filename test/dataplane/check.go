package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// CheckResult is one entry of `kubectl hairpin check -o json`.
type CheckResult struct {
	ID      string   `json:"id"`
	Group   string   `json:"group"`
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Hint    string   `json:"hint"`
	Objects []string `json:"objects"`
}

// CheckReport is what `kubectl hairpin check` printed, with its exit code.
type CheckReport struct {
	Checks []CheckResult `json:"checks"`
	// Exit is the command's exit code; Table its table output.
	Exit  int
	Table string
}

// Check runs our kubectl plugin, `kubectl-hairpin check`, against the
// cluster with the admin kubeconfig, once as JSON and once as the table a
// person reads.
func (e *Env) Check(ctx context.Context) (*CheckReport, error) {
	bin := filepath.Join(e.bin, "kubectl-hairpin")
	run := func(args ...string) (string, int, error) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"check", "--kubeconfig", e.CP.Kubeconfig}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), exit.ExitCode(), nil
		}
		if err != nil {
			return "", -1, fmt.Errorf("%s: %w: %s", bin, err, errOut.String())
		}
		return out.String(), 0, nil
	}
	js, code, err := run("-o", "json")
	if err != nil {
		return nil, err
	}
	r := &CheckReport{Exit: code}
	if err := json.Unmarshal([]byte(js), r); err != nil {
		return nil, fmt.Errorf("kubectl-hairpin check -o json (exit %d): %w: %q", code, err, js)
	}
	if r.Table, _, err = run(); err != nil {
		return nil, err
	}
	return r, nil
}

// Failed returns the failed checks with id.
func (r *CheckReport) Failed(id string) []CheckResult { return r.with(id, "fail") }

// Passed returns the checks with id that passed.
func (r *CheckReport) Passed(id string) []CheckResult { return r.with(id, "ok") }

// Warned returns the warnings with id.
func (r *CheckReport) Warned(id string) []CheckResult { return r.with(id, "warn") }

// Failures returns every failed check.
func (r *CheckReport) Failures() []CheckResult {
	var out []CheckResult
	for _, c := range r.Checks {
		if c.Status == "fail" {
			out = append(out, c)
		}
	}
	return out
}

func (r *CheckReport) with(id, status string) []CheckResult {
	var out []CheckResult
	for _, c := range r.Checks {
		if c.ID == id && c.Status == status {
			out = append(out, c)
		}
	}
	return out
}

// Mentions reports whether any of cs names s in its message or objects.
func Mentions(cs []CheckResult, s string) bool {
	for _, c := range cs {
		if strings.Contains(c.Message, s) || strings.Contains(strings.Join(c.Objects, " "), s) {
			return true
		}
	}
	return false
}
