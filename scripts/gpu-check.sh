#!/usr/bin/env bash
# One command for a GPU machine: build Loom with CUDA, run the GPU tests
# (ctest -L gpu, the staged and the direct device paths), run loom_perf on
# device buffers (all-reduce, all-gather, reduce-scatter; 2, 4 and 8 ranks on
# one GPU), the kernel benchmarks (loom_gpu_bench, torch.topk beside Loom's
# top-k when torch is here) and PyTorch on the NCCL shim, keeping the logs under
# $OUT when it is set.
#   scripts/gpu-check.sh [build-dir]      (default build-gpu; JOBS=16 by default)
#   GPU_CHECK_PHASES="build test" scripts/gpu-check.sh    then    GPU_CHECK_PHASES=perf ...
#   GPU_CHECK_BUNDLE=.gpu-bundle scripts/gpu-check.sh    (built elsewhere by scripts/gpu-bundle.sh,
#                                      for a GPU machine without Loom's Debian libraries)
# Phases (default all three): build, test, perf. A device call is cut at 10
# minutes, so on a warm machine the phases can go in two calls; build-gpu/ is
# ignored by git and stays between them. summary.txt gets a time stamp per
# phase, so a run that was cut shows where.
# Fails (exit 1) when there is no usable CUDA device, when the driver is too old
# for CUDA 13 binaries, when the build fails, or when any GPU test fails or is
# skipped: on a GPU machine a skip is a failure.
# GPU_CHECK_EMULATED=1 rehearses the script on a machine without a GPU, on the
# emulated CUDA runtime (tests/emulated_cuda, docs/cuda.md): no driver checks,
# and without what only real kernels can run (gpu.kernels, loom_gpu_bench,
# torch). It checks the script and the host side of the paths, not the GPU.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-gpu}
JOBS=${JOBS:-16}
PHASES=${GPU_CHECK_PHASES:-build test perf}
# Seconds each GPU test may take before it counts as hung (the kernel path's
# failure mode is a stall until LOOM_TIMEOUT, and one stalled suite must not eat
# the others' time).
TEST_TIMEOUT=${GPU_CHECK_TEST_TIMEOUT:-240}
PERF_TIMEOUT=${GPU_CHECK_PERF_TIMEOUT:-120}
BUNDLE=${GPU_CHECK_BUNDLE:-}
if [ -n "$BUNDLE" ]; then
  BUNDLE=$(cd "$BUNDLE" && pwd)
  BUILD=$BUNDLE/build
  PHASES=${PHASES//build/}
  # The CTest files name the build tree the bundle was made from.
  # shellcheck source=/dev/null
  source "$BUNDLE/paths.env"
  find "$BUILD" -name CTestTestfile.cmake -exec sed -i -e "s#$BUNDLE_BUILT_IN#$BUILD#g" \
    -e "s#$BUNDLE_SOURCE#$ROOT#g" {} +
  export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# Logs go to $OUT when it is set, packed at the end into one archive beside
# summary.txt (a device call brings back only a few files).
LOGS=$BUILD/gpu-check-logs
mkdir -p "$LOGS"
if [ -n "${OUT:-}" ]; then
  pack_logs() {
    tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$LOGS" . 2> /dev/null || true
    cp "$LOGS/summary.txt" "$OUT/summary.txt" 2> /dev/null || true
  }
  trap pack_logs EXIT
fi

fail() {
  echo "gpu-check: FAILED: $*" | tee -a "$LOGS/summary.txt" >&2
  exit 1
}
stamp() { echo "$(date -u +%T) $*" >> "$LOGS/summary.txt"; }
# A failed check in the test and perf phases is noted and the rest still run
# (a device call is precious): the script fails at the end.
failures=0
soft_fail() {
  echo "gpu-check: FAILED: $*" | tee -a "$LOGS/summary.txt" >&2
  failures=$((failures + 1))
}
want() { [[ " $PHASES " == *" $1 "* ]]; }

EMULATED=${GPU_CHECK_EMULATED:-0}
echo "gpu-check: $(date -u +%FT%TZ) on $(hostname), phases: $PHASES" >> "$LOGS/summary.txt"
if ((EMULATED)); then
  stamp "EMULATED CUDA: a rehearsal of this script, not a GPU run"
  export LD_LIBRARY_PATH="$BUILD/emulated_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
command -v nvidia-smi > /dev/null || fail "no nvidia-smi: this machine has no NVIDIA driver"
nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1 || fail "nvidia-smi failed: no usable GPU (see nvidia-smi.txt)"
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
[[ "$driver" =~ ^[0-9]+ ]] || fail "cannot read the driver version (see nvidia-smi.txt)"
stamp "driver $driver"
((${driver%%.*} >= 580)) || fail "driver $driver is older than R580, which CUDA 13 binaries need"
fi
command -v nvcc > /dev/null || export PATH=/usr/local/cuda/bin:$PATH
command -v nvcc > /dev/null || fail "no nvcc: install the CUDA toolkit"
# Real kernels only: the emulated runtime cannot run them.
real_kernels=$((EMULATED ? 0 : 1))

if want build; then
stamp "build: start"
timeout 420 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLOOM_WITH_CUDA=ON \
  -DLOOM_BUILD_PERF=ON > "$LOGS/configure.log" 2>&1 || fail "configure (see configure.log)"
start=$(date +%s)
# Everything `ctest -L gpu` runs: the two-process tests need loomrun and loom_gpu_ipc_check.
timeout 420 cmake --build "$BUILD" -j"$JOBS" --target loom_gpu_tests loom_gpu_collective_tests \
  loom_gpu_ipc_check loomrun loom_perf loom_nccl nccl_compat_device_buffers loom_gpu_bench \
  loom_cuda_kernels \
  $( ((EMULATED)) && echo loom_emulated_kernels) \
  > "$LOGS/build.log" 2>&1 || fail "build (see build.log)"
stamp "build: $(( $(date +%s) - start )) s"
fi

if want test; then
stamp "test: start"

# One test at a time, each under its own deadline, every one run even after a
# failure. ctest exits 0 when a test is skipped, so the skip is looked for
# explicitly.
test_status=0
gpu_tests=$(cd "$BUILD/tests/gpu" && ctest -L gpu -N | awk '/Test +#/ {print $3}')
[ -n "$gpu_tests" ] || fail "ctest lists no GPU tests (was CUDA built?)"
for t in $gpu_tests; do
  [ "$t" = gpu.kernels ] && ((!real_kernels)) && continue
  log="$LOGS/ctest-$t.log"
  start=$(date +%s)
  if (cd "$BUILD/tests/gpu" && timeout "$TEST_TIMEOUT" ctest -R "^${t//./\\.}\$" --output-on-failure) > "$log" 2>&1 &&
      ! grep -q "Skipped" "$log" && grep -q "100% tests passed" "$log"; then
    stamp "test $t: passed ($(( $(date +%s) - start )) s)"
  else
    stamp "test $t: FAILED ($(( $(date +%s) - start )) s): $(grep -E "FAILED|Skipped|Timeout|tests passed" "$log" | head -3 | tr '\n' ' ')"
    test_status=1
    # A failed collective suite is run again test by test, to name what failed or stalled.
    case $t in
      gpu.collectives) triage_path=staged ;;
      gpu.collectives_direct) triage_path=direct ;;
      gpu.collectives_kernel) triage_path=kernel ;;
      *) triage_path="" ;;
    esac
    if [ -n "$triage_path" ]; then
      # The whole suite once more, with every thread's stack if it stalls.
      LOOM_CUDA_PATH=$triage_path LOOM_DEBUG=INFO "$ROOT/scripts/run-with-stacks.sh" "$TEST_TIMEOUT" \
        "$BUILD/tests/gpu/loom_gpu_collective_tests" > "$LOGS/stacks-$t.log" 2>&1 || true
      LOOM_CUDA_PATH=$triage_path LOOM_TIMEOUT=${GPU_CHECK_TRIAGE_LOOM_TIMEOUT:-20} \
        "$ROOT/scripts/gpu-test-each.sh" "$BUILD/tests/gpu/loom_gpu_collective_tests" \
        "$LOGS/triage-$t" "${GPU_CHECK_TRIAGE_TIMEOUT:-45}" > "$LOGS/triage-$t.txt" 2>&1 || true
      stamp "test $t, one by one: $(grep -c "^passed" "$LOGS/triage-$t.txt") passed," \
        "failed or hung: $(grep -E "^(FAILED|HUNG)" "$LOGS/triage-$t.txt" | awk '{print $3}' | tr '\n' ' ')"
    fi
  fi
done
((test_status == 0)) || soft_fail "GPU tests (see ctest-*.log)"

# gpu.collectives_direct and gpu.collectives_kernel passed; make sure it was
# their path that ran (each falls back to staging when the kernel plugin or a
# condition is missing): its INFO line must be in the log.
path_ran() {  # path, what its INFO line says
  LOOM_CUDA_PATH=$1 LOOM_DEBUG=INFO timeout 120 "$BUILD/tests/gpu/loom_gpu_collective_tests" \
    --gtest_filter='DeviceCollectivesLarge.*' > "$LOGS/$1-path.log" 2>&1 ||
    { soft_fail "LOOM_CUDA_PATH=$1 (see $1-path.log)"; return; }
  grep -q "$2" "$LOGS/$1-path.log" ||
    { soft_fail "LOOM_CUDA_PATH=$1 fell back to staging (see $1-path.log)"; return; }
  stamp "LOOM_CUDA_PATH=$1: ran"
}
path_ran direct "direct device path"
path_ran kernel "plan-walking kernel"

# An NCCL program on device buffers through the shim, two processes, staged
# and on the plan-walking kernel (issue 7 on the GPU without torch).
for path in staged kernel; do
  log="$LOGS/nccl-device-$path.log"
  # The shim's folder first: the program's run path names the build tree, and
  # a real libnccl.so.2 on the machine must not stand in for it.
  LD_LIBRARY_PATH="$BUILD/nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  SHIM_TEST_ID_FILE="$LOGS/nccl-id-$path" LOOM_CUDA_PATH=$path LOOM_DEBUG=INFO timeout 120 \
    "$BUILD/loomrun" -n 2 "$BUILD/tests/nccl_compat/nccl_compat_device_buffers" > "$log" 2>&1 ||
    { soft_fail "NCCL program on device buffers, $path (see $(basename "$log"))"; continue; }
  [ "$(grep -c "all values match" "$log")" = 2 ] ||
    { soft_fail "NCCL device program, $path: a rank did not finish"; continue; }
  grep -q "ready: " "$log" ||
    { soft_fail "NCCL device program, $path: did not run on Loom (no Loom INFO line)"; continue; }
  stamp "NCCL program on device buffers, $path: OK"
done
fi

if want perf; then
stamp "perf: start"

# Bandwidth on device buffers, every size checked once (-c 1), then timed; a
# wrong value fails. The staged path (through host memory) to 64 MiB, the
# direct path and the plan-walking kernel (the default) to 256 MiB.
perf_status=0
# perf_run LABEL LOG [VAR=value ...] -- LOOM_PERF_ARGS...: one checked loom_perf
# run; its average bus bandwidth, or FAILED, goes to the summary.
perf_run() {
  local label=$1 log=$2
  shift 2
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  if ! env "${vars[@]}" timeout "$PERF_TIMEOUT" "$BUILD/perf/loom_perf" "$@" --device -c 1 \
      > "$log" 2>&1 || ! grep -q "Out of bounds values : 0 OK" "$log"; then
    echo "perf $label: FAILED (see $(basename "$log"))" >> "$LOGS/summary.txt"
    perf_status=1
  else
    echo "perf $label: $(grep "Avg bus bandwidth" "$log")" >> "$LOGS/summary.txt"
  fi
}
for n in 2 4 8; do
  for coll in allreduce allgather reducescatter; do
    perf_run "$coll $n ranks" "$LOGS/perf-$coll-$n.txt" LOOM_CUDA_PATH=staged -- \
      "$coll" -t "$n" -b 8 -e 64M -f 8 -n 5 -w 1
  done
done
# path:channels (LOOM_NCHANNELS; 1 means the path's default).
for run in direct:1 kernel:1 kernel:8; do
  path=${run%%:*}
  channels=${run##*:}
  for n in 2 8; do
    perf_run "allreduce $n ranks $run" "$LOGS/perf-allreduce-$n-$path-c$channels.txt" \
      LOOM_CUDA_PATH="$path" LOOM_NCHANNELS="$channels" -- \
      allreduce -t "$n" -b 8 -e 256M -f 8 -n 5 -w 1
  done
done
# Small all-reduces on the kernel path by the ring (LOOM_ALGO=ring), against
# the tree the kernel path takes up to LOOM_TREE_MAX (the kernel:1 runs above).
for n in 4 8; do
  perf_run "allreduce $n ranks kernel ring small" "$LOGS/perf-allreduce-$n-kernel-ring-small.txt" \
    LOOM_CUDA_PATH=kernel LOOM_ALGO=ring -- allreduce -t "$n" -b 8 -e 64K -f 8 -n 20 -w 2
done
# Send/recv pairs on the plan-walking kernel (each rank to the next, in a group).
for n in 2 8; do
  perf_run "sendrecv $n ranks kernel" "$LOGS/perf-sendrecv-$n-kernel.txt" LOOM_CUDA_PATH=kernel -- \
    sendrecv -t "$n" -b 8 -e 256M -f 8 -n 5 -w 1
done
((perf_status == 0)) || soft_fail "loom_perf on device buffers (see perf-*.txt)"

if ((real_kernels)); then
# Kernel bandwidth beside the device's own D2D copy, and top-k beside torch.topk.
timeout 120 "$BUILD/perf/gpu/loom_gpu_bench" > "$LOGS/kernel-bench.txt" 2>&1 ||
  soft_fail "loom_gpu_bench (see kernel-bench.txt)"
grep -E "reduce fp32|int8|top-k" "$LOGS/kernel-bench.txt" | grep 268435456 >> "$LOGS/summary.txt" || true
set +e
timeout 120 python3 "$ROOT/perf/gpu/topk_vs_torch.py" > "$LOGS/topk-torch.txt" 2>&1
topk_status=$?
set -e
case $topk_status in
  0) echo "torch.topk 1 %: $(tail -1 "$LOGS/topk-torch.txt")" >> "$LOGS/summary.txt" ;;
  77) echo "torch.topk: SKIPPED ($(head -1 "$LOGS/topk-torch.txt"))" >> "$LOGS/summary.txt" ;;
  *) soft_fail "topk_vs_torch.py (see topk-torch.txt)" ;;
esac

# PyTorch's NCCL backend on Loom's shim (issue 7's proof), when torch is here.
shim="$BUILD/nccl/libnccl.so.2"
set +e
LD_PRELOAD="$shim" timeout 240 python3 "$ROOT/tests/nccl_compat/torch_check.py" \
  > "$LOGS/torch-check.log" 2>&1
torch_status=$?
set -e
case $torch_status in
  0) echo "torch on the shim: OK" >> "$LOGS/summary.txt" ;;
  77) echo "torch on the shim: SKIPPED ($(head -1 "$LOGS/torch-check.log"))" >> "$LOGS/summary.txt" ;;
  *) soft_fail "torch on the NCCL shim (see torch-check.log)" ;;
esac
fi
fi
((failures == 0)) || fail "$failures check(s) failed ($PHASES)"
stamp "gpu-check: OK ($PHASES)"
echo "gpu-check: OK ($PHASES)"
