#!/usr/bin/env bash
# clang-tidy (the repo's .clang-tidy) over every C++ source of the library,
# tools, trainer and benchmarks, from the build's compile_commands.json; fails
# on any warning. Usage: scripts/lint.sh [build-dir] (default: build).
#
# Not linted: CUDA sources (clang 14 cannot read nvcc's flags), tests (gtest's
# macros), and three files only GCC compiles: target_clones on a template
# (compression/int8_codec.cc), a cpu-feature builtin clang 14 does not know
# (base/math/reducer_avx2.cc) and _Float16 on x86-64 (src/nccl_compat/scale.cc).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${JOBS:-2}
database="$build/compile_commands.json"
if [[ ! -f $database ]]; then
  echo "lint: $database is missing; run 'make build' first" >&2
  exit 2
fi
runner=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
if [[ -z $runner ]]; then
  echo "lint: run-clang-tidy not found (Debian package clang-tidy; scripts/install-deps.sh)" >&2
  exit 2
fi
root=$(pwd)
mapfile -t files < <(python3 - "$database" "$root" <<'PY'
import json, sys
database, root = sys.argv[1], sys.argv[2]
skip = {"compression/int8_codec.cc", "base/math/reducer_avx2.cc", "src/nccl_compat/scale.cc"}
dirs = ("base/", "src/", "collectives/", "transports/", "compression/", "tools/", "trainer/", "perf/")
seen = set()
for entry in json.load(open(database)):
    path = entry["file"]
    if not path.startswith(root + "/"):
        continue
    rel = path[len(root) + 1:]
    if rel.endswith(".cc") and rel.startswith(dirs) and rel not in skip and rel not in seen:
        seen.add(rel)
        print(path)
PY
)
echo "lint: clang-tidy on ${#files[@]} files, $jobs at a time"
start=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# run-clang-tidy takes regular expressions: anchor each path.
patterns=()
for f in "${files[@]}"; do patterns+=("^$(printf '%s' "$f" | sed 's/[.[\*^$()+?{|]/\\&/g')\$"); done
status=0
"$runner" -p "$build" -j "$jobs" -quiet "${patterns[@]}" >"$log" 2>&1 || status=$?
warnings=$(grep -E '(warning|error): ' "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u || true)
if [[ $status -ne 0 || -n $warnings ]]; then
  echo "$warnings"
  [[ -n $warnings ]] || tail -40 "$log"
  echo "lint: FAILED ($(printf '%s\n' "$warnings" | grep -c . || true) findings, $((SECONDS - start)) s)" >&2
  exit 1
fi
echo "lint: clean ($((SECONDS - start)) s)"
