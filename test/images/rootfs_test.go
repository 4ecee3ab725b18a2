package images

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

// rootfses holds each image's rootfs for this machine's architecture,
// unpacked once per test binary (the coredns binary alone is 80 MB, slow to
// inflate under -race) into dir, which TestMain removes. Tests that share
// one only add files, under names of their own.
var rootfses = struct {
	sync.Mutex
	dir string
	m   map[string]*rootfs.Rootfs
}{m: map[string]*rootfs.Rootfs{}}

func TestMain(m *testing.M) {
	code := m.Run()
	if rootfses.dir != "" {
		os.RemoveAll(rootfses.dir)
	}
	os.Exit(code)
}

// unpack returns im's rootfs for this machine's architecture, unpacked
// from what `make images` wrote, as a runtime would.
func unpack(t *testing.T, im image) *rootfs.Rootfs {
	t.Helper()
	harness.RequireRoot(t, "unpacking an image and running it chrooted as 65532")
	spec, _ := specOf(t, im)
	rootfses.Lock()
	defer rootfses.Unlock()
	if r, ok := rootfses.m[im.binary]; ok {
		return r
	}
	if rootfses.dir == "" {
		dir, err := os.MkdirTemp("", "hairpin-images-")
		if err != nil {
			t.Fatal(err)
		}
		rootfses.dir = dir
	}
	r, err := rootfs.Unpack(madeOutput(t, spec).Layout, runtime.GOARCH, filepath.Join(rootfses.dir, im.binary))
	if err != nil {
		t.Fatal(err)
	}
	rootfses.m[im.binary] = r
	return r
}

// startInRootfs runs the image's entrypoint with args as a runtime would,
// with nothing from the host: chrooted into r.Dir, in a mount namespace of
// its own, as the image's user, in its working folder, with only the
// image's environment. Nothing is mounted in it, /proc included, where a
// runtime would mount one; CoreDNS then says it cannot size GOMAXPROCS from
// /proc/self/mountinfo, and runs.
func startInRootfs(t *testing.T, r *rootfs.Rootfs, args ...string) *harness.Process {
	t.Helper()
	uid, gid, ok := strings.Cut(r.User, ":")
	u, err1 := strconv.ParseUint(uid, 10, 32)
	g, err2 := strconv.ParseUint(gid, 10, 32)
	if !ok || err1 != nil || err2 != nil || len(r.Entrypoint) == 0 {
		t.Fatalf("image config: user %q, entrypoint %q; want numeric UID:GID and an entrypoint", r.User, r.Entrypoint)
	}
	if len(args) == 0 {
		args = r.Cmd
	}
	cmd := exec.Command(r.Entrypoint[0], append(slices.Clone(r.Entrypoint[1:]), args...)...)
	cmd.Env = append([]string{}, r.Env...) // never nil: nil would pass the test's own environment
	cmd.Dir = r.WorkingDir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     r.Dir,
		Credential: &syscall.Credential{Uid: uint32(u), Gid: uint32(g)},
		Cloneflags: syscall.CLONE_NEWNS,
	}
	return harness.StartCmd(t, filepath.Base(r.Entrypoint[0]), cmd)
}

// The DNS-over-TLS upstream: its name in the certificate, and its answer.
const (
	dotName   = "dot.hairpin.test"
	dotQuery  = "forwarded.example.com."
	dotAnswer = "203.0.113.53"
)

// dotServer is a DNS-over-TLS server on 127.0.0.1 whose certificate is its
// own CA (ca), answering every A query with dotAnswer.
type dotServer struct {
	addr    string
	ca      *harness.Cert
	queries atomic.Int32
}

func startDoT(t *testing.T) *dotServer {
	t.Helper()
	ca, err := harness.NewSelfSignedCert(t.TempDir(), dotName)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.TLS}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	s := &dotServer{addr: ln.Addr().String(), ca: ca}
	srv := &dns.Server{Listener: ln, Net: "tcp-tls", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		s.queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(q.Question[0].Name + " 30 IN A " + dotAnswer)
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

// TestCoreDNSForwardsOverTLSOutOfItsRootfs runs our CoreDNS out of its
// image, chrooted, as 65532, on port 53 (its file capability), with a
// Corefile that forwards over tls:// to a DNS-over-TLS server whose
// certificate only a test CA vouches for. It answers when the Corefile
// names that CA or when the image's bundle holds it, and fails with the x509
// error when it trusts only the image's system pool.
func TestCoreDNSForwardsOverTLSOutOfItsRootfs(t *testing.T) {
	tests := []struct {
		name string
		// caOption names the test CA in the forward stanza (`tls CA`).
		caOption bool
		// caInBundle appends the test CA to the image's CA bundle.
		caInBundle bool
		answers    bool
	}{
		{name: "the CA named in the tls option is trusted", caOption: true, answers: true},
		{name: "the system pool is the image's bundle", caInBundle: true, answers: true},
		{name: "the system pool refuses an unknown CA", answers: false},
	}
	r := unpack(t, images[0])
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each case has its own DoT server, CA and files: a CA another
			// case added to the bundle is not this one's.
			conf := fmt.Sprintf("/etc/coredns/%d-%d", i, time.Now().UnixNano())
			if err := os.MkdirAll(filepath.Join(r.Dir, conf), 0o755); err != nil {
				t.Fatal(err)
			}
			dot := startDoT(t)
			caPEM, err := os.ReadFile(dot.ca.CertFile)
			if err != nil {
				t.Fatal(err)
			}
			harness.WriteFile(t, filepath.Join(r.Dir, conf), "dot-ca.pem", string(caPEM))
			if tt.caInBundle {
				appendFile(t, filepath.Join(r.Dir, imagebuild.CABundlePath), caPEM)
			}
			tlsOption := ""
			if tt.caOption {
				tlsOption = "tls " + conf + "/dot-ca.pem"
			}
			ip := harness.FreeLoopbackIP(t)
			if !harness.CanListen(ip, 53) {
				t.Fatalf("port 53 of the fresh address %s is taken", ip)
			}
			dnsAddr := netip.AddrPortFrom(ip, 53).String()
			readyAddr := harness.FreeAddr(t, "127.0.0.1")
			harness.WriteFile(t, filepath.Join(r.Dir, conf), "Corefile", fmt.Sprintf(`.:53 {
    bind %s
    errors
    ready %s
    forward . tls://%s {
        %s
        tls_servername %s
    }
}
`, ip, readyAddr, dot.addr, tlsOption, dotName))

			coredns := startInRootfs(t, r, "-conf", conf+"/Corefile")
			coredns.RequireReady(t.Context(), 30*time.Second, harness.HTTPProbe("http://"+readyAddr+"/ready"))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			reply, err := harness.Exchange(ctx, dnsAddr, dotQuery, dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			got := harness.ARecords(reply)
			if !tt.answers {
				if reply.Rcode != dns.RcodeServerFailure || len(got) > 0 || dot.queries.Load() != 0 {
					t.Fatalf("reply %s %v, %d queries reached the upstream; want SERVFAIL and none", dns.RcodeToString[reply.Rcode], got, dot.queries.Load())
				}
				const want = "x509: certificate signed by unknown authority"
				if err := harness.Poll(ctx, func(context.Context) error {
					if !strings.Contains(coredns.Output(), want) {
						return errors.New("no " + want + " in the log")
					}
					return nil
				}); err != nil {
					t.Fatalf("%v:\n%s", err, coredns.Output())
				}
				return
			}
			if reply.Rcode != dns.RcodeSuccess || !slices.Equal(got, []netip.Addr{netip.MustParseAddr(dotAnswer)}) || dot.queries.Load() == 0 {
				t.Fatalf("reply %s %v after %d upstream queries; want NOERROR %s from the DoT server\n%s",
					dns.RcodeToString[reply.Rcode], got, dot.queries.Load(), dotAnswer, coredns.Output())
			}
		})
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("the image's CA bundle: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestProxyRunsOutOfItsRootfs runs hairpin-proxy out of its image, which
// holds nothing but the binary: chrooted, as 65532, it serves /readyz and
// relays a connection to an upstream with the PROXY header.
func TestProxyRunsOutOfItsRootfs(t *testing.T) {
	r := unpack(t, images[1])
	up := harness.StartEchoUpstream(t, "127.0.0.1")
	route, health := harness.FreeAddr(t, "127.0.0.1"), harness.FreeAddr(t, "127.0.0.1")
	proxy := startInRootfs(t, r, "--route", route+"="+up.Addr(), "--health-addr", health, "--lameduck", "0s", "--drain-timeout", "1s")
	proxy.RequireReady(t.Context(), 30*time.Second, harness.HTTPProbe("http://"+health+"/readyz"))

	c, err := net.DialTimeout("tcp", route, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	echoed, err := io.ReadAll(c)
	if err != nil || string(echoed) != "ping" {
		t.Fatalf("relayed %q (%v); want the upstream's echo %q", echoed, err, "ping")
	}
	if h := up.NextHeader(t); h.SourceAddr.String() != c.LocalAddr().String() {
		t.Errorf("PROXY header source %s; want the client %s", h.SourceAddr, c.LocalAddr())
	}
}

// TestCoreDNSRootfsIsUsableAs65532 checks, with user 65532's filesystem
// rights, what a plugin may write in the coredns rootfs (/tmp and its
// home, not /etc), and that the timezone database loads.
func TestCoreDNSRootfsIsUsableAs65532(t *testing.T) {
	r := unpack(t, images[0])
	for _, tt := range []struct {
		dir      string
		writable bool
	}{
		{"tmp", true},
		{"home/nonroot", true},
		{"etc", false},
		{"/", false},
	} {
		err := createAs(imagebuild.NonrootUID, filepath.Join(r.Dir, tt.dir))
		if (err == nil) != tt.writable {
			t.Errorf("65532 creating a file in /%s: %v; want writable %t", strings.TrimPrefix(tt.dir, "/"), err, tt.writable)
		}
	}

	for zone, july := range map[string]int{"Europe/Berlin": 2 * 3600, "America/New_York": -4 * 3600, "Etc/UTC": 0, "UTC": 0} {
		b, err := os.ReadFile(filepath.Join(r.Dir, imagebuild.ZoneinfoDir, zone))
		if err != nil {
			t.Errorf("zone %s: %v", zone, err)
			continue
		}
		loc, err := time.LoadLocationFromTZData(zone, b)
		if err != nil {
			t.Errorf("zone %s: %v", zone, err)
			continue
		}
		if _, off := time.Date(2024, 7, 1, 12, 0, 0, 0, loc).Zone(); off != july {
			t.Errorf("%s in July: offset %ds; want %d", zone, off, july)
		}
	}
}

// createAs creates a file in dir with uid as the filesystem user and
// group, on a thread of its own that ends with it: setfsuid from root drops
// CAP_DAC_OVERRIDE, so the kernel checks 65532's rights on dir. dir is
// opened as root first, since the test's temporary folders above the
// rootfs are root's alone (inside the chroot they are not on the path).
func createAs(uid int, dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with its changed fsuid
		if err := errors.Join(unix.Setfsgid(uid), unix.Setfsuid(uid)); err != nil {
			done <- err
			return
		}
		if cur, _ := unix.SetfsuidRetUid(-1); cur != uid {
			done <- fmt.Errorf("setfsuid(%d) left fsuid %d", uid, cur)
			return
		}
		name := fmt.Sprintf("written-by-%d-%d", uid, time.Now().UnixNano())
		fd, err := unix.Openat(int(d.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err == nil {
			err = unix.Close(fd)
		}
		done <- err
	}()
	return <-done
}
