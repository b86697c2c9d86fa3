#!/bin/sh
# Container entry point: `serve` (the default) gets the worker script and ini settings
# from the environment; anything else (`php-cli script.php`, `--help`) runs as given.
# exec keeps ferrophp as PID 1, so `docker stop` (SIGTERM) starts its graceful drain.
set -e
if [ "${1:-serve}" = serve ]; then
  [ $# -gt 0 ] && shift
  set -- serve "$@"
  # FERROPHP_DOMAINS (automatic HTTPS): FERROPHP_LISTEN is then the HTTPS address, so
  # the image's plain default moves to 443 and port 80 becomes the redirect and HTTP-01
  # listener (--http-listen's default). A FERROPHP_LISTEN set by the user stays as it is.
  if [ -n "$FERROPHP_DOMAINS" ] && [ "$FERROPHP_LISTEN" = 0.0.0.0:80 ]; then
    export FERROPHP_LISTEN=0.0.0.0:443
  fi
  if [ -n "$FERROPHP_WORKER_SCRIPT" ]; then
    set -- "$@" --worker "$FERROPHP_WORKER_SCRIPT"
  fi
  # FERROPHP_INI: space-separated key=value pairs, each passed as -d.
  for kv in $FERROPHP_INI; do
    set -- "$@" -d "$kv"
  done
fi
exec /opt/ferrophp/ferrophp "$@"
