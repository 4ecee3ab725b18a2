package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/coredns-hairpin/hairpin/build/coredns/activate"
)

const stockCorefile = ".:53 {\n    errors\n    kubernetes cluster.local\n    forward . 127.0.0.1:5300\n}\n"

// useCorefile points -conf (through the flag coremain defined, which the
// loader took over) at a fresh Corefile and restores the flags afterwards.
func useCorefile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	setFlag(t, "conf", p)
	return p
}

func setFlag(t *testing.T, name, value string) {
	t.Helper()
	old := flag.Lookup(name).Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// captureLog collects what the loader logs.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	prev := log.Writer()
	log.SetOutput(&b)
	corefileLoader.mu.Lock()
	corefileLoader.last = ""
	corefileLoader.mu.Unlock()
	t.Cleanup(func() { log.SetOutput(prev) })
	return &b
}

// TestLoadCaddyfileActivates goes through caddy.LoadCaddyfile, the call the
// startup and the reload plugin make: coremain's -conf loader and ours are
// both registered, only ours returns input, and that input has hairpin.
func TestLoadCaddyfileActivates(t *testing.T) {
	logs := captureLog(t)
	path := useCorefile(t, stockCorefile)
	in, err := caddy.LoadCaddyfile("dns")
	if err != nil {
		t.Fatalf("LoadCaddyfile: %v", err)
	}
	if in.Path() != path {
		t.Errorf("loaded %q, want %q", in.Path(), path)
	}
	want := strings.Replace(stockCorefile, ".:53 {", ".:53 { hairpin", 1)
	if string(in.Body()) != want {
		t.Errorf("loaded Corefile:\n%s\nwant:\n%s", in.Body(), want)
	}
	wantLog := "[INFO] plugin/hairpin: activated in server block .:53 (it holds kubernetes; the Corefile names no hairpin); -hairpin.activate=false turns this off"
	if !strings.Contains(logs.String(), wantLog) {
		t.Errorf("log %q does not say %q", logs.String(), wantLog)
	}
}

// TestReloadReappliesActivation: the stock Corefile written again (what a
// distribution's re-render does) loads with hairpin again, and a load that
// changes nothing logs nothing (the reload plugin loads on every check).
func TestReloadReappliesActivation(t *testing.T) {
	logs := captureLog(t)
	path := useCorefile(t, stockCorefile)
	for i := range 3 {
		in, err := caddy.LoadCaddyfile("dns")
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		if !bytes.Contains(in.Body(), []byte("{ hairpin")) {
			t.Fatalf("load %d has no hairpin:\n%s", i, in.Body())
		}
	}
	if n := strings.Count(logs.String(), "activated in server block"); n != 1 {
		t.Errorf("three identical loads logged %d activation lines, want 1:\n%s", n, logs)
	}
	second := stockCorefile + "\n.:5353 {\n    kubernetes cluster.local\n}\n"
	if err := os.WriteFile(path, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := caddy.LoadCaddyfile("dns")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(in.Body(), []byte("{ hairpin")); n != 2 {
		t.Errorf("changed Corefile has %d hairpin directives, want 2:\n%s", n, in.Body())
	}
	if !strings.Contains(logs.String(), "activated in server block .:5353") {
		t.Errorf("a changed Corefile was not logged:\n%s", logs)
	}
}

func TestActivationOff(t *testing.T) {
	logs := captureLog(t)
	useCorefile(t, stockCorefile)
	setFlag(t, activateFlag, "false")
	in, err := caddy.LoadCaddyfile("dns")
	if err != nil {
		t.Fatal(err)
	}
	if string(in.Body()) != stockCorefile {
		t.Errorf("activation off changed the Corefile:\n%s", in.Body())
	}
	if !strings.Contains(logs.String(), "activation is off") {
		t.Errorf("log %q does not say activation is off", logs)
	}
}

// TestMissingCorefileKeepsCoreDNSError: a -conf that cannot be read fails
// as it does in stock CoreDNS.
func TestMissingCorefileKeepsCoreDNSError(t *testing.T) {
	setFlag(t, "conf", filepath.Join(t.TempDir(), "nothere"))
	_, err := caddy.LoadCaddyfile("dns")
	if err == nil || !strings.Contains(err.Error(), "loading Caddyfile via flag: open ") {
		t.Fatalf("error %v, want caddy's loading error", err)
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		set         bool
		start, want bool
		wantErr     string
	}{
		{name: "unset keeps the default", start: true, want: true},
		{name: "false turns it off", value: "false", set: true, start: true, want: false},
		{name: "0 turns it off", value: "0", set: true, start: true, want: false},
		{name: "true keeps it on", value: "true", set: true, start: true, want: true},
		{name: "empty keeps the default", value: " ", set: true, start: true, want: true},
		{name: "not a boolean names the variable", value: "nope", set: true, start: true, want: true, wantErr: `COREDNS_HAIRPIN_ACTIVATE="nope": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &loader{on: tc.start}
			err := l.fromEnv(func(k string) (string, bool) {
				if k == activateEnv {
					return tc.value, tc.set
				}
				return "", false
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if l.on != tc.want {
				t.Errorf("on = %v, want %v", l.on, tc.want)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		res     activate.Result
		targets string
		want    []message
	}{
		{
			name:    "activated with a targets namespace names it and its flag",
			res:     activate.Result{Activated: []activate.Block{{Keys: ".:53"}}},
			targets: "edge",
			want:    []message{{text: "activated in server block .:53 discovering targets in edge (-hairpin.targets) (it holds kubernetes; the Corefile names no hairpin); -hairpin.activate=false turns this off"}},
		},
		{
			name: "activated names the block and the way off",
			res:  activate.Result{Activated: []activate.Block{{Keys: ".:53 cluster.local:53"}}},
			want: []message{{text: "activated in server block .:53 cluster.local:53 (it holds kubernetes; the Corefile names no hairpin); -hairpin.activate=false turns this off"}},
		},
		{
			name: "activated with the kubernetes plugin's kubeconfig says so",
			res:  activate.Result{Activated: []activate.Block{{Keys: ".:53", Kubeconfig: []string{"/k/config"}}}},
			want: []message{{text: "activated in server block .:53 with the kubernetes plugin's kubeconfig /k/config (it holds kubernetes; the Corefile names no hairpin); -hairpin.activate=false turns this off"}},
		},
		{
			name: "explicit",
			res:  activate.Result{Explicit: true},
			want: []message{{text: "not activated: the Corefile names hairpin; it is used as written"}},
		},
		{
			name: "a block from an import is a warning",
			res:  activate.Result{Imported: []activate.Block{{Keys: "x:53", File: "/etc/coredns/custom/x.server"}}},
			want: []message{{warning: true, text: "not activated in server block x:53 from /etc/coredns/custom/x.server: it holds kubernetes but comes from an import, which is not edited; add a hairpin line there to serve hairpin hosts from it"}},
		},
		{
			name: "unplaced is a warning",
			res:  activate.Result{Unplaced: errors.New("boom")},
			want: []message{{warning: true, text: "not activated: boom; the Corefile is used as written"}},
		},
		{
			name: "no kubernetes",
			want: []message{{text: "not activated: no server block holds kubernetes"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := messages(tc.res, tc.targets)
			if len(got) != len(tc.want) {
				t.Fatalf("messages %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("message %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestTargetsFromEnvAndFlag(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        string
		setEnv     bool
		args       []string
		want       string
		wantEnvErr string
		wantArgErr string
	}{
		{name: "unset keeps the plugin's default", want: ""},
		{name: "the variable names the namespace", env: "edge", setEnv: true, want: "edge"},
		{name: "blanks around the variable are ignored", env: " edge ", setEnv: true, want: "edge"},
		{name: "the flag wins over the variable", env: "edge", setEnv: true, args: []string{"-hairpin.targets=ingress"}, want: "ingress"},
		{name: "a bad variable names the variable", env: "Edge_1", setEnv: true, wantEnvErr: `COREDNS_HAIRPIN_TARGETS="Edge_1": "Edge_1" is not a namespace name`},
		{name: "a bad flag names the flag", args: []string{"-hairpin.targets=a.b"}, wantArgErr: `invalid value "a.b" for flag -hairpin.targets: "a.b" is not a namespace name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("coredns", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			l := &loader{on: true}
			l.register(fs)
			err := l.fromEnv(func(k string) (string, bool) {
				if k == targetsEnv {
					return tc.env, tc.setEnv
				}
				return "", false
			})
			if tc.wantEnvErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantEnvErr) {
					t.Fatalf("error %v, want %q", err, tc.wantEnvErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = fs.Parse(tc.args)
			if tc.wantArgErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantArgErr) {
					t.Fatalf("error %v, want %q", err, tc.wantArgErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(l.targets); got != tc.want {
				t.Errorf("targets %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadWithTargetsNamespace goes through caddy.LoadCaddyfile with
// -hairpin.targets set: the activated stanza discovers the targets there.
func TestLoadWithTargetsNamespace(t *testing.T) {
	logs := captureLog(t)
	useCorefile(t, stockCorefile)
	setFlag(t, targetsFlag, "edge")
	in, err := caddy.LoadCaddyfile("dns")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(stockCorefile, ".:53 {", ".:53 { hairpin {\n        targets edge\n    }", 1)
	if string(in.Body()) != want {
		t.Errorf("loaded Corefile:\n%s\nwant:\n%s", in.Body(), want)
	}
	if !strings.Contains(logs.String(), "discovering targets in edge (-hairpin.targets)") {
		t.Errorf("log %q does not name the targets namespace", logs)
	}
}
