package harness

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Teardown is an ordered stack of named steps that undo a start, as
// envtest's Stop undoes its Start: the step pushed last runs first, every
// step runs even after an earlier one failed, and the errors come back
// together, each under its step's name. The zero value is empty.
type Teardown struct {
	mu    sync.Mutex
	steps []teardownStep
}

type teardownStep struct {
	name string
	fn   func() error
}

// Push adds a step that runs before every step pushed earlier.
func (td *Teardown) Push(name string, fn func() error) {
	td.mu.Lock()
	defer td.mu.Unlock()
	td.steps = append(td.steps, teardownStep{name, fn})
}

// Run runs the steps, last pushed first, each once, also those that a step
// pushes while it runs, and returns their errors joined. Each step runs in
// a goroutine of its own, so that one that ends its goroutine (a FailNow
// inside) ends only itself, and is reported.
func (td *Teardown) Run() error {
	var errs []error
	for {
		td.mu.Lock()
		n := len(td.steps)
		if n == 0 {
			td.mu.Unlock()
			return errors.Join(errs...)
		}
		s := td.steps[n-1]
		td.steps = td.steps[:n-1]
		td.mu.Unlock()
		if err := s.run(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
}

// errGoexit is a step that ended its goroutine instead of returning.
var errGoexit = errors.New("stopped before it returned (FailNow or Goexit)")

func (s teardownStep) run() (err error) {
	returned := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = s.fn()
		returned = true
	}()
	<-done
	if !returned {
		return errGoexit
	}
	return err
}

// namedCleanup registers fn with t as a step named name where t keeps a
// [Teardown] (a [Suite]), and as a plain t.Cleanup otherwise.
func namedCleanup(t testing.TB, name string, fn func()) {
	if d, ok := t.(interface{ Defer(string, func() error) }); ok {
		d.Defer(name, func() error { fn(); return nil })
		return
	}
	t.Cleanup(fn)
}
