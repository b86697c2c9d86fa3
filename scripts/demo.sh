#!/usr/bin/env bash
# Builds ferrophp (and PHP, once) and runs the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh >/dev/null
cargo build --release -p ferrophp
exec target/release/ferrophp php-cli test-data/demo/demo.php "$@"
