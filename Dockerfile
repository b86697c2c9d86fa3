# ferrophp base image: the release tree on a bare Debian 12, running as a non-root user.
#
#   docker/build-image.sh                   # full build: compiles PHP and ferrophp inside
#   docker/build-image.sh --prebuilt        # fast: takes dist/ from scripts/release.sh
#   docker run -p 8080:80 ferrophp          # serves /app/public
#
# Two stages. The builder (stage `release`) is the same Debian 12 minbase with the build
# dependencies and Debian's own Rust toolchain (rustc-web/cargo-web 1.96 from
# bookworm-security); it runs scripts/build-php.sh and scripts/release.sh exactly as on a
# developer machine, PECL apcu/igbinary/redis included. The runtime stage holds only the unpacked release tree.
#
# PREBUILT=1 skips the compilers and unpacks dist/ferrophp-*-linux-x86_64.tar.gz from the
# build context instead, so tests and CI do not spend an hour compiling on small machines.
# FERROPHP_VERSION and PHP_VERSION (docker/build-image.sh passes them) name that tarball
# and become the image's labels (org.opencontainers.image.version, dev.ferrophp.php.version);
# the build fails when the binary inside says otherwise.
# (The classic builder runs every stage, so the choice is an argument inside one builder
# stage rather than two stages.)
#
# APT_SOURCES (deb822 text, with deb-src; or APT_SOURCES_LIST, one-line sources.list form)
# and CARGO_CONFIG (a cargo config.toml) carry the build machine's own package sources and
# registry settings into the builder, so nothing here names a mirror;
# docker/build-image.sh fills them from the host. http_proxy and https_proxy are Docker's
# predefined build arguments and pass through as well.
ARG BASE=ferrophp/debian:bookworm-minbase

FROM ${BASE} AS release
ARG PREBUILT=
ARG APT_SOURCES=
ARG APT_SOURCES_LIST=
ARG CARGO_CONFIG=
ENV DEBIAN_FRONTEND=noninteractive
# What the bare base system holds, before anything is installed: release.sh bundles every
# library the tree needs beyond it.
RUN find /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu -maxdepth 1 -name 'lib*.so*' \
      -printf '%f\n' 2>/dev/null | sort -u >/base-libs.txt
RUN if [ -z "$PREBUILT" ]; then \
      set -e; \
      if [ -n "$APT_SOURCES" ]; then \
        rm -f /etc/apt/sources.list && printf '%s\n' "$APT_SOURCES" >/etc/apt/sources.list.d/build.sources; \
      fi; \
      if [ -n "$APT_SOURCES_LIST" ]; then printf '%s\n' "$APT_SOURCES_LIST" >/etc/apt/sources.list; fi; \
      if [ -n "$CARGO_CONFIG" ]; then \
        mkdir -p /root/.cargo && printf '%s\n' "$CARGO_CONFIG" >/root/.cargo/config.toml; \
      fi; \
      apt-get update -qq; \
      apt-get install -y -qq --no-install-recommends rustc-web cargo-web \
        libclang-dev clang pkg-config valgrind curl ca-certificates patchelf \
        build-essential bison re2c autoconf libxml2-dev libsqlite3-dev zlib1g-dev \
        libonig-dev libssl-dev libcurl4-openssl-dev libicu-dev dpkg-dev xz-utils \
        libpq-dev libpng-dev libjpeg-dev libfreetype-dev libwebp-dev libzip-dev \
        libsodium-dev libgmp-dev libbz2-dev libxslt1-dev libedit-dev \
        liblz4-dev libzstd-dev >/dev/null; \
      rustc --version; cargo --version; \
    fi
# PHP first, in its own layer: it changes far less often than the rest of the sources.
COPY scripts/build-php.sh /src/scripts/build-php.sh
COPY scripts/lib /src/scripts/lib
COPY scripts/php-patches /src/scripts/php-patches
RUN if [ -z "$PREBUILT" ]; then /src/scripts/build-php.sh; fi
# Certificate authorities the build machine trusts beyond Debian's (a TLS-inspecting proxy's,
# say), for cargo's HTTPS downloads; docker/build-image.sh passes them. Declared here, late,
# so a change does not invalidate the layers above.
ARG EXTRA_CA_CERTS=
RUN if [ -z "$PREBUILT" ] && [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" >/usr/local/share/ca-certificates/build-extra.crt \
      && update-ca-certificates >/dev/null; \
    fi
COPY . /src
WORKDIR /src
# The versions the image's labels carry (docker/build-image.sh passes them); checked
# against the binary below.
ARG FERROPHP_VERSION=
ARG PHP_VERSION=
RUN set -e; \
    if [ -z "$PREBUILT" ]; then \
      rm -rf dist target; \
      FERROPHP_RELEASE_PHP=default FERROPHP_BASE_LIBS=/base-libs.txt scripts/release.sh >/tmp/tarball; \
      tarball=$(cat /tmp/tarball); \
    elif [ -n "$FERROPHP_VERSION" ] && [ -n "$PHP_VERSION" ]; then \
      tarball=dist/ferrophp-$FERROPHP_VERSION-php$PHP_VERSION-linux-x86_64.tar.gz; \
    else \
      tarball=$(ls dist/ferrophp-*-linux-x86_64.tar.gz); \
      [ "$(echo "$tarball" | wc -l)" = 1 ] || { echo "more than one release in dist/: $tarball" >&2; exit 1; }; \
    fi; \
    mkdir -p /opt/ferrophp; \
    tar -xzf "$tarball" -C /opt/ferrophp --strip-components=1; \
    version=$(/opt/ferrophp/ferrophp --version); \
    echo "$version"; \
    if { [ -n "$FERROPHP_VERSION" ] && ! echo "$version" | grep -qF "ferrophp $FERROPHP_VERSION "; } \
      || { [ -n "$PHP_VERSION" ] && ! echo "$version" | grep -qF "(PHP $PHP_VERSION)"; }; then \
      echo "the labels would say ferrophp $FERROPHP_VERSION, PHP $PHP_VERSION; the binary says: $version" >&2; \
      exit 1; \
    fi

FROM ${BASE}
ARG FERROPHP_VERSION=
ARG PHP_VERSION=
LABEL org.opencontainers.image.title="ferrophp" \
      org.opencontainers.image.description="PHP application server embedding ZTS PHP" \
      org.opencontainers.image.version="${FERROPHP_VERSION}" \
      dev.ferrophp.php.version="${PHP_VERSION}"
COPY --from=release /opt/ferrophp /opt/ferrophp
COPY docker/entrypoint.sh docker/healthcheck.sh docker/add-extension.sh /opt/ferrophp/docker/
COPY test-data/demo/public /app/public
RUN useradd --system --uid 10001 --user-group --home-dir /app --shell /usr/sbin/nologin ferrophp \
 && mkdir -p /app/var/sessions /app/var/data && chown -R ferrophp:ferrophp /app/var \
 && ln -s /opt/ferrophp/ferrophp /usr/local/bin/ferrophp \
 && ln -s /opt/ferrophp/ferrophp /usr/local/bin/php
# Configuration by environment (see `ferrophp serve --help` for every FERROPHP_* variable;
# FERROPHP_WORKER_SCRIPT and FERROPHP_INI are read by the entrypoint).
ENV FERROPHP_ROOT=/app/public \
    FERROPHP_LISTEN=0.0.0.0:80 \
    FERROPHP_ADMIN=0.0.0.0:2019 \
    FERROPHP_WORKER_SCRIPT= \
    FERROPHP_INI="session.save_path=/app/var/sessions" \
    FERROPHP_DATA_DIR=/app/var/data
WORKDIR /app
USER ferrophp
# 443 with FERROPHP_DOMAINS (automatic HTTPS; mount a volume on /app/var/data to keep the
# certificates across containers).
EXPOSE 80 443 2019
# The graceful drain: stop accepting, finish requests in flight (FERROPHP_GRACE_MS).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/opt/ferrophp/docker/healthcheck.sh"]
ENTRYPOINT ["/opt/ferrophp/docker/entrypoint.sh"]
CMD ["serve"]
