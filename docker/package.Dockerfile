# An image that is one file: a package made by `ferrophp package` (docs/operating.md,
# "One-file apps"), on nothing at all. The package carries ferrophp, PHP, every library
# (the C library and its loader included) and the app; it needs only the kernel.
#
#   ferrophp package --app ./app -o build/myapp
#   docker build -f docker/package.Dockerfile --build-arg PACKAGE=myapp -t myapp build/
#   docker run -p 8080:8080 -v myapp-data:/data myapp
#
# /data holds the app's writable paths ([package] writable: var/, uploads); /cache the
# extracted package (made on first start; a tmpfs works, with --read-only too).
FROM scratch
ARG PACKAGE=app
COPY ${PACKAGE} /app
ENV FERROPHP_DATA_DIR=/data \
    FERROPHP_PACKAGE_CACHE=/cache
EXPOSE 8080
ENTRYPOINT ["/app"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
