#!/usr/bin/env bash
# Generates the arginfo headers of ferrophp's PHP functions and classes from their stubs,
# with PHP's own build/gen_stub.php, as php-src does for its extensions:
#
#   worker/stubs/*.stub.php -> worker/stubs/*_arginfo.h   (the SAPI's functions,
#                                                           Ferrophp\Metrics, Ferrophp\Trace)
#   cache/stubs/*.stub.php  -> cache/stubs/*_arginfo.h    (UserCache\Cache, apcu_*)
#
# The headers are committed; each names its stub's SHA-1, and the crates' build scripts
# fail when a stub no longer matches its header, naming this script. Run it after
# editing a stub:
#
#   scripts/gen-arginfo.sh        # regenerates the headers whose stub changed
#   scripts/gen-arginfo.sh -f     # regenerates all of them
#
# Needs a PHP CLI with the tokenizer extension (`php` on PATH, or $PHP), nikic/PHP-Parser
# 4.x (Debian's php-parser package: scripts/install-test-deps.sh installs it), and
# gen_stub.php, read from the PHP source tarball scripts/build-php.sh keeps in its cache
# (or $GEN_STUB), so the generator is the one of the PHP we build against. Nothing is
# downloaded: gen_stub.php would fetch PHP-Parser itself, so it runs from a scratch copy
# that finds the installed parser where it looks for its own.
set -euo pipefail
cd "$(dirname "$0")/.."

force=()
case "${1:-}" in
    -f | --force) force=(-f) ;;
    "") ;;
    *)
        echo "usage: scripts/gen-arginfo.sh [-f]" >&2
        exit 2
        ;;
esac

php=${PHP:-php}
if ! command -v "$php" >/dev/null 2>&1; then
    echo "scripts/gen-arginfo.sh: no PHP CLI ('$php'); install php-cli or set PHP" >&2
    exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -n "${GEN_STUB:-}" ]; then
    cp "$GEN_STUB" "$scratch/gen_stub.php"
else
    # The version PHP was built at (build-php.sh picks it; quick when built), so the
    # generator is that PHP's.
    version=$("$(scripts/build-php.sh 2>/dev/null)/bin/php-config" --version 2>/dev/null || true)
    cache=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
    tarball=$cache/src/php8.2_$version.orig.tar.xz
    if [ ! -f "$tarball" ] \
        || ! tar -xJf "$tarball" -O --wildcards '*/build/gen_stub.php' >"$scratch/gen_stub.php" \
        || [ ! -s "$scratch/gen_stub.php" ]; then
        echo "scripts/gen-arginfo.sh: no build/gen_stub.php from $tarball; run" >&2
        echo "  scripts/build-php.sh (it downloads the PHP source there) or set GEN_STUB" >&2
        exit 1
    fi
fi

# gen_stub.php loads PHP-Parser from PHP-Parser-<version>/lib next to itself, and downloads
# it when that directory is missing.
parser_version=$(sed -n 's/^ *\$version = "\([0-9.]*\)";$/\1/p' "$scratch/gen_stub.php" | head -n 1)
parser=${PHP_PARSER_DIR:-/usr/share/php/PhpParser}
if [ -z "$parser_version" ] || [ ! -f "$parser/Parser.php" ]; then
    echo "scripts/gen-arginfo.sh: nikic/PHP-Parser not found in $parser" >&2
    echo "  (apt-get install php-parser, or set PHP_PARSER_DIR)" >&2
    exit 1
fi
mkdir -p "$scratch/PHP-Parser-$parser_version/lib"
ln -s "$parser" "$scratch/PHP-Parser-$parser_version/lib/PhpParser"

for stub in worker/stubs/*.stub.php cache/stubs/*.stub.php; do
    "$php" "$scratch/gen_stub.php" "${force[@]}" "$stub"
done
