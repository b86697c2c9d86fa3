#!/usr/bin/env bash
# Builds PHP (once, cached) and ferrophp, then serves the demo app on
# http://127.0.0.1:8080 (classic mode at /, worker mode at /worker.php). Ctrl-C stops it.
# Extra arguments go to `ferrophp serve` (e.g. --listen 0.0.0.0:8080).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh >/dev/null
cargo build --release -p ferrophp
exec target/release/ferrophp serve --root test-data/demo/public \
  --worker test-data/demo/public/worker.php "$@"
