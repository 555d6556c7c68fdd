#!/usr/bin/env bash
# The installed package, used as the README says: installs the build into a
# prefix outside the tree; builds the README's C++ example with
# find_package(loom) (no C++ standard of its own) and with the README's
# pkg-config line; runs both without LD_LIBRARY_PATH, alone (one rank) and
# under the installed loomrun (two ranks); then starts every installed
# program from the prefix.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
fail() {
  echo "consumer_test: FAIL: $*" >&2
  exit 1
}

prefix="$work/prefix"
cmake --install "$BUILD" --prefix "$prefix" > "$work/install.log"
libdir=$(ls -d "$prefix"/lib*/ | head -1)
bin="$prefix/bin"

# The README's example, verbatim: the first cpp block under "## Example (C++)".
awk '/^## Example \(C\+\+\)/ { inside = 1 } inside && /^```cpp/ { code = 1; next }
     code && /^```/ { exit } code' "$SRC/README.md" > "$work/example.cc"
[[ -s $work/example.cc ]] || fail "no C++ example found in README.md"

cmake -S "$SRC/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DLOOM_EXAMPLE="$work/example.cc" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log" 2>&1 || fail "find_package build: $(tail -20 "$work/build.log")"
timeout 60 "$work/cmake-build/consumer" || fail "find_package consumer (2 ranks as threads)"

# Started by hand the example is one rank; under loomrun, two.
expect_example() {  # <label> <command...>
  local label=$1
  shift
  timeout 120 "$@" > "$work/out" 2>&1 || fail "$label exited $?: $(cat "$work/out")"
}
expect_example "example alone" "$work/cmake-build/example"
grep -q "rank 0 of 1: grad\[0\] = 1" "$work/out" || fail "example alone: $(cat "$work/out")"
expect_example "example under loomrun" "$bin/loomrun" -n 2 "$work/cmake-build/example"
[[ $(grep -c "of 2: grad\[0\] = 3" "$work/out") == 2 ]] || fail "example x2: $(cat "$work/out")"

# The README's pkg-config line, run without LD_LIBRARY_PATH (loom.pc carries an rpath).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
(cd "$work" && g++ -std=c++20 example.cc $(pkg-config --cflags --libs loom) -o pc-example) ||
  fail "the README's pkg-config line did not build the example"
expect_example "pkg-config example" "$work/pc-example"
grep -q "rank 0 of 1" "$work/out" || fail "pkg-config example: $(cat "$work/out")"

# Every installed program finds its libraries and starts.
for program in "$bin"/*; do
  if ldd "$program" | grep -q "not found"; then
    fail "$(basename "$program"): $(ldd "$program" | grep "not found")"
  fi
done
expect_example "loomrun --version" "$bin/loomrun" --version
expect_example "loom-topo --help" "$bin/loom-topo" --help
expect_example "loom-train --help" "$bin/loom-train" --help
expect_example "loom_perf" "$bin/loom_perf" allreduce -b 8 -e 1K -c 1 -n 1 -w 0
grep -q "Out of bounds values : 0 OK" "$work/out" || fail "loom_perf: $(cat "$work/out")"
# nccl-tests' names and flags, as a cluster's scripts call them.
for name in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf \
  alltoall_perf sendrecv_perf gather_perf scatter_perf; do
  expect_example "$name" "$bin/loomrun" -n 2 "$bin/$name" -b 8 -e 1K -f 2 -g 1 -c 1 -n 1 -w 0
  grep -q "Out of bounds values : 0 OK" "$work/out" || fail "$name: $(cat "$work/out")"
done
# A flag that means nothing here is refused, saying what to do; one taken but
# not honoured says so in the header.
if "$bin/all_reduce_perf" -g 2 -b 8 -e 8 > "$work/out" 2>&1; then fail "-g 2 was accepted"; fi
grep -q -- "use -t 2" "$work/out" || fail "-g 2 refused without saying why: $(cat "$work/out")"
expect_example "-m 4" "$bin/all_reduce_perf" -b 8 -e 8 -m 4 -n 1 -w 0
grep -q "^# note: -m 4: each operation is timed on its own" "$work/out" ||
  fail "-m 4 left no note: $(cat "$work/out")"
echo "consumer_test: README example built both ways and ran (1 and 2 ranks); every installed program starts"
