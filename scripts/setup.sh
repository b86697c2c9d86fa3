#!/usr/bin/env bash
# Everything the two README commands need, idempotent and fast once done:
# Debian packages (as root), the cached ZTS PHP build, and a check for cargo.
# Prints the PHP prefix on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { echo "setup: $*" >&2; }
# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh

# Packages the build and the test suite use (the PHP build's own deps are in build-php.sh).
PACKAGES=(libclang-dev clang pkg-config valgrind curl ca-certificates)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing packages; as root run: apt-get install -y ${missing[*]}"
    exit 1
  fi
  log "installing ${missing[*]} (apt-get, about a minute)"
  apt-get update -qq >&2
  progress_apt_install /tmp/ferrophp-setup-apt.log "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  [[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { log "cargo not found: install a Rust toolchain (rustup) first"; exit 1; }

scripts/build-php.sh
