#!/usr/bin/env bash
# A Debian 12 (bookworm) base system, made once with `debootstrap --variant=minbase` into
# the cache (outside the checkout): what "a stock Debian 12" means for the release's
# library check, and the root of the Docker base image (no registry to pull one from).
# The mirror is the machine's own apt source. Prints the rootfs path on stdout.
set -euo pipefail
log() { echo "debian-rootfs: $*" >&2; }
CACHE_ROOT=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
ROOTFS="$CACHE_ROOT/rootfs/bookworm-minbase"
if [[ -f "$ROOTFS/.complete" ]]; then
  echo "$ROOTFS"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || { log "debootstrap needs root"; exit 1; }
command -v debootstrap >/dev/null || {
  log "installing debootstrap"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
}
mirror=""
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  mirror=$(awk '/^URIs:/{u=$2} /^Suites:/ && / bookworm( |$)/{print u; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [[ -z $mirror && -f /etc/apt/sources.list ]]; then
  mirror=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list)
fi
[[ -n $mirror ]] || { log "no bookworm apt source found on this machine"; exit 1; }
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"
log "debootstrap --variant=minbase bookworm (a few minutes)"
debootstrap --variant=minbase bookworm "$ROOTFS" "$mirror" >"$CACHE_ROOT/rootfs/debootstrap.log" 2>&1 || {
  tail -20 "$CACHE_ROOT/rootfs/debootstrap.log" >&2
  exit 1
}
touch "$ROOTFS/.complete"
echo "$ROOTFS"
