#!/usr/bin/env bash
# Builds the standalone release: dist/ferrophp-<version>-php<PHP version>-linux-x86_64.tar.gz
# (ferrophp-0.1.0-php8.2.32-linux-x86_64.tar.gz), a tree that runs from any directory
# (rpath $ORIGIN/lib) on a stock Debian 12 (debootstrap minbase):
#
#   ferrophp                 the binary, with PHP (libphp.a) linked in; its debug info
#                            is dist/<name>.debug, beside the tarball
#   php.ini, conf.d/         php.ini-production with our defaults; OPcache on
#   lib/*.so.*               every shared library the binary and the extensions need
#                            that a Debian 12 base system (Priority: required) lacks
#   lib/php/extensions/...   opcache.so; apcu.so, igbinary.so, redis.so (PECL, built by
#                            scripts/build-pecl.sh, OFF: commented conf.d/*.ini)
#   lib/php/build, include/  what phpize needs
#   bin/php-config, phpize   relocatable: they find the tree from their own path
#   bin/php                  a link to ../ferrophp: called `php`, ferrophp is PHP's CLI
#                            (what php-config --php-binary names; put bin/ on PATH)
#   libexec/ferrophp-package/  what `ferrophp package` puts in front of and beside an app:
#       launcher             the static launcher (glibc linked in, no loader needed)
#       release-id           <version>-<digest of ferrophp>: a package's payload and its
#                            launcher must name the same one
#       lib/                 the libraries the tree takes from the system (the C library
#                            and its loader ld-linux-x86-64.so.2 included) and glibc's
#                            iconv modules (gconv/): a package needs nothing from the machine
#   README.md
#
# The PHP inside is profile-guided: scripts/build-php.sh's build (ZTS, -O2, the patches
# in scripts/php-patches) compiled again with the counts of a training run on WordPress,
# MediaWiki, Symfony and our benchmarks (scripts/build-php-pgo.sh; about an hour the first
# time on 2 cores, cached afterwards), linked statically. docs/benchmarks.md measures it
# against the plain build: 1.11-1.14x nginx + php-fpm on WordPress where the plain build
# is level. FERROPHP_RELEASE_PHP=default packs the plain build (what the test suite and
# the Dockerfile's in-builder path use: minutes, not an hour), =pgo-lto the profile-guided
# build with link-time optimisation too (not faster on WordPress in the same run).
#
# Prints the tarball's path on stdout. Idempotent: rebuilds only the tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
log() { echo "release: $*" >&2; }
# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh
progress_init release 6

progress_step "Debian packages and the developer PHP build"
scripts/setup.sh >/dev/null
PHP_FLAVOR=${FERROPHP_RELEASE_PHP:-pgo}
progress_step "the shipped PHP build ($PHP_FLAVOR)"
case "$PHP_FLAVOR" in
default) PHP_PREFIX=$(scripts/build-php.sh) ;;
pgo) PHP_PREFIX=$(scripts/build-php-pgo.sh) ;;
pgo-lto) PHP_PREFIX=$(scripts/build-php-pgo.sh --lto) ;;
*) log "FERROPHP_RELEASE_PHP=$PHP_FLAVOR: expected pgo-lto, pgo or default"; exit 2 ;;
esac
for tool in patchelf; do
  command -v "$tool" >/dev/null || {
    log "installing $tool"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool" >&2
  }
done

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The PHP inside is part of the name: a security release of PHP is a new release.
PHP_VERSION=$("$PHP_PREFIX/bin/php-config" --version)
NAME="ferrophp-$VERSION-php$PHP_VERSION-linux-x86_64"
DIST="$PWD/dist"
TREE="$DIST/$NAME"

# A target directory of its own: switching PHP builds in target/release would rebuild the
# developer's binaries each time.
progress_step "cargo build --release, PHP linked in (target/shipping)"
PHP_CONFIG="$PHP_PREFIX/bin/php-config" FERROPHP_PHP_LINK=static CARGO_TARGET_DIR=target/shipping \
  cargo build --release --bin ferrophp >&2
progress_step "the tree: PHP's files, PECL extensions, the libraries a base system lacks"

# Releases made before (another PHP, or the name without it) leave: dist/ holds one
# release, the one the Dockerfile's prebuilt path unpacks.
for old in "$DIST"/ferrophp-*-linux-x86_64 "$DIST"/ferrophp-*-linux-x86_64.tar.gz "$DIST"/ferrophp-*-linux-x86_64.debug; do
  [[ -e $old && $(basename "$old") != "$NAME"* ]] && rm -rf "$old"
done
rm -rf "$TREE"
mkdir -p "$TREE"/{lib,bin,conf.d}
# The debug info (PHP's included: ~80 of the binary's ~115 MB) goes beside the tarball,
# not in it; the symbol table stays, so perf and backtraces still name functions.
# gdb finds the file through the debuglink when it sits next to the binary.
objcopy --only-keep-debug target/shipping/release/ferrophp "$DIST/$NAME.debug"
objcopy --strip-debug --add-gnu-debuglink="$DIST/$NAME.debug" \
  target/shipping/release/ferrophp "$TREE/ferrophp"
cp -a "$PHP_PREFIX/lib/php" "$TREE/lib/php"
cp -a "$PHP_PREFIX/include" "$TREE/include"

# php.ini: PHP's own production defaults (from the same source tarball as the build).
SRC_TARBALL="$(dirname "$PHP_PREFIX")/src/php8.2_$PHP_VERSION.orig.tar.xz"
tar -xJOf "$SRC_TARBALL" --wildcards '*/php.ini-production' >"$TREE/php.ini"
cat >>"$TREE/php.ini" <<'INI'

; --- ferrophp defaults (the lines above are PHP's php.ini-production) ---
; Version banners stay off; PHP threads share one process, so keep memory per request bounded.
expose_php = Off
INI
cp "$PHP_PREFIX"/etc/conf.d/*.ini "$TREE/conf.d/"

# php-config and phpize with the tree's location computed at run time.
for script in php-config phpize; do
  old_prefix=$(sed -n "s/^prefix=[\"']\(.*\)[\"']$/\1/p" "$PHP_PREFIX/bin/$script" | head -1)
  sed -e "s|^prefix=.*|prefix=\"\$(cd \"\$(dirname \"\$0\")/..\" \&\& pwd)\"|" \
      -e "s|$old_prefix|\${prefix}|g" \
      -e "s|^\([a-z_]*\)='\(.*\${prefix}.*\)'\$|\1=\"\2\"|" \
      "$PHP_PREFIX/bin/$script" >"$TREE/bin/$script"
  chmod +x "$TREE/bin/$script"
done

# ferrophp called through a link named php is PHP's own CLI (server/src/php_cli.rs); a
# relative link, so the tree can move.
ln -s ../ferrophp "$TREE/bin/php"

# PECL apcu, igbinary, redis, built with the tree's own phpize (cached).
scripts/build-pecl.sh "$TREE"

# Bundle every library that a Debian 12 base system (debootstrap minbase, made once by
# scripts/debian-rootfs.sh) lacks; take the rest from the system. FERROPHP_BASE_LIBS
# names a file listing that base system's libraries instead (the Docker builder, which
# is itself that base system, writes it before installing anything).
if [[ -n ${FERROPHP_BASE_LIBS:-} ]]; then
  base_libs=$(sort -u "$FERROPHP_BASE_LIBS")
else
  ROOTFS=$(scripts/debian-rootfs.sh)
  base_libs=$(find "$ROOTFS/usr/lib/x86_64-linux-gnu" "$ROOTFS/lib/x86_64-linux-gnu" \
    -maxdepth 1 -name 'lib*.so*' -printf '%f\n' 2>/dev/null | sort -u)
fi
: >"$TREE/lib/SYSTEM-LIBRARIES.txt"
ldd "$TREE/ferrophp" "$TREE"/lib/php/extensions/*/*.so | awk '/=> \//{print $1, $3}' | sort -u | while read -r soname path; do
  if grep -qxF "$soname" <<<"$base_libs"; then
    echo "$soname" >>"$TREE/lib/SYSTEM-LIBRARIES.txt"
  else
    cp -L "$path" "$TREE/lib/$soname"
  fi
done
sort -u -o "$TREE/lib/SYSTEM-LIBRARIES.txt" "$TREE/lib/SYSTEM-LIBRARIES.txt"

patchelf --set-rpath '$ORIGIN/lib' "$TREE/ferrophp"
for so in "$TREE"/lib/*.so*; do
  patchelf --set-rpath '$ORIGIN' "$so"
done

progress_step "the one-file package launcher and the system's share of the libraries"
# A package runs where nothing is installed: it carries what the tree takes from the
# system too (every library ldd resolves outside the tree, the loader, iconv's modules),
# copied from this build machine, the same Debian 12 the binary was linked on.
PKG_DIR="$TREE/libexec/ferrophp-package"
mkdir -p "$PKG_DIR/lib"
ldd "$TREE/ferrophp" "$TREE"/lib/*.so* "$TREE"/lib/php/extensions/*/*.so |
  awk '/=> \//{print $1, $3}' | sort -u | while read -r soname path; do
  [[ -e "$TREE/lib/$soname" ]] || cp -L "$path" "$PKG_DIR/lib/$soname"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$PKG_DIR/lib/ld-linux-x86-64.so.2"
GCONV=/usr/lib/x86_64-linux-gnu/gconv
[[ -d $GCONV ]] && cp -a "$GCONV" "$PKG_DIR/lib/gconv"
RELEASE_ID="$VERSION-$(sha256sum "$TREE/ferrophp" | cut -c1-16)"
echo "$RELEASE_ID" >"$PKG_DIR/release-id"
# glibc linked in statically: the launcher starts in an empty container, before the
# packed loader exists on disk. Its own target directory (other RUSTFLAGS).
FERROPHP_RELEASE_ID="$RELEASE_ID" RUSTFLAGS="-C target-feature=+crt-static" \
  CARGO_TARGET_DIR=target/launcher \
  cargo build --release -p ferrophp-package --bin ferrophp-launcher \
  --target x86_64-unknown-linux-gnu >&2
strip -o "$PKG_DIR/launcher" target/launcher/x86_64-unknown-linux-gnu/release/ferrophp-launcher
if ldd "$PKG_DIR/launcher" 2>&1 | grep -q '=>'; then
  log "the package launcher is not static: $(ldd "$PKG_DIR/launcher" 2>&1 | head -3)"
  exit 1
fi

cat >"$TREE/README.md" <<EOF
# ferrophp $VERSION (linux x86_64), PHP $PHP_VERSION

A PHP application server embedding ZTS PHP $PHP_VERSION. This tree runs from any directory on
Debian 12 (x86_64); the libraries it needs beyond a base system are in \`lib/\`
(\`lib/SYSTEM-LIBRARIES.txt\` lists the ones it takes from the system).

    ./ferrophp serve --root public --listen 0.0.0.0:8080
    ./ferrophp serve --root public --worker public/index.php     # worker mode
    ./ferrophp php-cli script.php
    ./ferrophp serve --help

\`bin/php\` is a link to \`ferrophp\`: called \`php\`, ferrophp is PHP's own CLI (every
\`php\` option, the same output), so with \`bin/\` on PATH the same binary runs the app,
Composer, PHPUnit and console commands (\`php -v\`, \`php vendor/bin/phpunit\`).

PHP configuration: \`php.ini\` next to the binary (PHP's production defaults), \`conf.d/\`
(or \`PHP_INI_SCAN_DIR\`), \`PHPRC\`, \`--php-ini FILE\`, and \`-d key=value\`.
Shipped but off: APCu, igbinary and redis (PECL) in \`lib/php/extensions/*/\`; uncomment
the \`extension=\` line in \`conf.d/20-apcu.ini\`, \`20-igbinary.ini\`, \`30-redis.ini\` (redis
needs igbinary), or pass \`-d extension=NAME\`. The real APCu replaces ferrophp's built-in
\`apcu_*\` layer (one cache per process either way).
Other extensions: \`bin/phpize && ./configure --with-php-config=\$PWD/bin/php-config && make\`,
copy the \`.so\` into \`lib/php/extensions/*/\` and add \`extension=NAME\` to \`conf.d/\`.

One file for the whole app (this release, its libraries and the app; runs on any x86_64
Linux kernel, in an empty container too):

    ./ferrophp package --app /path/to/app -o myapp     # seconds, nothing compiled
    ./myapp                                            # serve, as the app's ferrophp.toml says
    ./myapp php-cli bin/console cache:warmup           # the app's CLI
EOF

progress_step "tarball"
tar -C "$DIST" -czf "$DIST/$NAME.tar.gz" "$NAME"
log "$(du -h "$DIST/$NAME.tar.gz" | cut -f1) $DIST/$NAME.tar.gz"
echo "$DIST/$NAME.tar.gz"
