#!/usr/bin/env bash
# A job whose ranks are all on this host listens on loopback only: every
# rank's tcp listener follows the rendezvous's address, which loomrun puts on
# loopback. Reads the listening sockets of the job's processes with ss.
set -uo pipefail
BUILD=$(realpath "$1")
LOOMRUN="$BUILD/loomrun"
PERF="$BUILD/perf/loom_perf"
fail() {
  echo "listen_loopback_test: FAIL: $*" >&2
  exit 1
}
[[ -x $LOOMRUN && -x $PERF ]] || fail "needs $LOOMRUN and $PERF"
command -v ss > /dev/null || fail "needs ss (iproute2, scripts/install-deps.sh)"
work=$(mktemp -d /tmp/listen_loopback.XXXXXX)
ln -s "$PERF" "$work/ranks"  # a name only this run's processes have
cleanup() {
  pkill -KILL -f "$work" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Long enough to be inspected; killed once it has been.
timeout 120 "$LOOMRUN" -n 2 "$work/ranks" allreduce -b 8 -e 8 -n 100000000 -w 0 -c 0 \
  > "$work/out" 2>&1 &
job=$!
disown "$job"  # its end (killed at cleanup) is no news
listening=""
for _ in $(seq 200); do
  # loomrun, the ranks (and timeout): every process with the path in its command line.
  pids=$( (echo "$job"; pgrep -f "$work/ranks") | paste -sd'|')
  ss -ltnpH 2> /dev/null | grep -E "pid=($pids)," > "$work/listen"
  # A listener per rank once both are up (loomrun's rendezvous, also on
  # loopback, closes once every rank has joined).
  if [[ $(wc -l < "$work/listen") -ge 2 ]]; then
    listening=yes
    break
  fi
  sleep 0.1
done
[[ -n $listening ]] || fail "the job's sockets never showed: $(cat "$work/listen" "$work/out")"
awk '{print $4}' "$work/listen" > "$work/addresses"
if grep -vE '^(127\.[0-9]+\.[0-9]+\.[0-9]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' "$work/addresses"; then
  fail "a single-host job listens beyond loopback: $(cat "$work/listen")"
fi
echo "listen_loopback_test: $(wc -l < "$work/addresses") listening sockets, all on loopback"
