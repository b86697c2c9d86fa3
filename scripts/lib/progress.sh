# Progress for the long set-up steps (sourced by scripts/build-php.sh, setup.sh, demo.sh,
# release.sh, docker/build-image.sh). A newcomer must see movement: which step of how
# many, and inside a long command its count of work done out of the total, the time
# spent and an estimate of the time left.
#
# On a terminal the count is one line rewritten in place; anywhere else (CI, a log file)
# it is a plain line every PROGRESS_EVERY seconds (default 15), so logs stay readable.
# Everything goes to stderr: the scripts print results on stdout.
#
#   progress_init TAG TOTAL_STEPS        name the script and how many steps it has
#   progress_step LABEL                  "TAG: [k/N] LABEL" (k counts up)
#   progress_run LOG TOTAL COUNT_FN CMD...
#       runs CMD with stdout+stderr into LOG; while it runs, reports `COUNT_FN LOG`
#       (a function printing the units done so far) against TOTAL; on failure prints the
#       log's tail and the log's path, and returns the command's status.

_progress_tag=setup
_progress_total=1
_progress_done=0
_progress_started=$SECONDS

progress_init() {
  _progress_tag=$1
  _progress_total=$2
  _progress_done=0
  _progress_started=$SECONDS
}

progress_clock() {
  local s=$1
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

progress_step() {
  _progress_done=$((_progress_done + 1))
  echo "$_progress_tag: [$_progress_done/$_progress_total] $* ($(progress_clock $((SECONDS - _progress_started))) so far)" >&2
}

progress_run() {
  local log=$1 total=$2 count_fn=$3
  shift 3
  local start=$SECONDS every=${PROGRESS_EVERY:-15} tty=0 last=-1
  [[ -t 2 ]] && tty=1 && every=1
  "$@" >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    local elapsed=$((SECONDS - start))
    ((tty == 1 || elapsed - last >= every)) || continue
    last=$elapsed
    local done
    # A count function may print nothing or fail (grep -c exits 1 on no match): whatever
    # is not one number counts as 0, so a count can never end the wait early.
    done=$("$count_fn" "$log" 2>/dev/null | head -1) || true
    [[ $done =~ ^[0-9]+$ ]] || done=0
    ((done > total)) && done=$total
    local line="$_progress_tag:       $done/$total ($((100 * done / (total > 0 ? total : 1)))%), $(progress_clock "$elapsed")"
    if ((done > 0 && done < total)); then
      line+=", about $(progress_clock $((elapsed * (total - done) / done))) left"
    fi
    if ((tty == 1)); then
      printf '\r\033[K%s' "$line" >&2
    else
      echo "$line" >&2
    fi
  done
  local status=0
  wait "$pid" || status=$?
  ((tty == 1)) && printf '\r\033[K' >&2
  if ((status != 0)); then
    echo "$_progress_tag: step $_progress_done/$_progress_total failed (exit $status); the last lines of $log:" >&2
    tail -30 "$log" >&2
    echo "$_progress_tag: full log: $log" >&2
  fi
  return "$status"
}

# progress_apt_install LOG PACKAGE...: apt-get install with a progress count (packages
# unpacked of those apt plans to install, dependencies included); apt's lines go to LOG.
_progress_count_unpacked() { grep -c '^Unpacking ' "$1"; }
progress_apt_install() {
  local log=$1 planned
  shift
  planned=$(apt-get install -s "$@" 2>/dev/null | grep -c '^Inst ' || true)
  progress_run "$log" "${planned:-1}" _progress_count_unpacked \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}
