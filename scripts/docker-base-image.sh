#!/usr/bin/env bash
# The Dockerfile's FROM image, made here because no registry can be pulled from: the
# debootstrap minbase of scripts/debian-rootfs.sh, imported as
# ferrophp/debian:bookworm-minbase. Idempotent: does nothing when the image exists.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
IMAGE=${FERROPHP_BASE_IMAGE:-ferrophp/debian:bookworm-minbase}
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE"
  exit 0
fi
ROOTFS=$(scripts/debian-rootfs.sh)
echo "docker-base-image: importing $ROOTFS as $IMAGE" >&2
tar -C "$ROOTFS" --exclude=./.complete --exclude='./opt/ferrophp-*' -c . |
  docker import --change 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
echo "$IMAGE"
