"""Helpers for the Eval-Instruct tests: a scripted teacher, a scripted tiny model for `transformers serve`, recipes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
SEEDS = REPO_ROOT / "recipes" / "eval_instruct" / "seed_queries.jsonl"

# ----------------------------------------------------------------------------------------------- scripted teacher
NEW_QUERIES = [
    ("Explain why the sky is blue in two sentences.", "Open-ended Question Answering"),
    ("A train travels 120 km in 1.5 hours. What is its average speed?", "Mathematics"),
    ("Write a four-line poem about autumn rain.", "Writing Ability"),
    ("Explain why the sky is blue in two sentences.", "Open-ended Question Answering"),  # duplicate
    ("Bake me a cake.", "Cooking"),  # unknown category
]


def _h(text: str, mod: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % mod


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.find(end, i + len(start))
    return text[i + len(start) : j].strip() if i >= 0 and j >= 0 else ""


def scripted_reply(body: dict) -> str:
    """A deterministic stand-in teacher / generator that answers each Eval-Instruct prompt in its format.

    Scores come from a hash of the response, so pairs differ; Path#2's label disagrees with Path#1's for about one
    pair in three (cross validation has something to filter).
    """
    text = body["messages"][-1]["content"]
    if "You are asked to provide 10 diverse prompts" in text:
        return "\n".join(f"{i}.@@{q}@@ &&{c}&&" for i, (q, c) in enumerate(NEW_QUERIES, start=1))
    if "rate the difficulty" in text:
        items = re.findall(r"(\d+)\.@@(.+?)@@&&(.+?)&&", text)
        return "\n".join(f"{k}.@@{q}@@&&{c}&&##{1 + _h(q, 3)}##" for k, q, c in items)
    if "Please revise your previous round" in text:  # v1 second turn
        first = body["messages"][-2]["content"]
        score = re.search(r"\[\[(\d+)\]\]", first).group(1)
        return f"The answer addresses the question with some gaps in depth and detail. Rating: [[{score}]]"
    if "Please revise the critique" in text:  # f_R2RF
        critique = _between(text, "[Critique Begin]", "[Critique End]")
        if "[Assistant 1's Answer Begin]" in text:
            label = re.search(r"'Overall Comparison Result': '([^']+)'", critique).group(1)
            return (
                "Correctness: Assistant 1 and Assistant 2 are both mostly accurate.\n"
                f"Overall, the comparison stands. {{'Overall Comparison Result': '{label}'}}"
            )
        score = re.search(r"'Overall Score': (\d+)", critique).group(1)
        return f"Correctness: {score}. The answer is mostly accurate.\n{{'Correctness': {score}, 'Overall Score': {score}}}"
    if "[Critique for Assistant 1's Answer Begin]" in text:  # f_P2P
        c1 = _between(text, "[Critique for Assistant 1's Answer Begin]", "[Critique for Assistant 1's Answer End]")
        c2 = _between(text, "[Critique for Assistant 2's Answer Begin]", "[Critique for Assistant 2's Answer End]")
        s1 = int(re.search(r"'Overall Score': (\d+)", c1).group(1))
        s2 = int(re.search(r"'Overall Score': (\d+)", c2).group(1))
        label = "Assistant 1" if s1 > s2 else "Assistant 2" if s2 > s1 else "Tie"
        referenced = "[Reference Answer Begin]" in text
        if not referenced and _h(c1 + c2, 3) == 0:  # Path#2 sometimes disagrees
            label = {"Assistant 1": "Assistant 2", "Assistant 2": "Tie", "Tie": "Assistant 1"}[label]
        return (
            "Correctness: Assistant 1's answer is compared with Assistant 2's answer in detail.\n"
            f"Overall, {label} is preferred. {{'Overall Comparison Result': '{label}'}}"
        )
    if "[AI Assistant's Answer Begin]" in text or "[The Start of Assistant's Answer]" in text:  # grading
        response = _between(text, "[AI Assistant's Answer Begin]", "[AI Assistant's Answer End]") or _between(
            text, "[The Start of Assistant's Answer]", "[The End of Assistant's Answer]"
        )
        score = 3 + _h(response, 7)
        if "[The Start of Assistant's Answer]" in text:  # v1 first turn
            return f"The answer is relevant but could be more detailed compared with the reference answer. Rating: [[{score}]]"
        return (
            f"Correctness: {score}. The answer is mostly accurate.\nUser Satisfaction: {score}. It addresses the query.\n"
            f"Overall Score: {score}. Compared with the reference answer it lacks some detail.\n"
            f"{{'Correctness': {score}, 'User Satisfaction': {score}, 'Overall Score': {score}}}"
        )
    return f"Answer from {body.get('model')}: {text[:40]} ... [{_h(text + str(body.get('model')), 1000)}]"


# ----------------------------------------------------------------------------------------------- recipes
def recipe(tmp_path: Path, base_url: str, model: str = "teacher", **overrides) -> Path:
    """A small v2 recipe against ``base_url`` (teacher and two generators on the same server); returns its path."""
    endpoint = {
        "base_url": base_url,
        "model": model,
        "concurrency": 4,
        "timeout": 30,
        "retry": {"max_retries": 4, "initial_backoff": 0.01, "max_backoff": 0.05},
        "sampling": {"temperature": 0, "max_tokens": 32},
    }
    data = {
        "variant": "v2",
        "language": "en",
        "output_dir": str(tmp_path / "out"),
        "progress": False,
        "teacher": endpoint,
        "queries": {
            "seeds": str(SEEDS),
            "augmentation": {"rounds": 1, "sampling": {"temperature": 1.0, "max_tokens": 64}},
            "difficulty": True,
            "balance_total": 10,
        },
        "generators": [
            {"name": "gen-a", "endpoint": {**endpoint, "model": model, "sampling": {"max_tokens": 16}}},
            {"name": "gen-b", "endpoint": {**endpoint, "model": model, "sampling": {"max_tokens": 17}}},
        ],
        "references": {"generator": "gen-a"},
        "hub": {"license": "apache-2.0", "pretty_name": "Test critiques"},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------- tiny served model
SCRIPT = [
    "1.@@Explain why the sky is blue in two sentences.@@&&Open-ended Question Answering&&##2##\n",
    "2.@@A train travels 120 km in 1.5 hours. What is its average speed?@@&&Mathematics&&##1##\n",
    "3.@@Write a four-line poem about autumn rain.@@&&Writing Ability&&##3##\n",
    "The answer is relevant and accurate, with room for more detail. Rating: [[7]]\n",
    "{'Overall Score': 7, 'Overall Comparison Result': 'Tie'}",
]
SCRIPT_TEXT = "".join(SCRIPT)


def build_scripted_model(folder: Path) -> Path:
    """A Llama built from a config, with a byte-level BPE trained here and a ChatML template, whose weights make it a
    bigram machine: from any prompt it greedily writes :data:`SCRIPT_TEXT` and stops.

    The script pieces are added tokens. The model has no decoder layer (``num_hidden_layers=0``: embeddings, final
    norm, LM head), so a 6,000-token prompt costs milliseconds on a CPU. Every ordinary token embeds to one axis and
    each piece to its own; the LM head maps the ordinary axis to the first piece and each piece to the next (the last
    to ``<|im_end|>``). The text answers every Eval-Instruct prompt in a parseable way (queries, difficulties, a score
    and a label), so a run against a real server keeps data in all four configs.
    """
    import torch
    from transformers import GenerationConfig

    from hf_critic.testing.tiny_models import chatml_tokenizer, tiny_llama

    # Trained on the seed queries and the English prompt templates, so that prompts come out short.
    prompts = REPO_ROOT / "src" / "hf_critic" / "prompts"
    found = [*(prompts / "templates").glob("*_en.yaml"), *(prompts / "teacher").glob("*_en.yaml")]
    templates = sorted(found, key=lambda p: p.name)
    corpus = SEEDS.read_text(encoding="utf-8").splitlines() + [t.read_text(encoding="utf-8") for t in templates]
    fast = chatml_tokenizer(corpus * 2, vocab_size=2000, added_tokens=SCRIPT)
    hidden = 64
    model = tiny_llama(
        fast,
        vocab_size=-(-len(fast) // 64) * 64,
        hidden_size=hidden,
        num_hidden_layers=0,
        num_key_value_heads=4,
        max_position_embeddings=65536,
        tie_word_embeddings=False,
    )
    config = model.config
    ids = [fast.convert_tokens_to_ids(piece) for piece in SCRIPT]
    with torch.no_grad():
        embed = torch.zeros(config.vocab_size, hidden)
        embed[:, 0] = 1.0  # every ordinary token: axis 0
        head = torch.zeros(config.vocab_size, hidden)
        head[ids[0], 0] = 30.0  # axis 0 -> first piece
        for k, (piece, following) in enumerate(zip(ids, [*ids[1:], fast.eos_token_id], strict=True), start=1):
            embed[piece] = 0.0
            embed[piece, k] = 1.0  # piece k: axis k
            head[following, k] = 30.0  # axis k -> the next piece (the last: <|im_end|>)
        model.model.embed_tokens.weight.copy_(embed)
        model.lm_head.weight.copy_(head)
    model.generation_config = GenerationConfig(
        eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, do_sample=False, max_new_tokens=16
    )
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_transformers_serve(model_dir: Path, log: Path, timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """``transformers serve <model_dir> --host 127.0.0.1 --port N``; waits until /health answers (bounded)."""
    port = free_port()
    exe = Path(sys.executable).with_name("transformers")
    cmd = [str(exe), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    handle = log.open("w")
    proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "ok":
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise RuntimeError(f"transformers serve not healthy after {timeout} s: {log.read_text()[-2000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`start_transformers_serve`: SIGTERM to its process group, SIGKILL after 20 s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)
