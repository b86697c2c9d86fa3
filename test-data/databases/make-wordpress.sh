#!/usr/bin/env bash
# Makes a private WordPress site from Debian's `wordpress` package in DEST:
#   DEST/wp             the document root: a copy of /usr/share/wordpress (ferrophp never
#                       serves or runs a file whose real path is outside the root, so
#                       symlinks into /usr/share would be refused), with our own
#                       wp-config.php instead of Debian's (which reads /etc/wordpress)
#   DEST/wp/wp-content  private and writable: the twentytwentyone theme, no plugins
# The database is DBNAME (which must exist) in the MariaDB on the unix socket SOCKET, user
# app/app-pass. Nothing of the system installation is modified.
set -euo pipefail
dest=${1:?usage: make-wordpress.sh DEST SOCKET DBNAME}
socket=${2:?usage: make-wordpress.sh DEST SOCKET DBNAME}
dbname=${3:?usage: make-wordpress.sh DEST SOCKET DBNAME}
[[ -f /usr/share/wordpress/wp-settings.php ]] || {
  echo "wordpress is not installed (scripts/install-test-deps.sh)" >&2
  exit 1
}
theme=/usr/share/wordpress/wp-content/themes/twentytwentyone
[[ -d $theme ]] || {
  echo "wordpress-theme-twentytwentyone is not installed (scripts/install-test-deps.sh)" >&2
  exit 1
}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
root="$dest/wp"
rm -rf "$root"
mkdir "$root"
# Everything but Debian's config, its .htaccess link and wp-content.
for f in /usr/share/wordpress/*; do
  case ${f##*/} in wp-config.php | wp-content) continue ;; esac
  cp -rL "$f" "$root/"
done
mkdir -p "$root/wp-content/themes" "$root/wp-content/plugins" "$root/wp-content/uploads"
cp -rL "$theme" "$root/wp-content/themes/"
cp /usr/share/wordpress/wp-content/plugins/index.php "$root/wp-content/plugins/"
# The worker script for worker mode (see its header).
cp "$(dirname "$0")/wp-worker.php" "$root/ferrophp-worker.php"

# The address follows the Host header, so the same site answers on any port (the classic
# and the worker server of the test listen on different ones).
keys=""
for k in AUTH_KEY SECURE_AUTH_KEY LOGGED_IN_KEY NONCE_KEY AUTH_SALT SECURE_AUTH_SALT \
  LOGGED_IN_SALT NONCE_SALT; do
  keys+="define('$k', '$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')');"$'\n'
done
cat >"$root/wp-config.php" <<PHP
<?php
// Written by test-data/databases/make-wordpress.sh for a throwaway test site.
define('DB_NAME', '$dbname');
define('DB_USER', 'app');
define('DB_PASSWORD', 'app-pass');
define('DB_HOST', 'localhost:$socket');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
$keys
\$table_prefix = 'wp_';
// The address follows the Host header, unless it is fixed already (the worker script
// fixes it: a worker boots with no request to take it from).
if (!defined('WP_HOME')) {
    define('WP_HOME', 'http://' . \$_SERVER['HTTP_HOST']);
    define('WP_SITEURL', 'http://' . \$_SERVER['HTTP_HOST']);
}
define('WP_CONTENT_DIR', __DIR__ . '/wp-content');
// No calls to wordpress.org, no background cron requests: the test sees only its own.
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('DISABLE_WP_CRON', true);
define('WP_DEBUG', true);
define('WP_DEBUG_DISPLAY', false);
define('WP_DEBUG_LOG', '$dest/debug.log');
if (!defined('ABSPATH')) {
    define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
PHP
