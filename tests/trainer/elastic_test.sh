#!/usr/bin/env bash
# loom-train --elastic under loomrun --keep-going: a rank SIGKILLs itself at a
# given step (LOOM_TRAIN_KILL=rank:step); the survivors drop its data-parallel
# replica, redo that step and finish. Their final loss stays within 5 % of the
# uninterrupted run's. dp 4 (one replica of one rank lost), dp 2 x tp 2 (a
# replica of two ranks lost: its surviving rank leaves), and dp 2 x pp 2 with a
# random rank killed at a random step (seed printed; LOOM_FAULT_SEED repeats it).
# Under loomrun --respawn the world then grows back: dp 4 and dp 2 x tp 2 again
# take in a replacement (and, for tp 2, the broken replica's surviving rank);
# and dp 4 again when the first replacement dies as it joins.
set -euo pipefail
train=$1
loomrun=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LOOM_TIMEOUT=30

final_loss() { sed -n 's/.*loss [0-9.]* -> \([0-9.]*\) over \([0-9]*\) steps.*/\1 \2/p' "$1"; }

check_case() {  # check_case name kill "expected redo line" grid...
  local name=$1 kill=$2 redo=$3
  shift 3
  local launch=(--keep-going)
  [[ -n ${RESPAWN:-} ]] && launch=(--respawn "$RESPAWN")
  timeout 120 "$loomrun" -n 4 "$train" "$@" --steps 30 --quiet >"$tmp/straight" 2>&1 ||
    { cat "$tmp/straight"; echo "FAIL: $name: the uninterrupted run failed" >&2; exit 1; }
  if ! LOOM_TRAIN_KILL=$kill timeout 120 "$loomrun" "${launch[@]}" -n 4 "$train" "$@" --steps 30 \
    --quiet --elastic >"$tmp/elastic" 2>&1; then
    cat "$tmp/elastic"
    echo "FAIL: $name: the elastic run did not finish with 0" >&2
    exit 1
  fi
  grep -q "$redo" "$tmp/elastic" || { cat "$tmp/elastic"; echo "FAIL: $name: no '$redo'" >&2; exit 1; }
  # Only the injected faults kill: one rank, and the replacement with "joiner".
  local kills=1 killed
  [[ $kill == *joiner* ]] && kills=2
  killed=$(grep -c "killed by signal 9" "$tmp/elastic" || true)
  if [[ $killed != "$kills" ]]; then
    cat "$tmp/elastic"
    echo "FAIL: $name: $killed rank(s) killed, $kills injected" >&2
    exit 1
  fi
  read -r straight steps < <(final_loss "$tmp/straight")
  read -r elastic elasticSteps < <(final_loss "$tmp/elastic")
  [ "$elasticSteps" = 30 ] || { cat "$tmp/elastic"; echo "FAIL: $name: $elasticSteps steps" >&2; exit 1; }
  if ! awk -v a="$straight" -v b="$elastic" 'BEGIN { d = (a - b) / a; exit !(d < 0.05 && d > -0.05) }'; then
    cat "$tmp/elastic"
    echo "FAIL: $name: final loss $elastic vs $straight uninterrupted (over 5 %)" >&2
    exit 1
  fi
  echo "elastic_test: $name: final loss $elastic vs $straight uninterrupted;" \
    "$(grep -o 'rebuilt in [0-9]* ms' "$tmp/elastic")" \
    "$(grep -o 'grew back to .* ms' "$tmp/elastic" || true)"
}

# check_grown name "expected grow line": after check_case under RESPAWN.
check_grown() {
  grep -q "$2" "$tmp/elastic" || { cat "$tmp/elastic"; echo "FAIL: $1: no '$2'" >&2; exit 1; }
}

check_case "dp 4, rank 2 killed at step 10" 2:10 "redoing step 11 on 3 ranks (dp 3)" --dp 4
check_case "dp 2 x tp 2, rank 1 killed at step 10" 1:10 "redoing step 11 on 2 ranks (dp 1)" \
  --dp 2 --tp 2
grep -q "rank 0: its data-parallel replica lost a rank; it leaves" "$tmp/elastic" ||
  { cat "$tmp/elastic"; echo "FAIL: rank 0 did not leave with its broken replica" >&2; exit 1; }
# A random rank at a random step (LOOM_FAULT_SEED repeats a run).
seed=${LOOM_FAULT_SEED:-$RANDOM}
RANDOM=$seed
victim=$((RANDOM % 4))
step=$((RANDOM % 28 + 1))
echo "elastic_test: seed $seed: rank $victim killed at step $step of dp 2 x pp 2"
check_case "dp 2 x pp 2, rank $victim killed at step $step" "$victim:$step" \
  "redoing step $((step + 1)) on 2 ranks (dp 1)" --dp 2 --pp 2
# Growing back under loomrun --respawn.
RESPAWN=1 check_case "dp 4, rank 2 killed at step 10, respawned" 2:10 \
  "redoing step 11 on 3 ranks (dp 3)" --dp 4
check_grown "dp 4 respawned" "grew back to 4 ranks (dp 4)"
RESPAWN=1 check_case "dp 2 x tp 2, rank 1 killed at step 10, respawned" 1:10 \
  "redoing step 11 on 2 ranks (dp 1)" --dp 2 --tp 2
check_grown "dp 2 x tp 2 respawned" "grew back to 4 ranks (dp 2)"
# The replacement dies as it joins (LOOM_TRAIN_KILL=...,joiner): the members'
# grow fails, they agree to go on at dp 3, and the next replacement (the
# second respawn) is taken in at a later step.
RESPAWN=2 check_case "dp 4, rank 2 killed at step 10, its replacement killed joining" \
  2:10,joiner "redoing step 11 on 3 ranks (dp 3)" --dp 4
# The step of each depends on when the replacements start (later under the
# sanitizers), not on the fault: the grow back must come after the failure.
check_grown "dp 4, replacement lost joining" "growing back failed; step [0-9]* goes on with 3 ranks"
check_grown "dp 4, replacement lost joining" "grew back to 4 ranks (dp 4)"
failedAt=$(grep -o 'growing back failed; step [0-9]*' "$tmp/elastic" | grep -o '[0-9]*$')
grewAt=$(grep -o 'grew back to 4 ranks (dp 4) at step [0-9]*' "$tmp/elastic" | grep -o '[0-9]*$')
[ "$grewAt" -gt "$failedAt" ] || { cat "$tmp/elastic"
  echo "FAIL: grew back at step $grewAt, not after the failed grow at step $failedAt" >&2; exit 1; }
echo "elastic_test: ok"
