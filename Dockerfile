# ferrophp base image: the release tree on a bare Debian 12, running as a non-root user.
#
#   scripts/release.sh && scripts/docker-base-image.sh && docker build -t ferrophp .
#   docker run -p 8080:80 ferrophp                       # serves /app/public
#
# The base is a debootstrap minbase of bookworm imported by scripts/docker-base-image.sh
# (no registry to pull from). The first stage takes the tarball scripts/release.sh built
# with the same PHP build script (scripts/build-php.sh) rather than compiling inside the
# image: the Rust toolchain ferrophp needs cannot be installed in an image here (Debian
# 12's rustc is too old, and nothing else can be downloaded).
ARG BASE=ferrophp/debian:bookworm-minbase

FROM ${BASE} AS release
COPY dist/ferrophp-*-linux-x86_64.tar.gz /tmp/
RUN mkdir -p /opt/ferrophp \
 && tar -xzf /tmp/ferrophp-*-linux-x86_64.tar.gz -C /opt/ferrophp --strip-components=1 \
 && /opt/ferrophp/ferrophp --version

FROM ${BASE}
COPY --from=release /opt/ferrophp /opt/ferrophp
COPY docker/entrypoint.sh docker/healthcheck.sh docker/add-extension.sh /opt/ferrophp/docker/
COPY test-data/demo/public /app/public
RUN useradd --system --uid 10001 --user-group --home-dir /app --shell /usr/sbin/nologin ferrophp \
 && mkdir -p /app/var/sessions && chown -R ferrophp:ferrophp /app/var \
 && ln -s /opt/ferrophp/ferrophp /usr/local/bin/ferrophp
# Configuration by environment (see `ferrophp serve --help` for every FERROPHP_* variable;
# FERROPHP_WORKER_SCRIPT and FERROPHP_INI are read by the entrypoint).
ENV FERROPHP_ROOT=/app/public \
    FERROPHP_LISTEN=0.0.0.0:80 \
    FERROPHP_ADMIN=0.0.0.0:2019 \
    FERROPHP_WORKER_SCRIPT= \
    FERROPHP_INI="session.save_path=/app/var/sessions"
WORKDIR /app
USER ferrophp
EXPOSE 80 2019
# The graceful drain: stop accepting, finish requests in flight (FERROPHP_GRACE_MS).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/opt/ferrophp/docker/healthcheck.sh"]
ENTRYPOINT ["/opt/ferrophp/docker/entrypoint.sh"]
CMD ["serve"]
