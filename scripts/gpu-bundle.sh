#!/usr/bin/env bash
# Packs a CUDA build of Loom into a folder that runs on a GPU machine which has
# the NVIDIA driver and a CUDA 13 runtime but none of Loom's Debian libraries
# (hwloc, fmt, pugixml, UCX, OpenMPI, ...): the lent H200 machines are such, and
# cannot install packages. The GPU programs are built here (where the toolkit
# compiles sm_90) and scripts/gpu-check.sh runs them there with
# GPU_CHECK_BUNDLE=<folder>.
#   scripts/gpu-bundle.sh [build-dir] [bundle-dir]    (default build-gpu, .gpu-bundle)
# The bundle holds build/ (the programs, Loom's shared objects and the GPU
# tests' CTest file, at their places in the build tree), lib/ (every shared library they
# load that is not the C library, libstdc++, or the driver's) and paths.env
# (where the build tree was, so gpu-check.sh can point the CTest files at the
# bundle).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build-gpu}" && pwd)
BUNDLE=${2:-$ROOT/.gpu-bundle}

programs=(
  tests/gpu/loom_gpu_tests tests/gpu/loom_gpu_collective_tests tests/gpu/loom_gpu_ipc_check
  loomrun perf/loom_perf perf/gpu/loom_gpu_bench tests/nccl_compat/nccl_compat_device_buffers
)
for p in "${programs[@]}"; do
  [ -x "$BUILD/$p" ] || { echo "gpu-bundle: $BUILD/$p is missing (build it first)" >&2; exit 1; }
done

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/build" "$BUNDLE/lib"
for p in "${programs[@]}"; do
  mkdir -p "$BUNDLE/build/$(dirname "$p")"
  cp "$BUILD/$p" "$BUNDLE/build/$p"
done
# Loom's own shared objects keep their place (the shim is found by its path).
# Not the emulated CUDA runtime (tests/emulated_cuda): beside the real driver
# it would stand in for it.
(cd "$BUILD" && find . -name '*.so*' -not -path './_deps/*' -not -path '*/CMakeFiles/*' \
  -not -path './emulated_cuda/*' -print0 | while IFS= read -r -d '' so; do
    mkdir -p "$BUNDLE/build/$(dirname "$so")"
    cp -P "$so" "$BUNDLE/build/$so"
  done)
# The GPU tests' CTest file (gpu-check.sh runs ctest in that folder).
cp "$BUILD/tests/gpu/CTestTestfile.cmake" "$BUNDLE/build/tests/gpu/"

# Libraries the GPU machine lacks: what ldd resolves, less the C library's own,
# the C++ runtime (the GPU machine's is newer) and the driver.
system_lib='^(linux-vdso|libc\.|libm\.|libdl\.|librt\.|libpthread\.|ld-linux|libstdc\+\+|libgcc_s|libcuda\.)'
find "$BUNDLE/build" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
  xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ "$name" =~ $system_lib ]] && continue
    [[ "$path" == "$BUILD"/* ]] && continue
    cp -L "$path" "$BUNDLE/lib/$name"
  done
# Every Loom shared object in lib/ as well: the programs' run paths name the
# build tree of this machine. Not the NCCL shim: in the library path it would
# stand in for the real NCCL of every program (torch_check.py preloads it).
find "$BUNDLE/build" -name '*.so*' -not -name 'libnccl*' -exec cp -P {} "$BUNDLE/lib/" \;

printf 'BUNDLE_BUILT_IN=%s\nBUNDLE_SOURCE=%s\n' "$BUILD" "$ROOT" > "$BUNDLE/paths.env"
echo "gpu-bundle: $(du -sh "$BUNDLE" | cut -f1) in $BUNDLE"
