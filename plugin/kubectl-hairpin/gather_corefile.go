package kubectlhairpin

import (
	"context"
	"fmt"
	"path"
	"strings"

	core "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gatherCorefile reads the Corefile that CoreDNS runs, and the files it
// imports, from the ConfigMaps mounted into its first pod. The pod rather
// than its Deployment: the pods are read already, whatever owns them, and
// their spec is what runs.
func (g *gatherer) gatherCorefile(ctx context.Context) error {
	if len(g.f.CoreDNS) == 0 {
		return nil
	}
	pod := g.f.CoreDNS[0].Pod
	cf := &Corefile{Pod: podObject(pod)}
	g.f.Corefile = cf
	c := corednsContainer(pod)
	conf, ok := confFlag(c)
	if !ok {
		cf.Err = fmt.Errorf("%s passes no -conf to CoreDNS", cf.Pod)
		return nil
	}
	fs, err := g.podFiles(ctx, pod, c)
	if err != nil {
		return err
	}
	if f, ok := fs.files[conf]; ok {
		cf.ConfigMap, cf.Key = f.configMap, f.key
	}
	cf.Blocks, cf.Imports, cf.Err = readCorefile(conf, fs.podFiles)
	if fs.unread != nil {
		cf.Err = fs.unread // the cause of any error reading the files
	}
	return nil
}

// corednsContainer is the container named coredns, else the first.
func corednsContainer(p *core.Pod) *core.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "coredns" {
			return &p.Spec.Containers[i]
		}
	}
	return &p.Spec.Containers[0]
}

// confFlag is the value of CoreDNS's -conf flag, in any form Go's flag
// package takes: -conf F, --conf F, -conf=F.
func confFlag(c *core.Container) (string, bool) {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "conf" {
			continue
		}
		if hasValue {
			return value, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// readFiles is podFiles with the first ConfigMap that could not be read.
type readFiles struct {
	podFiles
	unread error
}

// podFiles reads the ConfigMaps mounted into container c of pod, as the
// kubelet projects them: every key, or the items named, under the mount
// path; a subPath mount is that one file.
func (g *gatherer) podFiles(ctx context.Context, pod *core.Pod, c *core.Container) (readFiles, error) {
	fs := readFiles{podFiles: podFiles{files: map[string]mountedFile{}, configMaps: map[string]string{}}}
	volumes := map[string]core.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	read := map[string]*core.ConfigMap{}
	for _, m := range c.VolumeMounts {
		sources := configMapSources(volumes[m.Name])
		if len(sources) == 0 {
			fs.opaque = append(fs.opaque, path.Clean(m.MountPath))
			continue
		}
		for _, s := range sources {
			cm, seen := read[s.Name]
			if !seen {
				what := "get configmaps/" + s.Name + " in " + pod.Namespace
				got, getErr := g.c.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, s.Name, meta.GetOptions{})
				ok, err := g.read(getErr, what, "whether a rewrite shadows hairpin hosts is unknown")
				if err != nil {
					return fs, err
				}
				if ok {
					cm = got
				} else if apierrors.IsForbidden(getErr) && fs.unread == nil {
					fs.unread = fmt.Errorf("ConfigMap %s/%s, mounted at %s, could not be read", pod.Namespace, s.Name, m.MountPath)
				}
				read[s.Name] = cm
			}
			if cm == nil {
				continue
			}
			if m.SubPath == "" {
				fs.configMaps[path.Clean(m.MountPath)] = cm.Namespace + "/" + cm.Name
			}
			for rel, key := range projected(cm, s.Items) {
				p := path.Join(m.MountPath, rel)
				if m.SubPath != "" {
					if rel != path.Clean(m.SubPath) {
						continue
					}
					p = path.Clean(m.MountPath)
				}
				fs.files[p] = mountedFile{configMap: cm.Namespace + "/" + cm.Name, key: key, text: cm.Data[key]}
			}
		}
	}
	return fs, nil
}

// configMapSource is a ConfigMap a volume projects, and which keys.
type configMapSource struct {
	Name  string
	Items []core.KeyToPath
}

// configMapSources are the ConfigMaps of a configMap or projected volume.
func configMapSources(v core.Volume) []configMapSource {
	switch {
	case v.ConfigMap != nil:
		return []configMapSource{{v.ConfigMap.Name, v.ConfigMap.Items}}
	case v.Projected != nil:
		var out []configMapSource
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				out = append(out, configMapSource{s.ConfigMap.Name, s.ConfigMap.Items})
			}
		}
		return out
	}
	return nil
}

// projected maps the paths in the volume to the keys of cm it shows
// there: the items when named, else every key under its own name.
func projected(cm *core.ConfigMap, items []core.KeyToPath) map[string]string {
	out := map[string]string{}
	if len(items) == 0 {
		for k := range cm.Data {
			out[k] = k
		}
		return out
	}
	for _, it := range items {
		if _, ok := cm.Data[it.Key]; ok {
			out[path.Clean(it.Path)] = it.Key
		}
	}
	return out
}
