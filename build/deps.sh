#!/usr/bin/env bash
# Installs the Debian packages that `make test`, `make demo` and `make bench`
# drive for real, when they are missing. Usage: build/deps.sh [PACKAGE...]
# Without arguments: nginx (the ingress-nginx stand-in), dnsutils (dig), curl,
# and what the real-dataplane test cluster runs: haproxy (the load balancer),
# iptables, nftables and conntrack (kube-proxy's, inside the node's network
# namespace only), and for the cilium mode clang-19 (cilium-agent compiles
# its BPF C at start with clang >= 18.1; it also execs iptables) and bpftool
# (the harness lists and, after an agent that died, detaches the BPF
# programs attached to cgroups). Cilium's masquerading is off in the test
# cluster, so ipset is not needed.
set -euo pipefail

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(nginx dnsutils curl haproxy iptables nftables conntrack clang-19 bpftool)

# The command each package provides, to tell whether it is installed.
provides() {
  case "$1" in
    nginx) echo /usr/sbin/nginx ;;
    haproxy) echo /usr/sbin/haproxy ;;
    iptables) echo /usr/sbin/iptables ;;
    nftables) echo /usr/sbin/nft ;;
    conntrack) echo /usr/sbin/conntrack ;;
    bpftool) echo /usr/sbin/bpftool ;;
    dnsutils) echo dig ;;
    *) echo "$1" ;;
  esac
}

missing=()
for p in "${pkgs[@]}"; do
  cmd=$(provides "$p")
  if [ -x "$cmd" ] || command -v "$cmd" >/dev/null 2>&1; then continue; fi
  missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "deps: missing ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "deps: installing ${missing[*]} from Debian's packages"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's nginx and haproxy packages start system services; ours run their
# own, inside the tests' namespaces.
for svc in nginx haproxy; do
  if printf '%s\n' "${missing[@]}" | grep -qx "$svc"; then
    systemctl disable --now "$svc" >/dev/null 2>&1 || service "$svc" stop >/dev/null 2>&1 || true
    pkill -x "$svc" || true
  fi
done
