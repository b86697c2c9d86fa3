#!/usr/bin/env bash
# Builds PHP (once, cached) and ferrophp, then serves the demo app on
# http://127.0.0.1:8080 (classic mode at /, worker mode at /worker.php). Ctrl-C stops it.
# Extra arguments go to `ferrophp serve` (e.g. --listen 0.0.0.0:8080).
#
# Each step says what it does and how far it got (scripts/lib/progress.sh); when
# everything is built the first two steps take a second.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh
progress_init demo 3
# The demo needs only PHP's engine: on a machine without PHP built yet it builds the lean
# PHP (build-php.sh: half the compile). Once it has one, the demo keeps using it; a
# machine where the test suite already built the full PHP uses that.
if ! FERROPHP_PHP_FLAVOR=lean scripts/build-php.sh --if-built >/dev/null 2>&1 \
  && scripts/build-php.sh --if-built >/dev/null 2>&1; then
  export FERROPHP_PHP_FLAVOR=default
else
  export FERROPHP_PHP_FLAVOR=lean
fi
progress_step "Debian packages and PHP (built once into ~/.cache/ferrophp)"
# While PHP compiles, cargo builds the crates that do not need PHP, at a lower priority:
# PHP's configure, install and the end of its make leave a core idle. It starts once the
# build under way has installed a C compiler (cargo links with it); php-sys's build script
# then waits for that build (build-php.sh's lock). Its own session, so that a failed
# set-up stops it as a group; its output goes to target/demo-cargo.log.
early_cargo=
if ! scripts/build-php.sh --if-built >/dev/null 2>&1; then
  mkdir -p target
  setsid bash -c 'until command -v cc >/dev/null && scripts/build-php.sh --building; do sleep 2; done
    exec nice -n 10 cargo build --release -p ferrophp' >target/demo-cargo.log 2>&1 &
  early_cargo=$!
  trap '[[ -n $early_cargo ]] && kill -- -"$early_cargo" 2>/dev/null' EXIT
fi
scripts/setup.sh >/dev/null
progress_step "cargo build --release -p ferrophp"
if [[ -n $early_cargo ]]; then
  echo "demo: cargo started while PHP compiled; it goes on here" >&2
fi
# cargo draws its own progress bar on a terminal and prints one line per crate elsewhere
# (waiting for the lock of the one started above first, if it still runs).
cargo build --release -p ferrophp
listen=127.0.0.1:8080
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
  --listen) listen=${args[i + 1]:-$listen} ;;
  --listen=*) listen=${args[i]#--listen=} ;;
  esac
done
progress_step "serving the demo on http://$listen (Ctrl-C stops it)"
exec target/release/ferrophp serve --root test-data/demo/public \
  --worker test-data/demo/public/worker.php "$@"
