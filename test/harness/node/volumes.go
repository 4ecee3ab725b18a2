package node

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// volumeDir is where the Pod's volume name lives on the host; containers
// get it (or a subPath of it) bound at their mountPaths.
func (p *pod) volumeDir(name string) string { return filepath.Join(p.dir, "volumes", name) }

// rendered reports whether the atomic writer fills v.
func rendered(v *corev1.Volume) bool {
	s := v.VolumeSource
	return s.ConfigMap != nil || s.Secret != nil || s.DownwardAPI != nil || s.Projected != nil
}

// setUpVolumes creates every volume of the Pod. Volume roots are 0777, as
// kubelet makes emptyDir and the atomic writer's volumes; with an fsGroup
// they belong to it.
func (p *pod) setUpVolumes() error {
	spec := p.object().Spec
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.EmptyDir == nil && !rendered(v) {
			return &configError{fmt.Sprintf("volume %s: %s volumes are not supported on this node", v.Name, volumeKind(v))}
		}
		dir := p.volumeDir(v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
		if o := p.volumeOwner(); o.gid >= 0 {
			uid, gid := userns.Owner(-1, o.gid)
			if err := os.Chown(dir, uid, gid); err != nil {
				return err
			}
		}
		if rendered(v) {
			if err := p.writeVolume(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *pod) writeVolume(v *corev1.Volume) error {
	files, err := p.payload(v)
	if err != nil {
		return fmt.Errorf("volume %s: %w", v.Name, err)
	}
	if _, err := writeAtomic(p.volumeDir(v.Name), files); err != nil {
		return fmt.Errorf("volume %s: %w", v.Name, err)
	}
	return nil
}

// rewriteVolumes renders every atomic-writer volume again; the writer only
// swaps ..data where the payload changed.
func (p *pod) rewriteVolumes() {
	spec := p.object().Spec
	for i := range spec.Volumes {
		if v := &spec.Volumes[i]; rendered(v) {
			if err := p.writeVolume(v); err != nil {
				p.n.cfg.logf("pod %s: %v", p.key, err)
			}
		}
	}
}

// keepVolumes rewrites the volumes whenever a source may have changed,
// until the Pod stops.
func (p *pod) keepVolumes() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.volumes:
			p.rewriteVolumes()
		}
	}
}

// kickVolumes asks keepVolumes for a rewrite.
func (p *pod) kickVolumes() {
	select {
	case p.volumes <- struct{}{}:
	default:
	}
}

// uses reports whether one of the Pod's volumes reads the ConfigMap or
// Secret name.
func (p *pod) uses(kind, name string) bool {
	for _, v := range p.object().Spec.Volumes {
		var names []string
		switch s := v.VolumeSource; {
		case s.ConfigMap != nil && kind == "ConfigMap":
			names = append(names, s.ConfigMap.Name)
		case s.Secret != nil && kind == "Secret":
			names = append(names, s.Secret.SecretName)
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.ConfigMap != nil && kind == "ConfigMap" {
					names = append(names, src.ConfigMap.Name)
				}
				if src.Secret != nil && kind == "Secret" {
					names = append(names, src.Secret.Name)
				}
			}
		}
		if slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// volumeKind names the volume's source type, e.g. "hostPath".
func volumeKind(v *corev1.Volume) string {
	rv := reflect.ValueOf(v.VolumeSource)
	for i := range rv.NumField() {
		if !rv.Field(i).IsNil() {
			tag := rv.Type().Field(i).Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			return name
		}
	}
	return "unknown"
}
