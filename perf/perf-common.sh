# Shared by perf/compare-mpi.sh and perf/perf-guard.sh (sourced, not run).
#
# perf_binaries NAME: sets loomrun, loom_perf and mpi_perf from $BUILD_DIR
# (default ./build) and exits 2, naming NAME, when one of them or mpirun is
# missing.
perf_binaries() {
  local name="$1"
  local build="${BUILD_DIR:-./build}"
  loomrun="$build/loomrun"
  loom_perf="$build/perf/loom_perf"
  mpi_perf="$build/perf/mpi_perf"
  local bin
  for bin in "$loomrun" "$loom_perf" "$mpi_perf"; do
    [[ -x "$bin" ]] || { echo "$name: $bin not found; build first or set BUILD_DIR" >&2; exit 2; }
  done
  command -v mpirun >/dev/null ||
    { echo "$name: mpirun not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
}

# Open MPI allocates a message-sized temporary per call; glibc would mmap and
# munmap it on every large call (page faults that have nothing to do with
# communication). These tunables keep it in the heap: MPI at its best.
mpi_tunables="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

# round_trip: microseconds a cache line takes between two processes and back
# (loom_perf --pingpong). On a VM it moves with where the vCPUs sit, and with
# it every figure (docs/performance.md, Arena stores). Needs perf_binaries.
round_trip() { "$loom_perf" --pingpong | awk '/^pingpong_us/ {print $2}'; }
