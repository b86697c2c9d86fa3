#!/usr/bin/env bash
# Builds a ZTS + embed PHP 8.2 from Debian bookworm's php8.2 source package (the newest
# version the machine's apt sources offer, bookworm-security included) and installs it into
# a cache directory outside the checkout, keyed by PHP's version and configure flags: a
# new php8.2 release in the archive builds a new prefix by itself.
#
# Prints nothing but the install prefix on stdout (progress goes to stderr), so callers
# can do: PHP_PREFIX=$(scripts/build-php.sh).
# A second run with the build present returns at once.
#
# Env:
#   FERROPHP_CACHE   cache root (default: $XDG_CACHE_HOME/ferrophp or ~/.cache/ferrophp)
#   PHP_CONFIG       if set, use that build instead: this script only prints its prefix.
#   FERROPHP_PHP_VERSION
#                    a Debian version of php8.2 (8.2.32-1~deb12u1) to build instead of the
#                    newest: a pin, on purpose. Unset: the newest version `apt-cache showsrc
#                    php8.2` lists whose source downloads; when a newer one is listed but its
#                    source is refused, a WARNING names both (every run; the refusal is
#                    tried again after an hour).
# `build-php.sh --profile-dir` prints where a pgo-gen build's binaries write their counts.
# `build-php.sh --resolve` prints which php8.2 source versions the apt sources list and
# which of them download (it tries each, newest first, until one does), one per line:
# `refused VERSION REASON`, `downloadable VERSION`, then `chosen VERSION` (what a build
# takes now, the pin included).
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

# SHA-256 of orig tarballs checked by hand, on top of the hash in the apt sources' signed
# index that every download is checked against.
declare -A KNOWN_ORIG_SHA256=(
  [8.2.32]=e02aa173c236c12791696254d607da680e6d5516f8f5c2339642de7c4f944bd2
)
# How long a refused download is believed before it is tried again, in minutes.
REFUSAL_MINUTES=60

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
WORK="$CACHE_ROOT/src"
# The cache key of a PHP version with the flags above (the flavors below extend it).
key_of() { printf '%s\n' "$1" "$PATCH_ID" "$PHP_CFLAGS" "${CONFIGURE_FLAGS[@]}" | sha256sum | cut -c1-12; }

# --- Which php8.2 source ----------------------------------------------------------------
# Upstream PHP's version of a Debian version: 8.2.32-1~deb12u1 -> 8.2.32. Only the orig
# tarball is built (none of Debian's patches), so a Debian revision of the same upstream
# release is the same build.
upstream_of() { local v=${1#*:}; echo "${v%-*}"; }
# Every php8.2 source version the apt sources list, newest first (Debian's ordering).
listed_versions() {
  local sorted=() v i
  while read -r v; do
    i=${#sorted[@]}
    while ((i > 0)) && dpkg --compare-versions "$v" gt "${sorted[i - 1]}"; do
      sorted[i]=${sorted[i - 1]}
      i=$((i - 1))
    done
    sorted[i]=$v
  done < <(apt-cache showsrc php8.2 2>/dev/null | sed -n 's/^Version: //p' | sort -u)
  ((${#sorted[@]} == 0)) || printf '%s\n' "${sorted[@]}"
}
# Adds deb-src entries derived from the machine's own apt sources (no mirror address in
# the repo), as root, and reads the lists again.
add_deb_src() {
  [[ $(id -u) -eq 0 ]] || return 1
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
      >/etc/apt/sources.list.d/ferrophp-src.sources
  elif [[ -f /etc/apt/sources.list ]]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
      >/etc/apt/sources.list.d/ferrophp-src.list
  else
    return 1
  fi
  log "added deb-src entries, updating apt lists"
  apt-get update -qq >&2
}
# `URI NAME SIZE SHA256:HASH` of one file of a source version, from the apt sources'
# signed index; empty when they do not list it.
source_file() { # debian-version name-suffix-regex
  apt-get source --print-uris --download-only "php8.2=$1" 2>/dev/null \
    | sed -n "s/^'\([^']*\)' \([^ ]*$2\) \([0-9]*\) \(SHA256:[0-9a-f]*\)\$/\1 \2 \3 \4/p" | head -1 || true
}
# The orig tarball's SHA-256 as the signed index gives it (empty when not listed).
index_sha256() { source_file "$1" '\.orig\.tar\.xz' | sed -n 's/.* SHA256://p'; }
# Whether a source version downloads: its .dsc (a few kB, checked against the index's
# hash) is fetched with apt's own settings (proxy included). Prints why not, if not.
probe_download() { # debian-version
  local line uri hash dir out why
  line=$(source_file "$1" '\.dsc')
  [[ -n $line ]] || { echo "not in the apt sources' index"; return 1; }
  read -r uri _ _ hash <<<"$line"
  dir=$(mktemp -d)
  if out=$(/usr/lib/apt/apt-helper -o Acquire::Retries=0 -o Acquire::http::Timeout=20 \
    download-file "$uri" "$dir/probe.dsc" "$hash" 2>&1); then
    rm -rf "$dir"
    return 0
  fi
  rm -rf "$dir"
  why=$(sed -n 's/^E: Failed to fetch [^ ]* *//p' <<<"$out" | sed 's/ *\[IP:[^]]*\]//' | tr -s ' ' | head -1)
  [[ -n $why ]] || why=$(grep '^E: ' <<<"$out" | head -1 || true)
  echo "${why:-download failed}"
  return 1
}
refusal_mark() { echo "$WORK/refused-php8.2_$1"; }
# The reason a version's source was refused, if that was less than REFUSAL_MINUTES ago.
recently_refused() {
  local mark
  mark=$(refusal_mark "$1")
  [[ -f $mark && -n $(find "$mark" -mmin "-$REFUSAL_MINUTES" 2>/dev/null) ]] && cat "$mark"
}
# Whether the default build of an upstream version is complete. Every flavor takes the
# version the default build has, so a release's PHP is the developer build's.
is_built() { [[ -f "$CACHE_ROOT/php-$1-zts-$(key_of "$1")/.complete" ]]; }

# Sets DEB_VERSION (the Debian version whose source is built) and PHP_VERSION (upstream):
# the pin, or the newest listed version whose default build exists or whose source
# downloads, with a WARNING naming each newer one that is refused. With `fresh`
# (`--resolve`), every download is tried again and each finding printed.
choose_source() {
  local fresh=${1:-} pin=${FERROPHP_PHP_VERSION:-} listed=() v why refused=() newest=
  # A pinned version already built needs nothing from apt.
  if [[ -z $fresh && $pin == *-* ]] && is_built "$(upstream_of "$pin")"; then
    DEB_VERSION=$pin
    PHP_VERSION=$(upstream_of "$pin")
    return 0
  fi
  mapfile -t listed < <(listed_versions)
  if ((${#listed[@]} == 0)) && add_deb_src; then
    mapfile -t listed < <(listed_versions)
  fi
  if ((${#listed[@]} == 0)); then
    # No deb-src entries and no root to add them: a build already made still serves.
    local built
    built=$(find "$CACHE_ROOT" -maxdepth 1 -name 'php-8.2.*-zts-*' -printf '%f\n' 2>/dev/null \
      | sed -n 's/^php-\(8\.2\.[0-9]*\)-zts-.*/\1/p' | sort -u -V -r \
      | while read -r v; do if is_built "$v"; then echo "$v"; fi; done | head -1)
    if [[ -n $built && ( -z $pin || $(upstream_of "$pin") == "$built" ) ]]; then
      log "WARNING: the apt sources list no php8.2 source (no deb-src entries; as root this script adds them): using the PHP $built already built, unable to tell whether a newer one exists"
      DEB_VERSION=$built
      PHP_VERSION=$built
      return 0
    fi
    log "need a deb-src entry for bookworm to download PHP's source; run this script as root once"
    return 1
  fi
  if [[ -z $pin || -n $fresh ]]; then
    for v in "${listed[@]}"; do
      if [[ -z $fresh ]] && is_built "$(upstream_of "$v")"; then
        newest=$v
        break
      fi
      if [[ -z $fresh ]] && why=$(recently_refused "$v"); then
        refused+=("$v ($why)")
        continue
      fi
      if why=$(probe_download "$v"); then
        newest=$v
        rm -f "$(refusal_mark "$v")"
        [[ -z $fresh ]] || echo "downloadable $v"
        break
      fi
      mkdir -p "$WORK"
      echo "$why" >"$(refusal_mark "$v")"
      refused+=("$v ($why)")
      [[ -z $fresh ]] || echo "refused $v $why"
    done
  fi
  if [[ -n $pin ]]; then
    for v in "${listed[@]}"; do
      if [[ $v == "$pin" || ($pin != *-* && $(upstream_of "$v") == "$pin") ]]; then
        DEB_VERSION=$v
        PHP_VERSION=$(upstream_of "$v")
        [[ -z $fresh ]] || echo "pinned $v"
        return 0
      fi
    done
    log "FERROPHP_PHP_VERSION=$pin: the apt sources list no such php8.2 source (they list ${listed[*]})"
    return 1
  fi
  if [[ -z $newest ]]; then
    log "no php8.2 source the apt sources list downloads here: ${refused[*]}"
    return 1
  fi
  DEB_VERSION=$newest
  PHP_VERSION=$(upstream_of "$newest")
  if ((${#refused[@]})); then
    log "WARNING: building PHP $PHP_VERSION (php8.2 $DEB_VERSION), not the newest the apt sources list: the source of php8.2 ${refused[*]} is refused here. FERROPHP_PHP_VERSION=<Debian version> pins a version on purpose."
  fi
}

if [[ ${1:-} == --resolve ]]; then
  choose_source fresh
  echo "chosen $DEB_VERSION"
  exit 0
fi
choose_source
KEY=$(key_of "$PHP_VERSION")

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
  KEY=$(key_of "$PHP_VERSION")-lean
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
log "building PHP $PHP_VERSION (ZTS + embed, php8.2 $DEB_VERSION) once into $PREFIX; later runs reuse it"
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

progress_step "PHP $PHP_VERSION source (Debian's php8.2 $DEB_VERSION source package)"
mkdir -p "$WORK"
TARBALL="$WORK/php8.2_$PHP_VERSION.orig.tar.xz"
# What the tarball must hash to: the apt sources' signed index says (apt checks its
# download against it too), and a release checked by hand must agree with it.
EXPECTED_SHA256=$(index_sha256 "$DEB_VERSION")
KNOWN_SHA256=${KNOWN_ORIG_SHA256[$PHP_VERSION]:-}
if [[ -n $KNOWN_SHA256 && -n $EXPECTED_SHA256 && $KNOWN_SHA256 != "$EXPECTED_SHA256" ]]; then
  log "the apt sources' index gives php8.2_$PHP_VERSION.orig.tar.xz the SHA-256 $EXPECTED_SHA256, not the known $KNOWN_SHA256: refusing to build it"
  exit 1
fi
EXPECTED_SHA256=${EXPECTED_SHA256:-$KNOWN_SHA256}
[[ -n $EXPECTED_SHA256 ]] || { log "no SHA-256 known for php8.2_$PHP_VERSION.orig.tar.xz (the apt sources do not list php8.2 $DEB_VERSION)"; exit 1; }
tarball_verified() { echo "$EXPECTED_SHA256  $TARBALL" | sha256sum -c --quiet - >/dev/null 2>&1; }
if [[ ! -f "$TARBALL" ]] || ! tarball_verified; then
  # apt's own lines (Get:, Fetched, a warning about its sandbox user) go to a log.
  (cd "$WORK" && apt-get source --download-only "php8.2=$DEB_VERSION" >"$WORK/apt-source.log" 2>&1) \
    || { cat "$WORK/apt-source.log" >&2; log "apt-get source php8.2=$DEB_VERSION failed (log: $WORK/apt-source.log)"; exit 1; }
  tarball_verified || { log "checksum mismatch for $TARBALL (expected $EXPECTED_SHA256)"; rm -f "$TARBALL"; exit 1; }
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
# Exactly as written (no fuzz): a patch whose context moved in a new PHP release fails
# here, loudly, instead of landing somewhere else.
for patch_file in "$PATCH_DIR"/*.patch; do
  patch -p1 --quiet --forward --fuzz=0 <"$patch_file" >"$SRC/patch.log" 2>&1 \
    || { cat "$SRC/patch.log" >&2; log "$(basename "$patch_file") does not apply to PHP $PHP_VERSION: update it (scripts/php-patches/)"; exit 1; }
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
