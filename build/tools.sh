#!/usr/bin/env bash
# build/tools.sh builds the tools that the integration and end-to-end tests
# run, from source through the Go module proxy: the control plane
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), the
# node's kube-proxy and the kubectl that the docs test runs the documented
# commands with (module test/tools), helm (module test/tools/helm),
# actionlint (module test/tools/actionlint), which lints the CI workflows,
# and on request cilium-agent and cilium-cni (module test/tools/cilium), the
# dataplane of the test cluster's cilium mode, with the CNI reference
# plugins that cilium-cni is chained on there (module test/tools/cni).
#
#   build/tools.sh              build what is not cached yet (all of them) and
#                               print the control-plane folder on the last line
#   build/tools.sh demo         build what `make demo` runs (the control plane,
#                               kube-proxy, helm; not kubectl or actionlint) and
#                               print the control-plane folder
#   build/tools.sh helm         build helm only, and print its path
#   build/tools.sh actionlint   build actionlint only, and print its path
#   build/tools.sh cilium       build cilium-agent and cilium-cni only (with
#                               Cilium's BPF sources, CRDs and chart), and
#                               the CNI plugins below; link them into the
#                               control-plane folder as cilium/ and cni/, and
#                               print that folder
#   build/tools.sh cni          build the CNI plugins ptp, host-local and
#                               portmap only, link them into the
#                               control-plane folder as cni/, and print
#                               that folder
#   build/tools.sh --dir        print the absolute control-plane folder; build nothing
#   build/tools.sh --helm       print the absolute path of helm; build nothing
#   build/tools.sh --actionlint print the absolute path of actionlint; build nothing
#
# The control-plane binaries land in .cache/tools/<first 12 hex of
# sha256(test/tools/go.sum)>/, helm in .cache/tools/helm-<first 12 hex of
# sha256(test/tools/helm/go.sum)>/helm, actionlint likewise in
# .cache/tools/actionlint-<...of test/tools/actionlint/go.sum>/actionlint, so
# a change of the pinned versions
# gets a fresh folder and only the first build pays. The control-plane
# folder is what KUBEBUILDER_ASSETS points at (envtest looks for
# kube-apiserver and etcd there); HAIRPIN_HELM names helm.
#
# Cilium lands in .cache/tools/cilium-<...of test/tools/cilium/go.sum>/:
# cilium-agent, cilium-cni, and share/ with what the module zip carries for
# them, copied writable: bpf/, the BPF C sources that the agent compiles at
# start with clang (its --lib-dir), crds/ and chart/ (Cilium's Helm chart).
# The control-plane folder gets a symbolic link to it, cilium, so the
# harness finds it beside kube-proxy with no variable of its own. A plain build/tools.sh leaves
# Cilium alone, so that `make demo` never waits for it; `make test` asks for
# it.
#
# The CNI plugins land in .cache/tools/cni-<...of test/tools/cni/go.sum>/:
# ptp, host-local and portmap from github.com/containernetworking/plugins,
# the network the cilium mode chains cilium-cni on in Kube-OVN's place.
# The control-plane folder gets a link to it, cni. They come with Cilium
# (`build/tools.sh cilium`), whose mode is their only user. A cold build
# takes about 3 minutes on 2 cores with an empty Go build cache (mostly the
# standard library), seconds once the other tools are built.
#
# helm and actionlint have modules of their own so that bumping one neither
# changes the versions kube-apiserver is built with nor invalidates another's
# cache.
#
# A cold build of kube-apiserver takes about 6-10 minutes on 2 cores and
# about 3 GB of memory; kube-controller-manager, kube-scheduler and
# kube-proxy about 7 minutes more (they share its build cache), kubectl
# about 2 minutes more; helm about 3
# minutes; etcd under a minute.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod="$root/test/tools"
sum="$(sha256sum "$mod/go.sum" | cut -c1-12)"
dir="$root/.cache/tools/$sum"
helmmod="$mod/helm"
helmdir="$root/.cache/tools/helm-$(sha256sum "$helmmod/go.sum" | cut -c1-12)"
lintmod="$mod/actionlint"
lintdir="$root/.cache/tools/actionlint-$(sha256sum "$lintmod/go.sum" | cut -c1-12)"
ciliummod="$mod/cilium"
ciliumdir="$root/.cache/tools/cilium-$(sha256sum "$ciliummod/go.sum" | cut -c1-12)"
cnimod="$mod/cni"
cnidir="$root/.cache/tools/cni-$(sha256sum "$cnimod/go.sum" | cut -c1-12)"

only=""
case "${1:-}" in
--dir)
	echo "$dir"
	exit 0
	;;
--helm)
	echo "$helmdir/helm"
	exit 0
	;;
--actionlint)
	echo "$lintdir/actionlint"
	exit 0
	;;
helm | actionlint | cilium | cni | demo) only="$1" ;;
"") ;;
*)
	echo "usage: $0 [helm|actionlint|cilium|cni|demo|--dir|--helm|--actionlint]" >&2
	exit 2
	;;
esac
if [[ $# -gt 1 ]]; then
	echo "usage: $0 [helm|actionlint|cilium|cni|demo|--dir|--helm|--actionlint]" >&2
	exit 2
fi

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export CGO_ENABLED=0

tmp=""
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# build NAME PACKAGE LDFLAGS [MODULE DIR]: go build PACKAGE of MODULE
# (default test/tools) into a temporary name in DIR (default the
# control-plane folder), then rename, so that an interrupted build is never
# taken as cached.
build() {
	local name="$1" pkg="$2" ldflags="$3" m="${4:-$mod}" d="${5:-$dir}"
	if [[ -x "$d/$name" ]]; then
		echo "tools: $name already built" >&2
		return 0
	fi
	mkdir -p "$d"
	rm -f "$d"/.*.tmp.* # left over by a build that was killed hard
	tmp="$d/.$name.tmp.$$"
	local start=$SECONDS
	echo "tools: building $name ($pkg) into $d ..." >&2
	nice -n 10 go build -C "$m" -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"
	mv -f "$tmp" "$d/$name"
	tmp=""
	echo "tools: built $name in $((SECONDS - start))s" >&2
}

# build_helm: helm, stamped the way helm's own Makefile stamps a release:
# its version, and the Kubernetes version it assumes for
# .Capabilities.KubeVersion (client-go's v0.MINOR is Kubernetes 1.MINOR).
build_helm() {
	if [[ -x "$helmdir/helm" ]]; then
		echo "tools: helm is cached in $helmdir" >&2
		return 0
	fi
	local hver kminor hldflags
	hver="$(go -C "$helmmod" list -m -f '{{.Version}}' helm.sh/helm/v3)"
	kminor="$(go -C "$helmmod" list -m -f '{{.Version}}' k8s.io/client-go)"
	kminor="${kminor#v0.}"; kminor="${kminor%%.*}"
	hldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$hver -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		hldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
	done
	echo "tools: helm $hver is built from source; a cold build takes about 3 minutes on 2 cores" >&2
	build helm helm.sh/helm/v3/cmd/helm "$hldflags" "$helmmod" "$helmdir"
}

# build_actionlint: actionlint, stamped with its module version the way its
# release builds are (-X .../actionlint.version).
build_actionlint() {
	local aver
	aver="$(go -C "$lintmod" list -m -f '{{.Version}}' github.com/rhysd/actionlint)"
	build actionlint github.com/rhysd/actionlint/cmd/actionlint "-s -w -X github.com/rhysd/actionlint.version=$aver" "$lintmod" "$lintdir"
}

# build_cilium: cilium-agent (./daemon) and cilium-cni
# (./plugins/cilium-cni), stamped as Cilium's Makefile.defs stamps them:
# pkg/version.ciliumVersion is "VERSION GIT_VERSION", the short commit and
# its time, here the tag's commit and time from the module proxy, and the
# Envoy version the agent expects, from images/cilium/Dockerfile; tags
# osusergo. Then share/, and the link in the control-plane folder.
build_cilium() {
	local info cver chash ctime envoy cldflags cdir
	if [[ ! -x "$ciliumdir/cilium-agent" || ! -x "$ciliumdir/cilium-cni" || ! -d "$ciliumdir/share" ]]; then
		info="$(go -C "$ciliummod" mod download -json github.com/cilium/cilium | sed -n 's/^[[:space:]]*"Info": "\(.*\)",$/\1/p')"
		cver="$(go -C "$ciliummod" list -m -f '{{.Version}}' github.com/cilium/cilium)"
		cdir="$(go -C "$ciliummod" list -m -f '{{.Dir}}' github.com/cilium/cilium)"
		chash="$(sed -n 's/.*"Hash":"\([0-9a-f]*\)".*/\1/p' "$info" | head -n1)"
		ctime="$(go -C "$ciliummod" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z07:00"}}' github.com/cilium/cilium)"
		envoy="$(sed -nE 's/^ARG CILIUM_ENVOY_IMAGE=([^ ]*)/\1/p' "$cdir/images/cilium/Dockerfile" | head -n1 | sed -E 's/[^/]*\/[^:]*:(.*-)?([^:@]*).*/\2/')"
		cldflags="-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=${cver#v} ${chash:0:10} $ctime'"
		[[ -z "$envoy" ]] || cldflags+=" -X github.com/cilium/cilium/pkg/envoy.requiredEnvoyVersionSHA=$envoy"
		echo "tools: cilium $cver is built from source; a cold build takes about 8-15 minutes on 2 cores" >&2
		GOFLAGS="$GOFLAGS -tags=osusergo" build cilium-agent github.com/cilium/cilium/daemon "$cldflags" "$ciliummod" "$ciliumdir"
		GOFLAGS="$GOFLAGS -tags=osusergo" build cilium-cni github.com/cilium/cilium/plugins/cilium-cni "$cldflags" "$ciliummod" "$ciliumdir"
		# What the harness takes from the module besides the binaries: the
		# BPF C sources, the CRDs (as the operator would register them) and
		# the Helm chart (the cilium-config ConfigMap and cilium DaemonSet
		# that an install leaves). Copied writable: the module cache is not.
		rm -rf "$ciliumdir/.share.tmp"
		mkdir -p "$ciliumdir/.share.tmp/crds"
		cp -R "$cdir/bpf" "$ciliumdir/.share.tmp/bpf"
		cp -R "$cdir/install/kubernetes/cilium" "$ciliumdir/.share.tmp/chart"
		cp "$cdir"/pkg/k8s/apis/cilium.io/client/crds/v2*/*.yaml "$ciliumdir/.share.tmp/crds/"
		chmod -R u+w "$ciliumdir/.share.tmp"
		rm -rf "$ciliumdir/share"
		mv "$ciliumdir/.share.tmp" "$ciliumdir/share"
	else
		echo "tools: cilium-agent and cilium-cni are cached in $ciliumdir" >&2
	fi
	mkdir -p "$dir"
	ln -sfn "../$(basename "$ciliumdir")" "$dir/cilium"
}

# build_cni: the CNI reference plugins ptp, host-local and portmap, stamped
# as their release builds are (-X .../buildversion.BuildVersion, in
# containernetworking/plugins .github/workflows/release.yaml), then the
# link in the control-plane folder.
build_cni() {
	local pver p
	pver="$(go -C "$cnimod" list -m -f '{{.Version}}' github.com/containernetworking/plugins)"
	for p in main/ptp ipam/host-local meta/portmap; do
		build "$(basename "$p")" "github.com/containernetworking/plugins/plugins/$p" "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$pver" "$cnimod" "$cnidir"
	done
	mkdir -p "$dir"
	ln -sfn "../$(basename "$cnidir")" "$dir/cni"
}

if [[ "$only" == cilium ]]; then
	build_cilium
	build_cni
	echo "$dir"
	exit 0
fi
if [[ "$only" == cni ]]; then
	build_cni
	echo "$dir"
	exit 0
fi
if [[ "$only" == helm ]]; then
	build_helm
	echo "$helmdir/helm"
	exit 0
fi
if [[ "$only" == actionlint ]]; then
	build_actionlint
	echo "$lintdir/actionlint"
	exit 0
fi
# The Kubernetes components built from k8s.io/kubernetes, in build order;
# `make demo` runs all but kubectl.
kube=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)
[[ "$only" == demo ]] && kube=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
cached=1
for b in etcd "${kube[@]}"; do [[ -x "$dir/$b" ]] || cached=""; done
if [[ -n "$cached" && -x "$helmdir/helm" && ( "$only" == demo || -x "$lintdir/actionlint" ) ]]; then
	echo "tools: the control plane, kube-proxy and kubectl are cached in $dir, helm in $helmdir, actionlint in $lintdir" >&2
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

if [[ ! -x "$dir/kube-apiserver" ]]; then
	echo "tools: kube-apiserver $kver is built from source; a cold build takes about 10 minutes on 2 cores" >&2
fi
# build_kube NAME...: the Kubernetes components NAME... that are not built
# yet, in one go build: it links them side by side (a link is mostly one
# core's work, and kube-apiserver's takes about a minute) and compiles what
# they share once. Each lands in the folder by rename, as build() does.
build_kube() {
	local missing=() pkgs=() b start out
	for b in "$@"; do
		if [[ -x "$dir/$b" ]]; then
			echo "tools: $b already built" >&2
		else
			missing+=("$b")
			pkgs+=("k8s.io/kubernetes/cmd/$b")
		fi
	done
	[[ ${#missing[@]} -gt 0 ]] || return 0
	rm -rf "$dir"/.kube.tmp.*
	out="$dir/.kube.tmp.$$"
	tmp="$out"
	mkdir -p "$out"
	start=$SECONDS
	echo "tools: building ${missing[*]} (k8s.io/kubernetes $kver) into $dir ..." >&2
	nice -n 10 go build -C "$mod" -trimpath -ldflags "$kldflags" -o "$out/" "${pkgs[@]}"
	for b in "${missing[@]}"; do
		mv -f "$out/$b" "$dir/$b"
	done
	rm -rf "$out"
	tmp=""
	echo "tools: built ${missing[*]} in $((SECONDS - start))s" >&2
}

total=$SECONDS
build etcd go.etcd.io/etcd/server/v3 "-s -w"
build_kube "${kube[@]}"
build_helm
[[ "$only" == demo ]] || build_actionlint
echo "tools: done in $((SECONDS - total))s" >&2
echo "$dir"
