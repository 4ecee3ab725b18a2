package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// demoTB lets the demo use the test harness (whose helpers take a
// testing.TB) outside `go test`: it logs to a file instead of the terminal,
// makes temp dirs under one root, runs cleanups in reverse order when the
// demo ends, and turns Fatal into a panic that [demoTB.run] recovers.
//
// It embeds testing.TB only to inherit the interface's unexported method;
// every exported method is implemented below, so the nil interface is never
// called.
type demoTB struct {
	testing.TB

	ctx  context.Context
	root string    // every TempDir lives below it
	log  io.Writer // harness messages and, on failure, the children's output

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	tmpSeq   int
}

// fatal is the panic value of demoTB.FailNow and friends.
type fatal struct{ msg string }

func newDemoTB(ctx context.Context, root string, log io.Writer) *demoTB {
	return &demoTB{ctx: ctx, root: root, log: log}
}

// run calls f and turns a Fatal inside it into an error.
func (t *demoTB) run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", f.msg)
		}
	}()
	if err := f(); err != nil {
		t.Fail()
		return err
	}
	return nil
}

// cleanup runs the registered cleanups, last registered first.
func (t *demoTB) cleanup() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

func (t *demoTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *demoTB) Helper()                           {}
func (t *demoTB) Name() string                      { return "demo" }
func (t *demoTB) Context() context.Context          { return t.ctx }
func (t *demoTB) Output() io.Writer                 { return t.log }
func (t *demoTB) Attr(key, value string)            {}
func (t *demoTB) Log(args ...any)                   { fmt.Fprintln(t.log, args...) }
func (t *demoTB) Logf(format string, args ...any)   { fmt.Fprintf(t.log, format+"\n", args...) }
func (t *demoTB) Error(args ...any)                 { t.Log(args...); t.Fail() }
func (t *demoTB) Errorf(format string, args ...any) { t.Logf(format, args...); t.Fail() }
func (t *demoTB) Fatal(args ...any)                 { t.fail(fmt.Sprint(args...)) }
func (t *demoTB) Fatalf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }
func (t *demoTB) FailNow()                          { t.fail("failed") }
func (t *demoTB) Skip(args ...any)                  { t.fail(fmt.Sprint(args...)) }
func (t *demoTB) Skipf(format string, args ...any)  { t.fail(fmt.Sprintf(format, args...)) }
func (t *demoTB) SkipNow()                          { t.fail("skipped") }
func (t *demoTB) Skipped() bool                     { return false }

func (t *demoTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

func (t *demoTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// fail records msg and unwinds to run. The harness calls Fatal only from
// the goroutine that called it, which is the demo's.
func (t *demoTB) fail(msg string) {
	t.Fail()
	t.Logf("FATAL: %s", msg)
	panic(fatal{msg})
}

func (t *demoTB) TempDir() string {
	t.mu.Lock()
	t.tmpSeq++
	dir := filepath.Join(t.root, "tmp"+strconv.Itoa(t.tmpSeq))
	t.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	return dir
}

func (t *demoTB) ArtifactDir() string { return t.TempDir() }

func (t *demoTB) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	if err := os.Setenv(key, value); err != nil {
		t.Fatalf("setenv %s: %v", key, err)
	}
	t.Cleanup(func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	})
}

func (t *demoTB) Chdir(dir string) {
	old, err := os.Getwd()
	if err != nil {
		t.Fatalf("chdir: %v", err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatalf("chdir: %v", err)
	}
	t.Cleanup(func() { os.Chdir(old) })
}
