"""Critic SFT throughput: training tokens per second, padded batches vs padding-free batches vs packing, one run.

Run: ``python benchmarks/bench_sft.py`` (the embedded default critic, SmolLM2-135M-Instruct, on CPU);
``--model tiny`` for a quicker run on a small random Llama with the same tokenizer; ``--model <path or Hub id>`` for
any causal LM with a chat template.

The examples are critique SFT conversations tokenized as ``recipes/sft.py`` trains them (critic prompt, then the
teacher's critique; labels on the critique only): the MT-Bench / Vicuna-Bench GPT-4 critiques of
:mod:`hf_critic.judgments` when the real-data folder (``$HF_CRITIC_SHARED_DATA`` or ``../shared/data``) is present,
else the shipped ``examples/`` rendered with the ``mtbench`` templates and a fixed critique. Critique prompts vary a
lot in length, so a padded batch spends part of its compute on padding.

Modes (the batches are built by TRL's own collator and packer, as ``SFTTrainer`` builds them):

* ``padded`` (``packing=False``, the baseline): ``--batch-size`` examples padded to the longest;
* ``padding_free`` (``padding_free=True``): the same examples concatenated into one row, positions restarting at 0;
* ``packing`` (``packing=True``, best-fit decreasing): all examples packed into rows of ``--pack-length`` tokens
  (default: batch size x median example length, i.e. about one padded batch of real tokens), one row per step.

Each step is a forward, backward and AdamW step on one model. The modes take turns, one step each, in a rotating
order (a warm-up round first, not timed), so on a shared machine a change of load hits all modes alike. Tokens per
second counts real (non-padding) tokens, over wall-clock time and over the process's CPU time (steadier on a
shared machine). Before timing, the script checks that the padding-free batch gives the same
loss as the padded one (no attention across example boundaries with this attention implementation) and says so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import datasets
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_critic import training
from hf_critic.backends.models import dequantized_gguf_config
from hf_critic.testing.tiny_models import build_tiny_model

REPO = Path(__file__).resolve().parents[1]
MODES = ("padded", "padding_free", "packing")


def load_conversations(seed: int) -> tuple[list, str]:
    """Critique SFT conversations: real GPT-4 critiques when the shared data exist, else the shipped examples."""
    data_dir = Path(os.environ.get("HF_CRITIC_SHARED_DATA", REPO.parent / "shared" / "data"))
    if (data_dir / "selfeval").is_dir():
        from hf_critic.judgments import build_judgment_sft_data

        configs, _ = build_judgment_sft_data(data_dir, prometheus=False)
        rows = datasets.concatenate_datasets([configs[c]["train"] for c in configs])
        conversations = rows.shuffle(seed=seed)["messages"]
        source = f"MT-Bench / Vicuna-Bench GPT-4 critiques ({data_dir})"
    else:
        from hf_critic.prompts import get_template

        conversations = []
        for setting in ("pointwise_referenced", "pointwise_reference_free"):
            template = get_template("mtbench", setting)
            path = REPO / "examples" / f"{setting}.jsonl"
            for record in datasets.load_dataset("json", data_files=str(path), split="train"):
                critique = "A fair answer with one mistake. Rating: [[6]]"
                conversations.append(training.critique_messages(record, template, critique))
        source = "examples/*.jsonl with a fixed critique (no real-data folder found)"
    return conversations, source


def make_batches(examples: list[dict], args, pad_token_id: int) -> dict[str, list[dict]]:
    """Per mode, ``args.rounds + 1`` batches built by TRL's collator (and TRL's packer for ``packing``)."""
    from trl.data_utils import pack_dataset
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    padded = DataCollatorForLanguageModeling(pad_token_id=pad_token_id)
    padding_free = DataCollatorForLanguageModeling(pad_token_id=pad_token_id, padding_free=True)
    groups = [examples[i : i + args.batch_size] for i in range(0, len(examples), args.batch_size)]
    groups = [g for g in groups if len(g) == args.batch_size][: args.rounds + 1]
    packed = pack_dataset(datasets.Dataset.from_list(examples), args.pack_length, strategy="bfd")
    packed = sorted(packed, key=lambda row: -len(row["input_ids"]))[: args.rounds + 1]  # the full rows
    return {
        "padded": [padded(g) for g in groups],
        "padding_free": [padding_free(g) for g in groups],
        "packing": [padding_free([row]) for row in packed],
    }


def step(model, optimizer, batch) -> tuple[float, float, int, int]:
    """One forward / backward / optimiser step: (wall seconds, CPU seconds, real tokens, positions computed)."""
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "position_ids", "labels")}
    mask = batch.get("attention_mask")
    real = int(mask.sum()) if mask is not None else int(batch["input_ids"].numel())
    wall, cpu = time.perf_counter(), time.process_time()
    model(**inputs).loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - wall, time.process_time() - cpu, real, int(batch["input_ids"].numel())


def loss_of(model, batch) -> float:
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "position_ids", "labels")}
    with torch.no_grad():
        return float(model(**inputs).loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="'default' (SmolLM2-135M), 'tiny', or a path / Hub id")
    parser.add_argument("--rounds", type=int, default=3, help="timed steps per mode (after one warm-up round)")
    parser.add_argument("--batch-size", type=int, default=4, help="examples per padded / padding-free step")
    parser.add_argument("--max-length", type=int, default=1024, help="longer examples are left out")
    parser.add_argument("--pack-length", type=int, default=None, help="packed row length (default: see above)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    model_path = args.model
    if args.model in ("default", "tiny"):
        from hf_critic.backends.models import default_model_dir

        model_path = str(default_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if args.model in ("default", "tiny"):  # SmolLM2's template with generation markers, as the CPU recipe uses
        training.set_chat_template(tokenizer, REPO / "recipes" / "smollm2-135m" / "chat_template.jinja")
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    tmp = tempfile.TemporaryDirectory()
    if args.model == "tiny":
        # a randomly initialised 4-layer Llama (hidden 256) with the SmolLM2 vocabulary
        folder = build_tiny_model(
            Path(tmp.name) / "tiny",
            tokenizer,
            hidden_size=256,
            intermediate_size=768,
            num_hidden_layers=4,
            max_position_embeddings=8192,
            tie_word_embeddings=True,
        )
        model_path = str(folder)

    conversations, source = load_conversations(args.seed)
    examples = []
    for conversation in conversations:
        mask = training.compute_loss_mask(tokenizer, conversation, "assistant")
        if mask.n_tokens <= args.max_length:
            examples.append({"input_ids": mask.input_ids, "labels": mask.labels})
        if len(examples) >= (args.rounds + 1) * args.batch_size * 3:
            break
    lengths = [len(e["input_ids"]) for e in examples]
    args.pack_length = args.pack_length or int(args.batch_size * statistics.median(lengths))
    batches = make_batches(examples, args, tokenizer.pad_token_id)

    clean = dequantized_gguf_config(model_path)
    model = AutoModelForCausalLM.from_pretrained(
        model_path, dtype=torch.float32, **({"config": clean} if clean else {})
    )
    model.config.use_cache = False
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(
        f"model: {model_path} ({args.model}, {model.num_parameters() / 1e6:.0f}M parameters, "
        f"attention: {model.config._attn_implementation}); device: {device}; torch threads: {torch.get_num_threads()}"
    )
    print(
        f"examples: {source}; {len(examples)} of at most {args.max_length} tokens, median {statistics.median(lengths):.0f}"
    )
    print(
        f"per step: {args.batch_size} examples (padded, padding-free) or one packed row of {args.pack_length} tokens; "
        f"{args.rounds} timed rounds after 1 warm-up round, modes interleaved"
    )

    padded_loss, free_loss = loss_of(model, batches["padded"][0]), loss_of(model, batches["padding_free"][0])
    same = abs(padded_loss - free_loss) < 1e-4 * max(1.0, abs(padded_loss))
    verdict = "same loss: no attention across examples" if same else "DIFFERENT: examples attend to each other"
    print(f"padded vs padding-free loss on the same examples: {padded_loss:.5f} vs {free_loss:.5f} ({verdict})")

    totals = {mode: [0.0, 0.0, 0, 0] for mode in MODES}
    for round_index in range(args.rounds + 1):
        order = MODES[round_index % 3 :] + MODES[: round_index % 3]
        for mode in order:
            measured = step(model, optimizer, batches[mode][round_index])
            if round_index:  # round 0 warms up
                totals[mode] = [a + b for a, b in zip(totals[mode], measured, strict=True)]

    wall_base = totals["padded"][2] / totals["padded"][0]
    cpu_base = totals["padded"][2] / totals["padded"][1]
    header = f"{'mode':<14}{'real tokens':>12}{'positions':>11}{'padding':>9}{'wall s':>8}{'tokens/s':>10}"
    print(f"\n{header}{'vs padded':>11}{'CPU s':>8}{'tokens/CPU-s':>14}{'vs padded':>11}")
    for mode, (wall, cpu, real, positions) in totals.items():
        print(
            f"{mode:<14}{real:>12,}{positions:>11,}{1 - real / positions:>9.1%}{wall:>8.1f}{real / wall:>10.1f}"
            f"{real / wall / wall_base:>10.2f}x{cpu:>8.1f}{real / cpu:>14.1f}{real / cpu / cpu_base:>10.2f}x"
        )
    print(
        "tokens/s: real tokens over wall-clock time; tokens/CPU-s: over this process's CPU time, which other jobs on "
        "a shared machine do not inflate"
    )
    tmp.cleanup()


if __name__ == "__main__":
    main()
