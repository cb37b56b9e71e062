#!/usr/bin/env bash
# Held-out figures of a critic against issue 27's targets, with "the longer answer wins" on the same rows:
#   HHH alignment (221 pairs, two-way), Auto-J Eval-P (200 pairs, seed 0, first order), MT-Bench + Vicuna-Bench turn 1
#   (within-question accuracy over the pairs GPT-4 graded apart; MT-Bench row-level Pearson).
# Usage: bash recipes/smollm2-135m/evaluate_heldout.sh MODEL OUT_DIR
#   MODEL: anything --model takes (smollm2-135m-critic, a reward-model or adapter folder), or "default" for the
#   embedded untrained critic. Real data from $HF_CRITIC_SHARED_DATA (default ../shared/data). About 9 minutes for a
#   reward model on 2 cores. Every line it prints is also in OUT_DIR/summary.txt.
set -euo pipefail
model=${1:?usage: evaluate_heldout.sh MODEL OUT_DIR}
out=${2:?usage: evaluate_heldout.sh MODEL OUT_DIR}
data=${HF_CRITIC_SHARED_DATA:-../shared/data}
[ -d "$data/prometheus" ] || { echo "no real data at $data (set HF_CRITIC_SHARED_DATA)" >&2; exit 2; }
mkdir -p "$out"
args=(--no-progress --overwrite)
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
