#!/usr/bin/env bash
# loom-train end to end: bad configurations fail with one line before any work,
# and a short 2-rank run through loomrun trains and writes its CSV log.
set -euo pipefail
train=$1
loomrun=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--layers 1 --d-model 16 --heads 2 --seq 8 --batch 4 --steps 3)

expect_error() {  # expect_error "message part" command...
  local want=$1
  shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: '$*' succeeded" >&2
    exit 1
  fi
  # One line from loom-train (all ranks but rank 0 stay quiet); loomrun may add its own.
  if ! grep -q -- "$want" "$tmp/err" || [ "$(grep -c '^loom-train' "$tmp/err")" -ne 1 ]; then
    echo "FAIL: '$*' should print one loom-train line containing '$want'; stderr was:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
}

expect_error "not expected" "$train" --frobnicate
expect_error "not expected" "$loomrun" -n 3 "$train" --frobnicate
expect_error "invalid --compress" "$train" --compress zip
expect_error "but the world has 2 ranks" "$loomrun" -n 2 "$train" --dp 3 "${tiny[@]}"
expect_error "--heads 2 is not divisible by --tp 4" "$loomrun" -n 4 "$train" --tp 4 "${tiny[@]}"
expect_error "cannot read data file" "$train" --data "$tmp/missing.txt" "${tiny[@]}"
expect_error "--elastic needs --zero 0" "$train" --elastic --zero 1 "${tiny[@]}"
expect_error "--save-every must be >= 0" "$train" --save "$tmp/ckpt" --save-every -1 "${tiny[@]}"

# --save, then --resume from the --save directory: the resumed run starts at step 3.
"$loomrun" -n 2 "$train" --dp 2 "${tiny[@]}" --save "$tmp/ckpt" --quiet >"$tmp/out"
[ -f "$tmp/ckpt/step-000003/manifest.json" ] || { ls -R "$tmp"; echo "FAIL: no manifest" >&2; exit 1; }
"$loomrun" -n 2 "$train" --dp 2 --layers 1 --d-model 16 --heads 2 --seq 8 --batch 4 --steps 5 \
  --resume "$tmp/ckpt" >"$tmp/out"
grep -q "resumed from $tmp/ckpt/step-000003 at step 3" "$tmp/out" &&
  grep -q "step    5/5" "$tmp/out" && ! grep -q "step    3/5" "$tmp/out" ||
  { cat "$tmp/out"; echo "FAIL: --resume" >&2; exit 1; }

"$loomrun" -n 2 "$train" --dp 2 "${tiny[@]}" --compress int8 --log "$tmp/log.csv" >"$tmp/out"
grep -q "step    3/3" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: no progress line" >&2; exit 1; }
[ "$(wc -l <"$tmp/log.csv")" -eq 4 ] || { cat "$tmp/log.csv"; echo "FAIL: CSV rows" >&2; exit 1; }

printf 'hello world, this is a tiny training text. %.0s' {1..20} >"$tmp/text.txt"
"$train" "${tiny[@]}" --data "$tmp/text.txt" --quiet >"$tmp/out"
grep -q "loss" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: --data run" >&2; exit 1; }
echo "cli_test: ok"
