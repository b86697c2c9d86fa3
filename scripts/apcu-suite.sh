#!/usr/bin/env bash
# Runs APCu's own test suite (tests/*.phpt of APCu 5.1.22, Debian bookworm's php-apcu
# source package) through PHP's run-tests.php, three ways, all on our ZTS PHP build:
#
#   layer        ferrophp php-cli, APCu NOT loaded: our apcu_* compatibility layer
#   real         ferrophp php-cli with the real apcu.so (built here with our phpize)
#   real-cli     our build's own bin/php (the ZTS CLI) with the real apcu.so
#   edge         test-data/apcu/edge.php (API edge cases) under real-cli with
#                apc.serializer=default and under the layer: the outputs must match
#
# Two tests (apc54_018, bug63224) start PHP's development server through the harness
# (`$TEST_PHP_EXECUTABLE ... -S 127.0.0.1:16820`): under ferrophp that is `php-cli -S`.
#
# Everything it downloads or builds goes to ~/.cache/ferrophp/apcu (never into the repo);
# no APCu code is kept in the repository. Idempotent: reruns reuse the source, the build
# and the copies of the tests. As root it installs what it needs (apt); otherwise it
# says what is missing.
#
# Usage: scripts/apcu-suite.sh [layer|real|real-cli|edge|all|source] [TEST.phpt ...]
# Results: ~/.cache/ferrophp/apcu/results-<mode>.txt, one "STATUS test.phpt" per line
# (STATUS: PASS FAIL SKIP BORK XFAIL WARN LEAK), and a summary line per mode on stdout:
#   apcu-suite <mode>: pass=N fail=N skip=N other=N
set -euo pipefail

log() { echo "apcu-suite: $*" >&2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${FERROPHP_CACHE:-$HOME/.cache/ferrophp}
WORK=$CACHE/apcu
APCU_VERSION=5.1.22
mkdir -p "$WORK"

modes=${1:-all}
shift || true
if [[ $modes == all ]]; then modes="layer real real-cli edge"; fi
only=("$@")

# --- what we run on -------------------------------------------------------------------
PREFIX=$("$ROOT/scripts/setup.sh" | tail -1)
[[ -x $PREFIX/bin/php && -x $PREFIX/bin/phpize ]] || {
  log "no PHP build at '$PREFIX' (scripts/setup.sh builds it)"
  exit 1
}
FERROPHP=${FERROPHP_BIN:-$ROOT/target/debug/ferrophp}
[[ -x $FERROPHP ]] || (cd "$ROOT" && cargo build -q -p ferrophp)

need_pkgs=()
for tool in dpkg-source:dpkg-dev autoconf:autoconf make:make gcc:gcc xz:xz-utils; do
  command -v "${tool%%:*}" >/dev/null || need_pkgs+=("${tool#*:}")
done
if ((${#need_pkgs[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing tools; as root run: apt-get install -y ${need_pkgs[*]}"
    exit 1
  fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2
fi

# --- APCu source ----------------------------------------------------------------------
SRC=$WORK/apcu-$APCU_VERSION
if [[ ! -f $SRC/tests/skipif.inc ]]; then
  orig=$(ls "$WORK"/php-apcu_"$APCU_VERSION"*.orig.tar.xz 2>/dev/null | head -1 || true)
  if [[ -z $orig ]]; then
    # Derive a deb-src entry from the machine's own apt sources, as build-php.sh does
    # (no mirror address in the repo).
    if ! apt-get source --download-only --print-uris php-apcu >/dev/null 2>&1; then
      [[ $(id -u) -eq 0 ]] || { log "need a deb-src entry for bookworm; run as root once"; exit 1; }
      if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
          >/etc/apt/sources.list.d/ferrophp-src.sources
      elif [[ -f /etc/apt/sources.list ]]; then
        grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
          >/etc/apt/sources.list.d/ferrophp-src.list
      fi
      apt-get update -qq >&2
    fi
    log "downloading Debian's php-apcu source package"
    (cd "$WORK" && apt-get source --download-only php-apcu >&2)
    orig=$(ls "$WORK"/php-apcu_"$APCU_VERSION"*.orig.tar.xz 2>/dev/null | head -1 || true)
    [[ -n $orig ]] || { log "apt-get source php-apcu gave no $APCU_VERSION tarball (deb-src entries?)"; exit 1; }
  fi
  tar -xf "$orig" -C "$WORK" "apcu-$APCU_VERSION"
fi
# `source`: only make sure the APCu source is here and print its directory (the release
# test builds it with the release tree's own phpize).
if [[ $modes == source ]]; then
  echo "$SRC"
  exit 0
fi

# --- real APCu built against our PHP (keyed by the PHP prefix) --------------------------
BUILD=$WORK/build-$(basename "$PREFIX")
APCU_SO=$BUILD/modules/apcu.so
if [[ ! -f $APCU_SO ]]; then
  log "building apcu.so with $PREFIX/bin/phpize"
  rm -rf "$BUILD"
  cp -r "$SRC" "$BUILD"
  (cd "$BUILD" && "$PREFIX/bin/phpize" >/dev/null &&
    ./configure -q --with-php-config="$PREFIX/bin/php-config" >/dev/null &&
    make -s -j"$(nproc)" >/dev/null 2>&1) || { log "apcu build failed (see $BUILD)"; exit 1; }
fi

# --- run-tests.php from PHP's own source tarball ----------------------------------------
RUN_TESTS=$WORK/run-tests.php
if [[ ! -f $RUN_TESTS ]]; then
  tarball=$CACHE/src/php8.2_$("$PREFIX/bin/php-config" --version).orig.tar.xz
  [[ -f $tarball ]] || tarball=
  [[ -n $tarball ]] || { log "no PHP source tarball in $CACHE/src (scripts/build-php.sh fetches it)"; exit 1; }
  tar -xOf "$tarball" --wildcards '*/run-tests.php' >"$RUN_TESTS.tmp"
  mv "$RUN_TESTS.tmp" "$RUN_TESTS"
fi

# --- one run ----------------------------------------------------------------------------
run_mode() {
  local mode=$1 dir=$WORK/tests-$1 exe=$WORK/php-$1
  rm -rf "$dir"
  cp -r "$SRC/tests" "$dir"
  case $mode in
    layer)
      # APCu's skipif asks for the extension itself; our layer is functions, not a module
      # named apcu. Ask for the functions instead (only in this copy).
      printf '<?php\nif (!function_exists("apcu_fetch")) die("skip apcu_* functions not available");\n' >"$dir/skipif.inc"
      printf '#!/bin/sh\nexec "%s" php-cli "$@"\n' "$FERROPHP" >"$exe"
      ;;
    real)
      printf '#!/bin/sh\nexec "%s" php-cli -d extension="%s" "$@"\n' "$FERROPHP" "$APCU_SO" >"$exe"
      ;;
    real-cli)
      printf '#!/bin/sh\nexec "%s" -d extension="%s" "$@"\n' "$PREFIX/bin/php" "$APCU_SO" >"$exe"
      ;;
    *) log "unknown mode $mode"; exit 2 ;;
  esac
  chmod +x "$exe"
  local targets=()
  if ((${#only[@]})); then
    for t in "${only[@]}"; do targets+=("$dir/$(basename "$t")"); done
  else
    targets=("$dir")
  fi
  local out=$WORK/run-$mode.log
  (cd "$WORK" && NO_INTERACTION=1 TEST_PHP_EXECUTABLE="$exe" TEST_PHP_SRCDIR="$WORK" \
    "$PREFIX/bin/php" -n -d memory_limit=512M "$RUN_TESTS" -q --no-color --show-diff \
    -p "$exe" "${targets[@]}" >"$out" 2>&1) || true
  # "[TEST 3/67 [path]]PASS description [path/test.phpt]" -> "PASS test.phpt"
  tr '\r' '\n' <"$out" | sed -nE 's/(^|\])(PASS|FAIL|SKIP|BORK|XFAIL|WARN|LEAK|XLEAK)[ &].*\[([^]]*\.phpt)\].*$/\2 \3/p' |
    awk '{ n = split($2, p, "/"); print $1, p[n] }' | sort -k2 -u >"$WORK/results-$mode.txt"
  local pass fail skip total
  pass=$(grep -c '^PASS ' "$WORK/results-$mode.txt" || true)
  fail=$(grep -c '^FAIL ' "$WORK/results-$mode.txt" || true)
  skip=$(grep -c '^SKIP ' "$WORK/results-$mode.txt" || true)
  total=$(wc -l <"$WORK/results-$mode.txt")
  echo "apcu-suite $mode: pass=$pass fail=$fail skip=$skip other=$((total - pass - fail - skip)) (log: $out)"
}

# --- edge cases, differentially -------------------------------------------------------
run_edge() {
  local edge=$ROOT/test-data/apcu/edge.php
  "$PREFIX/bin/php" -n -d extension="$APCU_SO" -d apc.enable_cli=1 -d apc.serializer=default \
    "$edge" >"$WORK/edge-real.txt" 2>&1 || true
  "$FERROPHP" php-cli -n -d apc.enable_cli=1 "$edge" >"$WORK/edge-layer.txt" 2>&1 || true
  if diff -u "$WORK/edge-real.txt" "$WORK/edge-layer.txt" >"$WORK/edge.diff"; then
    echo "apcu-suite edge: same output ($(wc -l <"$WORK/edge-real.txt") lines)"
  else
    echo "apcu-suite edge: DIFFERENT (see $WORK/edge.diff)"
  fi
}

for m in $modes; do
  if [[ $m == edge ]]; then run_edge; else run_mode "$m"; fi
done
