#!/usr/bin/env bash
# Convergence with compressed data-parallel gradients (issue 8's benchmark):
# loom-train on the demo model with dp 2, once per --compress setting and seed,
# then a table of the final loss, the mean of the last 20 steps (the less noisy
# figure) and the DP bytes sent per step, each as a mean over the seeds.
#
#   perf/trainer-compression.sh [--steps 200] [--seeds "1337 7 2024"] [--out DIR]
#                               [--compress "none int8 topk:0.1 topk:0.01"]
# Binaries from $BUILD_DIR (default ./build). About 30 s per run on 2 cores.
set -euo pipefail
steps=200
seeds="1337 7 2024"
settings="none int8 topk:0.1 topk:0.01"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --compress) settings="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "trainer-compression.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build="$(realpath "${BUILD_DIR:-./build}")"
train="$build/trainer/loom-train"
run="$build/loomrun"
[[ -x "$train" && -x "$run" ]] || { echo "trainer-compression.sh: build loom-train and loomrun first" >&2; exit 2; }
out="${out:-$(mktemp -d)}"
mkdir -p "$out"
model=(--layers 4 --d-model 128 --heads 4 --seq 64 --batch 16 --lr 2e-3 --steps "$steps")

for setting in $settings; do
  for seed in $seeds; do
    csv="$out/${setting//:/_}_$seed.csv"
    "$run" -n 2 "$train" --dp 2 "${model[@]}" --seed "$seed" --compress "$setting" --quiet \
      --log "$csv" > /dev/null
  done
done

# Final loss, last-20 mean and DP bytes per step of one log.
summary() {
  awk -F, 'NR > 1 { loss[NR] = $2; bytes += $10; n++ }
           END { s = 0; for (i = NR - 19; i <= NR; i++) s += loss[i];
                 printf "%.6f %.6f %.1f\n", loss[NR], s / 20, bytes / n }' "$1"
}

echo "| --compress | final loss | last 20 steps | vs none (last 20) | DP bytes / step | less than none |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
base_last=""
base_bytes=""
for setting in $settings; do
  read -r final last bytes < <(
    for seed in $seeds; do summary "$out/${setting//:/_}_$seed.csv"; done |
      awk '{ f += $1; l += $2; b += $3; n++ } END { printf "%.6f %.6f %.1f\n", f / n, l / n, b / n }')
  if [[ -z "$base_last" ]]; then base_last=$last; base_bytes=$bytes; fi
  awk -v s="$setting" -v f="$final" -v l="$last" -v b="$bytes" -v bl="$base_last" -v bb="$base_bytes" \
    'BEGIN { printf "| %s | %.3f | %.3f | %+.1f %% | %d | %.1fx |\n", s, f, l, 100 * (l / bl - 1), b, bb / b }'
done
echo
echo "Means over seeds $seeds; $steps steps; logs in $out (perf/plot_loss.py draws them)."
