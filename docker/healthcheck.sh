#!/bin/bash
# HEALTHCHECK without curl (the base system has none): GET /healthz on the admin
# listener through bash's /dev/tcp.
port=${FERROPHP_ADMIN##*:}
exec 3<>"/dev/tcp/127.0.0.1/${port:-2019}" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
read -r -t 3 status_line <&3 || exit 1
[[ $status_line == *" 200 "* ]]
