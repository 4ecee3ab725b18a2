package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Suite is a [testing.TB] that outlives any one test: what several tests of
// a package share (a whole cluster, which takes a minute to start) is
// started under it, and torn down by [Suite.Close] from TestMain after
// m.Run. While a test that called [Suite.Use] runs, logs and failures go to
// that test; between tests logs go to the suite's output (stderr unless
// [Suite.SetOutput] says otherwise) and failures are kept for Close to
// report. What its Cleanup and [Suite.Defer] register is one [Teardown],
// which Close runs. [Suite.Run] turns a FailNow or SkipNow into an error,
// for starts outside a test (a cluster's New, the demo).
type Suite struct {
	// testing.TB is the first test that used the suite. Every public
	// method is the Suite's own; the embedded value only gives Suite the
	// interface's unexported method.
	testing.TB

	name   string
	ctx    context.Context
	cancel context.CancelFunc

	teardown Teardown

	mu      sync.Mutex
	cur     testing.TB
	out     io.Writer
	tmpRoot string // where TempDir makes folders; "" for the system's, removed at Close
	dirs    []string
	failed  bool
	errs    []string
	running bool   // inside Run: FailNow and SkipNow end Run's goroutine only
	skip    string // why Run's function skipped
}

// ErrSkipped is what [Suite.Run] returns, wrapped, when its function
// skipped: what it needs is not on this machine.
var ErrSkipped = errors.New("skipped")

// NewSuite returns an empty Suite named name.
func NewSuite(name string) *Suite {
	ctx, cancel := context.WithCancel(context.Background())
	return &Suite{name: name, ctx: ctx, cancel: cancel, out: os.Stderr}
}

// SetTempRoot makes TempDir's folders under dir, and Close leaves them
// there: dir is its owner's to keep (the demo's logs after a failure) or
// remove.
func (s *Suite) SetTempRoot(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tmpRoot = dir
}

// SetOutput sends what is logged between tests to w instead of stderr.
func (s *Suite) SetOutput(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = w
}

// Run calls f in a goroutine of its own and returns its error; a FailNow
// or SkipNow inside f (a harness helper's Fatal or skip) ends only that
// goroutine, and Run returns what it reported instead, wrapping
// [ErrSkipped] for a skip. Failures reported inside f are Run's to return,
// not Close's; any failure marks the suite failed.
func (s *Suite) Run(f func() error) error {
	s.mu.Lock()
	s.running, s.skip = true, ""
	kept := len(s.errs)
	s.mu.Unlock()
	var err error
	returned := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = f()
		returned = true
	}()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	reported := s.errs[kept:]
	s.errs = s.errs[:kept]
	switch {
	case !returned && s.skip != "":
		return fmt.Errorf("%w: %s", ErrSkipped, s.skip)
	case returned && err != nil:
	case len(reported) > 0:
		err = errors.New(strings.Join(reported, "\n"))
	case !returned:
		err = fmt.Errorf("suite %s: stopped before it returned", s.name)
	}
	// A failed start fails the suite, so that its teardown prints what the
	// processes said.
	s.failed = s.failed || err != nil
	return err
}

// Use makes t the suite's current test until t ends. A test that failed
// marks the suite failed, so that what is torn down at Close can dump its
// state.
func (s *Suite) Use(t testing.TB) {
	s.mu.Lock()
	if s.TB == nil {
		s.TB = t
	}
	s.cur = t
	s.mu.Unlock()
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.Failed() {
			s.failed = true
		}
		if s.cur == t {
			s.cur = nil
		}
	})
}

func (s *Suite) current() testing.TB {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Close cancels the suite's context, runs its teardown, removes its
// temporary folders, and returns the teardown's errors and every failure
// reported while no test was current. A second Close has nothing left to
// do.
func (s *Suite) Close() error {
	s.cancel()
	err := s.teardown.Run()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dirs {
		_ = os.RemoveAll(d)
	}
	s.dirs = nil
	if len(s.errs) > 0 {
		err = errors.Join(err, errors.New(strings.Join(s.errs, "\n")))
		s.errs = nil
	}
	if err != nil {
		return fmt.Errorf("suite %s: %w", s.name, err)
	}
	return nil
}

// Cleanup registers fn to run at Close, not at the end of the current
// test, as a teardown step named for where it was registered.
func (s *Suite) Cleanup(fn func()) {
	name := "cleanup"
	if _, file, line, ok := runtime.Caller(1); ok {
		name = fmt.Sprintf("cleanup at %s:%d", filepath.Base(file), line)
	}
	s.Defer(name, func() error { fn(); return nil })
}

// Defer pushes a teardown step named name that Close runs, after every
// step pushed later and before every step pushed earlier.
func (s *Suite) Defer(name string, fn func() error) { s.teardown.Push(name, fn) }

// TempDir returns a new folder that Close removes, unless it is under
// the suite's temp root ([Suite.SetTempRoot]).
func (s *Suite) TempDir() string {
	s.mu.Lock()
	root := s.tmpRoot
	s.mu.Unlock()
	d, err := os.MkdirTemp(root, "hairpin-"+s.name+"-")
	if err != nil {
		s.Fatalf("suite %s: %v", s.name, err)
	}
	if root == "" {
		s.mu.Lock()
		s.dirs = append(s.dirs, d)
		s.mu.Unlock()
	}
	return d
}

// ArtifactDir is TempDir: a suite keeps no artifacts.
func (s *Suite) ArtifactDir() string { return s.TempDir() }

// Context is cancelled when Close starts.
func (s *Suite) Context() context.Context { return s.ctx }

// Name is the suite's name.
func (s *Suite) Name() string { return s.name }

// Helper does nothing: the current test's line numbers are its own.
func (s *Suite) Helper() {}

// Log and Logf write to the current test's log, or to stderr.
func (s *Suite) Log(args ...any) { s.Logf("%s", fmt.Sprint(args...)) }

// Logf is Log with a format.
func (s *Suite) Logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Logf(format, args...)
		return
	}
	fmt.Fprintf(s.out, "%s: %s\n", s.name, fmt.Sprintf(format, args...))
}

// Output is the current test's output, or the suite's.
func (s *Suite) Output() io.Writer {
	if t := s.current(); t != nil {
		return t.Output()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// Attr goes to the current test, if any.
func (s *Suite) Attr(key, value string) {
	if t := s.current(); t != nil {
		t.Attr(key, value)
	}
}

// Error and Errorf fail the current test, or are kept for Close.
func (s *Suite) Error(args ...any) { s.Errorf("%s", fmt.Sprint(args...)) }

// Errorf is Error with a format.
func (s *Suite) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
	if s.cur != nil {
		s.cur.Errorf(format, args...)
		return
	}
	msg := fmt.Sprintf(format, args...)
	s.errs = append(s.errs, msg)
	fmt.Fprintf(s.out, "%s: %s\n", s.name, msg)
}

// Fail marks the suite, and the current test, failed. Between tests, a
// failure that nothing reported yet is kept as "failed".
func (s *Suite) Fail() {
	s.mu.Lock()
	t := s.cur
	if t == nil && !s.failed {
		s.errs = append(s.errs, "failed")
	}
	s.failed = true
	s.mu.Unlock()
	if t != nil {
		t.Fail()
	}
}

// FailNow fails the current test and stops it (it must be called from
// that test's goroutine, as testing requires); between tests, or inside
// [Suite.Run], it ends the calling goroutine.
func (s *Suite) FailNow() {
	s.Fail()
	if t := s.forward(); t != nil {
		t.FailNow()
	}
	runtime.Goexit()
}

// forward is the current test where FailNow and SkipNow go to it: not
// inside Run, whose goroutine is not the test's.
func (s *Suite) forward() testing.TB {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	return s.cur
}

// Fatal and Fatalf are Error then FailNow.
func (s *Suite) Fatal(args ...any) { s.Error(args...); s.FailNow() }

// Fatalf is Fatal with a format.
func (s *Suite) Fatalf(format string, args ...any) { s.Errorf(format, args...); s.FailNow() }

// Failed reports whether any test that used the suite, or the suite
// itself, failed.
func (s *Suite) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed || (s.cur != nil && s.cur.Failed())
}

// Skip, Skipf and SkipNow skip the current test: the suite itself has
// nothing to skip, so between tests they end the calling goroutine, and
// inside [Suite.Run] make it return [ErrSkipped].
func (s *Suite) Skip(args ...any) { s.skipNow(fmt.Sprint(args...)) }

// Skipf is Skip with a format.
func (s *Suite) Skipf(format string, args ...any) { s.skipNow(fmt.Sprintf(format, args...)) }

// SkipNow skips the current test.
func (s *Suite) SkipNow() { s.skipNow("") }

func (s *Suite) skipNow(why string) {
	if why != "" {
		s.Log(why)
	}
	s.mu.Lock()
	if s.running {
		s.skip = why
		if why == "" {
			s.skip = "skipped"
		}
	}
	s.mu.Unlock()
	if t := s.forward(); t != nil {
		t.SkipNow()
	}
	runtime.Goexit()
}

// Skipped reports whether the current test was skipped.
func (s *Suite) Skipped() bool {
	if t := s.current(); t != nil {
		return t.Skipped()
	}
	return false
}

// Setenv sets key for the rest of the process: a suite outlives the test
// that would restore it. Close puts the old value back.
func (s *Suite) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	_ = os.Setenv(key, value)
	s.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}

// Chdir is refused: a shared working directory would leak into every test.
func (s *Suite) Chdir(dir string) {
	s.Fatalf("suite %s: Chdir(%s) is not supported", s.name, dir)
}
