#!/usr/bin/env bash
# build/manifests.sh renders the plain manifests for kubectl and kustomize
# users from the Helm chart, the one source of what we install:
#
#   build/manifests.sh [OUTDIR]
#
# For every manifests/rendered/NAME/values.yaml it writes
# OUTDIR/NAME/hairpin.yaml (OUTDIR defaults to manifests/rendered), with
# manifests/rendered/cluster/values.yaml, the base, applied first; and it
# first copies the alert rules docs/alerts/hairpin.rules.yaml, when present,
# into the chart (files/hairpin.rules.yaml, which the PrometheusRule
# template reads; helm cannot read files outside the chart). `make
# manifests` runs it; test/manifests renders into a temporary OUTDIR and
# fails when the committed files differ. HELM names the helm binary
# (default: the one build/tools.sh builds). CHART renders another copy of
# the chart and RENDERED_BY names what rendered it in the header: `make
# release` (build/release) renders the released chart, whose images are
# pinned by digest.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="${CHART:-$root/manifests/coredns-hairpin}"
rendered_by="${RENDERED_BY:-the chart manifests/coredns-hairpin by \`make manifests\`}"
out="${1:-$root/manifests/rendered}"
helm="${HELM:-$("$root/build/tools.sh" --helm)}"
if [[ ! -x "$helm" ]]; then
	echo "manifests: no helm at $helm; run build/tools.sh helm" >&2
	exit 1
fi

if [[ -f "$root/docs/alerts/hairpin.rules.yaml" && -z "${1:-}" ]]; then
	cp "$root/docs/alerts/hairpin.rules.yaml" "$chart/files/hairpin.rules.yaml"
fi

base="$root/manifests/rendered/cluster/values.yaml"
for values in "$root"/manifests/rendered/*/values.yaml; do
	name="$(basename "$(dirname "$values")")"
	mkdir -p "$out/$name"
	{
		echo "# Rendered from $rendered_by with"
		echo "# manifests/rendered/$name/values.yaml. Do not edit: change the chart or the values."
		echo "# The zones of the default target are a placeholder (example.com): set yours."
		"$helm" template hairpin "$chart" --namespace hairpin-system \
			--values "$base" --values "$values"
	} >"$out/$name/hairpin.yaml.tmp"
	mv "$out/$name/hairpin.yaml.tmp" "$out/$name/hairpin.yaml"
	echo "manifests: $out/$name/hairpin.yaml" >&2
done
