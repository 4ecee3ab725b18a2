package harness

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

func TestStopReapedWaitsForEnvtestToNoteTheExit(t *testing.T) {
	errOther := errors.New("unable to remove the cert dir")
	esrch := fmt.Errorf("unable to signal for process kube-apiserver to stop: %w", syscall.ESRCH)
	tests := []struct {
		name  string
		errs  []error // what each call of stop returns; nil after the last
		calls int
		want  error
	}{
		{"AlreadyNotedStopsOnce", nil, 1, nil},
		{"ESRCHUntilEnvtestNotesTheExitIsRetried", []error{esrch, esrch}, 3, nil},
		{"AnotherErrorIsReturnedAtOnce", []error{errOther}, 1, errOther},
		{"AnotherErrorAfterESRCHIsReturned", []error{esrch, errOther}, 2, errOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			stop := func() error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := stopReaped(ctx, stop); !errors.Is(err, tt.want) {
				t.Errorf("stopReaped = %v, want %v", err, tt.want)
			}
			if calls != tt.calls {
				t.Errorf("stop was called %d times, want %d", calls, tt.calls)
			}
		})
	}
}

func TestStopReapedGivesUpWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := stopReaped(ctx, func() error { return fmt.Errorf("signal: %w", syscall.ESRCH) })
	if !errors.Is(err, syscall.ESRCH) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stopReaped = %v, want ESRCH and the deadline", err)
	}
}
