#!/usr/bin/env bash
# Builds a ZTS + embed PHP 8.2.32 from Debian bookworm's source package and installs it
# into a cache directory outside the checkout, keyed by version and configure flags.
#
# Prints nothing but the install prefix on stdout (progress goes to stderr), so callers
# can do: PHP_PREFIX=$(scripts/build-php.sh).
# A second run with the build present returns at once.
#
# Env:
#   FERROPHP_CACHE   cache root (default: $XDG_CACHE_HOME/ferrophp or ~/.cache/ferrophp)
#   PHP_CONFIG       if set, use that build instead: this script only prints its prefix.
# `build-php.sh --profile-dir` prints where a pgo-gen build's binaries write their counts.
#
#   FERROPHP_PHP_FLAVOR
#                    default (unset): the developer build, -O2.
#                    pgo-gen: instrumented for profile-guided optimisation: a ferrophp
#                      linked with it writes profile counts into $CACHE_ROOT/pgo-profile-<key>
#                      (scripts/build-php-pgo.sh trains it on real apps).
#                    pgo: optimised with those counts; pgo-lto: and link-time optimised
#                      across the whole engine. Each is a prefix of its own; the profile's
#                      hash is part of the key of the optimised builds.
#                    lean: only what ferrophp itself and the demo app need (the engine,
#                      OPcache, session, filter, libxml), without debug info: about half
#                      the compile of the default build. scripts/demo.sh makes it on a
#                      machine that has no default build yet, so the demo serves sooner;
#                      the test suite and the release use the default build.
set -euo pipefail

PHP_VERSION=8.2.32
DEB_VERSION=8.2.32-1~deb12u1
ORIG_SHA256=e02aa173c236c12791696254d607da680e6d5516f8f5c2339642de7c4f944bd2

log() { echo "build-php: $*" >&2; }
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/progress.sh
source "$SCRIPT_DIR/lib/progress.sh"

if [[ -n "${PHP_CONFIG:-}" ]]; then
  "$PHP_CONFIG" --prefix
  exit 0
fi

# Changing any of these changes the cache key, so an old build is never reused by mistake.
# Every flavor: ZTS, the embed SAPI, per-thread timers, OPcache.
BASE_FLAGS=(
  --enable-zts --enable-embed=shared --disable-zend-signals --enable-zend-max-execution-timers
  --disable-cgi --disable-phpdbg --enable-opcache
)
CONFIGURE_FLAGS=(
  "${BASE_FLAGS[@]}"
  --enable-ctype --with-curl --enable-dom --enable-fileinfo --enable-filter --with-iconv
  --enable-intl --enable-mbstring --with-openssl --with-pdo-sqlite --with-sqlite3
  --enable-session --enable-simplexml --enable-tokenizer --enable-xml --enable-xmlreader
  --enable-xmlwriter --with-zlib --enable-bcmath --enable-sockets
  --enable-posix --enable-calendar --enable-exif
  # What the official PHP images and FrankenPHP's default build carry, so that apps on
  # MySQL/MariaDB or PostgreSQL, image handling, zip and sodium run unchanged.
  --enable-mysqlnd --with-mysqli=mysqlnd --with-pdo-mysql=mysqlnd --with-pgsql --with-pdo-pgsql
  --enable-gd --with-freetype --with-jpeg --with-webp --with-zip --with-sodium --with-gmp
  --with-bz2 --enable-ftp --with-gettext --with-xsl --enable-soap --enable-shmop
  --enable-sysvmsg --enable-sysvsem --enable-sysvshm --with-libedit
  # Debian's default MySQL/MariaDB socket: apps that connect to "localhost" without
  # naming a socket find the host's MariaDB, as with Debian's own PHP.
  --with-mysql-sock=/var/run/mysqld/mysqld.sock
)
# Our patches to PHP (scripts/php-patches/*.patch, applied in order; each says why at its
# top) are part of the key, by content.
PATCH_DIR="$SCRIPT_DIR/php-patches"
PATCH_ID=$(cat "$PATCH_DIR"/*.patch | sha256sum | cut -c1-16)
# Compiler flags, part of the key too. -fno-semantic-interposition: libphp.so exports the
# engine's API (ZEND_API/PHPAPI), and without this flag GCC must assume another library
# may replace any exported function, so calls between engine functions go through the
# PLT and are never inlined across them; a static PHP binary (and Debian's php-fpm) has
# no such cost. Nothing replaces libphp's functions (ferrophp's shim calls them).
PHP_CFLAGS="-g -O2 -fno-semantic-interposition"

CACHE_ROOT=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
KEY=$(printf '%s\n' "$PHP_VERSION" "$PATCH_ID" "$PHP_CFLAGS" "${CONFIGURE_FLAGS[@]}" | sha256sum | cut -c1-12)

# Profile-guided builds. The instrumented build and the optimised one compile in the same
# directory (SRC below): GCC's check that a profile belongs to a function hashes the
# function's source file name, which is an absolute path here, so counts made in another
# directory fail that check (-Werror=coverage-mismatch: "source locations for function
# have changed"). -fprofile-prefix-path keeps the profile files' names relative to it.
FLAVOR=${FERROPHP_PHP_FLAVOR:-default}
PROFILE_DIR="$CACHE_ROOT/pgo-profile-$KEY"
CONFIGURE_ENV=()
case "$FLAVOR" in
default) ;;
lean)
  # --disable-all turns off every extension PHP enables by default; ferrophp's shim
  # includes session, filter and libxml headers and calls into them. No JIT (off by
  # default in PHP 8.2 anyway): its compiler is the longest file of the build.
  CONFIGURE_FLAGS=(
    "${BASE_FLAGS[@]}" --disable-opcache-jit --disable-all
    --enable-session --enable-filter --with-libxml --enable-ctype --enable-tokenizer --enable-posix
  )
  PHP_CFLAGS="-O2 -fno-semantic-interposition"
  KEY=$(printf '%s\n' "$PHP_VERSION" "$PATCH_ID" "$PHP_CFLAGS" "${CONFIGURE_FLAGS[@]}" | sha256sum | cut -c1-12)-lean
  ;;
pgo-gen)
  # Atomic counters: PHP threads run concurrently; plain ones would lose counts.
  PHP_CFLAGS+=" -fprofile-generate=$PROFILE_DIR -fprofile-update=atomic"
  CONFIGURE_ENV+=(LIBS=-lgcov)
  KEY+=-pgo-gen
  ;;
pgo | pgo-lto)
  # TRAINED: left by build-php-pgo.sh's training; counts without it are the instrumented
  # build's own (configure, make), not a profile.
  if [[ ! -f $PROFILE_DIR/TRAINED ]]; then
    log "no profile in $PROFILE_DIR: scripts/build-php-pgo.sh trains one"
    exit 1
  fi
  profile_hash=$(cd "$PROFILE_DIR" && find . -name '*.gcda' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-8)
  # partial-training: code the training never ran is still optimised for speed (real
  # apps reach code no training set does), not for size.
  PHP_CFLAGS+=" -fprofile-use=$PROFILE_DIR -fprofile-partial-training -Wno-missing-profile"
  KEY+=-$FLAVOR-$profile_hash
  if [[ $FLAVOR == pgo-lto ]]; then
    # Fat objects: the archives stay linkable by linkers without GCC's LTO plugin
    # (rust-lld); the LTO itself happens once, in the engine object below.
    PHP_CFLAGS+=" -flto=auto -ffat-lto-objects"
    CONFIGURE_ENV+=(AR=gcc-ar RANLIB=gcc-ranlib NM=gcc-nm)
  fi
  ;;
*)
  log "FERROPHP_PHP_FLAVOR=$FLAVOR: expected lean, pgo-gen, pgo or pgo-lto (or unset)"
  exit 1
  ;;
esac
PREFIX="$CACHE_ROOT/php-$PHP_VERSION-zts-$KEY"
# `build-php.sh --profile-dir`: where a pgo-gen build's binaries write their counts.
if [[ ${1:-} == --profile-dir ]]; then
  echo "$PROFILE_DIR"
  exit 0
fi

# `build-php.sh --building`: exit 0 when this flavor is built or being built by another
# run (which holds the lock below), 1 when no build is under way.
if [[ ${1:-} == --building ]]; then
  [[ -f "$PREFIX/.complete" ]] && exit 0
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.build-$KEY.lock"
  flock -n 9 && exit 1
  exit 0
fi
if [[ -f "$PREFIX/.complete" ]]; then
  echo "$PREFIX"
  exit 0
fi
# `build-php.sh --if-built`: the prefix when this flavor is built, else exit 1 (no build).
if [[ ${1:-} == --if-built ]]; then
  exit 1
fi

# One build per key at a time: a second clone (or cargo's build script and a person at a
# terminal) waits for the first instead of compiling into the same directory.
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.build-$KEY.lock"
if ! flock -n 9; then
  log "another build of $PREFIX is running; waiting for it"
  flock 9
fi
if [[ -f "$PREFIX/.complete" ]]; then
  echo "$PREFIX"
  exit 0
fi

progress_init build-php 5
log "building PHP $PHP_VERSION (ZTS + embed) once into $PREFIX; later runs reuse it"
progress_step "build dependencies (Debian packages)"

BUILD_DEPS=(build-essential bison re2c pkg-config autoconf libxml2-dev dpkg-dev xz-utils
  ca-certificates patch)
if [[ $FLAVOR != lean ]]; then
  BUILD_DEPS+=(libsqlite3-dev zlib1g-dev libonig-dev libssl-dev libcurl4-openssl-dev libicu-dev
    libpq-dev libpng-dev libjpeg-dev libfreetype-dev libwebp-dev libzip-dev libsodium-dev
    libgmp-dev libbz2-dev libxslt1-dev libedit-dev)
fi
missing=()
for p in "${BUILD_DEPS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing build dependencies; as root run: apt-get install -y ${missing[*]}"
    exit 1
  fi
  log "installing build dependencies: ${missing[*]}"
  apt-get update -qq >&2
  progress_apt_install "$CACHE_ROOT/build-deps-apt.log" "${missing[@]}" || exit 1
else
  log "build dependencies present"
fi

progress_step "PHP $PHP_VERSION source (Debian's php8.2 source package)"
WORK="$CACHE_ROOT/src"
mkdir -p "$WORK"
TARBALL="$WORK/php8.2_$PHP_VERSION.orig.tar.xz"
if [[ ! -f "$TARBALL" ]] || ! echo "$ORIG_SHA256  $TARBALL" | sha256sum -c --quiet - >/dev/null 2>&1; then
  # Derive a deb-src entry from the machine's own apt sources (no mirror address in the repo).
  if ! apt-get source --download-only --print-uris "php8.2=$DEB_VERSION" >/dev/null 2>&1; then
    [[ $(id -u) -eq 0 ]] || { log "need a deb-src entry for bookworm; run as root once"; exit 1; }
    srcfile=/etc/apt/sources.list.d/ferrophp-src.sources
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
      sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$srcfile"
    elif [[ -f /etc/apt/sources.list ]]; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
        >/etc/apt/sources.list.d/ferrophp-src.list
    fi
    log "added deb-src entries, updating apt lists"
    apt-get update -qq >&2
  fi
  # apt's own lines (Get:, Fetched, a warning about its sandbox user) go to a log.
  (cd "$WORK" && apt-get source --download-only "php8.2=$DEB_VERSION" >"$WORK/apt-source.log" 2>&1) \
    || { cat "$WORK/apt-source.log" >&2; log "apt-get source failed (log: $WORK/apt-source.log)"; exit 1; }
  echo "$ORIG_SHA256  $TARBALL" | sha256sum -c --quiet - >&2 || {
    log "checksum mismatch for $TARBALL"; rm -f "$TARBALL"; exit 1; }
fi

SRC="$WORK/php-$PHP_VERSION-$KEY"
if [[ $FLAVOR == pgo* ]]; then
  # One directory for the instrumented and the optimised build (see above), so one such
  # build at a time, whichever flavor.
  SRC="$WORK/php-$PHP_VERSION-$(basename "$PROFILE_DIR")-build"
  exec 8>"$SRC.lock"
  flock 8
fi
rm -rf "$SRC"
mkdir -p "$SRC"
tar -xJf "$TARBALL" -C "$SRC" --strip-components=1
cd "$SRC"
for patch_file in "$PATCH_DIR"/*.patch; do
  patch -p1 --quiet --forward <"$patch_file" >"$SRC/patch.log" 2>&1 \
    || { cat "$SRC/patch.log" >&2; log "patch failed: $patch_file"; exit 1; }
done
# The per-thread dtoa freelist (0002) is only sound without dtoa's private memory pool.
grep -q 'define Omit_Private_Memory' Zend/zend_strtod_int.h \
  || { log "0002-dtoa-freelist-per-thread.patch needs Omit_Private_Memory"; exit 1; }

progress_step "configure"
configure_log="$SRC/configure.log"
count_checks() { grep -c '^checking ' "$1"; }
if [[ $FLAVOR == pgo* ]]; then
  PHP_CFLAGS+=" -fprofile-prefix-path=$SRC"
fi
progress_run "$configure_log" 650 count_checks env CFLAGS="$PHP_CFLAGS" "${CONFIGURE_ENV[@]}" ./configure \
  --prefix="$PREFIX" --with-config-file-path="$PREFIX/etc" \
  --with-config-file-scan-dir="$PREFIX/etc/conf.d" "${CONFIGURE_FLAGS[@]}" || exit 1
if [[ $FLAVOR == pgo-lto ]]; then
  # The VM (Zend/zend_execute.c) and the JIT's VM helpers pin the VM's frame and opline
  # in registers (GCC global register variables, r14/r15): GCC refuses them once LTO has
  # put another file's functions ahead of the declaration ("global register variable
  # follows a function definition"). Those two files stay ordinary objects, profile-guided
  # like the rest; LTO optimises everything else across files and calls into them.
  # (PHP 8.4+ instead reserves the registers everywhere.)
  for unit in Zend/zend_execute ext/opcache/jit/zend_jit_vm_helpers; do
    rule="^$unit\\.lo:.*/${unit##*/}\\.c\$"
    sed -i "\\#$rule#{n;s/ -c / -fno-lto -c /}" Makefile
    grep -A1 "$rule" Makefile | grep -q -- ' -fno-lto -c ' \
      || { log "pgo-lto: no compile rule for $unit.lo to keep out of LTO"; exit 1; }
  done
fi
minutes=10
[[ $FLAVOR == lean ]] && minutes=5
progress_step "compile PHP (make -j$(nproc), about $minutes minutes on 2 cores): C files compiled"
# Each C file is one libtool compile line in make's output; the Makefile has one rule per
# object, which is the total (a few rules are never built, so the count ends near it).
total_objects=$(grep -c '^[^[:space:]]*\.lo: ' Makefile)
count_compiled() { grep -c -- '--mode=compile' "$1"; }
count_none() { echo 0; }
progress_run "$SRC/make.log" "$total_objects" count_compiled make -j"$(nproc)" || exit 1

progress_step "install into $PREFIX, archives for static linking and the CLI"
make install >"$SRC/install.log" 2>&1 || { tail -20 "$SRC/install.log" >&2; log "full log: $SRC/install.log"; exit 1; }
# libphp.a: the same engine as libphp.so, from the objects make built for bin/php
# (position-independent-executable code, not shared-library code): linked into ferrophp
# it needs no PLT between engine functions and reads its thread-local globals at a fixed
# offset. `php-sys` links it when FERROPHP_PHP_LINK=static (the release build).
objects_of() { sed -n "s/^$1 = //p" Makefile | tr ' ' '\n' | sed -n 's/\.lo$/.o/p'; }
# Not the embed SAPI's own object: ferrophp is the SAPI, and PHP's CLI (libphp-cli.a)
# defines the same HARDCODED_INI it does.
mapfile -t engine_objects < <(objects_of PHP_GLOBAL_OBJS; objects_of PHP_SAPI_OBJS | grep -v '^sapi/embed/')
if [[ $FLAVOR == pgo-lto ]]; then
  # The fat objects' ordinary code is the profile-guided build without LTO: kept as
  # libphp-nolto.a, it measures what LTO adds on its own (docs/benchmarks.md).
  ar rcs "$PREFIX/lib/libphp-nolto.a" "${engine_objects[@]}"
  # Link-time optimisation across the whole engine, done here once: a relocatable link
  # through GCC's LTO plugin into one ordinary object (nolto-rel), so the binary's own
  # linker (rust-lld, which cannot read GCC's LTO code) links optimised machine code.
  progress_run "$SRC/lto.log" 1 count_none \
    gcc -r -nostdlib -O2 -flto=auto -fuse-linker-plugin -flinker-output=nolto-rel \
    -o "$SRC/php-engine-lto.o" "${engine_objects[@]}" || exit 1
  engine_objects=("$SRC/php-engine-lto.o")
fi
ar rcs "$PREFIX/lib/libphp.a" "${engine_objects[@]}"
# libphp-cli.a: PHP's own CLI SAPI (sapi/cli), so that `ferrophp php-cli` (and ferrophp
# called as `php`) is PHP's CLI, flag for flag, with its main() renamed for ferrophp to
# call. It links against either libphp.
mapfile -t cli_objects < <(objects_of PHP_CLI_OBJS)
mkdir -p "$SRC/cli-archive"
cp "${cli_objects[@]}" "$SRC/cli-archive/"
if [[ $FLAVOR == pgo-lto ]]; then
  # Fat LTO objects keep a second symbol table in their LTO sections, which objcopy does
  # not rename (nm still lists `main`): the archive keeps only their ordinary code.
  for object in "$SRC"/cli-archive/*.o; do
    objcopy -R '.gnu.lto_*' -R '.gnu.debuglto_*' "$object"
  done
fi
objcopy --redefine-sym main=php_cli_main "$SRC/cli-archive/php_cli.o"
ar rcs "$PREFIX/lib/libphp-cli.a" "$SRC"/cli-archive/*.o
# (grep -c, not -q: an early exit would kill nm with SIGPIPE and fail the pipeline)
[[ $(nm "$PREFIX/lib/libphp-cli.a" | grep -c ' T php_cli_main$') == 1 ]] \
  || { log "libphp-cli.a has no php_cli_main"; exit 1; }
[[ $("$PREFIX/bin/php" -n -r 'echo get_include_path();') == .:/usr/share/php ]] \
  || { log "the built PHP's include_path is not Debian's (0003-include-path-usr-share-php.patch)"; exit 1; }
mkdir -p "$PREFIX/etc/conf.d"
cat >"$PREFIX/etc/conf.d/10-opcache.ini" <<INI
zend_extension=opcache
INI
touch "$PREFIX/.complete"
rm -rf "$SRC"
log "done: $PREFIX"
echo "$PREFIX"
