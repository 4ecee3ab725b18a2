package node

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCNIConfListGivesEachPluginTheListsNameAndVersion(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		types      []string          // want, in order
		stdin      map[string]string // want these keys in plugins[0]'s request
		err        string            // want an error naming this
	}{
		{
			name:  "cilium's conflist",
			conf:  `{"cniVersion":"0.3.1","name":"cilium","plugins":[{"type":"cilium-cni","enable-debug":false,"log-file":"/x/cilium-cni.log"}]}`,
			types: []string{"cilium-cni"},
			stdin: map[string]string{"type": "cilium-cni", "name": "cilium", "cniVersion": "0.3.1", "log-file": "/x/cilium-cni.log"},
		},
		{
			name:  "a chain",
			conf:  `{"cniVersion":"0.3.1","name":"generic-veth","plugins":[{"type":"ptp","ipam":{"type":"host-local"}},{"type":"portmap"},{"type":"cilium-cni"}]}`,
			types: []string{"ptp", "portmap", "cilium-cni"},
			stdin: map[string]string{"type": "ptp", "name": "generic-veth", "cniVersion": "0.3.1"},
		},
		{name: "missing", err: "network not ready"},
		{name: "no plugins", conf: `{"cniVersion":"1.0.0","name":"n","plugins":[]}`, err: "no plugins"},
		{name: "a path for a type", conf: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"ptp"},{"type":"../../bin/sh"}]}`, err: "plugins[1].type"},
		{name: "no version", conf: `{"name":"n","plugins":[{"type":"ptp"}]}`, err: "cniVersion"},
		{name: "not JSON", conf: `plugins:`, err: "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "05-net.conflist")
			if tc.conf != "" {
				if err := os.WriteFile(path, []byte(tc.conf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l, err := loadCNIConfList(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.types, tc.types) {
				t.Errorf("types %v; want %v", l.types, tc.types)
			}
			stdin, err := l.request(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(stdin, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.stdin {
				if got[k] != v {
					t.Errorf("stdin[%s] = %v; want %q (%s)", k, got[k], v, stdin)
				}
			}
			if _, ok := got["prevResult"]; ok {
				t.Errorf("the first plugin's ADD has a prevResult: %s", stdin)
			}
		})
	}
}

// fakeCNIPlugin is a CNI plugin that logs each call (command, its name,
// its stdin) to $FAKE_CNI_LOG, fails ADD when $FAKE_CNI_FAIL names it,
// and on ADD prints a result whose dns.domain is its name.
const fakeCNIPlugin = `#!/bin/sh
name=${0##*/}
stdin=$(cat)
printf '%s %s %s\n' "$CNI_COMMAND" "$name" "$stdin" >>"$FAKE_CNI_LOG"
if [ "$CNI_COMMAND" = ADD ] && [ "$name" = "$FAKE_CNI_FAIL" ]; then
	printf '{"cniVersion":"1.0.0","code":11,"msg":"%s is broken"}' "$name"
	exit 1
fi
if [ "$CNI_COMMAND" = ADD ]; then
	printf '{"cniVersion":"1.0.0","ips":[{"address":"198.18.1.2/24"}],"dns":{"domain":"%s"}}' "$name"
fi
`

// cniCall is one plugin call as the fake plugins log it: the command, the
// plugin, and whose result its prevResult is ("" for none).
type cniCall struct{ command, plugin, prev string }

func TestCNIChainRunsAsLibcniRunsAConfList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		fail    string    // the plugin whose ADD fails
		del     bool      // DEL after a successful ADD
		calls   []cniCall // want
		result  string    // want the ADD's result from this plugin
		err     string    // want the ADD to fail, naming this
	}{
		{
			name:    "ADD runs the plugins in order, each with the result of the one before",
			version: "0.3.1",
			calls:   []cniCall{{"ADD", "a", ""}, {"ADD", "b", "a"}, {"ADD", "c", "b"}},
			result:  "c",
		},
		{
			name:    "DEL runs them in reverse, each with the ADD's final result",
			version: "1.0.0",
			del:     true,
			calls:   []cniCall{{"ADD", "a", ""}, {"ADD", "b", "a"}, {"ADD", "c", "b"}, {"DEL", "c", "c"}, {"DEL", "b", "c"}, {"DEL", "a", "c"}},
			result:  "c",
		},
		{
			name:    "DEL of a 0.3.1 list has no prevResult",
			version: "0.3.1",
			del:     true,
			calls:   []cniCall{{"ADD", "a", ""}, {"ADD", "b", "a"}, {"ADD", "c", "b"}, {"DEL", "c", ""}, {"DEL", "b", ""}, {"DEL", "a", ""}},
			result:  "c",
		},
		{
			name:    "an error in the second plugin stops ADD and deletes the whole list in reverse",
			version: "1.0.0",
			fail:    "b",
			calls:   []cniCall{{"ADD", "a", ""}, {"ADD", "b", "a"}, {"DEL", "c", ""}, {"DEL", "b", ""}, {"DEL", "a", ""}},
			err:     "b is broken",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Two folders on the path: a and b in the first, c only in the
			// second.
			bins := []string{filepath.Join(dir, "bin1"), filepath.Join(dir, "bin2")}
			for i, names := range [][]string{{"a", "b"}, {"c"}} {
				if err := os.Mkdir(bins[i], 0o755); err != nil {
					t.Fatal(err)
				}
				for _, n := range names {
					if err := os.WriteFile(filepath.Join(bins[i], n), []byte(fakeCNIPlugin), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			conf := filepath.Join(dir, "10-chain.conflist")
			if err := os.WriteFile(conf, []byte(`{"cniVersion":"`+tc.version+`","name":"chain","plugins":[{"type":"a"},{"type":"b"},{"type":"c"}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "calls")
			in := cniInvoker{
				path:    bins,
				env:     []string{"FAKE_CNI_LOG=" + log, "FAKE_CNI_FAIL=" + tc.fail, "CNI_IFNAME=eth0"},
				command: func(path string) *exec.Cmd { return exec.Command(path) },
			}
			l, err := loadCNIConfList(conf)
			if err != nil {
				t.Fatal(err)
			}
			result, err := l.attach(in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ADD: err %v; want one naming %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatalf("ADD: %v", err)
			} else if got := resultOf(t, result); got != tc.result {
				t.Errorf("ADD's result is %s's (%s); want %s's", got, result, tc.result)
			}
			if tc.del {
				if err := l.del(in, result); err != nil {
					t.Fatalf("DEL: %v", err)
				}
			}
			if got := readCNICalls(t, log, "chain", tc.version); !slices.Equal(got, tc.calls) {
				t.Errorf("calls\n%v\nwant\n%v", got, tc.calls)
			}
		})
	}
}

// readCNICalls reads the fake plugins' log, and checks that every call had
// the list's name and version.
func readCNICalls(t *testing.T, log, name, version string) []cniCall {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []cniCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		command, rest, _ := strings.Cut(sc.Text(), " ")
		plugin, stdin, _ := strings.Cut(rest, " ")
		var req struct {
			Name       string          `json:"name"`
			CNIVersion string          `json:"cniVersion"`
			PrevResult json.RawMessage `json:"prevResult"`
		}
		if err := json.Unmarshal([]byte(stdin), &req); err != nil {
			t.Fatalf("%s %s: stdin %q: %v", command, plugin, stdin, err)
		}
		if req.Name != name || req.CNIVersion != version {
			t.Errorf("%s %s: name %q, cniVersion %q; want the list's %q, %q", command, plugin, req.Name, req.CNIVersion, name, version)
		}
		prev := ""
		if req.PrevResult != nil {
			prev = resultOf(t, req.PrevResult)
		}
		calls = append(calls, cniCall{command, plugin, prev})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// resultOf names the fake plugin that printed result.
func resultOf(t *testing.T, result []byte) string {
	t.Helper()
	var r struct {
		DNS struct {
			Domain string `json:"domain"`
		} `json:"dns"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.DNS.Domain == "" {
		t.Fatalf("not a fake plugin's result: %q (%v)", result, err)
	}
	return r.DNS.Domain
}

func TestCNIArgsNameThePodAsAKubeletsRuntimeDoes(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "0d5c2f7e-1b7a-4c1e-9a55-6f2d8c1b9e01"}}
	got := cniArgs(p)
	for _, want := range []string{"IgnoreUnknown=1", "K8S_POD_NAMESPACE=shop", "K8S_POD_NAME=web", "K8S_POD_UID=" + string(p.UID), "K8S_POD_INFRA_CONTAINER_ID="} {
		if !strings.Contains(got, want) {
			t.Errorf("CNI_ARGS %q lacks %q", got, want)
		}
	}
}
