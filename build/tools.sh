#!/usr/bin/env bash
# build/tools.sh builds the control-plane binaries that the integration and
# end-to-end tests run, kube-apiserver and etcd, from source through the Go
# module proxy, using the separate module in test/tools.
#
#   build/tools.sh          build (skipped when both binaries are cached) and
#                           print the folder on the last line
#   build/tools.sh --dir    print the absolute cache folder only; build nothing
#
# The binaries land in .cache/tools/<first 12 hex of sha256(test/tools/go.sum)>/,
# so a change of the pinned versions gets a fresh folder and only the first
# build pays. That folder is what KUBEBUILDER_ASSETS points at (envtest looks
# for kube-apiserver and etcd there).
#
# A cold build of kube-apiserver takes about 10 minutes on 2 cores and about
# 3 GB of memory; etcd takes under a minute.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod="$root/test/tools"
sum="$(sha256sum "$mod/go.sum" | cut -c1-12)"
dir="$root/.cache/tools/$sum"

if [[ "${1:-}" == "--dir" ]]; then
	echo "$dir"
	exit 0
fi
if [[ $# -gt 0 ]]; then
	echo "usage: $0 [--dir]" >&2
	exit 2
fi

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export CGO_ENABLED=0

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
	echo "tools: kube-apiserver and etcd are cached in $dir" >&2
	echo "$dir"
	exit 0
fi

mkdir -p "$dir"

# The version stamp, derived from test/tools/go.mod: the same -X variables
# that Kubernetes' hack/lib/version.sh sets, or kubectl cannot parse the
# server version. The build date is the release's publication time from the
# module proxy, so the build stays reproducible. The module proxy does not
# carry the git commit; set KUBE_GIT_COMMIT to stamp a real one.
kver="$(go -C "$mod" list -m -f '{{.Version}}' k8s.io/kubernetes)"
kbuild_date="$(go -C "$mod" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
kmajor="${kver#v}"; kmajor="${kmajor%%.*}"
kminor="${kver#v*.}"; kminor="${kminor%%.*}"
kcommit="${KUBE_GIT_COMMIT:-0000000000000000000000000000000000000000}"
kldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kldflags+=" -X $pkg.gitVersion=$kver"
	kldflags+=" -X $pkg.gitMajor=$kmajor"
	kldflags+=" -X $pkg.gitMinor=$kminor"
	kldflags+=" -X $pkg.gitCommit=$kcommit"
	kldflags+=" -X $pkg.gitTreeState=clean"
	kldflags+=" -X $pkg.buildDate=$kbuild_date"
done

# build NAME PACKAGE LDFLAGS: go build into a temporary name in the cache
# folder, then rename, so that an interrupted build is never taken as cached.
tmp=""
trap 'rm -f "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -f "$dir"/.*.tmp.* # left over by a build that was killed hard
build() {
	local name="$1" pkg="$2" ldflags="$3"
	if [[ -x "$dir/$name" ]]; then
		echo "tools: $name already built" >&2
		return 0
	fi
	tmp="$dir/.$name.tmp.$$"
	local start=$SECONDS
	echo "tools: building $name ($pkg) into $dir ..." >&2
	nice -n 10 go build -C "$mod" -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"
	mv -f "$tmp" "$dir/$name"
	tmp=""
	echo "tools: built $name in $((SECONDS - start))s" >&2
}

if [[ ! -x "$dir/kube-apiserver" ]]; then
	echo "tools: kube-apiserver $kver is built from source; a cold build takes about 10 minutes on 2 cores" >&2
fi
total=$SECONDS
build etcd go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kldflags"
echo "tools: done in $((SECONDS - total))s" >&2
echo "$dir"
