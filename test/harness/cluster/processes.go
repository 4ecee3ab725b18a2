package cluster

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// NodeProcesses returns the names (comm) of the processes whose network
// namespace is the node's, sorted, each once: what `ps` on the node shows.
func (c *Cluster) NodeProcesses() ([]string, error) {
	pids, err := c.NodeNS.Pids()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if n := strings.TrimSpace(string(b)); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}
