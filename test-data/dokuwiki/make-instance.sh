#!/usr/bin/env bash
# Makes a private, writable DokuWiki instance from Debian's `dokuwiki` package in DEST:
#   DEST/wiki  the PHP tree (document root), symlinks resolved
#   DEST/conf  its configuration, with ACL off so anonymous users may edit
#   DEST/data  pages, cache, locks...
# Nothing of the system installation is modified.
set -euo pipefail
dest=${1:?usage: make-instance.sh DEST}
[[ -d /usr/share/dokuwiki ]] || { echo "dokuwiki is not installed (scripts/install-test-deps.sh)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
rm -rf "$dest/wiki" "$dest/conf" "$dest/data"
cp -rL /usr/share/dokuwiki "$dest/wiki"
cp -rL /etc/dokuwiki "$dest/conf"
cp -rL /var/lib/dokuwiki/data "$dest/data"
# Point the copy at its own configuration instead of /etc/dokuwiki.
cat >"$dest/wiki/inc/preload.php" <<PHP
<?php
if (!defined('DOKU_CONF')) define('DOKU_CONF', '$dest/conf/');
PHP
cat >"$dest/conf/local.php" <<PHP
<?php
\$conf['title'] = 'ferrophp test wiki';
\$conf['savedir'] = '$dest/data';
\$conf['useacl'] = 0;
PHP
