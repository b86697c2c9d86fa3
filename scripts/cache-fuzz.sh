#!/usr/bin/env bash
# Long form of the cache's randomised freeze -> fetch -> compare check (issue 11):
# runs test-data/cache/roundtrip.php under valgrind (PHP's allocator off, so every
# allocation is checked) with one seed after another until MINUTES have passed, then
# prints the totals. Any valgrind error or mismatch stops it with the seed to replay.
#
#   scripts/cache-fuzz.sh [MINUTES=10] [FIRST_SEED=1000]
#   VALGRIND=0 scripts/cache-fuzz.sh 10     # native speed, many more values
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
minutes=${1:-10}
seed=${2:-1000}
scripts/setup.sh >/dev/null
cargo build --quiet --bin ferrophp
bin=target/debug/ferrophp
runner=(valgrind --error-exitcode=99 --quiet --suppressions=test-data/valgrind/php.supp)
[[ ${VALGRIND:-1} == 0 ]] && runner=()
end=$((SECONDS + minutes * 60))
values=0 strings=0 bytes=0 runs=0
while ((SECONDS < end)); do
  left=$((end - SECONDS))
  per=$((left < 60 ? left : 60))
  ((per > 0)) || break
  out=$(USE_ZEND_ALLOC=0 "${runner[@]}" "$bin" php-cli -d memory_limit=1G -d opcache.enable_cli=0 -d apc.enable_cli=1 \
    test-data/cache/roundtrip.php "$seed" "$per" 2>&1) || {
    echo "$out" | tail -40
    echo "cache-fuzz: FAILED at seed $seed (replay: $bin php-cli -d apc.enable_cli=1 test-data/cache/roundtrip.php $seed $per)"
    exit 1
  }
  line=$(grep '^roundtrip:' <<<"$out")
  read -r v s b < <(sed -E 's/.*checked ([0-9]+) values \(([0-9]+) strings, ([0-9]+) string bytes.*/\1 \2 \3/' <<<"$line")
  values=$((values + v)) strings=$((strings + s)) bytes=$((bytes + b)) runs=$((runs + 1))
  echo "$line"
  seed=$((seed + 1))
done
echo "cache-fuzz: $runs runs, $values values, $strings strings, $bytes string bytes checked in ${minutes} min${runner:+ under valgrind}: clean"
