package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCNIPluginConfIsTheListsFirstPluginWithItsNameAndVersion(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		plugin     string            // want, under BinDir
		stdin      map[string]string // want these keys
		err        string            // want an error naming this
	}{
		{
			name:   "cilium's conflist",
			conf:   `{"cniVersion":"0.3.1","name":"cilium","plugins":[{"type":"cilium-cni","enable-debug":false,"log-file":"/x/cilium-cni.log"}]}`,
			plugin: "cilium-cni",
			stdin:  map[string]string{"type": "cilium-cni", "name": "cilium", "cniVersion": "0.3.1", "log-file": "/x/cilium-cni.log"},
		},
		{name: "missing", err: "network not ready"},
		{name: "no plugins", conf: `{"cniVersion":"1.0.0","name":"n","plugins":[]}`, err: "no plugins"},
		{name: "a path for a type", conf: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"../../bin/sh"}]}`, err: "plugins[0].type"},
		{name: "not JSON", conf: `plugins:`, err: "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &CNI{ConfFile: filepath.Join(dir, "05-net.conflist"), BinDir: "/opt/cni/bin"}
			if tc.conf != "" {
				if err := os.WriteFile(c.ConfFile, []byte(tc.conf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			plugin, stdin, err := c.pluginConf()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(c.BinDir, tc.plugin); plugin != want {
				t.Errorf("plugin %s; want %s", plugin, want)
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
		})
	}
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
