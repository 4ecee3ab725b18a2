package node

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Kinds of the objects whose data Pods read.
const (
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"
)

// objectData returns the keys of a ConfigMap (data and binaryData) or a
// Secret of namespace ns, from the informers' caches. A missing object is
// no error when optional: it has no keys then.
func (n *Node) objectData(ns, kind, name string, optional bool) (map[string][]byte, error) {
	data := map[string][]byte{}
	var err error
	switch kind {
	case kindConfigMap:
		cm, gerr := n.configMaps.ConfigMaps(ns).Get(name)
		if err = gerr; err == nil {
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				data[k] = v
			}
		}
	case kindSecret:
		s, gerr := n.secrets.Secrets(ns).Get(name)
		if err = gerr; err == nil {
			for k, v := range s.Data {
				data[k] = v
			}
		}
	default:
		return nil, fmt.Errorf("unknown kind %s", kind)
	}
	if apierrors.IsNotFound(err) && optional {
		return data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	return data, nil
}

// objectKey returns one key of a ConfigMap or Secret; ok is false when an
// optional object or key is missing.
func (n *Node) objectKey(ns, kind, name, key string, optional bool) (v string, ok bool, err error) {
	data, err := n.objectData(ns, kind, name, optional)
	if err != nil {
		return "", false, err
	}
	b, ok := data[key]
	if !ok && !optional {
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, ns, name)
	}
	return string(b), ok, nil
}
