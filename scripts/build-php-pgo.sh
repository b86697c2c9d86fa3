#!/usr/bin/env bash
# The PHP that ships: profile-guided (and with --lto link-time) optimised, trained on the
# workloads users run. Steps, each skipped when its result is already in the cache:
#
#   1. an instrumented PHP (scripts/build-php.sh, FERROPHP_PHP_FLAVOR=pgo-gen)
#   2. a ferrophp linked statically with it (target/pgo-gen)
#   3. training: the comparison harness's workloads served by that ferrophp (WordPress,
#      MediaWiki and a Symfony app from Debian's packages, hello world, a JSON API, a
#      framework page, sessions, POST bodies; classic and worker mode), plus PHP's own
#      Zend/bench.php through its CLI. Each server writes its counts when it exits.
#   4. the optimised PHP (FERROPHP_PHP_FLAVOR=pgo, or pgo-lto), keyed by the profile
#
# Prints the optimised PHP's prefix on stdout; progress goes to stderr. About an hour on
# 2 cores the first time (two PHP builds and the training), instant afterwards.
# `--retrain` drops the profile and trains again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh

main() {
  local flavor=pgo retrain=0
  for arg in "$@"; do
    case "$arg" in
    --lto) flavor=pgo-lto ;;
    --retrain) retrain=1 ;;
    *) echo "usage: build-php-pgo.sh [--lto] [--retrain]" >&2; exit 2 ;;
    esac
  done
  progress_init build-php-pgo 4
  local profile_dir
  profile_dir=$(scripts/build-php.sh --profile-dir)
  ((retrain == 0)) || rm -rf "$profile_dir"

  progress_step "instrumented PHP (FERROPHP_PHP_FLAVOR=pgo-gen)"
  local gen
  gen=$(FERROPHP_PHP_FLAVOR=pgo-gen scripts/build-php.sh)

  # Building the instrumented PHP writes counts too (configure's test programs, make
  # running the CLI): only the stamp that training leaves says a profile is ours. Those
  # stray counts also broke the optimised build's configure (conftest.c against
  # conftest's counts: -Werror=coverage-mismatch), so training starts from an empty dir.
  if [[ -f $profile_dir/TRAINED ]]; then
    progress_step "ferrophp with the instrumented PHP: not needed, a profile exists ($profile_dir)"
    progress_step "training: done before (--retrain to train again)"
  else
    progress_step "ferrophp linked with the instrumented PHP (target/pgo-gen)"
    local train_bin=target/pgo-gen/release/ferrophp
    PHP_CONFIG="$gen/bin/php-config" FERROPHP_PHP_LINK=static CARGO_TARGET_DIR=target/pgo-gen \
      cargo build --release -p ferrophp >&2
    progress_step "training on real apps and benchmarks (about 15 minutes)"
    # Counts from building PHP itself (make runs the CLI) are not ours to learn from.
    rm -rf "$profile_dir"
    train "$train_bin" "$gen"
    compgen -G "$profile_dir/*.gcda" >/dev/null || {
      echo "build-php-pgo: training wrote no profile into $profile_dir" >&2
      exit 1
    }
    date -u +%FT%TZ >"$profile_dir/TRAINED"
  fi

  FERROPHP_PHP_FLAVOR=$flavor scripts/build-php.sh
}

# Serves every workload of the comparison harness with the instrumented binary (the
# harness also runs its baseline; only ferrophp's processes write counts) and runs PHP's
# own benchmark script through the binary's CLI.
train() {
  local bin=$1 gen=$2 out
  out=$(mktemp -d)
  cargo run --release -q -p ferrophp-benches --bin compare -- \
    --ferrophp-bin pgo-train="$PWD/$bin" --rounds 1 --seconds 8 --out "$out" >&2
  local tarball
  tarball=$(ls "$(dirname "$gen")"/src/php8.2_*.orig.tar.xz | head -1)
  tar -xJf "$tarball" -C "$out" --wildcards '*/Zend/bench.php' --strip-components=2
  "$bin" php-cli -d opcache.enable_cli=1 "$out/bench.php" >/dev/null
  rm -rf "$out"
}

main "$@"
