package node

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"time"
)

// Streams of a container's output, numbered as its descriptors.
const (
	stdout = 1
	stderr = 2
)

// output is what one container instance writes to stdout and stderr, kept
// as a container runtime keeps it: the instance writes into two pipes that
// the node drains into its log file (what kubectl logs shows, both streams
// interleaved as written), noting which stream wrote each span of the
// file, so that an attach can hand every byte to the stream that wrote it.
// Everything is in the log before the instance counts as ended.
type output struct {
	path string
	log  *os.File

	mu    sync.Mutex
	spans []span // in file order; adjacent writes of one stream share a span
	size  int64
	// shown and shownAt: how much of the log a client read last, and
	// when (see [output.attachFrom]).
	shown   int64
	shownAt time.Time
	open    int           // pipes not yet at EOF
	grew    chan struct{} // closed (and replaced) when size grows or the output ends
	done    chan struct{} // closed when both pipes are drained
}

// span is the bytes of the log up to end written by one stream.
type span struct {
	stream int
	end    int64
}

// newOutput opens the instance's log and returns the write ends of its
// stdout and stderr pipes, for the instance's process; the node drains the
// read ends until the last holder of a write end is gone.
func newOutput(path string) (o *output, stdoutW, stderrW *os.File, err error) {
	log, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, nil, err
	}
	o = &output{path: path, log: log, open: 2, grew: make(chan struct{}), done: make(chan struct{})}
	var w [2]*os.File
	for i, stream := range []int{stdout, stderr} {
		r, pw, err := os.Pipe()
		if err != nil {
			for _, f := range w[:i] {
				f.Close()
			}
			log.Close()
			return nil, nil, nil, err
		}
		w[i] = pw
		go o.drain(stream, r)
	}
	return o, w[0], w[1], nil
}

// drain appends what stream writes to the log until its pipe's EOF.
func (o *output) drain(stream int, r *os.File) {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			o.append(stream, buf[:k])
		}
		if err != nil {
			break
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open--; o.open == 0 {
		o.log.Close()
		close(o.grew)
		close(o.done)
	}
}

// append writes b to the log under the lock, so that the spans follow the
// file's order. A failed write (a full disk) loses only what it could not
// write: the pipe is still drained, so the container never blocks on it.
func (o *output) append(stream int, b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k, _ := o.log.Write(b)
	if k == 0 {
		return
	}
	o.size += int64(k)
	if n := len(o.spans); n > 0 && o.spans[n-1].stream == stream {
		o.spans[n-1].end = o.size
	} else {
		o.spans = append(o.spans, span{stream, o.size})
	}
	close(o.grew)
	o.grew = make(chan struct{})
}

// outputReader reads an instance's output from an offset of its log, as
// it is written, until the output has ended.
type outputReader struct {
	o   *output
	f   *os.File
	off int64
}

// reader starts reading o at off, a length of the log.
func (o *output) reader(off int64) (*outputReader, error) {
	f, err := os.Open(o.path)
	if err != nil {
		return nil, err
	}
	return &outputReader{o: o, f: f, off: off}, nil
}

// next fills p with the next bytes of one stream, waiting for them; it
// returns io.EOF once the output has ended and everything has been read.
func (r *outputReader) next(ctx context.Context, p []byte) (stream, n int, err error) {
	for {
		r.o.mu.Lock()
		size, grew := r.o.size, r.o.grew
		stream, end := r.o.spanAt(r.off)
		ended := r.o.open == 0
		r.o.mu.Unlock()
		if r.off < size {
			k, err := r.f.ReadAt(p[:min(int64(len(p)), end-r.off)], r.off)
			r.off += int64(k)
			if k > 0 {
				return stream, k, nil
			}
			return 0, 0, err
		}
		if ended {
			return 0, 0, io.EOF
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
}

// spanAt returns the stream that wrote the byte at off and where its span
// ends. Call with o.mu held and off < o.size.
func (o *output) spanAt(off int64) (stream int, end int64) {
	i := sort.Search(len(o.spans), func(i int) bool { return o.spans[i].end > off })
	if i == len(o.spans) {
		return 0, off
	}
	return o.spans[i].stream, o.spans[i].end
}

func (r *outputReader) Close() error { return r.f.Close() }

// length is how much the instance has written so far.
func (o *output) length() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}

// preAttachWindow is how long after a read of the whole log an attach
// goes on from where that read ended: kubectl run -i reads the logs (with
// a 5 s timeout) right before it attaches.
const preAttachWindow = 5 * time.Second

// noteShown records that a client has just been shown the log up to size.
func (o *output) noteShown(size int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shown, o.shownAt = size, time.Now()
}

// attachFrom is where an attach starts in the log. As kubelet's, it hands
// over only what is written after it, except right after a read of the
// whole log: then it goes on from where that read ended. kubectl run -i
// prints the logs before it attaches; with kubelet, what is written in
// between is lost (rarely: a real Pod's command seldom ends within that
// moment), and when the command has ended by the attach, kubectl falls
// back to logs since a time (which this node does not keep). Here quick
// commands (dig) end in that moment often, so the pair is made seamless.
func (o *output) attachFrom() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.shownAt.IsZero() && time.Since(o.shownAt) < preAttachWindow && o.shown <= o.size {
		return o.shown
	}
	return o.size
}

// copyTo writes the output from off, a length of the log, to the writer of
// the stream that wrote it (stdout or stderr; a nil writer drops its
// stream) until the output has ended, the context is done or a writer
// fails.
func (o *output) copyTo(ctx context.Context, off int64, out, errOut io.Writer) error {
	r, err := o.reader(off)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		stream, k, err := r.next(ctx, buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		w := out
		if stream == stderr {
			w = errOut
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
	}
}

// follower reads the output from an offset as one stream, the two
// interleaved (kubectl logs --follow); a context that is done ends it as
// the output's end does.
type follower struct {
	ctx context.Context
	r   *outputReader
	buf []byte // what was in the log before off, as the request shows it
}

func (f *follower) Read(p []byte) (int, error) {
	if len(f.buf) > 0 {
		k := copy(p, f.buf)
		f.buf = f.buf[k:]
		return k, nil
	}
	_, k, err := f.r.next(f.ctx, p)
	if err != nil && f.ctx.Err() != nil {
		err = io.EOF
	}
	return k, err
}

func (f *follower) Close() error { return f.r.Close() }
