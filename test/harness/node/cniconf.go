package node

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// cniConfList is a network configuration list (a .conflist) as a runtime
// reads it: its name and cniVersion, which every plugin gets, and its
// plugins in the order ADD runs them.
type cniConfList struct {
	CNIVersion string            `json:"cniVersion"`
	Name       string            `json:"name"`
	Plugins    []json.RawMessage `json:"plugins"`

	types []string // each plugin's type: the executable's name
}

// loadCNIConfList reads the conflist at path. It is an error when the
// file is missing (the network is not ready), has no plugins, or names a
// plugin type that is not a plain executable name.
func loadCNIConfList(path string) (*cniConfList, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cni: network not ready: %w", err)
	}
	l := &cniConfList{}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("cni: %s: %w", path, err)
	}
	if len(l.Plugins) == 0 {
		return nil, fmt.Errorf("cni: %s: no plugins", path)
	}
	if _, err := cniVersionAtLeast(l.CNIVersion, 0, 4); err != nil {
		return nil, fmt.Errorf("cni: %s: %w", path, err)
	}
	for i, p := range l.Plugins {
		var conf struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(p, &conf); err != nil {
			return nil, fmt.Errorf("cni: %s: plugins[%d]: %w", path, i, err)
		}
		if conf.Type == "" || strings.ContainsRune(conf.Type, '/') {
			return nil, fmt.Errorf("cni: %s: plugins[%d].type %q is not a plugin name", path, i, conf.Type)
		}
		l.types = append(l.types, conf.Type)
	}
	return l, nil
}

// request is the configuration plugin i reads on stdin: its own, with the
// list's name and cniVersion, and prevResult when there is one (SPEC.md,
// "Deriving request configuration from plugin configuration", in
// containernetworking/cni at 3f51e88). The other keys pass unaltered, as
// libcni's buildOneConfig leaves them (libcni/api.go, same commit). No
// runtimeConfig: this runtime passes no capability arguments.
func (l *cniConfList) request(i int, prevResult json.RawMessage) ([]byte, error) {
	var conf map[string]any
	if err := json.Unmarshal(l.Plugins[i], &conf); err != nil {
		return nil, fmt.Errorf("cni: plugins[%d]: %w", i, err)
	}
	conf["name"], conf["cniVersion"] = l.Name, l.CNIVersion
	if prevResult != nil {
		conf["prevResult"] = prevResult
	}
	b, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("cni: plugins[%d]: %w", i, err)
	}
	return b, nil
}

// cniVersionAtLeast reports whether the CNI version v ("0.3.1", "1.0.0")
// is at least major.minor.
func cniVersionAtLeast(v string, major, minor int) (bool, error) {
	var ma, mi, patch int
	if n, err := fmt.Sscanf(v, "%d.%d.%d", &ma, &mi, &patch); err != nil || n != 3 {
		return false, fmt.Errorf("cniVersion %q is not a version", v)
	}
	return ma > major || ma == major && mi >= minor, nil
}
