package harness_test

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestTeardownRunsEveryStepLastPushedFirst: each step runs once, in
// reverse order, also after one failed or ended its goroutine, and a step
// pushed while the teardown runs runs too; the errors name their steps.
func TestTeardownRunsEveryStepLastPushedFirst(t *testing.T) {
	var td harness.Teardown
	var ran []string
	step := func(name string, err error) {
		td.Push(name, func() error { ran = append(ran, name); return err })
	}
	step("namespaces", nil)
	step("control plane", errors.New("etcd would not stop"))
	td.Push("node agent", func() error {
		ran = append(ran, "node agent")
		runtime.Goexit()
		return nil
	})
	td.Push("load balancer", func() error {
		ran = append(ran, "load balancer")
		step("haproxy", nil) // a restart meanwhile
		return nil
	})
	err := td.Run()
	if want := []string{"load balancer", "haproxy", "node agent", "control plane", "namespaces"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("steps ran %q, want %q", ran, want)
	}
	for _, want := range []string{"control plane: etcd would not stop", "node agent: stopped before it returned"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run() = %v, want it to say %q", err, want)
		}
	}
	if err := td.Run(); err != nil || len(ran) != 5 {
		t.Errorf("a second Run ran steps again: %q, %v", ran, err)
	}
}

// TestSuiteRunTurnsAFatalOrASkipIntoAnError: a harness helper's Fatal or
// skip inside Run ends only Run's function; Run says which it was, and
// Close then reports the teardown's errors by name but not Run's again.
func TestSuiteRunTurnsAFatalOrASkipIntoAnError(t *testing.T) {
	tests := map[string]struct {
		body    func(s *harness.Suite) error
		want    string
		skipped bool
	}{
		"Fatal":    {func(s *harness.Suite) error { s.Fatalf("no %s", "haproxy"); return nil }, "no haproxy", false},
		"Skip":     {func(s *harness.Suite) error { s.Skipf("not root"); return nil }, "not root", true},
		"AnError":  {func(*harness.Suite) error { return errors.New("no Node") }, "no Node", false},
		"Errorf":   {func(s *harness.Suite) error { s.Errorf("a Pod crashed"); return nil }, "a Pod crashed", false},
		"Returned": {func(*harness.Suite) error { return nil }, "", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			s := harness.NewSuite("test")
			s.SetOutput(t.Output())
			s.Defer("stop etcd", func() error { return errors.New("etcd would not stop") })
			err := s.Run(func() error { return tt.body(s) })
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() = %v, want it to say %q", err, tt.want)
			}
			if errors.Is(err, harness.ErrSkipped) != tt.skipped {
				t.Errorf("Run() = %v: skipped %v, want %v", err, !tt.skipped, tt.skipped)
			}
			if s.Failed() != (tt.want != "" && !tt.skipped) {
				t.Errorf("Failed() = %v after Run() = %v", s.Failed(), err)
			}
			cerr := s.Close()
			if cerr == nil || !strings.Contains(cerr.Error(), "stop etcd: etcd would not stop") || tt.want != "" && strings.Contains(cerr.Error(), tt.want) {
				t.Errorf("Close() = %v, want the teardown's error by name and not Run's", cerr)
			}
		})
	}
}
