#!/usr/bin/env bash
# Runs a command under a deadline. When it passes the deadline, every process
# of its tree is sent SIGQUIT first (Loom's GPU tests and loom_perf print every
# thread's stack on it: tools/stack_dump), given two seconds to print, then
# killed. A stall then leaves where each thread was, not only a timeout.
#   scripts/run-with-stacks.sh SECONDS command [args...]
# Exits with the command's status, or 124 when it was stopped.
set -uo pipefail
(($# >= 2)) || { echo "usage: $0 SECONDS command [args...]" >&2; exit 2; }
deadline=$1
shift
"$@" &
pid=$!
descendants() {  # pid: its children, grandchildren, ...
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
for ((tenth = 0; tenth < deadline * 10; tenth++)); do
  if ! kill -0 "$pid" 2> /dev/null; then
    wait "$pid"
    exit $?
  fi
  sleep 0.1
done
tree="$pid $(descendants "$pid" | tr '\n' ' ')"
echo "run-with-stacks: '$*' still running after $deadline s; stacks of: $tree" >&2
for p in $tree; do
  echo "run-with-stacks: pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null)" >&2
  kill -QUIT "$p" 2> /dev/null
done
sleep 2
for p in $tree; do kill -KILL "$p" 2> /dev/null; done
wait "$pid" 2> /dev/null
exit 124
