#!/usr/bin/env bash
# loomrun end to end: rank environment, exit-status propagation, tagged output,
# signal forwarding, timeouts and exec errors, binding to cores, and after every case a check
# that no process the case started outlived loomrun.
#
# Processes are recognised by a unique path: every program a case starts lives
# in (or is named after) this run's temporary directory, so `pgrep -f "$work"`
# sees exactly our processes and never another test's.
# shellcheck disable=SC2016  # rank commands expand $LOOM_* in the rank, not here
set -uo pipefail
BUILD=$(realpath "$1")
LOOMRUN=$(find "$BUILD" -maxdepth 3 -name loomrun -type f -perm -u+x | head -1)
if [ -z "$LOOMRUN" ]; then
  echo "loomrun_test: no loomrun binary under $BUILD; skipping"
  exit 77
fi

work=$(mktemp -d /tmp/loomrun_test.XXXXXX)
sleeper="$work/sleeper"  # `sleep` under a name only this run uses
ln -s "$(command -v sleep)" "$sleeper"

ours() { pgrep -f "$work" || true; }
cleanup() {
  local pids
  pids=$(ours)
  # shellcheck disable=SC2086  # one argument per pid
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Our processes must all be gone; a SIGKILLed grandchild may take a moment.
expect_no_orphans() {
  local left
  for _ in $(seq 50); do
    left=$(ours)
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  ps -o pid,ppid,pgid,stat,args -p "${left//$'\n'/,}" >&2
  fail "$1: processes outlived loomrun"
}

# Waits until `count` processes run `$sleeper`, that is, every rank is up.
wait_for_sleepers() {
  local count=$1
  for _ in $(seq 100); do
    [ "$(pgrep -fc "^$sleeper")" -ge "$count" ] && return 0
    sleep 0.1
  done
  fail "ranks did not start"
}

# Waits (bounded) for a background loomrun and sets $rc to its exit status.
wait_bounded() {
  local pid=$1
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "loomrun $pid still running after 15 s"
  wait "$pid"
  rc=$?
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# --- every rank gets its identity -------------------------------------------
out=$(timeout 60 "$LOOMRUN" -n 3 sh -c \
  'echo $LOOM_RANK $LOOM_WORLD_SIZE $LOOM_LOCAL_RANK $LOOM_LOCAL_SIZE' | sort)
[ "$out" = $'0 3 0 3\n1 3 1 3\n2 3 2 3' ] || fail "rank environment: got '$out'"
expect_no_orphans "environment"

# --- one unique id, 256 hex digits, shared by all ranks ----------------------
ids=$(timeout 60 "$LOOMRUN" -n 4 sh -c 'echo "$LOOM_UNIQUE_ID"' | sort -u)
[ "$(echo "$ids" | wc -l)" = 1 ] || fail "ranks saw different unique ids: $ids"
[[ "$ids" =~ ^[0-9a-f]{256}$ ]] || fail "LOOM_UNIQUE_ID is not 256 hex digits: '$ids'"
expect_no_orphans "unique id"

# --- a failing rank sets the exit status and takes the others down -----------
start=$(now_ms)
timeout 60 "$LOOMRUN" -n 3 sh -c \
  'if [ "$LOOM_RANK" = 1 ]; then exit 3; fi; exec '"$sleeper"' 100' 2>"$work/err"
rc=$?
[ "$rc" = 3 ] || fail "exit 3 on rank 1: loomrun returned $rc"
(($(now_ms) - start < 10000)) || fail "exit 3: the sleeping ranks were not killed"
grep -q "loomrun: rank 1 exited with code 3" "$work/err" || fail "exit 3: no message: $(cat "$work/err")"
expect_no_orphans "exit code"

# --- a rank killed by a signal: 128 + signal ---------------------------------
timeout 60 "$LOOMRUN" -n 3 sh -c \
  'if [ "$LOOM_RANK" = 2 ]; then kill -9 $$; fi; exec '"$sleeper"' 100' 2>"$work/err"
rc=$?
[ "$rc" = 137 ] || fail "SIGKILL on rank 2: loomrun returned $rc"
grep -q "loomrun: rank 2 killed by signal 9" "$work/err" || fail "SIGKILL: no message: $(cat "$work/err")"
expect_no_orphans "killed rank"

# --- the death is reported, not the survivor that exits because of it ---------
# Once rank 1 is up, rank 0 stops loomrun, lets rank 1 die of SIGKILL, exits with 3 itself (as a
# survivor does once it sees the death), and has loomrun resumed: loomrun then
# reaps both at once and must name rank 1.
timeout -k 5 60 "$LOOMRUN" -n 2 sh -c '
  if [ "$LOOM_RANK" = 0 ]; then
    for _ in $(seq 1000); do [ -e '"$work"'/up ] && break; sleep 0.01; done
    kill -STOP $PPID; touch '"$work"'/go; sleep 0.3
    setsid sh -c "sleep 0.3; kill -CONT $PPID" </dev/null >/dev/null 2>&1 &
    exit 3
  fi
  touch '"$work"'/up
  for _ in $(seq 1000); do [ -e '"$work"'/go ] && kill -9 $$; sleep 0.01; done
  exit 4' 2>"$work/err"
rc=$?
[ "$rc" = 137 ] || fail "death then survivor: loomrun returned $rc: $(cat "$work/err")"
grep -q "loomrun: rank 1 killed by signal 9" "$work/err" ||
  fail "death then survivor: rank 1 not named: $(cat "$work/err")"
expect_no_orphans "death then survivor"

# --- --keep-going: a death stops nobody; loomrun exits as the last rank did ---
timeout -k 5 60 "$LOOMRUN" --keep-going -n 3 sh -c \
  'if [ "$LOOM_RANK" = 2 ]; then kill -9 $$; fi; sleep 0.5; touch '"$work"'/kept.$LOOM_RANK' \
  2>"$work/err"
rc=$?
[ "$rc" = 0 ] || fail "keep-going: loomrun returned $rc: $(cat "$work/err")"
[ -e "$work/kept.0" ] && [ -e "$work/kept.1" ] || fail "keep-going: the survivors were stopped"
grep -q "loomrun: rank 2 killed by signal 9" "$work/err" || fail "keep-going: no report: $(cat "$work/err")"
grep -q "the other ranks run on" "$work/err" || fail "keep-going: no notice: $(cat "$work/err")"
timeout -k 5 60 "$LOOMRUN" --keep-going -n 2 sh -c \
  'if [ "$LOOM_RANK" = 1 ]; then exit 3; fi; sleep 0.3; exit 5' 2>"$work/err"
rc=$?
[ "$rc" = 5 ] || fail "keep-going: the last rank exited 5, loomrun returned $rc"
expect_no_orphans "keep-going"

# --- --respawn K: a failed rank is replaced (LOOM_REPLACEMENT=1), K times in
# all; every rank sees the same LOOM_GROW_DIR, which is gone afterwards ---
timeout -k 5 60 "$LOOMRUN" --respawn 1 -n 2 sh -c \
  'echo "$LOOM_GROW_DIR" > '"$work"'/dir.$LOOM_RANK.${LOOM_REPLACEMENT:-0}
   if [ "$LOOM_RANK" = 1 ] && [ -z "$LOOM_REPLACEMENT" ]; then exit 3; fi; sleep 0.3' \
  2>"$work/err"
rc=$?
[ "$rc" = 0 ] || fail "respawn: loomrun returned $rc: $(cat "$work/err")"
grep -q "starting a replacement for rank 1" "$work/err" || fail "respawn: none: $(cat "$work/err")"
[ -e "$work/dir.1.1" ] || fail "respawn: the replacement did not run with LOOM_REPLACEMENT=1"
grow_dir=$(cat "$work/dir.0.0")
[ -n "$grow_dir" ] && [ "$(cat "$work/dir.1.1")" = "$grow_dir" ] ||
  fail "respawn: LOOM_GROW_DIR differs or is empty ($grow_dir)"
[ ! -e "$grow_dir" ] || fail "respawn: $grow_dir outlived loomrun"
timeout -k 5 60 "$LOOMRUN" --respawn 2 -n 2 sh -c \
  'if [ "$LOOM_RANK" = 1 ]; then exit 3; fi; sleep 1' 2>"$work/err"
rc=$?
[ "$(grep -c "starting a replacement" "$work/err")" = 2 ] ||
  fail "respawn 2: not exactly two replacements: $(cat "$work/err")"
[ "$rc" = 0 ] || fail "respawn 2: rank 0 finished last with 0, loomrun returned $rc"
"$LOOMRUN" --respawn -1 -n 1 true 2>/dev/null && fail "respawn: a negative count was taken"
expect_no_orphans "respawn"

# The user story: the last rank dies, the survivors shrink and go on.
SURVIVOR="$BUILD/tests/loom_shrink_survivor"
[ -x "$SURVIVOR" ] || SURVIVOR=$(find "$BUILD" -maxdepth 3 -name loom_shrink_survivor -type f | head -1)
timeout -k 5 120 "$LOOMRUN" --keep-going -n 4 "$SURVIVOR" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 0 ] || fail "shrink under --keep-going: loomrun returned $rc: $(cat "$work/out" "$work/err")"
for r in 0 1 2; do
  grep -q "shrink_survivor rank $r: now rank $r of 3, sum 6" "$work/out" ||
    fail "shrink under --keep-going: rank $r: $(cat "$work/out")"
done
grep -q "loomrun: rank 3 killed by signal 9" "$work/err" || fail "shrink: death not reported"
expect_no_orphans "shrink under keep-going"

# --- a rank that ignores SIGTERM is killed after the grace period ------------
# Rank 0 fails only once rank 1 ignores SIGTERM (else SIGTERM could win the race).
start=$(now_ms)
timeout 60 "$LOOMRUN" -n 2 sh -c \
  'trap "" TERM
   if [ "$LOOM_RANK" = 0 ]; then
     while [ ! -e "$0/ignoring" ]; do sleep 0.05; done
     exit 4
   fi
   touch "$0/ignoring"; "$0/sleeper" 100; "$0/sleeper" 100' "$work" 2>/dev/null
rc=$?
[ "$rc" = 4 ] || fail "TERM-ignoring rank: loomrun returned $rc"
(($(now_ms) - start >= 4500)) || fail "TERM-ignoring rank: killed before the grace period"
(($(now_ms) - start < 12000)) || fail "TERM-ignoring rank was not SIGKILLed"
expect_no_orphans "term grace"

# --- --tag-output prefixes whole lines, partial last lines included ----------
timeout 60 "$LOOMRUN" -n 2 --tag-output sh -c \
  'echo "out $LOOM_RANK"; echo "err $LOOM_RANK" >&2; printf "tail $LOOM_RANK"' \
  >"$work/out" 2>"$work/err" || fail "tag-output run failed"
for r in 0 1; do
  grep -qx "\[$r\] out $r" "$work/out" || fail "tag-output: no '[$r] out $r' in: $(cat "$work/out")"
  grep -qx "\[$r\] tail $r" "$work/out" || fail "tag-output: no '[$r] tail $r' in: $(cat "$work/out")"
  grep -qx "\[$r\] err $r" "$work/err" || fail "tag-output: no '[$r] err $r' in: $(cat "$work/err")"
done
[ "$(grep -cv '^\[[01]\] ' "$work/out")" = 0 ] || fail "tag-output: untagged lines: $(cat "$work/out")"
[ "$(wc -l <"$work/out")" = 4 ] || fail "tag-output: expected 4 stdout lines: $(cat "$work/out")"
expect_no_orphans "tag-output"

# --- SIGTERM to loomrun reaches every rank -----------------------------------
"$LOOMRUN" -n 3 "$sleeper" 100 &
pid=$!
wait_for_sleepers 3
kill -TERM "$pid"
wait_bounded "$pid"
[ "$rc" = 143 ] || fail "SIGTERM forwarding: loomrun returned $rc"
expect_no_orphans "SIGTERM forwarding"

# --- what a rank started in the background goes with it ----------------------
"$LOOMRUN" -n 2 sh -c "$sleeper 100 & wait" &
pid=$!
wait_for_sleepers 2
kill -HUP "$pid"
wait_bounded "$pid"
[ "$rc" = 129 ] || fail "SIGHUP forwarding: loomrun returned $rc"
expect_no_orphans "grandchildren"

# --- loomrun killed outright: its ranks die with it ---------------------------
"$LOOMRUN" -n 3 "$sleeper" 100 &
pid=$!
wait_for_sleepers 3
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect_no_orphans "loomrun SIGKILLed"

# --- --timeout ----------------------------------------------------------------
start=$(now_ms)
timeout 60 "$LOOMRUN" -n 2 --timeout 1 "$sleeper" 100 2>"$work/err"
rc=$?
[ "$rc" = 124 ] || fail "--timeout: loomrun returned $rc"
(($(now_ms) - start < 10000)) || fail "--timeout took too long"
grep -q "timed out" "$work/err" || fail "--timeout: no message: $(cat "$work/err")"
expect_no_orphans "timeout"

# --- a program that does not exist ---------------------------------------------
timeout 60 "$LOOMRUN" -n 2 "$work/no-such-program" 2>"$work/err"
rc=$?
[ "$rc" = 127 ] || fail "missing program: loomrun returned $rc"
grep -q "loomrun: cannot run '$work/no-such-program': No such file or directory" "$work/err" ||
  fail "missing program: wrong message: $(cat "$work/err")"
expect_no_orphans "missing program"

# --- bad usage ------------------------------------------------------------------
for args in "true" "-n 0 true" "-n 2" "-n 2 --no-such-flag true" "-n 2 --timeout 0 true"; do
  # shellcheck disable=SC2086
  timeout 60 "$LOOMRUN" $args >/dev/null 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "usage error '$args': loomrun returned $rc"
done

# --- --bind-to: each rank on a core of its own, like mpirun ------------------
# The reference is sysfs (package and core id of each CPU), not hwloc.
expand_cpus() {  # "0-2,5" -> "0 1 2 5"
  local part out=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done
  echo "${out[@]}"
}
core_of() {  # a core is named by the list of its CPUs (core ids repeat across dies)
  local t=/sys/devices/system/cpu/cpu$1/topology
  if [ -r "$t/core_cpus_list" ]; then cat "$t/core_cpus_list"; else cat "$t/thread_siblings_list"; fi
}
cores_in() {  # the distinct cores of a CPU list
  local cpu
  for cpu in $(expand_cpus "$1"); do core_of "$cpu"; done | sort -u
}
own_list=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)
ncores=$(cores_in "$own_list" | wc -l)
ncpus=$(expand_cpus "$own_list" | wc -w)
# rank_lists N ARGS...: each rank's CPU list, one line per rank, rank order.
rank_lists() {
  local n=$1
  shift
  timeout 60 "$LOOMRUN" -n "$n" "$@" sh -c \
    'echo "$LOOM_RANK $(awk "/Cpus_allowed_list/ {print \$2}" /proc/self/status)"' |
    sort -n | cut -d' ' -f2
}
lists=$(rank_lists 1 --bind-to core) || fail "--bind-to core -n 1 returned $?"
[ "$(cores_in "$lists")" = "$(cores_in "$own_list")" ] ||
  fail "--bind-to core: one rank should have every core, not '$lists'"
lists=$(rank_lists 1 --bind-to none)
[ "$lists" = "$own_list" ] || fail "--bind-to none: rank 0 on '$lists', loomrun on '$own_list'"
if [ "$ncores" -ge 2 ]; then
  # Two ranks: half the cores each (rounded down), none shared.
  mapfile -t per_rank < <(rank_lists 2)
  both=$( (cores_in "${per_rank[0]}"; cores_in "${per_rank[1]}") | sort)
  [ "$(cores_in "${per_rank[0]}" | wc -l)" = $((ncores / 2)) ] &&
    [ "$(cores_in "${per_rank[1]}" | wc -l)" = $((ncores / 2)) ] &&
    [ "$(uniq <<<"$both" | wc -l)" = "$(wc -l <<<"$both")" ] ||
    fail "two ranks on $ncores cores should each have $((ncores / 2)) of their own: ${per_rank[*]}"
  # Only the first CPU is loomrun's: one core, so two ranks stay unbound, on it.
  first=$(expand_cpus "$own_list" | cut -d' ' -f1)
  lists=$(taskset -c "$first" "$LOOMRUN" -n 2 sh -c \
    'awk "/Cpus_allowed_list/ {print \$2}" /proc/self/status' | sort -u)
  [ "$lists" = "$first" ] || fail "under taskset -c $first the ranks ran on '$lists'"
else
  echo "loomrun_test: one core only; the two-rank binding cases not run"
fi
# Two hardware threads of one core (an hwloc synthetic machine over CPUs 0
# and 1): ranks outnumber cores but not CPUs, so each gets a CPU.
own_cpus=" $(expand_cpus "$own_list") "
if [[ $own_cpus == *" 0 "* && $own_cpus == *" 1 "* ]]; then
  mapfile -t per_rank < <(HWLOC_COMPONENTS=synthetic,stop HWLOC_SYNTHETIC="core:1 pu:2" rank_lists 2)
  [ "${per_rank[*]}" = "0 1" ] ||
    fail "two ranks on one core of two CPUs should get a CPU each: ${per_rank[*]}"
else
  echo "loomrun_test: CPUs 0 and 1 are not loomrun's; the hardware-thread case not run"
fi
# hwloc that cannot read the machine: `auto` warns and launches unbound,
# `core` fails.
lists=$(HWLOC_COMPONENTS=stop rank_lists 2 2>"$work/err" | sort -u)
[ "$lists" = "$own_list" ] && grep -q "warning: ranks not bound" "$work/err" ||
  fail "auto without hwloc should warn and leave ranks unbound: '$lists' $(cat "$work/err")"
HWLOC_COMPONENTS=stop timeout 60 "$LOOMRUN" -n 2 --bind-to core true 2>"$work/err"
rc=$?
[ $rc = 1 ] && grep -q "cannot bind ranks to cores" "$work/err" ||
  fail "--bind-to core without hwloc returned $rc: $(cat "$work/err")"
# More ranks than CPUs: unbound, and `core` is bad usage.
over=$((ncpus + 1))
lists=$(rank_lists "$over" | sort -u)
[ "$lists" = "$own_list" ] || fail "$over ranks on $ncpus CPUs should stay unbound: '$lists'"
timeout 60 "$LOOMRUN" -n "$over" --bind-to core true 2>"$work/err"
rc=$?
[ $rc = 2 ] && grep -q "$over ranks but only $ncpus CPUs" "$work/err" ||
  fail "--bind-to core with $over ranks on $ncpus CPUs returned $rc: $(cat "$work/err")"
timeout 60 "$LOOMRUN" -n 1 --bind-to socket true 2>"$work/err"
rc=$?
[ $rc = 2 ] || fail "--bind-to socket returned $rc: $(cat "$work/err")"

# --- --version and --help ------------------------------------------------------
version=$(timeout 60 "$LOOMRUN" --version) || fail "--version returned $?"
[[ $version =~ ^loomrun\ \(Loom\ [0-9]+\.[0-9]+\.[0-9]+\)$ ]] || fail "--version printed '$version'"
timeout 60 "$LOOMRUN" --help >"$work/help" || fail "--help returned $?"
grep -q "^usage: loomrun -n N .*prog \[args...\]" "$work/help" ||
  fail "--help has no usage line with the program: $(head -3 "$work/help")"
timeout 60 "$LOOMRUN" >/dev/null 2>"$work/err"
grep -q "prog \[args...\]" "$work/err" || fail "a usage error shows no usage line: $(cat "$work/err")"

# --- a real Loom job rendezvouses through loomrun (when loom_perf is built) ----
perf="$BUILD/perf/loom_perf"
if [ -x "$perf" ]; then
  timeout 300 "$LOOMRUN" -n 2 --timeout 240 "$perf" allreduce -b 8 -e 1K -f 4 -c 1 -n 2 -w 1 \
    >"$work/out" 2>&1 || fail "loom_perf through loomrun failed: $(cat "$work/out")"
  expect_no_orphans "loom_perf"
else
  echo "loomrun_test: $perf not built; real-job case not run"
fi

echo "loomrun_test: all cases passed"
