#!/usr/bin/env bash
# Builds the ferrophp image from the root Dockerfile, passing this machine's own Debian
# package sources (with deb-src, which scripts/build-php.sh needs) and cargo registry
# settings into the builder stage, so the image builds wherever the host itself can.
#
#   docker/build-image.sh [--prebuilt | --from-source] [TAG] [docker build args...]
#
# By default the image carries the release tree scripts/release.sh makes on this host:
# the shipped PHP build (profile-guided, linked into the binary), trained on real apps
# the builder stage does not have. --prebuilt takes the tarball
# already in dist/ as it is. --from-source compiles PHP (the developer build, -O2) and
# ferrophp inside the builder instead, for hosts that cannot run scripts/release.sh.
# Makes the base image first if needed. The image is labelled with ferrophp's version and
# the PHP inside (org.opencontainers.image.version, dev.ferrophp.php.version).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=../scripts/lib/progress.sh
source scripts/lib/progress.sh
args=()
tarball=
case ${1:-} in
--from-source)
  shift
  # What the builder will build: the same choice of PHP source as on this host (the
  # builder checks its binary against it).
  php_version=$(scripts/build-php.sh --resolve | sed -n 's/^chosen //p')
  php_version=${php_version#*:}
  php_version=${php_version%-*}
  ferrophp_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
  ;;
--prebuilt)
  args+=(--build-arg PREBUILT=1)
  shift
  tarball=$(ls dist/ferrophp-*-php*-linux-x86_64.tar.gz)
  ;;
*)
  progress_init build-image 2
  progress_step "the release tree (scripts/release.sh)"
  tarball=$(scripts/release.sh)
  progress_step "docker build"
  args+=(--build-arg PREBUILT=1)
  ;;
esac
if [[ -n $tarball ]]; then
  [[ $(wc -l <<<"$tarball") == 1 ]] || { echo "build-image: more than one release in dist/: $tarball" >&2; exit 1; }
  # dist/ferrophp-<version>-php<PHP version>-linux-x86_64.tar.gz
  name=$(basename "$tarball" -linux-x86_64.tar.gz)
  ferrophp_version=${name#ferrophp-}
  ferrophp_version=${ferrophp_version%-php*}
  php_version=${name##*-php}
fi
# The image's labels: ferrophp's version and the PHP inside.
args+=(--build-arg "FERROPHP_VERSION=$ferrophp_version" --build-arg "PHP_VERSION=$php_version")
tag=${1:-ferrophp}
shift || true
scripts/docker-base-image.sh >/dev/null
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  sources=$(sed -e 's/^Types:.*/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources)
elif [[ -f /etc/apt/sources.list ]]; then
  sources=$(grep -E '^deb ' /etc/apt/sources.list; grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /')
else
  sources=
fi
# One-line-per-entry sources.list text works in a .sources file only in deb822 form.
if [[ -n $sources && $sources != *"Types:"* ]]; then
  args+=(--build-arg "APT_SOURCES_LIST=$sources")
else
  args+=(--build-arg "APT_SOURCES=$sources")
fi
# Local certificate authorities (update-ca-certificates' extra directory), e.g. a
# TLS-inspecting proxy's, without which cargo cannot reach its registry from the builder.
extra_ca=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)
[[ -n $extra_ca ]] && args+=(--build-arg "EXTRA_CA_CERTS=$extra_ca")
cargo_config=${CARGO_HOME:-$HOME/.cargo}/config.toml
[[ -f $cargo_config ]] && args+=(--build-arg "CARGO_CONFIG=$(cat "$cargo_config")")
for var in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -n ${!var:-} ]] && args+=(--build-arg "$var=${!var}")
done
exec docker build "${args[@]}" -t "$tag" "$@" .
