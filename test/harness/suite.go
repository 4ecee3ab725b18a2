package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Suite is a [testing.TB] that outlives any one test: what several tests of
// a package share (a whole cluster, which takes a minute to start) is
// started under it, and torn down by [Suite.Close] from TestMain after
// m.Run. While a test that called [Suite.Use] runs, logs and failures go to
// that test; between tests logs go to stderr and failures are kept for
// Close to report.
type Suite struct {
	// testing.TB is the first test that used the suite. Every public
	// method is the Suite's own; the embedded value only gives Suite the
	// interface's unexported method.
	testing.TB

	name   string
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	cur      testing.TB
	cleanups []func()
	dirs     []string
	failed   bool
	errs     []string
}

// NewSuite returns an empty Suite named name.
func NewSuite(name string) *Suite {
	ctx, cancel := context.WithCancel(context.Background())
	return &Suite{name: name, ctx: ctx, cancel: cancel}
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

// Close cancels the suite's context, runs its cleanups last-registered
// first (each in a goroutine of its own, so that one that calls FailNow
// ends only itself), removes its temporary folders, and returns every
// failure reported while no test was current.
func (s *Suite) Close() error {
	s.cancel()
	s.mu.Lock()
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		done := make(chan struct{})
		go func() {
			defer close(done)
			cleanups[i]()
		}()
		<-done
	}
	for _, d := range s.dirs {
		_ = os.RemoveAll(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		return nil
	}
	return fmt.Errorf("suite %s: %w", s.name, errors.New(strings.Join(s.errs, "\n")))
}

// Cleanup registers fn to run at Close, not at the end of the current test.
func (s *Suite) Cleanup(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, fn)
}

// TempDir returns a new folder that Close removes.
func (s *Suite) TempDir() string {
	d, err := os.MkdirTemp("", "hairpin-"+s.name+"-")
	if err != nil {
		s.Fatalf("suite %s: %v", s.name, err)
	}
	s.mu.Lock()
	s.dirs = append(s.dirs, d)
	s.mu.Unlock()
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
	fmt.Fprintf(os.Stderr, "%s: %s\n", s.name, fmt.Sprintf(format, args...))
}

// Output is the current test's output, or stderr.
func (s *Suite) Output() io.Writer {
	if t := s.current(); t != nil {
		return t.Output()
	}
	return os.Stderr
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
	fmt.Fprintf(os.Stderr, "%s: %s\n", s.name, msg)
}

// Fail marks the suite, and the current test, failed.
func (s *Suite) Fail() {
	s.mu.Lock()
	s.failed = true
	t := s.cur
	if t == nil {
		s.errs = append(s.errs, "failed")
	}
	s.mu.Unlock()
	if t != nil {
		t.Fail()
	}
}

// FailNow fails the current test and stops it (it must be called from
// that test's goroutine, as testing requires); between tests it ends the
// calling goroutine.
func (s *Suite) FailNow() {
	s.Fail()
	if t := s.current(); t != nil {
		t.FailNow()
	}
	runtime.Goexit()
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
// nothing to skip, so between tests they end the calling goroutine.
func (s *Suite) Skip(args ...any) { s.Log(args...); s.SkipNow() }

// Skipf is Skip with a format.
func (s *Suite) Skipf(format string, args ...any) { s.Logf(format, args...); s.SkipNow() }

// SkipNow skips the current test.
func (s *Suite) SkipNow() {
	if t := s.current(); t != nil {
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
