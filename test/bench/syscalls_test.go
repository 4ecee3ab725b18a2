package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfPath is Debian's linux-perf.
const perfPath = "/usr/bin/perf"

// eagainFilter keeps only the reads that found nothing: errno(3), EAGAIN
// is 11 on every Linux architecture Go supports, and a failed call's
// sys_exit tracepoint carries -errno as ret.
const eagainFilter = "ret == -11"

// syscallCounter counts one process's system calls, by name, with perf's
// syscall tracepoints (tracepoints count each call exactly; nothing is
// sampled). Reads that return EAGAIN are counted apart, from the exit
// tracepoints of read and recvfrom filtered on ret == -EAGAIN.
//
// perf finds the tracepoints in tracefs, which this machine does not mount:
// perf runs under unshare -m, so the mount exists only in its own private
// mount namespace and is gone with it.
type syscallCounter struct {
	cmd     *exec.Cmd
	out     string // perf's -o file
	errb    bytes.Buffer
	done    chan struct{} // closed once perf has exited
	waitErr error         // valid after done
}

// startSyscallCount attaches perf to every thread of pid (and those they
// start) until stop.
func startSyscallCount(ctx context.Context, pid int, dir string) (*syscallCounter, error) {
	c := &syscallCounter{out: filepath.Join(dir, fmt.Sprintf("perf-%d-%d.csv", pid, time.Now().UnixNano()))}
	script := fmt.Sprintf(`mount -t tracefs nodev /sys/kernel/tracing && exec %s stat -x, -o %s -p %d -e 'syscalls:sys_enter_*' -e syscalls:sys_exit_read --filter '%s' -e syscalls:sys_exit_recvfrom --filter '%s'`,
		perfPath, c.out, pid, eagainFilter, eagainFilter)
	// unshare(1) makes the new namespace's mounts private by default, so
	// the tracefs mount does not propagate to the machine's.
	c.cmd = exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script)
	c.cmd.Stderr = &c.errb
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start perf: %w", err)
	}
	c.done = make(chan struct{})
	go func() { c.waitErr = c.cmd.Wait(); close(c.done) }()
	// perf opens one event per tracepoint and thread before it counts;
	// the output file appears once they are open.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(c.out); err == nil {
			break
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("perf exited: %v: %s", c.waitErr, c.errb.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.cmd.Process.Kill()
			<-c.done
			return nil, fmt.Errorf("perf did not start within 30 s: %s", c.errb.String())
		}
	}
	// The events are enabled right after the file is created, once they
	// are all open; a moment more makes sure none is still being opened.
	time.Sleep(500 * time.Millisecond)
	return c, nil
}

// syscallCounts is what one counting run saw.
type syscallCounts struct {
	byName     map[string]float64 // sys_enter_NAME counts by NAME
	eagainRead float64            // read and recvfrom that returned EAGAIN
}

// stop ends perf (SIGINT makes perf stat print its counts) and reads them.
func (c *syscallCounter) stop() (syscallCounts, error) {
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	<-c.done
	// perf stat may exit non-zero after SIGINT; the counts in its file are
	// what matter, and parsePerfStat fails if there are none.
	b, err := os.ReadFile(c.out)
	if err != nil {
		return syscallCounts{}, fmt.Errorf("perf output: %w", err)
	}
	return parsePerfStat(b)
}

// parsePerfStat reads perf stat -x, output: one "count,unit,event,..." line
// per event; "<not counted>" or "<not supported>" counts are errors, since
// a missing count would pass for zero calls.
func parsePerfStat(b []byte) (syscallCounts, error) {
	res := syscallCounts{byName: map[string]float64{}}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 || !strings.HasPrefix(f[2], "syscalls:sys_") {
			continue
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return res, fmt.Errorf("perf: %s: count %q", f[2], f[0])
		}
		switch name := strings.TrimPrefix(f[2], "syscalls:"); {
		case strings.HasPrefix(name, "sys_enter_"):
			if n > 0 {
				res.byName[strings.TrimPrefix(name, "sys_enter_")] = n
			}
		case name == "sys_exit_read" || name == "sys_exit_recvfrom":
			res.eagainRead += n
		}
	}
	if len(res.byName) == 0 {
		return res, fmt.Errorf("perf counted no system call:\n%s", b)
	}
	return res, nil
}

// epollWaits are the names of the calls that wait for epoll events.
var epollWaits = []string{"epoll_wait", "epoll_pwait", "epoll_pwait2"}
