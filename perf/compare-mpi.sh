#!/usr/bin/env bash
# Loom vs Open MPI, float sum all-reduce, 2 and 4 ranks on this machine, back to back.
# Prints one table per rank count: times, bus bandwidths and their ratios, with the
# single-thread memcpy bandwidth as the ceiling a host all-reduce's copies run into.
#
#   perf/compare-mpi.sh [--max 256M] [--min 8] [--iters 20] [--warmup 15] [--ranks "2 4"]
#                       [--runs 1] [--registered] [--out FILE] [--csv-dir DIR]
# 15 warm-up iterations: Loom's first 12 rounds of a size try two ways in turn
# where it learns one (arena stores, the two-rank sum; docs/architecture.md).
# --runs N runs each side N times, alternating, and keeps each side's best time
# per size (the machine is shared: single runs move by +-30 %).
# --registered adds a third side: loom_perf -R 1, whose buffers come from
# loomMemAlloc and are registered, so ranks read each other's in place.
# --csv-dir keeps each side's CSV (loom_N.csv, mpi_N.csv, loomreg_N.csv) and
# the ceiling (memcpy.txt) for perf/plot_compare.py.
# Binaries come from $BUILD_DIR (default ./build): loomrun, perf/loom_perf, perf/mpi_perf.
set -euo pipefail

max=256M
min=8
iters=20
warmup=15
ranks="2 4"
runs=1
out=""
csv_dir=""
registered=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max) max="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --csv-dir) csv_dir="$2"; shift 2 ;;
    --registered) registered=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "compare-mpi.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

source "$(dirname "$0")/perf-common.sh"
perf_binaries compare-mpi.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
report="$work/report.txt"

ceiling="$("$loom_perf" --memcpy | awk '/^memcpy_GBps/ {print $2}')"
{
  echo "# Loom vs Open MPI: float sum all-reduce, sizes $min..$max, $iters iters ($warmup warmup)," \
    "best of $runs run(s) per side"
  echo "# host: $(hostname), $(nproc) cores, $(uname -r)"
  echo "# MPI side only: GLIBC_TUNABLES=$mpi_tunables"
  echo "#   because Open MPI allocates a message-sized temporary per call and glibc would"
  echo "#   mmap/munmap it on every call (page faults unrelated to communication)."
  echo "# memcpy ceiling (1 thread, 64 MiB): $ceiling GB/s"
  echo "# cache-line round trip between two processes: $(round_trip) us at the start" \
    "(on a VM it moves with where the vCPUs sit; docs/performance.md, Arena stores)"
} | tee "$report"

common=(allreduce -b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" -d float -o sum -c 1)
status=0
for n in $ranks; do
  loom_csv="$work/loom_$n.csv"
  mpi_csv="$work/mpi_$n.csv"
  for ((run = 1; run <= runs; ++run)); do
    echo "# run $run/$runs: loom_perf under loomrun -n $n ..." >&2
    if ! "$loomrun" -n "$n" "$loom_perf" "${common[@]}" --csv "$work/loom_$n.run$run" \
        >"$work/loom_$n.log" 2>&1; then
      echo "compare-mpi.sh: loom_perf with $n ranks failed:" >&2
      tail -20 "$work/loom_$n.log" >&2
      status=1
    fi
    if ((registered)) && ! "$loomrun" -n "$n" "$loom_perf" "${common[@]}" -R 1 \
        --csv "$work/loomreg_$n.run$run" >"$work/loomreg_$n.log" 2>&1; then
      echo "compare-mpi.sh: loom_perf -R 1 with $n ranks failed:" >&2
      tail -20 "$work/loomreg_$n.log" >&2
      status=1
    fi
    echo "# run $run/$runs: mpi_perf under mpirun -np $n ..." >&2
    if ! GLIBC_TUNABLES="$mpi_tunables" mpirun -np "$n" --allow-run-as-root --oversubscribe \
        --bind-to none "$mpi_perf" "${common[@]}" --csv "$work/mpi_$n.run$run" \
        >"$work/mpi_$n.log" 2>&1; then
      echo "compare-mpi.sh: mpi_perf with $n ranks failed:" >&2
      tail -20 "$work/mpi_$n.log" >&2
      status=1
    fi
  done
  # Each side's best run per size (the lowest time); a wrong value in any run counts.
  for side in loom mpi loomreg; do
    ls "$work/${side}_$n".run* >/dev/null 2>&1 || continue
    cat "$work/${side}_$n".run* 2>/dev/null | awk -F, -v OFS=, '
      $1 !~ /^[0-9]+$/ { if (!header) header = $0; next }
      { wrong[$1] += $5; if (!($1 in best) || $2 < t[$1]) { best[$1] = $0; t[$1] = $2 } }
      END {
        if (header) print header
        for (s in best) { split(best[s], f, ","); f[5] = wrong[s]; print f[1], f[2], f[3], f[4], f[5] }
      }' | sort -t, -k1,1n >"$work/${side}_$n.csv"
  done
  [[ -s "$loom_csv" && -s "$mpi_csv" ]] || continue
  {
    echo
    echo "# $n ranks (busbw factor 2(n-1)/n; ratio > 1 means Loom is better for busbw, < 1 for time)"
    # Join the CSVs on size; a size Loom or MPI did not measure is left out.
    # The registered side (--registered) comes first, when there is one.
    reg_csv="$work/loomreg_$n.csv"
    [[ -s "$reg_csv" ]] || { reg_csv="$work/no_loomreg.txt"; echo header >"$reg_csv"; }
    awk -F, -v ceiling="$ceiling" -v reg="$registered" '
      FNR == 1 { file++; next }
      file == 1 { rb[$1] = $4; rw[$1] = $5; next }
      file == 2 { lt[$1] = $2; lb[$1] = $4; lw[$1] = $5; next }
      ($1 in lt) {
        br = ($4 > 0) ? lb[$1] / $4 : 0
        tr = ($2 > 0) ? lt[$1] / $2 : 0
        printf "%12s %12.2f %12.2f %11.3f %11.3f %9.2f %9.2f %7s",
               $1, lt[$1], $2, lb[$1], $4, br, tr, lw[$1] "/" $5
        if (reg) printf " %11.3f %9.2f %6s", rb[$1], ($4 > 0) ? rb[$1] / $4 : 0, rw[$1]
        printf "\n"
      }
      BEGIN {
        printf "%12s %12s %12s %11s %11s %9s %9s %7s", "size(B)", "loom(us)", "mpi(us)",
               "loom_busbw", "mpi_busbw", "bw_ratio", "t_ratio", "wrong"
        if (reg) printf " %11s %9s %6s", "reg_busbw", "reg_ratio", "wrong"
        printf "\n"
      }
      END { printf "# busbw ceiling: memcpy %s GB/s\n", ceiling }
    ' "$reg_csv" "$loom_csv" "$mpi_csv"
  } | tee -a "$report"
  # A wrong result on either side fails the run, like the perf binaries themselves.
  checked=("$loom_csv" "$mpi_csv")
  [[ -s "$work/loomreg_$n.csv" ]] && checked+=("$work/loomreg_$n.csv")
  if awk -F, 'FNR > 1 && $5 != 0 { bad = 1 } END { exit bad ? 0 : 1 }' "${checked[@]}"; then
    echo "compare-mpi.sh: wrong results with $n ranks (see the wrong column)" >&2
    status=1
  fi
done
echo "# cache-line round trip between two processes: $(round_trip) us at the end" | tee -a "$report"

if [[ -n "$csv_dir" ]]; then
  mkdir -p "$csv_dir"
  cp "$work"/*.csv "$csv_dir"/ 2>/dev/null || true
  echo "$ceiling" >"$csv_dir/memcpy.txt"
fi
if [[ -n "$out" ]]; then
  mkdir -p "$(dirname "$out")"
  cp "$report" "$out"
fi
exit "$status"
