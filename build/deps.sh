#!/usr/bin/env bash
# Installs the Debian packages that `make test`, `make demo` and `make bench`
# drive for real, when they are missing. Usage: build/deps.sh [PACKAGE...]
# Without arguments: nginx (the ingress-nginx stand-in), dnsutils (dig), curl.
set -euo pipefail

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(nginx dnsutils curl)

# The command each package provides, to tell whether it is installed.
provides() {
  case "$1" in
    nginx) echo /usr/sbin/nginx ;;
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
# Debian's nginx package starts a system nginx on :80; ours run their own.
if printf '%s\n' "${missing[@]}" | grep -qx nginx; then
  systemctl stop nginx >/dev/null 2>&1 || service nginx stop >/dev/null 2>&1 || pkill -x nginx || true
fi
