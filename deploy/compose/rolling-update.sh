#!/usr/bin/env bash
# Rolls the replicas of a compose project over to a new image, one at a time, with no
# failed request (see rolling-update.yml):
#
#   ./rolling-update.sh IMAGE [SERVICE...]          (services: app1 app2)
#   COMPOSE="docker-compose -p NAME -f FILE" ./rolling-update.sh IMAGE
#
# For each replica: recreate it with IMAGE (docker sends SIGTERM: ferrophp stops
# accepting, answers what it has with `Connection: close`, finishes within
# FERROPHP_GRACE_MS and exits; the balancer replays refused requests on the other
# replica), wait until the new container is healthy (its /readyz), then wait out the
# balancer's fail_timeout (FAIL_TIMEOUT, 3 s) so it takes traffic again before the next
# one goes down. Prints one line per replica with the time it took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
image=${1:?usage: rolling-update.sh IMAGE [SERVICE...]}
shift
services=("$@")
((${#services[@]})) || services=(app1 app2)
read -r -a compose <<<"${COMPOSE:-docker-compose -f rolling-update.yml}"
fail_timeout=${FAIL_TIMEOUT:-3}
health() {
  local id
  id=$("${compose[@]}" ps -q "$1")
  [[ -n $id ]] && docker inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null || echo missing
}
for service in "${services[@]}"; do
  started=$(date +%s%N)
  RELEASE_IMAGE=$image "${compose[@]}" up -d --no-deps "$service" >&2
  for _ in $(seq 600); do
    [[ $(health "$service") == healthy ]] && break
    sleep 0.2
  done
  [[ $(health "$service") == healthy ]] || { echo "rolling-update: $service not healthy" >&2; exit 1; }
  echo "rolling-update: $service on $image, healthy after $((($(date +%s%N) - started) / 1000000)) ms"
  sleep "$((fail_timeout + 1))"
done
