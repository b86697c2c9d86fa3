#!/usr/bin/env bash
# Serves a Debian-packaged PHP app with ferrophp in one command (Debian 12, as root):
#
#   scripts/serve-debian-app.sh phpmyadmin [ferrophp serve args...]
#   scripts/serve-debian-app.sh dokuwiki   [ferrophp serve args...]
#
# Installs the package with apt-get, prepares what it needs (phpmyadmin: the host's
# MariaDB, started if it is not running, a login user, phpMyAdmin pointed at its socket
# through /etc/phpmyadmin/conf.d), builds ferrophp (once) and runs `ferrophp serve` on the
# package's document root, by default on http://127.0.0.1:8080 (extra arguments go to
# `ferrophp serve`, e.g. --listen 0.0.0.0:8080; FERROPHP=path skips the build). No -d: the apps find their libraries in
# /usr/share/php through PHP's built-in include_path, as with Debian's own PHP.
# Ctrl-C stops ferrophp; a MariaDB this script started keeps running (`service mariadb stop`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
app=${1:-}
[[ -n $app ]] || { echo "usage: $0 phpmyadmin|dokuwiki [ferrophp serve args...]" >&2; exit 2; }
shift
log() { echo "serve-debian-app: $*" >&2; }

install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  # No database set up by dbconfig-common at install time: this script does it below.
  for p in "${missing[@]}"; do echo "$p $p/dbconfig-install boolean false"; done |
    debconf-set-selections
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

case $app in
  phpmyadmin)
    install phpmyadmin mariadb-server
    if ! mariadb-admin ping >/dev/null 2>&1; then
      log "starting MariaDB"
      service mariadb start >/dev/null
    fi
    user=${PMA_USER:-admin}
    pass=${PMA_PASSWORD:-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')}
    mariadb -e "CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$pass';
      ALTER USER '$user'@'localhost' IDENTIFIED BY '$pass';
      GRANT ALL ON *.* TO '$user'@'localhost' WITH GRANT OPTION;"
    socket=$(mariadb -N -B -e 'SELECT @@socket')
    cat >/etc/phpmyadmin/conf.d/ferrophp.php <<EOF
<?php
// Written by ferrophp's scripts/serve-debian-app.sh: the host's MariaDB on its socket.
\$cfg['Servers'] = [1 => ['auth_type' => 'cookie', 'host' => 'localhost',
    'connect_type' => 'socket', 'socket' => '$socket']];
EOF
    root=/usr/share/phpmyadmin
    log "log in as '$user' with password '$pass'"
    ;;
  dokuwiki)
    # php8.2-fpm and nginx in the same transaction satisfy dokuwiki's `php` and web
    # server dependencies without pulling in Apache (ferrophp is the server here).
    install dokuwiki php8.2-fpm nginx
    root=/usr/share/dokuwiki
    ;;
  *)
    echo "$0: unknown app '$app' (phpmyadmin or dokuwiki)" >&2
    exit 2
    ;;
esac

# FERROPHP=path/to/ferrophp (a release tree's, say) skips the build.
bin=${FERROPHP:-}
if [[ -z $bin ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
  scripts/setup.sh >/dev/null
  cargo build --release -p ferrophp
  bin=target/release/ferrophp
fi
args=("$@")
[[ " ${args[*]} " == *" --listen "* ]] || args=(--listen 127.0.0.1:8080 "${args[@]}")
exec "$bin" serve --root "$root" "${args[@]}"
