"""A reward head on a frozen critic's hidden states: one scalar per response, trained on pairwise judgments.

CritiqueLLM (v2 §3) distils a teacher's judgments into a small critic. A 135M model cannot learn to *write* a
teacher-quality critique on two CPU cores in hours, but its hidden states already encode much of what a judge
reads (topic, form, length, refusals, code, lists). This module trains a linear head on them:

* **features** (:func:`response_features`): the response in its question's chat, run once through the frozen base;
  per response the hidden states at a few layers mean-pooled over the response's tokens, the last token's final
  hidden state, and the response's length in tokens and lines (log1p): ``len(layers) * hidden + hidden + 3``
  values;
* **reward** ``r = w . standardise(features) + b``: one scalar per response; trained with the Bradley-Terry loss
  on soft pairwise preferences (Bradley & Terry 1952; reward modelling as in Ouyang et al. 2022 §3.5), plus a
  squared-error term that maps ``a * r + c`` onto single-response grades (the pointwise scale);
* **pointwise grading**: ``score = clip(a * r + c, low, high)`` on the template's scale (e.g. [1, 10]);
* **pairwise comparison**: the Rao-Kupper model (Rao & Kupper 1967) with tie band ``tau >= 0``:
  ``P(response 1) = sigmoid(r1 - r2 - tau)``, ``P(response 2) = sigmoid(r2 - r1 - tau)``, the rest is the tie; the
  label is the most probable one. The two orders of a pair give mirrored distributions, so verdicts are consistent
  under swap by construction. Without a tie option (two-way data), the decision is the sign of ``r1 - r2``.

A trained head is a folder: ``head.safetensors`` (``mean``, ``std``, ``weight``) and ``head.json`` (layers,
truncation, bias, calibration, tie band, base model, training figures); :meth:`RewardHead.save` and
:meth:`RewardHead.load`. The training loop is :func:`train_reward_head`; ``recipes/smollm2-135m/train_head.py`` runs
it on the published judgments.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .reward_model import rao_kupper

__all__ = [
    "FeatureStore",
    "HeadSpec",
    "RewardHead",
    "feature_key",
    "rao_kupper",
    "response_features",
    "train_reward_head",
    "within_question_accuracy",
]

HEAD_WEIGHTS, HEAD_CONFIG = "head.safetensors", "head.json"


@dataclass(frozen=True)
class HeadSpec:
    """How features are computed: the part of a head that must be identical at training and inference.

    Attributes:
        layers: hidden-state indices mean-pooled over the response (0 = embeddings, ``num_hidden_layers`` = last).
        max_question_tokens: the question is cut to its first N tokens.
        max_response_tokens: the response is cut to its first N tokens (its full length is still a feature).
    """

    layers: tuple[int, ...] = (10, 20, 30)
    max_question_tokens: int = 96
    max_response_tokens: int = 320

    def key(self) -> str:
        """A short id of the spec, part of every cached feature's key."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def feature_key(question: str, response: str, spec: HeadSpec, base: str) -> str:
    """The cache key of one response's features: SHA-256 of base model, spec, question and response."""
    blob = json.dumps([base, spec.key(), question, response], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class FeatureStore:
    """``key -> float32 vector`` in one SQLite file: feature extraction resumes where a killed run stopped.

    Args:
        path: the database file (created with its parent folder).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the keys present (absent keys are missing from the result)."""
        found: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = self._db.execute(
                f"SELECT key, vec FROM features WHERE key IN ({','.join('?' * len(chunk))})", chunk
            )
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors in one transaction (all or nothing)."""
        self._db.execute("BEGIN")
        self._db.executemany(
            "INSERT OR REPLACE INTO features VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
        )
        self._db.execute("COMMIT")

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM features").fetchone()[0]


def _encode_one(tokenizer, question: str, response: str, spec: HeadSpec) -> tuple[list[int], int, list[float]]:
    """Token ids of the chat (question, cut response), the index where the response starts, and length features."""
    q_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    r_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    q = tokenizer.decode(q_ids[: spec.max_question_tokens])
    r = tokenizer.decode(r_ids[: spec.max_response_tokens])
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": q}], add_generation_prompt=True, tokenize=False
    )
    full = tokenizer.apply_chat_template(
        [{"role": "user", "content": q}, {"role": "assistant", "content": r}], tokenize=False
    )
    start = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    lengths = [math.log1p(len(r_ids)), math.log1p(response.count("\n")), math.log1p(len(q_ids))]
    return ids, min(start, len(ids) - 1), lengths


def response_features(
    model,
    tokenizer,
    items: Sequence[tuple[str, str]],
    spec: HeadSpec,
    *,
    batch_size: int = 8,
    sort: bool = True,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Features of each ``(question, response)`` from one forward pass of the frozen base (see the module docstring).

    Args:
        model: a causal LM (``transformers``) whose ``model.model`` returns hidden states; eval mode.
        tokenizer: its tokenizer, with a chat template.
        items: ``(question, response)`` pairs.
        spec: layers and truncation.
        batch_size: sequences per forward pass (right-padded).
        sort: batch the items in order of length (least padding; the result keeps the input order). False batches
            them as given (the padded baseline of ``benchmarks/bench_head.py``).
        progress: called with the number of items finished after each batch.

    Returns:
        float32 array ``[len(items), (len(spec.layers) + 1) * hidden_size + 3]``.

    Raises:
        ValueError: a layer index outside ``[0, num_hidden_layers]``.
    """
    import torch

    n_layers = model.config.num_hidden_layers
    if any(not 0 <= layer <= n_layers for layer in spec.layers):
        raise ValueError(f"layers {spec.layers} outside [0, {n_layers}]")
    encoded = [_encode_one(tokenizer, q, r, spec) for q, r in items]
    order = sorted(range(len(items)), key=lambda i: len(encoded[i][0])) if sort else list(range(len(items)))
    out = np.zeros((len(items), (len(spec.layers) + 1) * model.config.hidden_size + 3), dtype=np.float32)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for begin in range(0, len(order), batch_size):
        batch = order[begin : begin + batch_size]
        width = max(len(encoded[i][0]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        span = torch.zeros((len(batch), width), dtype=torch.float32)
        for row, i in enumerate(batch):
            tokens, start, _ = encoded[i]
            ids[row, : len(tokens)] = torch.tensor(tokens)
            attention[row, : len(tokens)] = 1
            span[row, start : len(tokens)] = 1.0
        with torch.inference_mode():
            hidden = model.model(input_ids=ids, attention_mask=attention, output_hidden_states=True).hidden_states
        weights = (span / span.sum(1, keepdim=True)).unsqueeze(-1)
        pooled = [(hidden[layer].float() * weights).sum(1) for layer in spec.layers]
        last = attention.sum(1) - 1
        pooled.append(hidden[-1].float()[torch.arange(len(batch)), last])
        vectors = torch.cat(pooled, dim=1).numpy()
        for row, i in enumerate(batch):
            out[i, :-3] = vectors[row]
            out[i, -3:] = encoded[i][2]
        if progress is not None:
            progress(len(batch))
    return out


@dataclass
class RewardHead:
    """A trained linear reward head (see the module docstring).

    Attributes:
        spec: how features are computed.
        mean, std: per-feature standardisation, float32 ``[d]``.
        weight: float32 ``[d]``; ``bias``: float. ``reward = weight . (x - mean) / std + bias``.
        scale, offset: pointwise calibration ``score = clip(scale * reward + offset, *score_range)``.
        score_range: ``(low, high)`` of the scale the calibration was fitted on.
        tie_band: Rao-Kupper ``tau`` (>= 0) for three-way pairwise decisions.
        base: the base model the features come from (a built-in name or a model id).
        info: training facts kept in ``head.json`` (data, figures); free-form.
    """

    spec: HeadSpec
    mean: np.ndarray
    std: np.ndarray
    weight: np.ndarray
    bias: float = 0.0
    scale: float = 1.0
    offset: float = 0.0
    score_range: tuple[float, float] = (1.0, 10.0)
    tie_band: float = 0.0
    base: str = "smollm2-135m-instruct"
    info: dict = field(default_factory=dict)

    def reward(self, features: np.ndarray) -> np.ndarray:
        """Rewards ``[n]`` of features ``[n, d]``."""
        return ((np.asarray(features, dtype=np.float32) - self.mean) / self.std) @ self.weight + self.bias

    def score(self, rewards: np.ndarray, score_range: tuple[float, float] | None = None) -> np.ndarray:
        """Pointwise scores of rewards, clipped to ``score_range`` (default the calibration's), mapped linearly when a
        template's scale differs from the calibration's."""
        low, high = self.score_range
        raw = np.clip(self.scale * np.asarray(rewards, dtype=np.float64) + self.offset, low, high)
        if score_range is None or tuple(score_range) == (low, high):
            return raw
        new_low, new_high = score_range
        return new_low + (raw - low) * (new_high - new_low) / (high - low)

    def distribution(self, r1: float, r2: float) -> dict[str, float]:
        """The Rao-Kupper distribution of a pair (:func:`rao_kupper` with this head's tie band)."""
        return rao_kupper(float(r1), float(r2), self.tie_band)

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``head.safetensors`` and ``head.json`` into ``folder`` (created); returns the folder."""
        import torch
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {name: torch.from_numpy(np.asarray(getattr(self, name), dtype=np.float32)) for name in WEIGHTS}
        save_file(tensors, str(folder / HEAD_WEIGHTS))
        config = {k: v for k, v in asdict(self).items() if k not in WEIGHTS}
        (folder / HEAD_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike) -> RewardHead:
        """Read a head written by :meth:`save`.

        Raises:
            FileNotFoundError: ``head.json`` or ``head.safetensors`` is missing (names the folder).
            ValueError: the weights' shapes disagree.
        """
        from safetensors.numpy import load_file

        folder = Path(folder)
        for name in (HEAD_CONFIG, HEAD_WEIGHTS):
            if not (folder / name).is_file():
                raise FileNotFoundError(
                    f"{folder}: no {name}; a reward head folder holds {HEAD_CONFIG} and {HEAD_WEIGHTS}"
                )
        config = json.loads((folder / HEAD_CONFIG).read_text())
        tensors = load_file(str(folder / HEAD_WEIGHTS))
        if len({tensors[name].shape for name in WEIGHTS}) != 1:
            raise ValueError(f"{folder / HEAD_WEIGHTS}: mean, std and weight differ in shape")
        config["spec"] = HeadSpec(**{**config["spec"], "layers": tuple(config["spec"]["layers"])})
        config["score_range"] = tuple(config["score_range"])
        return cls(**config, **{name: tensors[name] for name in WEIGHTS})


WEIGHTS = ("mean", "std", "weight")


# ------------------------------------------------------------------------------------------------ training
def within_question_accuracy(rewards: np.ndarray, pairs: np.ndarray, targets: np.ndarray) -> float:
    """Share of pairs ordered like the judge: ``sign(r_j - r_i)`` against ``target > 0.5`` (ties in either count half).

    Args:
        rewards: ``[n]`` rewards.
        pairs: ``[m, 2]`` indices ``(i, j)`` into ``rewards``, both responses to the same question.
        targets: ``[m]`` P(response j better) in [0, 1].

    Returns:
        Accuracy in [0, 1] (nan without pairs).
    """
    if len(pairs) == 0:
        return float("nan")
    diff = np.sign(rewards[pairs[:, 1]] - rewards[pairs[:, 0]])
    gold = np.sign(np.asarray(targets) - 0.5)
    return float(np.mean(np.where((diff == 0) | (gold == 0), 0.5, diff == gold)))


def train_reward_head(
    features: np.ndarray,
    pairs: np.ndarray,
    targets: np.ndarray,
    *,
    graded: np.ndarray | None = None,
    grades: np.ndarray | None = None,
    grade_weight: float = 0.1,
    l2: float = 1e-2,
    spec: HeadSpec,
    score_range: tuple[float, float] = (1.0, 10.0),
    max_iter: int = 300,
    seed: int = 0,
) -> RewardHead:
    """Fit a :class:`RewardHead` by full-batch L-BFGS on the Bradley-Terry loss plus a grade regression term.

    Loss: ``mean_pairs BCE(sigmoid(r_j - r_i), target) + grade_weight * mean_graded (a r + c - grade)^2 / var(grades)
    + l2 * |w|^2``.

    Args:
        features: ``[n, d]`` response features (:func:`response_features`).
        pairs: ``[m, 2]`` indices ``(i, j)`` of two responses to one question.
        targets: ``[m]`` P(response j better) in [0, 1] (soft preferences; 0.5 = tie).
        graded: ``[k]`` indices of responses with a single-response grade (may be None).
        grades: ``[k]`` those grades on ``score_range``.
        grade_weight: weight of the grade term (0 ignores it; the calibration is then fitted afterwards).
        l2: weight decay on ``w`` (standardised features).
        spec: the feature spec stored with the head.
        score_range: the scale of ``grades`` and of :meth:`RewardHead.score`.
        max_iter: L-BFGS iterations.
        seed: torch seed (initialisation is zeros; the seed only fixes any sampling in torch).

    Returns:
        The head; calibration ``(scale, offset)`` fitted by least squares on the grades when given (else a map of the
        training rewards' 5-95% range onto ``score_range``); tie band 0 (set it from validation).

    Raises:
        ValueError: no pairs, or shapes that disagree.
    """
    import torch

    torch.manual_seed(seed)
    if len(pairs) == 0:
        raise ValueError("train_reward_head needs at least one pair")
    if len(pairs) != len(targets):
        raise ValueError(f"{len(pairs)} pairs but {len(targets)} targets")
    mean = features.mean(0)
    std = features.std(0) + 1e-6
    x = torch.from_numpy(((features - mean) / std).astype(np.float32))
    ij = torch.from_numpy(np.asarray(pairs, dtype=np.int64))
    t = torch.from_numpy(np.asarray(targets, dtype=np.float32))
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    ac = torch.tensor([1.0, float(np.mean(score_range))], requires_grad=True)
    use_grades = graded is not None and len(graded) > 0 and grade_weight > 0
    if use_grades:
        gi = torch.from_numpy(np.asarray(graded, dtype=np.int64))
        g = torch.from_numpy(np.asarray(grades, dtype=np.float32))
        g_var = float(g.var()) or 1.0
    params = [w, b, ac] if use_grades else [w]
    opt = torch.optim.LBFGS(params, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        r = x @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(r[ij[:, 1]] - r[ij[:, 0]], t)
        if use_grades:
            loss = loss + grade_weight * ((ac[0] * r[gi] + ac[1] - g) ** 2).mean() / g_var
        loss = loss + l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    head = RewardHead(
        spec=spec,
        mean=mean.astype(np.float32),
        std=std.astype(np.float32),
        weight=w.detach().numpy().astype(np.float32),
        bias=float(b.detach()),
        score_range=tuple(float(v) for v in score_range),
    )
    rewards = head.reward(features)
    if use_grades:
        head.scale, head.offset = np.polyfit(rewards[np.asarray(graded)], np.asarray(grades, dtype=np.float64), 1)
        head.scale, head.offset = float(head.scale), float(head.offset)
    else:
        lo, hi = np.percentile(rewards, [5, 95])
        head.scale = float((score_range[1] - score_range[0]) / max(hi - lo, 1e-6))
        head.offset = float(score_range[0] - head.scale * lo)
    return head
