// Package release tests the release (docs/architecture.md, "Releases"): `make release`
// into an in-process OCI registry (go-containerregistry's pkg/registry on
// loopback, plain HTTP), then both image indexes pulled back with every
// platform's binary checked against its architecture, the pushed chart
// installed with the real helm from oci:// onto a real control plane, and
// every image the installed release and the release's plain manifests name
// resolved in that registry by tag and by digest. It also lints the CI
// workflows in .github/workflows with actionlint.
package release
