#!/usr/bin/env bash
# Debian packages the test suite and benchmarks use as real components: nginx +
# php8.2-fpm (the baseline), DokuWiki and MediaWiki (real apps served in tests; MediaWiki
# caches through apcu_* when it exists), wrk and valgrind, Symfony and Laravel 8
# (Octane's worker contract, server/tests/frankenphp_octane.rs), and MariaDB,
# PostgreSQL, WordPress (with a classic theme) and Adminer for the database tests,
# pebble (Let's Encrypt's ACME test CA with pebble-challtestsrv, server/tests/acme.rs),
# redis-server (the shipped phpredis, release.rs), locales (localedef builds the test
# locale, isolation_faults.rs), openssl (s_client probes the TLS policy), linux-perf
# (perf: scripts/count-allocs.sh, count-handoffs.sh and profile-hot-path.sh), iproute2
# (ss: deadlines.rs checks no connection to the database outlives a cut query), the
# Debian-packaged apps of server/tests/debian_apps.rs: phpMyAdmin, Roundcube (on
# PostgreSQL, with Dovecot for IMAP) and PostfixAdmin, and DAViCal (a CalDAV server,
# server/tests/caldav.rs, on PostgreSQL). The comparison harness
# (benches/src/compare) serves WordPress, MediaWiki and a Symfony app (FrameworkBundle +
# TwigBundle + php-twig) with php-fpm too, which needs Debian's extension packages for
# them (mysqli, pdo_sqlite, mbstring, intl). php-cli and php-parser (nikic/PHP-Parser)
# run PHP's own gen_stub.php for scripts/gen-arginfo.sh (the arginfo headers of
# worker/stubs and cache/stubs). php-symfony-console: the packed Symfony
# app's bin/console (server/tests/package.rs).
# Idempotent; quick when everything is present. Services are not started here: tests
# start their own instances on loopback.
set -euo pipefail

log() { echo "install-test-deps: $*" >&2; }

# php8.2-fpm in the same transaction makes apt satisfy dokuwiki's and mediawiki's `php`
# dependency with FPM instead of pulling in Apache, and nginx satisfies mediawiki's
# `apache2 | httpd`.
PACKAGES=(nginx php8.2-fpm php8.2-xml php8.2-mysql php8.2-sqlite3 php8.2-mbstring php8.2-intl
  dokuwiki mediawiki wrk valgrind
  php-symfony-http-kernel php-symfony-runtime php-symfony-routing php-symfony-http-foundation
  php-symfony-event-dispatcher php-symfony-error-handler
  php-symfony-cache php-symfony-framework-bundle php-symfony-twig-bundle php-twig
  php-symfony-console
  composer php-laravel-framework docker-compose
  mariadb-server mariadb-client postgresql wordpress wordpress-theme-twentytwentyone adminer
  redis-server locales openssl linux-perf iproute2
  phpmyadmin roundcube-core roundcube-pgsql dovecot-imapd postfixadmin davical
  phpunit phpab pkg-php-tools dpkg-dev php-league-commonmark php-twig php-embed pebble
  php-nyholm-psr7 php-shellcommand php-symfony-finder php-symfony-yaml
  php-symfony-phpunit-bridge php-psr-container php-cli php-parser
  php-symfony-messenger # server/tests/jobs.rs: Messenger's consumer as a background worker
  chromium php-symfony-mercure) # server/tests/mercure.rs: headless EventSource page, Symfony's publisher
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing packages; as root run: apt-get install -y ${missing[*]}"
    exit 1
  fi
  log "installing ${missing[*]}"
  # Keep package scripts from starting nginx/php-fpm/mariadb/postgresql system services
  # during install: the database tests start their own private instances.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
  fi
  trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
  # phpMyAdmin, Roundcube and PostfixAdmin ask whether dbconfig-common should set up their
  # database; no database server runs during the install (the tests start their own), so
  # the answer is no.
  for p in phpmyadmin roundcube-core postfixadmin; do
    echo "$p $p/dbconfig-install boolean false"
  done | debconf-set-selections
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# server/tests/php_tools.rs runs the PHPUnit suites of Debian's league/commonmark and Twig
# packages, which only their source packages carry: download them (the versions
# installed) once into the cache, as build-php.sh does PHP's.
CACHE_ROOT=${FERROPHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrophp}
SOURCES=$CACHE_ROOT/src/debian-tests
mkdir -p "$SOURCES"
for p in php-league-commonmark php-twig; do
  version=$(dpkg-query -W -f='${Version}' "$p")
  [[ -f "$SOURCES/${p}_${version#*:}.dsc" ]] && continue
  if ! apt-get source --download-only --print-uris "$p=$version" >/dev/null 2>&1; then
    # A deb-src entry derived from the machine's own apt sources, as build-php.sh makes.
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
      sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        >/etc/apt/sources.list.d/ferrophp-src.sources
    elif [[ -f /etc/apt/sources.list ]]; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
        >/etc/apt/sources.list.d/ferrophp-src.list
    fi
    apt-get update -qq >&2
  fi
  log "downloading the source package $p $version (its test suite)"
  (cd "$SOURCES" && apt-get source --download-only -qq "$p=$version" >&2)
done
