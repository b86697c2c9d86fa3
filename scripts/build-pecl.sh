#!/usr/bin/env bash
# The PECL extensions the release ships as loadables: APCu, igbinary and redis (with
# igbinary, lzf, lz4 and zstd support, as Debian builds php-redis), compiled from Debian
# bookworm's source packages with a release tree's own bin/phpize and bin/php-config,
# then copied into that tree's extension dir. They are OFF by default: each gets a
# conf.d/ ini whose extension= line is commented out (APCu would replace ferrophp's
# built-in apcu_* layer, see docs/operating.md).
#
# The built .so files are cached outside the checkout (~/.cache/ferrophp/pecl/<key>),
# keyed by the PHP build the tree carries (its php_config.h and API version), the
# extension versions and the configure flags, so a repeat release build only copies.
#
# Usage: scripts/build-pecl.sh TREE      (scripts/release.sh calls it)
#        scripts/build-pecl.sh source NAME   prints the unpacked source dir of NAME
set -euo pipefail
log() { echo "build-pecl: $*" >&2; }

CACHE_ROOT=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
WORK="$CACHE_ROOT/pecl"
mkdir -p "$WORK/src"

# name  Debian source package  Debian version  upstream dir in the orig tarball
PECL=(
  "apcu php-apcu 5.1.22+4.0.11-2 apcu-5.1.22"
  "igbinary php-igbinary 3.2.13-1 igbinary-3.2.13"
  "redis php-redis 5.3.7+4.3.0-3 redis-5.3.7"
)
# Debian's debian/rules for php-redis; the others build with no flags.
REDIS_FLAGS=(--enable-redis-igbinary --enable-redis-lzf --enable-redis-lz4 --with-liblz4
  --enable-redis-zstd --with-libzstd)
BUILD_DEPS=(build-essential autoconf dpkg-dev xz-utils liblz4-dev libzstd-dev)

need_deps() {
  local missing=() p
  for p in "${BUILD_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || { log "missing build dependencies; as root run: apt-get install -y ${missing[*]}"; exit 1; }
  log "installing ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Unpacks (once) the upstream source of one entry of PECL and prints its directory.
source_dir() {
  local name=$1 pkg=$2 debver=$3 dir=$4
  local out="$WORK/src/$dir"
  if [[ ! -f $out/config.m4 ]]; then
    local upver=${debver%-*}
    local orig
    orig=$(ls "$WORK/src/${pkg}_${upver}".orig.tar.* 2>/dev/null | head -1 || true)
    if [[ -z $orig ]]; then
      # deb-src entries come from the machine's own apt sources (no mirror in the repo).
      if ! apt-get source --download-only --print-uris "$pkg=$debver" >/dev/null 2>&1; then
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
      log "downloading Debian's $pkg $debver source package"
      (cd "$WORK/src" && apt-get source --download-only "$pkg=$debver" >&2)
      orig=$(ls "$WORK/src/${pkg}_${upver}".orig.tar.* 2>/dev/null | head -1 || true)
      [[ -n $orig ]] || { log "apt-get source $pkg gave no orig tarball"; exit 1; }
    fi
    tar -xf "$orig" -C "$WORK/src" "$dir"
  fi
  echo "$out"
}

if [[ ${1:-} == source ]]; then
  for entry in "${PECL[@]}"; do
    read -r name pkg debver dir <<<"$entry"
    [[ $name == "${2:-}" ]] && { source_dir "$name" "$pkg" "$debver" "$dir"; exit 0; }
  done
  log "unknown extension '${2:-}'"
  exit 1
fi

TREE=${1:?usage: build-pecl.sh TREE}
TREE=$(cd "$TREE" && pwd)
PHPIZE="$TREE/bin/phpize"
PHP_CONFIG="$TREE/bin/php-config"
[[ -x $PHPIZE && -x $PHP_CONFIG ]] || { log "$TREE has no bin/phpize"; exit 1; }
EXT_DIR=$("$PHP_CONFIG" --extension-dir)

KEY=$({
  cat "$TREE/include/php/main/php_config.h"
  basename "$EXT_DIR"
  printf '%s\n' "${PECL[@]}" "${REDIS_FLAGS[@]}" v1
} | sha256sum | cut -c1-12)
OUT="$WORK/$KEY"

if [[ ! -f $OUT/.complete ]]; then
  need_deps
  rm -rf "$OUT"
  mkdir -p "$OUT/build"
  for entry in "${PECL[@]}"; do
    read -r name pkg debver dir <<<"$entry"
    src=$(source_dir "$name" "$pkg" "$debver" "$dir")
    build="$OUT/build/$name"
    cp -a "$src" "$build"
    flags=()
    if [[ $name == redis ]]; then
      flags=("${REDIS_FLAGS[@]}")
      # redis's configure looks for igbinary's headers in its own ext/ first.
      mkdir -p "$build/ext/igbinary"
      igsrc="$OUT/build/igbinary"
      cp "$igsrc/src/php7/igbinary.h" "$igsrc/src/php7/php_igbinary.h" "$build/ext/igbinary/"
    fi
    log "building $name ${debver%-*} with $PHPIZE"
    (cd "$build" && "$PHPIZE" >"$build/phpize.log" 2>&1 &&
      ./configure --with-php-config="$PHP_CONFIG" "${flags[@]}" >"$build/configure.log" 2>&1 &&
      make -j"$(nproc)" >"$build/make.log" 2>&1) || {
      log "$name failed to build (logs in $build)"
      tail -20 "$build"/*.log >&2
      exit 1
    }
    cp "$build/modules/$name.so" "$OUT/"
  done
  rm -rf "$OUT/build"
  touch "$OUT/.complete"
fi

for entry in "${PECL[@]}"; do
  read -r name _ debver _ <<<"$entry"
  install -m 0755 "$OUT/$name.so" "$EXT_DIR/$name.so"
done
# redis needs igbinary loaded too (PHP orders the start-up by the declared dependency, so
# the order of the lines does not matter).
cat >"$TREE/conf.d/20-apcu.ini" <<'INI'
; APCu 5.1.22 (PECL). OFF: ferrophp's built-in apcu_* layer serves APCu's API from the
; cache shared by all PHP threads. Enabling the real APCu replaces that layer entirely
; (the layer steps aside when it sees the apcu module); see docs/operating.md.
;extension=apcu
;apc.enable_cli=1
INI
cat >"$TREE/conf.d/20-igbinary.ini" <<'INI'
; igbinary 3.2.13 (PECL), a compact binary serializer. OFF by default.
;extension=igbinary
;session.serialize_handler=igbinary
INI
cat >"$TREE/conf.d/30-redis.ini" <<'INI'
; phpredis 5.3.7 (PECL), built with igbinary, lzf, lz4 and zstd support. OFF by default;
; it needs igbinary: enable conf.d/20-igbinary.ini as well.
;extension=redis
INI
log "apcu, igbinary, redis in $EXT_DIR (cache $OUT)"
