#!/usr/bin/env bash
# Makes a private, writable MediaWiki instance from Debian's `mediawiki` package in DEST,
# installed with SQLite by `ferrophp php-cli install.php`:
#   DEST/LocalSettings.php      written by MediaWiki's installer, relocatable (paths are
#                               relative to its directory), ends by loading
#   DEST/ferrophp-settings.php  our settings (caches through apcu_*, logs, paths)
#   DEST/db                     the SQLite databases
#   DEST/cache, DEST/images     MediaWiki's writable directories
#   DEST/docroot                the document root: entry points that run the packaged
#                               code in /usr/share/mediawiki with DEST/LocalSettings.php,
#                               and apcu-probe.php (a test-only look into the cache)
# The code is used in place and never written to, nor are /etc/mediawiki and
# /var/lib/mediawiki. FERROPHP names the ferrophp binary (default: ferrophp on PATH).
set -euo pipefail
dest=${1:?usage: make-instance.sh DEST}
ferrophp=${FERROPHP:-ferrophp}
here=$(cd "$(dirname "$0")" && pwd)
[[ -f /usr/share/mediawiki/index.php ]] || {
  echo "mediawiki is not installed (scripts/install-test-deps.sh)" >&2
  exit 1
}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
rm -rf "$dest/LocalSettings.php" "$dest/db" "$dest/cache" "$dest/images" "$dest/docroot"
mkdir -p "$dest/db" "$dest/cache" "$dest/images" "$dest/docroot"
"$ferrophp" php-cli "$here/install.php" "$dest" "$dest/db" >"$dest/install.log" 2>&1 || {
  cat "$dest/install.log" >&2
  exit 1
}
# The installer writes absolute paths; the instance is copied per test, so make them
# relative to the settings file.
sed -i "s|\"$dest/db\"|__DIR__ . '/db'|" "$dest/LocalSettings.php"
grep -q "__DIR__ . '/db'" "$dest/LocalSettings.php" || {
  echo "make-instance.sh: SQLite path not found in LocalSettings.php" >&2
  exit 1
}
cp "$here/ferrophp-settings.php" "$dest/"
printf '\nrequire __DIR__ . "/ferrophp-settings.php";\n' >>"$dest/LocalSettings.php"
for entry in index api load; do
  sed "s/@ENTRY@/$entry/" "$here/entry.php" >"$dest/docroot/$entry.php"
done
cp "$here/apcu-probe.php" "$dest/docroot/"
