package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatewayAPIPageValuesRender renders every values file of
// docs/gateway-api.md with `helm template` and checks its targets as
// TestTargetsAreWired does: a PROXY target becomes its Service and proxy
// route, a direct target a headless carrier naming its Service, with no
// route. A page whose examples do not render, or render something else
// than they say, fails here.
func TestGatewayAPIPageValuesRender(t *testing.T) {
	const page = "docs/gateway-api.md"
	n := 0
	for _, b := range codeBlocks(readDoc(t, page)) {
		if b.lang != "yaml" || !strings.HasPrefix(b.body, "targets:") {
			continue
		}
		n++
		t.Run(fmt.Sprintf("%s:%d", page, b.line), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			c := valuesCase{name: page, values: []string{file}}
			r := rendered{valuesCase: c, objs: render(t, c)}
			v := valuesOf(t, r)
			if len(v.targets()) == 0 {
				t.Fatal("the values enable no target")
			}
			checkTargets(t, r, v)
		})
	}
	if n < 10 {
		t.Errorf("%s has %d values files; want the PROXY and the direct case of each of the five controllers", page, n)
	}
}
