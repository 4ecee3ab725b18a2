package sockmap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

func TestUnsupportedWrapsErrUnsupportedOnlyForMissingSupport(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no privileges (EPERM)", fmt.Errorf("map create: %w", unix.EPERM), true},
		{"no privileges (EACCES)", fmt.Errorf("load: %w", unix.EACCES), true},
		{"feature probe says no", fmt.Errorf("x: %w", ebpf.ErrNotSupported), true},
		{"unknown type or attach (EINVAL)", unix.EINVAL, true},
		{"helper compiled out (ENOTSUPP)", unix.Errno(524), true},
		{"out of memory", unix.ENOMEM, false},
		{"anything else", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unsupported("step", tc.err)
			if got := errors.Is(err, ErrUnsupported); got != tc.want {
				t.Fatalf("errors.Is(%v, ErrUnsupported) = %v, want %v", err, got, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not wrap the cause %v", err, tc.err)
			}
		})
	}
}

// TestOpenNeedsBPFAndNetAdmin runs Open in child processes with reduced
// privileges: the capability sets an operator could grant, and user nobody
// as the default manifests run the proxy (uid 65532 there, no capabilities).
// Only CAP_BPF with CAP_NET_ADMIN loads and relays; everything less fails
// with ErrUnsupported, which is what the proxy's fallback keys on.
func TestOpenNeedsBPFAndNetAdmin(t *testing.T) {
	if caps, ok := os.LookupEnv(childCapsEnv); ok {
		childOpen(t, caps)
		return
	}
	openRelay(t) // skips unless the privileged path works here
	for _, tc := range []struct {
		name string
		uid  int
		caps string
		want bool // Open and a relayed exchange succeed
	}{
		{"non-root, no capabilities", 65534, "", false},
		{"root, no capabilities", 0, "", false},
		{"root, CAP_BPF only", 0, "bpf", false},
		{"root, CAP_NET_ADMIN only", 0, "net_admin", false},
		{"root, CAP_BPF and CAP_NET_ADMIN", 0, "bpf,net_admin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "unsupported"
			if tc.want {
				want = "relayed"
			}
			out := runChild(t, "TestOpenNeedsBPFAndNetAdmin", tc.uid, tc.caps)
			if !strings.Contains(out, "open: "+want) {
				t.Fatalf("want %q; child said:\n%s", want, out)
			}
			for line := range strings.Lines(out) {
				if strings.Contains(line, "open: ") {
					t.Log(strings.TrimSpace(line))
				}
			}
		})
	}
}

const childCapsEnv = "SOCKMAP_TEST_CAPS"

var capNumbers = map[string]uint{"bpf": unix.CAP_BPF, "net_admin": unix.CAP_NET_ADMIN}

// childOpen keeps only the named capabilities, then opens a relay and moves
// a few bytes through it, and logs which of the two outcomes it saw.
func childOpen(t *testing.T, caps string) {
	var keep [2]uint32
	for name := range strings.SplitSeq(caps, ",") {
		if name == "" {
			continue
		}
		c := capNumbers[name]
		keep[c/32] |= 1 << (c % 32)
	}
	if os.Getuid() == 0 {
		// capset(2) changes the calling thread only: without the lock, Open
		// could run on another thread that still has every capability (the
		// CAP_BPF-only case once loaded and relayed in CI). The goroutine
		// stays locked, so its thread exits with it.
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		data := [2]unix.CapUserData{
			{Effective: keep[0], Permitted: keep[0]},
			{Effective: keep[1], Permitted: keep[1]},
		}
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Fatalf("capset: %v", err)
		}
	}
	r, err := Open(Options{MaxPairs: 16})
	if errors.Is(err, ErrUnsupported) {
		t.Logf("open: unsupported (uid %d, caps %q): %v", os.Getuid(), caps, err)
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	c := connect(t, nil)
	p := c.splice(t, r, 0)
	if _, err := c.client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c.server, "ping")
	p.Abort(ReasonDrain)
	t.Logf("open: relayed (uid %d, caps %q)", os.Getuid(), caps)
}

// TestCloseEndsOpenPairs: Relay.Close aborts what is still relayed, with
// ReasonClosed, before it frees the maps; Splice afterwards fails.
func TestCloseEndsOpenPairs(t *testing.T) {
	openRelay(t) // skip unless supported
	r, err := Open(Options{MaxPairs: 16})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, nil)
	p := c.splice(t, r, 0)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if res := waitResult(t, p, time.Second); res.Reason != ReasonClosed {
		t.Fatalf("reason %q, want %q", res.Reason, ReasonClosed)
	}
	expectClosed(t, c.client)
	c2 := connect(t, nil)
	if _, err := r.Splice(c2.proxyClient, c2.proxyUp, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Splice after Close: %v, want ErrClosed", err)
	}
}

// runChild re-runs one test of this binary as uid with only the named
// capabilities, and returns its verbose output; it fails the test if the
// child fails.
func runChild(t *testing.T, test string, uid int, caps string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The build directory is private to root: copy the binary out.
	dir, err := os.MkdirTemp("", "sockmap-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sockmap.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childCapsEnv+"="+caps)
	cmd.Dir = dir
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}
