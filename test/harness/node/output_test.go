package node

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// write is one write of a container to one of its streams.
type write struct {
	stream int
	text   string
}

// writeOutput writes ws to a new output's pipes in order, each drained before
// the next (so the log's order is the writes'), calling at(i) before
// write i and at(len(ws)) after the last, before the pipes close.
func writeOutput(t *testing.T, ws []write, at func(o *output, i int)) *output {
	t.Helper()
	o, outW, errW, err := newOutput(filepath.Join(t.TempDir(), "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for i, w := range ws {
		at(o, i)
		f := outW
		if w.stream == stderr {
			f = errW
		}
		if _, err := f.WriteString(w.text); err != nil {
			t.Fatal(err)
		}
		size += int64(len(w.text))
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			o.mu.Lock()
			got := o.size
			o.mu.Unlock()
			if got == size {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("write %d not drained: log holds %d of %d bytes", i, got, size)
			}
		}
	}
	at(o, len(ws))
	outW.Close()
	errW.Close()
	return o
}

func TestOutputHandsAnAttachWhatIsWrittenAfterItOrAfterTheLogReadJustBeforeOnItsOwnStream(t *testing.T) {
	writes := []write{{stdout, "one\n"}, {stdout, "two\n"}, {stderr, "oops\n"}, {stdout, "three"}, {stderr, "bye\n"}}
	const log = "one\ntwo\noops\nthreebye\n"
	for _, tc := range []struct {
		name string
		// attachAt is the write before which the attach comes;
		// len(writes)+1 is after the output has ended.
		attachAt int
		// shownAt is the write before which a client read the whole
		// log (kubectl run -i's logs before its attach); -1 for none.
		shownAt          int
		wantOut, wantErr string
	}{
		{"BeforeTheFirstWriteGetsEverything", 0, -1, "one\ntwo\nthree", "oops\nbye\n"},
		{"BetweenTheStreamsGetsTheRest", 2, -1, "three", "oops\nbye\n"},
		{"AfterTheLastWriteGetsNothing", len(writes), -1, "", ""},
		{"AfterTheEndReturnsAtOnce", len(writes) + 1, -1, "", ""},
		{"RightAfterALogReadGoesOnFromIt", len(writes), 2, "three", "oops\nbye\n"},
		{"AfterTheEndRightAfterALogReadGetsWhatTheReadMissed", len(writes) + 1, 1, "two\nthree", "oops\nbye\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			done := make(chan error, 1)
			attach := func(o *output) {
				off := o.attachFrom()
				go func() { done <- o.copyTo(context.Background(), off, &out, &errOut) }()
			}
			o := writeOutput(t, writes, func(o *output, i int) {
				if i == tc.shownAt {
					o.noteShown(o.length())
				}
				if i == tc.attachAt {
					attach(o)
				}
			})
			if tc.attachAt > len(writes) {
				<-o.done
				attach(o)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the attach did not end with the output")
			}
			if out.String() != tc.wantOut || errOut.String() != tc.wantErr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errOut.String(), tc.wantOut, tc.wantErr)
			}
			b, err := os.ReadFile(o.path)
			if err != nil || string(b) != log {
				t.Errorf("log %q (%v); want %q", b, err, log)
			}
		})
	}
}

func TestOutputFollowerGoesOnFromWhereTheLogWasRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readAfter int    // writes in the log when it is read
		shown     string // what the request shows of that (a tail)
		want      string
	}{
		{"WholeLogThenTheRest", 2, "a\nb\n", "a\nb\nc\nd\n"},
		{"TailThenTheRest", 2, "b\n", "b\nc\nd\n"},
		{"NothingYet", 0, "", "a\nb\nc\nd\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := []write{{stdout, "a\n"}, {stderr, "b\n"}, {stdout, "c\n"}, {stderr, "d\n"}}
			var got []byte
			done := make(chan error, 1)
			writeOutput(t, ws, func(o *output, i int) {
				if i != tc.readAfter {
					return
				}
				b, err := os.ReadFile(o.path)
				if err != nil {
					t.Fatal(err)
				}
				r, err := o.reader(int64(len(b)))
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					f := &follower{ctx: context.Background(), r: r, buf: []byte(tc.shown)}
					defer f.Close()
					var err error
					got, err = io.ReadAll(f)
					done <- err
				}()
			})
			select {
			case err := <-done:
				if err != nil || string(got) != tc.want {
					t.Errorf("followed %q (%v); want %q", got, err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the follower did not end with the output")
			}
		})
	}
}

func TestOutputFollowerEndsWithItsContext(t *testing.T) {
	o, outW, errW, err := newOutput(filepath.Join(t.TempDir(), "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer errW.Close()
	defer outW.Close()
	r, err := o.reader(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{ctx: ctx, r: r}
	defer f.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(f); done <- err }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ReadAll: %v; want the EOF of a client gone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower outlived its context")
	}
}
