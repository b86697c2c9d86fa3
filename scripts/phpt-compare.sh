#!/usr/bin/env bash
# PHP's own phpt suites, run by PHP's own run-tests.php from the built PHP's source, once
# with the PHP build's `bin/php` as the executable under test and once with ferrophp
# (called directly, and through a link named `php`), then compared test by test.
# ferrophp is meant to be that same CLI: any test whose result differs is listed, and the
# script exits 1.
#
#   scripts/phpt-compare.sh [SUITE...]      (default: tests Zend/tests ext/standard/tests)
#
# run-tests.php itself always runs on bin/php; only the executable it tests changes.
# Each executable gets its own fresh copy of the source tree (tests write files next to
# themselves). Takes about an hour on 2 cores for the default suites.
#
# Env:
#   FERROPHP      the binary under test (default: target/release/ferrophp, else debug)
#   PHPT_JOBS     run-tests.php's -j (default: nproc)
#   PHPT_KEEP     keep the work directory (default: removed unless a difference was found)
#   PHPT_VIA      which ways to call ferrophp: "direct link" (default) or one of them
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { echo "phpt-compare: $*" >&2; }

SUITES=("$@")
((${#SUITES[@]})) || SUITES=(tests Zend/tests ext/standard/tests)
JOBS=${PHPT_JOBS:-$(nproc)}
VIA=${PHPT_VIA:-direct link}

if [[ -z "${FERROPHP:-}" ]]; then
  for candidate in target/release/ferrophp target/debug/ferrophp; do
    [[ -x $candidate ]] && { FERROPHP=$PWD/$candidate; break; }
  done
fi
[[ -x "${FERROPHP:-}" ]] || { log "no ferrophp binary: cargo build -p ferrophp, or set FERROPHP"; exit 1; }
FERROPHP=$(realpath "$FERROPHP")

PHP_PREFIX=$(scripts/build-php.sh)
PHP=$PHP_PREFIX/bin/php
CACHE_ROOT=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
PHP_VERSION=$("$PHP_PREFIX/bin/php-config" --version)
TARBALL=$CACHE_ROOT/src/php8.2_$PHP_VERSION.orig.tar.xz
[[ -f $TARBALL ]] || { log "no $TARBALL (scripts/build-php.sh downloads it)"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/phpt-compare.XXXXXX")
mkdir -p "$WORK/bin"
# A copy: a rebuild during the hour the runs take must not change the binary under test.
cp "$FERROPHP" "$WORK/bin/ferrophp"
FERROPHP=$WORK/bin/ferrophp
ln -s ferrophp "$WORK/bin/php"

declare -A EXE=([bin-php]=$PHP)
RUNS=(bin-php)
for via in $VIA; do
  case $via in
    direct) EXE[ferrophp]=$FERROPHP; RUNS+=(ferrophp) ;;
    link) EXE[php-link]=$WORK/bin/php; RUNS+=(php-link) ;;
    *) log "PHPT_VIA: unknown '$via'"; exit 1 ;;
  esac
done

# run-tests.php in RUN's tree with RUN's executable: run_tests RUN NAME ARGS... writes
# $WORK/RUN.NAME.{log,results}, one line per test: its path in the tree, a tab, its result.
run_tests() {
  local run=$1 name=$2
  shift 2
  # NO_INTERACTION: never ask to send a report; --offline: no test reaches the network.
  (cd "$WORK/$run" && NO_INTERACTION=1 "$PHP" run-tests.php -q --offline --no-progress \
    --no-color -j"$JOBS" -p "${EXE[$run]}" -W "$WORK/$run.$name.status" "$@" \
    >"$WORK/$run.$name.log" 2>&1) || true
  sed "s#\t$WORK/$run/#\t#" "$WORK/$run.$name.status" | awk -F'\t' '{print $2 "\t" $1}' \
    | sort >"$WORK/$run.$name.results"
}

log "suites: ${SUITES[*]}; reference $PHP; ferrophp $FERROPHP; work dir $WORK"
for run in "${RUNS[@]}"; do
  mkdir "$WORK/$run"
  tar -xJf "$TARBALL" -C "$WORK/$run" --strip-components=1
  log "$run: running (${EXE[$run]})"
  start=$SECONDS
  run_tests "$run" all "${SUITES[@]}"
  log "$run: $(wc -l <"$WORK/$run.all.results") tests in $((SECONDS - start)) s"
done

summary() {
  cut -f2 "$1" | sort | uniq -c | awk '{printf "%s %s  ", $2, $1}'
}
echo "phpt results (${SUITES[*]}), PHP $PHP_VERSION run-tests.php -j$JOBS --offline:"
for run in "${RUNS[@]}"; do
  printf '  %-9s %s\n' "$run" "$(summary "$WORK/$run.all.results")"
done

# A test whose result differs runs twice more on both sides: one that gives a result
# both executables have given is timing-dependent (reported, not counted); one whose
# results never meet is a difference.
RETRIES=2
differences=0
for run in "${RUNS[@]:1}"; do
  join -t $'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 "$WORK/bin-php.all.results" \
    "$WORK/$run.all.results" | awk -F'\t' '$2 != $3' >"$WORK/$run.first-differences"
  : >"$WORK/$run.differences"
  : >"$WORK/$run.flaky"
  [[ -s $WORK/$run.first-differences ]] || { echo "$run: every test has bin-php's result"; continue; }
  cut -f1 "$WORK/$run.first-differences" >"$WORK/$run.retry-list"
  for i in $(seq "$RETRIES"); do
    for side in bin-php "$run"; do
      run_tests "$side" "retry-$run-$i" -r "$WORK/$run.retry-list"
    done
  done
  while IFS=$'\t' read -r test theirs ours; do
    seen() {
      local side=$1 first=$2 i
      echo "$first"
      for i in $(seq "$RETRIES"); do
        awk -F'\t' -v t="$test" '$1 == t {print $2}' "$WORK/$side.retry-$run-$i.results"
      done
    }
    theirs_all=$(seen bin-php "$theirs" | sort -u | paste -sd/)
    ours_all=$(seen "$run" "$ours" | sort -u | paste -sd/)
    common=$(comm -12 <(tr / '\n' <<<"$theirs_all") <(tr / '\n' <<<"$ours_all"))
    if [[ -n $common ]]; then
      printf '%s\t%s\t%s\n' "$test" "$theirs_all" "$ours_all" >>"$WORK/$run.flaky"
    else
      printf '%s\t%s\t%s\n' "$test" "$theirs_all" "$ours_all" >>"$WORK/$run.differences"
    fi
  done <"$WORK/$run.first-differences"
  n=$(wc -l <"$WORK/$run.differences")
  differences=$((differences + n))
  if [[ -s $WORK/$run.flaky ]]; then
    echo "$run: timing-dependent (results of $((RETRIES + 1)) tries each; test, bin-php, $run):"
    sed 's/^/  /' "$WORK/$run.flaky"
  fi
  if ((n)); then
    echo "$run differs from bin-php in $n tests (results of $((RETRIES + 1)) tries each; test, bin-php, $run):"
    sed 's/^/  /' "$WORK/$run.differences"
  else
    echo "$run: every other test has bin-php's result"
  fi
done

if ((differences)) || [[ -n "${PHPT_KEEP:-}" ]]; then
  echo "logs, .diff/.out files of each test: $WORK"
else
  rm -rf "$WORK"
fi
((differences == 0))
