package node

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// defaultMode is the API's default for volume files (0644).
const defaultMode = 0o644

// payload renders the files of a configMap, secret, downwardAPI or
// projected volume from the current objects, as kubelet's volume plugins
// do. A missing object or key fails unless it is optional.
func (p *pod) payload(v *corev1.Volume) (map[string]file, error) {
	out := map[string]file{}
	owner := p.volumeOwner()
	switch s := v.VolumeSource; {
	case s.ConfigMap != nil:
		return out, p.configMapFiles(out, s.ConfigMap.LocalObjectReference.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode(s.ConfigMap.DefaultMode), owner)
	case s.Secret != nil:
		return out, p.secretFiles(out, s.Secret.SecretName, s.Secret.Items, s.Secret.Optional, mode(s.Secret.DefaultMode), owner)
	case s.DownwardAPI != nil:
		return out, p.downwardFiles(out, s.DownwardAPI.Items, mode(s.DownwardAPI.DefaultMode), owner)
	case s.Projected != nil:
		dm := mode(s.Projected.DefaultMode)
		for i, src := range s.Projected.Sources {
			var err error
			switch {
			case src.ConfigMap != nil:
				err = p.configMapFiles(out, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, dm, owner)
			case src.Secret != nil:
				err = p.secretFiles(out, src.Secret.Name, src.Secret.Items, src.Secret.Optional, dm, owner)
			case src.DownwardAPI != nil:
				err = p.downwardFiles(out, src.DownwardAPI.Items, dm, owner)
			case src.ServiceAccountToken != nil:
				err = p.tokenFile(out, fmt.Sprintf("%s/%d", v.Name, i), src.ServiceAccountToken, dm, owner)
			default:
				err = fmt.Errorf("projected source %d: unsupported kind", i)
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("volume %s: not rendered by the atomic writer", v.Name)
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return defaultMode
	}
	return os.FileMode(*m)
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

func (p *pod) configMapFiles(out map[string]file, name string, items []corev1.KeyToPath, optional *bool, dm os.FileMode, owner fileOwner) error {
	return p.objectFiles(out, kindConfigMap, name, items, isTrue(optional), dm, owner)
}

func (p *pod) secretFiles(out map[string]file, name string, items []corev1.KeyToPath, optional *bool, dm os.FileMode, owner fileOwner) error {
	return p.objectFiles(out, kindSecret, name, items, isTrue(optional), dm, owner)
}

// objectFiles adds a ConfigMap's or Secret's keys (or just items, at their
// paths) to out.
func (p *pod) objectFiles(out map[string]file, kind, name string, items []corev1.KeyToPath, optional bool, dm os.FileMode, owner fileOwner) error {
	data, err := p.n.objectData(p.namespace(), kind, name, optional)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = owner.file(v, dm)
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		out[it.Path] = owner.file(v, itemMode(it.Mode, dm))
	}
	return nil
}

func (p *pod) downwardFiles(out map[string]file, items []corev1.DownwardAPIVolumeFile, dm os.FileMode, owner fileOwner) error {
	obj := p.object()
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = p.n.fieldValue(obj, it.FieldRef.FieldPath, p.podIP())
		case it.ResourceFieldRef != nil:
			v, err = p.n.resourceValue(obj, nil, it.ResourceFieldRef)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI %s: %w", it.Path, err)
		}
		out[it.Path] = owner.file([]byte(v), itemMode(it.Mode, dm))
	}
	return nil
}

// fileOwner is who owns a volume's files: kubelet gives them the Pod's
// fsGroup, and a service-account token the containers' common runAsUser.
type fileOwner struct {
	uid, gid int
}

func (o fileOwner) file(data []byte, m os.FileMode) file {
	if o.gid >= 0 {
		m |= 0o040
	}
	return file{data: data, mode: m, uid: -1, gid: o.gid}
}

// volumeOwner is the Pod's fsGroup owner (uid untouched).
func (p *pod) volumeOwner() fileOwner {
	o := fileOwner{uid: -1, gid: -1}
	if sc := p.object().Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		o.gid = int(*sc.FSGroup)
	}
	return o
}
