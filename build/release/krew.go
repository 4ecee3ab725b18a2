package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the krew index's Plugin manifest (plugins/NAME.yaml of
// kubernetes-sigs/krew-index, krew.googlecontainertools.github.com/v1alpha2).
type krewPlugin struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   krewMetadata `json:"metadata"`
	Spec       krewSpec     `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// homepage is the project's home, the krew manifest's homepage.
const homepage = "https://github.com/coredns-hairpin/hairpin"

// writeKrewManifest writes out/hairpin.yaml, the krew manifest of the
// plugin archives, each fetched from baseURL/ARCHIVE and checked against
// its sha256.
func writeKrewManifest(out, baseURL string, v version, archives []pluginArchive) (string, error) {
	m := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "hairpin"},
		Spec: krewSpec{
			Version:          v.Tag(),
			Homepage:         homepage,
			ShortDescription: "Check the coredns-hairpin fix for hairpin NAT",
			Description: "kubectl hairpin check reads the cluster (read-only) and says whether in-cluster\n" +
				"clients reach ingress controllers behind a PROXY-protocol load balancer:\n" +
				"which controllers require the PROXY protocol, whether their load balancers\n" +
				"need a hairpin fix, and whether CoreDNS, the targets and hairpin-proxy are in\n" +
				"place, with a hint naming the chart value or command for each failure.\n",
		},
	}
	for _, a := range archives {
		m.Spec.Platforms = append(m.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": a.OS, "arch": a.Arch}},
			URI:      baseURL + "/" + filepath.Base(a.Path),
			SHA256:   a.SHA256,
			Bin:      pluginName,
		})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("krew: %w", err)
	}
	path := filepath.Join(out, "hairpin.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("krew: %w", err)
	}
	return path, nil
}
