#!/usr/bin/env bash
# Builds the cache anchors for the UserCache benchmark against ferrophp's own ZTS PHP:
# APCu and igbinary from Debian bookworm's source packages (`apt-get source`), with our
# phpize/php-config. igbinary is built with APCu serializer support so APCu can run with
# apc.serializer=igbinary. Yac is built from Debian's php-yac source package when the
# mirror serves its tarball, else from YAC_SRC (a directory holding Yac's source, e.g. a
# checkout of the upstream repository), else skipped.
#
# Output: ~/.cache/ferrophp/ext-<key>/{apcu.so,igbinary.so,yac.so?} where <key> hashes the
# PHP prefix and the source package versions. Prints that directory on stdout.
set -euo pipefail

PHP_PREFIX="${1:-$("$(dirname "${BASH_SOURCE[0]}")/../../scripts/build-php.sh")}"
PHPIZE="$PHP_PREFIX/bin/phpize"
PHP_CONFIG="$PHP_PREFIX/bin/php-config"
SRC="$HOME/.cache/ferrophp/ext-src"
mkdir -p "$SRC"
cd "$SRC"
fetch() { # package
    ls "$1"_*.dsc >/dev/null 2>&1 || apt-get source --download-only "$1" >&2 || true
}
fetch php-apcu
fetch php-igbinary
fetch php-yac

APCU_TAR=$(ls php-apcu_*.orig.tar.* | head -1)
IGB_TAR=$(ls php-igbinary_*.orig.tar.* | head -1)
YAC_TAR=$(ls php-yac_*.orig.tar.* 2>/dev/null | head -1 || true)
YAC_SRC="${YAC_SRC:-}"
if [[ -n "$YAC_SRC" && ! -f "$YAC_SRC/config.m4" ]]; then
    echo "YAC_SRC=$YAC_SRC holds no config.m4" >&2
    exit 1
fi
YAC_ID="$YAC_TAR"
if [[ -z "$YAC_TAR" && -n "$YAC_SRC" ]]; then
    YAC_ID="$YAC_SRC $(grep -h 'define PHP_YAC_VERSION' "$YAC_SRC/php_yac.h")"
fi
KEY=$(printf '%s\n' "$PHP_PREFIX" "$APCU_TAR" "$IGB_TAR" "$YAC_ID" | sha256sum | cut -c1-12)
OUT="$HOME/.cache/ferrophp/ext-$KEY"
if [[ -f "$OUT/apcu.so" && -f "$OUT/igbinary.so" && ( -z "$YAC_ID" || -f "$OUT/yac.so" || -f "$OUT/yac.so.failed" ) ]]; then
    echo "$OUT"
    exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

build() { # dir extra-configure-args... ; CFLAGS from env
    (cd "$1" && "$PHPIZE" >/dev/null && ./configure --with-php-config="$PHP_CONFIG" "${@:2}" >/dev/null \
        && make -j2 >/dev/null) >&2
}

tar -C "$WORK" -xf "$SRC/$APCU_TAR"
APCU_DIR=$(ls -d "$WORK"/apcu-5* | head -1)
build "$APCU_DIR" --enable-apcu
cp "$APCU_DIR/modules/apcu.so" "$OUT/"

mkdir -p "$WORK/inc/ext/apcu"
cp "$APCU_DIR"/*.h "$WORK/inc/ext/apcu/"
tar -C "$WORK" -xf "$SRC/$IGB_TAR"
IGB_DIR=$(ls -d "$WORK"/igbinary-* | head -1)
CFLAGS="-O2 -DHAVE_APCU_SUPPORT=1 -I$WORK/inc" build "$IGB_DIR" --enable-igbinary
cp "$IGB_DIR/modules/igbinary.so" "$OUT/"

if [[ -n "$YAC_TAR" ]]; then
    tar -C "$WORK" -xf "$SRC/$YAC_TAR"
    YAC_DIR=$(ls -d "$WORK"/yac-* | head -1)
elif [[ -n "$YAC_SRC" ]]; then
    YAC_DIR="$WORK/yac"
    cp -r "$YAC_SRC" "$YAC_DIR"
fi
if [[ -n "${YAC_DIR:-}" ]]; then
    if build "$YAC_DIR" --enable-yac; then
        cp "$YAC_DIR/modules/yac.so" "$OUT/"
    else
        echo "Yac did not build against this PHP; benchmarking without it" >&2
        touch "$OUT/yac.so.failed"
    fi
fi
echo "$OUT"
