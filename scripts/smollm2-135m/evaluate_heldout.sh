#!/usr/bin/env bash
# Held-out figures of a critic against the trained critic's targets, with "the longer answer wins" on the same rows:
#   HHH alignment (two-way), Auto-J Eval-P (200 pairs, seed 0, first order), MT-Bench + Vicuna-Bench turn 1
#   (within-question accuracy over the pairs GPT-4 graded apart; MT-Bench row-level Pearson).
# Usage: bash scripts/smollm2-135m/evaluate_heldout.sh MODEL OUT_DIR [dev|test|all [HF-CRITIC OPTIONS...]]
#   HF-CRITIC OPTIONS go to every compare / grade call, e.g. `--template autoj --verdict probability --explanation none
#   --dtype float32` for the generative critic of sft/critiques.yaml (its own template, the probability read-out right
#   after the prompt); `--verdict both` (explanation first) also writes its critiques and scores their parsed verdicts.
#   MODEL: anything --model takes (smollm2-135m-critic, a reward-model or adapter folder), or "default" for the
#   embedded untrained critic. HALF: judge only that half of each benchmark, split by question as
#   scripts/smollm2-135m/splits/ says (written to outputs/heldout_halves/HALF first); every choice is made on dev
#   (select_critic.py reads only dev folders), test is reported. Without HALF: the whole benchmarks (HHH 221 pairs,
#   Eval-P 200 of 1,392, 160 + 160 answers). Real data from $HF_CRITIC_SHARED_DATA (default ../shared/data). About
#   9 minutes for a reward model on 2 cores (half that for a half). Every line it prints is also in OUT_DIR/summary.txt.
set -euo pipefail
model=${1:?usage: evaluate_heldout.sh MODEL OUT_DIR [dev|test|all [HF-CRITIC OPTIONS...]]}
out=${2:?usage: evaluate_heldout.sh MODEL OUT_DIR [dev|test|all [HF-CRITIC OPTIONS...]]}
half=${3:-}
[ "$half" != all ] || half=
shift $(( $# < 3 ? $# : 3 ))
data=${HF_CRITIC_SHARED_DATA:-../shared/data}
[ -d "$data/prometheus" ] || { echo "no real data at $data (set HF_CRITIC_SHARED_DATA)" >&2; exit 2; }
mkdir -p "$out"
rm -f "$out/half.txt"
echo "$model" > "$out/model.txt"   # select_critic.py reads the training cost from this folder's trainer_state.json
if [ -n "$half" ]; then
  case "$half" in dev|test) ;; *) echo "HALF must be dev or test, got $half" >&2; exit 2;; esac
  halves=outputs/heldout_halves/$half
  [ -d "$halves/prometheus" ] || python "$(dirname "$0")/heldout_halves.py" write "$half" --data-dir "$data" \
    --output-dir "$halves"
  data=$halves
fi
args=(--no-progress --overwrite "$@")
[ "$model" = default ] || args+=(--model "$model")
{
  hf-critic compare "${args[@]}" --data "$data/prometheus/hhh_alignment_eval.json" --format prometheus --swap \
    --output "$out/hhh.jsonl"
  hf-critic compare "${args[@]}" --data "$data/autoj/test/testdata_pairwise.jsonl" --format autoj --sample 200 --swap \
    --output "$out/autoj.jsonl"
  for bench in mt_bench vicuna_bench; do
    hf-critic grade "${args[@]}" --data "$data/selfeval/$bench" --format fastchat --output "$out/$bench.jsonl"
  done
  cat "$out/mt_bench.jsonl" "$out/vicuna_bench.jsonl" > "$out/mt_vicuna.jsonl"
  hf-critic meta-eval --critiques "$(basename "$model")/MT-Bench+Vicuna-Bench=$out/mt_vicuna.jsonl" \
    --output-dir "$out/meta_eval"
  python scripts/length_baseline.py "$out/hhh.jsonl" "$out/autoj.jsonl" "$out/mt_bench.jsonl" "$out/mt_vicuna.jsonl"
} 2>&1 | tee "$out/summary.txt"
[ -z "$half" ] || echo "$half" > "$out/half.txt"
