package steady

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// Client is a running steady client (or download), and what it reported.
type Client struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // why the process failed; read after done

	mu      sync.Mutex
	results []Result
	stderr  []byte
}

// Start starts cfg's client in the network namespace of process pid (a
// container's, node.ContainerPID) and in cg, that process's cgroup when
// it is not nil (a node's: the client is one of the node's processes,
// which a dataplane's socket programs translate): bin, the steady command
// (test/harness/steady/cmd/steady, built by `make test`), under nsenter.
// It runs until [Client.Stop].
func Start(bin string, pid int, cg netns.Cgroup, cfg Config) (*Client, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("steady: %w", err)
	}
	if fi, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("steady: the steady command (make bin/steady): %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("steady: %s is not an executable (make bin/steady)", bin)
	}
	cmd := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "--", bin)
	cmd.Env = append(os.Environ(), envConfig+"="+string(raw))
	// The client dies with the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if cg != nil {
		cg.Join(cmd)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("steady: %w", err)
	}
	c := &Client{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stderr = append(c.stderr, p...)
		return len(p), nil
	})
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("steady: start the client: %w", err)
	}
	go c.read(stdout)
	return c, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// read collects the client's results until it exits.
func (c *Client) read(stdout io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			c.mu.Lock()
			c.stderr = append(c.stderr, fmt.Sprintf("steady: a line that is not a result: %q\n", sc.Bytes())...)
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		c.results = append(c.results, r)
		c.mu.Unlock()
	}
	if err := c.cmd.Wait(); err != nil {
		c.mu.Lock()
		c.err = fmt.Errorf("steady: the client exited: %w: %s", err, c.stderr)
		c.mu.Unlock()
	}
}

// Results returns what the client reported so far, in the order it did.
func (c *Client) Results() []Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Result(nil), c.results...)
}

// Running reports whether the client still runs.
func (c *Client) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Hurry makes a download read the rest of its body as fast as it comes.
func (c *Client) Hurry() error { return c.cmd.Process.Signal(syscall.SIGUSR1) }

// Stop asks the client to stop, waits until the operations in flight have
// reported (at most ctx), and returns every result.
func (c *Client) Stop(ctx context.Context) ([]Result, error) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	return c.Wait(ctx)
}

// Wait waits until the client exits by itself (a download) or ctx ends,
// and returns every result.
func (c *Client) Wait(ctx context.Context) ([]Result, error) {
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.done
		return c.Results(), fmt.Errorf("steady: the client did not stop: %w", ctx.Err())
	}
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	return c.Results(), err
}

// Since returns the results whose operation started in [from, to).
func Since(rs []Result, from, to time.Time) []Result {
	var out []Result
	for _, r := range rs {
		if !r.At.Before(from) && r.At.Before(to) {
			out = append(out, r)
		}
	}
	return out
}
