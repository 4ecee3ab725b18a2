package cluster

import "sync"

// ciliumShape is Cilium as Cozystack installs it in one shape of cluster:
// the values files of Cozystack's that its chart is rendered with, and the
// harness's deviations from that rendering, whose chart-value rows' Ours
// go on top ([ciliumShape.values]).
type ciliumShape struct {
	// name is the dataplane's name: the cilium mode's, or a shape's.
	name       string
	files      []valueFile
	deviations []Deviation
	// cozystackValues are the files' values, read once, and not to be
	// changed.
	cozystackValues func() ([]map[string]any, error)
}

func newCiliumShape(name string, files []valueFile, deviations []Deviation) *ciliumShape {
	return &ciliumShape{name: name, files: files, deviations: deviations,
		cozystackValues: sync.OnceValues(func() ([]map[string]any, error) { return readValueFiles(files) })}
}

// values are the chart values of the shape on top of its files: the Ours
// of every row of its deviation table that is a chart value. A fresh map
// each call.
func (s *ciliumShape) values() CiliumValues {
	v := CiliumValues{}
	for _, d := range s.deviations {
		if d.Value {
			v[d.Path] = d.Ours
		}
	}
	return v
}

// ciliumShapes are the shapes of Cilium the harness runs: the cilium mode,
// Cozystack's management cluster (its default networking variant), and a
// Cozystack tenant's ([CozyTenant]).
var (
	ciliumModeShape = newCiliumShape(ciliumName, ciliumValueFiles, ciliumDeviations)
	cozyTenantShape = newCiliumShape(CozyTenant, cozyTenantValueFiles, cozyTenantDeviations)
	ciliumShapes    = []*ciliumShape{ciliumModeShape, cozyTenantShape}
)
