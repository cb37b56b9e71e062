"""Reward models as critics: a sequence-classification checkpoint with one label scores (question, response).

A reward model (the layout of TRL's ``RewardTrainer`` output, Skywork-Reward-V2, the OpenAssistant DeBERTa reward
models) maps one response in its question's context to one scalar, trained with the Bradley-Terry loss on pairwise
preferences (Ouyang et al. 2022 §3.5). hf-critic uses it in both CritiqueLLM tasks (v2 §3.1) without an explanation:

* **input**: the model's own chat template with the question as the user turn and the response as the assistant
  turn; an encoder without a chat template (DeBERTa) gets the (question, response) text pair. The reference is not
  shown to a reward model: ``--referenced`` is refused and a ``reference`` column is ignored, which the summary says.
* **pointwise grading**: ``critique_reward`` is the raw reward and ``critique_score`` its image on the template's
  scale ``[low, high]`` through :class:`RewardCalibration`: a linear map fitted on graded validation data when the
  model folder carries one (``hf_critic_reward.json``), else ``low + (high - low) * sigmoid(r)`` (documented as not
  fitted: it keeps the order of the rewards, not a judge's scale).
* **pairwise comparison**: the Rao-Kupper model (Rao & Kupper 1967) with tie band ``tau = tie_margin >= 0``:
  ``P(response 1 better) = sigmoid(r1 - r2 - tau)``, ``P(response 2 better) = sigmoid(r2 - r1 - tau)``, the rest is
  the tie (with ``tau = 0``: ``P(1) = sigmoid(r1 - r2)``, no tie mass). The label is a tie when ``|r1 - r2| <= tau``
  (equal rewards at least), else the better reward. The two orders give the same rewards, so the critic is
  order-free: it makes no second pass under ``--swap``.
* **truncation**: the context is ``max_length`` of ``hf_critic_reward.json``, else the tokenizer's
  ``model_max_length`` or the model's position limit; longer inputs are cut in the middle of the response, skipped or
  refused (``--truncate``), and counted.

Loading: a folder, a Hub id in the local cache, or a PEFT adapter folder (``adapter_config.json`` with task type
``SEQ_CLS``) whose base is resolved offline (the embedded default critic by its name or its cache folder).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..backends.models import batch_token_budget
from ..core.control_tokens import encode_chat, encode_text
from ..core.errors import BadInputError
from ..core.identity import model_identity
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "REWARD_CONFIG",
    "RewardCalibration",
    "RewardModel",
    "encode_ids",
    "fit_calibration",
    "fit_ids",
    "fit_tie_margin",
    "is_reward_model",
    "pairwise_verdict",
    "rao_kupper",
    "reward_conversation",
]

#: hf-critic's file beside a reward model: calibration, tie band and context (written by ``recipes/reward.py``).
REWARD_CONFIG = "hf_critic_reward.json"


def _read_json(path: Path) -> dict:
    """A JSON object file; ValueError naming the file when it is not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadInputError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise BadInputError(f"{path}: not a JSON object")
    return value


def _config_of(folder: Path) -> dict | None:
    """The model config of ``folder`` (an adapter's base config where the folder holds an adapter), or None."""
    if (folder / "config.json").is_file():
        return _read_json(folder / "config.json")
    return None


def is_reward_model(model: str | os.PathLike | None) -> bool:
    """True when ``model`` is a local folder (or cached Hub snapshot) holding a one-label sequence classifier.

    Detected from the files alone, without loading weights: ``config.json`` whose ``architectures`` end in
    ``ForSequenceClassification`` with one label (``num_labels`` 1 or one ``id2label`` entry), or a PEFT
    ``adapter_config.json`` with ``task_type: SEQ_CLS``.

    Args:
        model: ``--model`` as given (None: the embedded default critic, never a reward model).

    Raises:
        ValueError: a ``config.json`` or ``adapter_config.json`` that is not a JSON object (names the file), or a
            sequence classifier with more than one label (refused as a reward critic and as a text critic).
    """
    if model is None:
        return False
    folder = Path(str(model)).expanduser()
    if not folder.is_dir():
        try:
            from ..backends.models import resolve_model

            folder = Path(resolve_model(model))
        except (OSError, ValueError):
            return False
        if not folder.is_dir():
            return False
    adapter = folder / "adapter_config.json"
    if adapter.is_file():
        return _read_json(adapter).get("task_type") == "SEQ_CLS"
    config = _config_of(folder)
    if config is None:
        return False
    architectures = config.get("architectures") or []
    labels = config.get("num_labels", len(config.get("id2label") or {}) or None)
    classifier = any(a.endswith("ForSequenceClassification") for a in architectures)
    if classifier and labels not in (None, 1):  # neither a reward model nor a text critic (no language-model head)
        raise BadInputError(
            f"{model}: a sequence classifier with {labels} labels: a reward critic has one label (its "
            "reward), and a classifier cannot write critiques (no language-model head)"
        )
    return classifier and labels == 1


def _sigmoid(x: float) -> float:
    """``1 / (1 + exp(-x))`` without overflow for any finite ``x`` (a huge tie band is not an overflow)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def rao_kupper(r1: float, r2: float, tau: float) -> dict[str, float]:
    """The Rao-Kupper pairwise distribution (Rao & Kupper 1967) of two rewards with tie band ``tau``.

    Args:
        r1, r2: the two responses' rewards (any real numbers).
        tau: tie band, >= 0 (0: no tie mass).

    Returns:
        ``{"response_1": p1, "response_2": p2, "tie": 1 - p1 - p2}`` (keys :data:`~hf_critic.core.labels.LABEL_NAMES`),
        probabilities in [0, 1] summing to 1.

    Raises:
        ValueError: a negative ``tau``, or a non-finite reward or band.
    """
    if not all(map(math.isfinite, (r1, r2, tau))) or tau < 0:
        raise BadInputError(f"rewards and tie band must be finite, the band >= 0; got r1={r1}, r2={r2}, tau={tau}")
    p1, p2 = _sigmoid(r1 - r2 - tau), _sigmoid(r2 - r1 - tau)
    return {
        LABEL_NAMES[RESPONSE_1_WINS]: p1,
        LABEL_NAMES[RESPONSE_2_WINS]: p2,
        LABEL_NAMES[TIE]: max(0.0, 1.0 - p1 - p2),
    }


def pairwise_verdict(r1: float, r2: float, tie_margin: float = 0.0) -> tuple[int, dict[str, float]]:
    """The label and distribution of one pair from its two rewards (module docstring).

    Returns:
        ``(label, distribution)``: label 0 (response 1 better), 1 (response 2 better) or 2 (tie: ``|r1 - r2| <=
        tie_margin``); the :func:`rao_kupper` distribution with ``tau = tie_margin``.

    Raises:
        ValueError: a negative tie margin.
    """
    distribution = rao_kupper(r1, r2, tie_margin)
    if abs(r1 - r2) <= tie_margin:
        label = TIE
    else:
        label = RESPONSE_1_WINS if r1 > r2 else RESPONSE_2_WINS
    return label, distribution


@dataclass(frozen=True)
class RewardCalibration:
    """How a reward becomes a pointwise score, and the pairwise tie band (module docstring).

    Attributes:
        slope, intercept: ``score = clip(slope * r + intercept, low, high)`` on a ``[fitted_low, fitted_high]``
            scale, rescaled linearly onto the template's; None: not fitted, ``low + (high - low) * sigmoid(r)``.
        fitted_low, fitted_high: the scale the linear map was fitted on (e.g. 1 and 10).
        tie_margin: pairwise tie band ``tau >= 0`` in reward units (0: a tie only on equal rewards).
        max_length: tokens of context the model was trained with (None: the model's own limit).
        source: where the figures come from (e.g. "fitted on 77 validation grades"), said in the card and summary.
    """

    slope: float | None = None
    intercept: float | None = None
    fitted_low: float = 1.0
    fitted_high: float = 10.0
    tie_margin: float = 0.0
    max_length: int | None = None
    source: str = "not fitted: score = low + (high - low) * sigmoid(reward)"

    def __post_init__(self):
        numbers = {
            "slope": self.slope,
            "intercept": self.intercept,
            "fitted_low": self.fitted_low,
            "fitted_high": self.fitted_high,
            "tie_margin": self.tie_margin,
        }
        for name, value in numbers.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise BadInputError(f"{name} must be a number, got {value!r}")
            if value is not None and not math.isfinite(value):
                raise BadInputError(f"{name} must be finite, got {value}")
        if (self.slope is None) != (self.intercept is None):
            given, missing = ("slope", "intercept") if self.intercept is None else ("intercept", "slope")
            raise BadInputError(f"{given} without {missing}: the pointwise map needs both (or neither: not fitted)")
        if self.fitted_high <= self.fitted_low:
            raise BadInputError(f"fitted_high must exceed fitted_low, got {self.fitted_low} to {self.fitted_high}")
        if self.tie_margin < 0:
            raise BadInputError(f"tie_margin must be >= 0, got {self.tie_margin}")
        if self.max_length is not None and (
            isinstance(self.max_length, bool) or not isinstance(self.max_length, int) or self.max_length < 1
        ):
            raise BadInputError(f"max_length must be a whole number of tokens >= 1, got {self.max_length!r}")
        if not isinstance(self.source, str):
            raise BadInputError(f"source must be text, got {self.source!r}")

    @property
    def fitted(self) -> bool:
        """Whether the pointwise map was fitted on graded data."""
        return self.slope is not None and self.intercept is not None

    def score(self, reward: float, scale: tuple[float, float]) -> float:
        """The score of one reward on ``scale = (low, high)``, in ``[low, high]``."""
        low, high = scale
        if not self.fitted:
            return low + (high - low) * _sigmoid(reward)
        fitted = self.slope * reward + self.intercept
        share = (fitted - self.fitted_low) / (self.fitted_high - self.fitted_low)
        return float(min(high, max(low, low + share * (high - low))))

    def save(self, folder: str | os.PathLike) -> Path:
        """Write :data:`REWARD_CONFIG` in ``folder``; returns its path."""
        path = Path(folder) / REWARD_CONFIG
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike) -> RewardCalibration:
        """Read :data:`REWARD_CONFIG` from ``folder`` (the defaults when absent).

        Raises:
            ValueError: the file is not a JSON object, holds an unknown field, or a field out of range (a string, NaN,
                a slope without intercept, a zero span, ``max_length`` < 1); the message names the file.
        """
        path = Path(folder) / REWARD_CONFIG
        if not path.is_file():
            return cls()
        try:
            fields = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(fields, dict):
                raise TypeError("not a JSON object")
            return cls(**fields)
        except (UnicodeDecodeError, ValueError, TypeError) as err:
            raise BadInputError(f"{path}: not a reward calibration ({err})") from None


def fit_calibration(
    rewards: np.ndarray,
    scores: np.ndarray,
    scale: tuple[float, float],
    *,
    tie_margin: float = 0.0,
    max_length: int | None = None,
    source: str = "",
) -> RewardCalibration:
    """The pointwise map ``score ~ slope * reward + intercept`` fitted by least squares on graded responses.

    Args:
        rewards: the model's rewards, shape ``(n,)``.
        scores: the gold grades of the same responses on ``scale``, shape ``(n,)``.
        scale: ``(low, high)`` of the grades (e.g. ``(1, 10)``).
        tie_margin: the pairwise tie band to store (reward units, >= 0).
        max_length: the training context, stored so the critic cuts inputs the same way.
        source: what the grades are, for the card (e.g. "77 Auto-J validation grades").

    Raises:
        ValueError: fewer than 3 graded responses or constant rewards.
    """
    import numpy as np

    rewards, scores = np.asarray(rewards, dtype=float), np.asarray(scores, dtype=float)
    if len(rewards) < 3 or np.std(rewards) == 0:
        raise BadInputError(f"cannot fit the pointwise map on {len(rewards)} graded response(s) with constant rewards")
    slope, intercept = np.polyfit(rewards, scores, 1)
    return RewardCalibration(
        slope=float(slope),
        intercept=float(intercept),
        fitted_low=float(scale[0]),
        fitted_high=float(scale[1]),
        tie_margin=tie_margin,
        max_length=max_length,
        source=f"least squares on {len(rewards)} {source or 'graded responses'}",
    )


def fit_tie_margin(margins: np.ndarray, labels: np.ndarray) -> float:
    """The tie band ``tau >= 0`` that maximises three-way agreement of ``|r1 - r2| <= tau -> tie`` with ``labels``.

    Args:
        margins: ``r1 - r2`` per pair, shape ``(n,)``.
        labels: gold labels 0 / 1 / 2 (:mod:`hf_critic.core.labels`), shape ``(n,)``.

    Returns:
        0.0 when the labels hold no tie (a reward model then never says tie but for equal rewards).
    """
    import numpy as np

    margins, labels = np.asarray(margins, dtype=float), np.asarray(labels)
    if not np.any(labels == 2):
        return 0.0
    best, best_tau = -1.0, 0.0
    for tau in np.unique(np.concatenate([[0.0], np.quantile(np.abs(margins), np.linspace(0.02, 0.6, 30))])):
        predicted = np.where(np.abs(margins) <= tau, 2, np.where(margins > 0, 0, 1))
        agreement = float(np.mean(predicted == labels))
        if agreement > best:
            best, best_tau = agreement, float(tau)
    return best_tau


def reward_conversation(question: str, response: str) -> list[dict[str, str]]:
    """The chat a reward model scores: the question as the user turn, the response as the assistant turn."""
    return [{"role": "user", "content": question}, {"role": "assistant", "content": response}]


def encode_ids(tokenizer, question: str, response: str) -> list[int]:
    """Token ids of one (question, response) as a reward model reads it: its chat template (question as the user turn,
    response as the assistant turn), or the text pair for a tokenizer without one (encoder reward models). Special-token
    strings in the question or response stay text (:mod:`hf_critic.core.control_tokens`)."""
    if getattr(tokenizer, "chat_template", None):
        return encode_chat(tokenizer, reward_conversation(question, response))
    return list(tokenizer(question, response, split_special_tokens=True)["input_ids"])


def _cut_middle(tokenizer, text: str, remove: int) -> str:
    """``text`` without ``remove`` tokens from its middle, the cut marked " ... "."""
    ids = encode_text(tokenizer, text)
    keep = max(len(ids) - remove, 0)
    head, tail = keep - keep // 2, keep // 2
    return tokenizer.decode(ids[:head]) + " ... " + (tokenizer.decode(ids[-tail:]) if tail else "")


def fit_ids(
    tokenizer, question: str, response: str, limit: int | None, truncate: str
) -> tuple[list[int] | None, bool]:
    """The ids of one input within ``limit`` tokens: ``(ids, truncated)``, ``(None, True)`` for a skipped input.

    ``"middle"`` cuts the response in the middle, down to no less than half the context; a question longer than the
    rest is then cut in the middle too. The same cut at training (``recipes/reward.py``) and at judging time, so a
    critic sees what it was trained on.

    Args:
        limit: the context in tokens (None: no limit).
        truncate: ``"middle"``, ``"skip"`` (nothing scored) or ``"error"``.

    Raises:
        OverflowError: ``truncate="error"`` and the input is too long.
    """
    ids = encode_ids(tokenizer, question, response)
    if limit is None or len(ids) <= limit:
        return ids, False
    if truncate == "error":
        raise OverflowError(f"{len(ids)} tokens, {len(ids) - limit} over the reward model's context of {limit}")
    if truncate == "skip":
        return None, True
    response_tokens = len(encode_text(tokenizer, response))
    for _ in range(3):  # re-tokenisation at the seams can leave a few tokens over: cut again
        excess = len(ids) - limit
        if excess <= 0:
            break
        from_response = min(excess + 8, max(response_tokens - limit // 2, 0))
        if from_response:
            response = _cut_middle(tokenizer, response, from_response)
            response_tokens -= from_response
        if excess + 8 > from_response:
            question = _cut_middle(tokenizer, question, excess + 8 - from_response)
        ids = encode_ids(tokenizer, question, response)
    return ids[:limit], True


def _base_of_adapter(folder: Path) -> str:
    """The adapter's base model as a local path: the embedded default critic by name or by its cache folder."""
    from ..backends.models import DEFAULT_MODEL_NAME, default_model_dir, resolve_model

    base = _read_json(folder / "adapter_config.json").get("base_model_name_or_path")
    if not base or base == DEFAULT_MODEL_NAME or Path(base).name == DEFAULT_MODEL_NAME and not Path(base).is_dir():
        return str(default_model_dir())
    return resolve_model(base)


def critic_tokenizer(folder: str | os.PathLike, trust_remote_code: bool = False):
    """The tokenizer of a reward critic's folder: its own, else its adapter's base model's."""
    from transformers import AutoTokenizer

    own = (Path(folder) / "tokenizer_config.json").is_file() or not (Path(folder) / "adapter_config.json").is_file()
    source = str(folder) if own else _base_of_adapter(Path(folder))
    return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)


def served_critic_files(model: str | None, served: dict | None = None) -> Path | None:
    """The folder of a served reward critic's own files (calibration, tokenizer), where the name or the server says.

    Args:
        model: the served name: a shipped critic's (:data:`hf_critic.backends.models.TRAINED_CRITICS`) or a local folder's path.
        served: what the server reports of it; vLLM's ``root`` is the folder it loaded.

    Returns:
        The shipped critic's package folder, else ``model`` or ``root`` as a local folder holding :data:`REWARD_CONFIG`,
        a tokenizer or an adapter; None when none does.
    """
    from ..backends.models import trained_critic

    trained = trained_critic(model)
    if trained is not None:
        return trained.check_installed()
    folders = [Path(str(v)).expanduser() for v in (model, (served or {}).get("root")) if v]
    own = (REWARD_CONFIG, "tokenizer_config.json", "adapter_config.json")
    return next((f for f in folders if any((f / name).is_file() for name in own)), None)


@contextlib.contextmanager
def _quiet_transformers(quiet: bool):
    """transformers' warnings (its load report) silenced within the block when ``quiet``."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    if quiet:
        hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _fingerprint(folder: Path, base: str | None = None) -> str:
    """Identity of a model's weights for cache keys: the content digest of its weight files
    (:func:`hf_critic.backends.models.model_digest`), and of its base model's for an adapter (by bytes, not by
    names, sizes and modification times)."""
    from ..backends.models import model_digest

    digest = model_digest(folder)
    return digest if base is None or Path(base) == folder else f"{digest}+{model_digest(base)}"


class RewardModel:
    """A loaded reward model: batched rewards of (question, response) pairs, truncation, calibration.

    Args:
        model: a sequence-classification model with one label (transformers or PEFT), in eval mode.
        tokenizer: its tokenizer.
        name: the folder or Hub id with a weights fingerprint, for messages.
        content: what the model is by content (its files' digest and dtype); None: ``name``. With the chat template,
            the calibration and the context it gives :attr:`identity`.
        calibration: the pointwise map, tie band and context (:class:`RewardCalibration`).
        batch_size: sequences per forward pass (>= 1).
        progress: show a progress bar.
        max_batch_tokens: padded tokens per forward pass (rows x the batch's longest row; a longer row goes alone),
            besides the ``batch_size`` rows; None: rows only. Default (``"auto"``): the probability read-out's
            :data:`hf_critic.backends.models.READOUT_BATCH_TOKENS` on a CPU, None elsewhere: scoring is the same
            prefill-bound work, cut the same way.

    Raises:
        ValueError: ``batch_size`` < 1.
    """

    kind = "reward model"
    keeps_text = True  # its inputs are encoded with control-token strings kept as text

    def __init__(
        self,
        model,
        tokenizer,
        *,
        name: str,
        content: str | None = None,
        calibration: RewardCalibration | None = None,
        batch_size: int = 8,
        progress: bool = True,
        max_batch_tokens: int | None | str = "auto",
    ):
        if batch_size < 1:
            raise BadInputError("batch_size must be >= 1")
        self.model, self.tokenizer, self.name, self.content = model, tokenizer, name, content or name
        self.calibration = calibration or RewardCalibration()
        self.batch_size, self.progress = batch_size, progress
        self.max_batch_tokens = batch_token_budget(max_batch_tokens, next(model.parameters()).device.type)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        if getattr(model.config, "pad_token_id", None) is None:  # the score is read at the last non-pad token
            model.config.pad_token_id = tokenizer.pad_token_id
        limits = [self.calibration.max_length, getattr(model.config, "max_position_embeddings", None)]
        if 0 < (tokenizer.model_max_length or 0) < 1_000_000:
            limits.append(tokenizer.model_max_length)
        self.context_length = min(n for n in limits if n) if any(limits) else None

    @property
    def identity(self) -> str:
        """What its rewards and verdicts depend on, by content and never by path: the weights (and an adapter's base),
        dtype, the chat template its inputs are written with, the context inputs are cut to and the calibration (its
        pointwise map and tie band); part of every cache key and calibration fingerprint."""
        return model_identity(
            f"reward|{self.content}",
            context=self.context_length,
            chat_template=self.tokenizer.chat_template,
            calibration=asdict(self.calibration),
        )

    @classmethod
    def from_pretrained(
        cls,
        model: str | os.PathLike,
        *,
        dtype: str = "auto",
        num_threads: int | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 8,
        progress: bool = True,
    ) -> RewardModel:
        """Load a reward model folder, cached Hub id or PEFT adapter folder (see :func:`is_reward_model`).

        Args:
            model: the folder or Hub id.
            dtype: ``"auto"`` (:func:`hf_critic.backends.models.inference_dtype`) or a torch dtype name.
            num_threads: CPU threads >= 1 (default :func:`hf_critic.backends.threads.default_num_threads`: ``OMP_NUM_THREADS``
                when set, else one per physical core).
            trust_remote_code: run the repository's code; only when asked.
            batch_size: sequences per forward pass.
            progress: show a progress bar.

        Raises:
            hf_critic.backends.models.ModelNotFoundError: the model or an adapter's base is not on this machine.
            ValueError: the model has more than one label, a bad calibration file, or ``num_threads`` below 1.
        """
        import torch
        from transformers import AutoModelForSequenceClassification

        from ..backends.models import (
            dequantized_gguf_config,
            inference_device,
            inference_dtype,
            resolve_model,
        )
        from ..backends.threads import num_threads_or_default

        torch.set_num_threads(num_threads_or_default(num_threads))
        folder = Path(resolve_model(model))
        adapter = (folder / "adapter_config.json").is_file()
        base = _base_of_adapter(folder) if adapter else str(folder)
        torch_dtype = inference_dtype(dtype, batch_size)
        config = dequantized_gguf_config(base)  # the embedded default critic: plain weights under a GGUF config
        extra = {"config": config} if config is not None else {}
        if config is not None:
            config.num_labels = 1
        with _quiet_transformers(adapter):  # an adapter's base has no score head by design: the adapter brings it
            lm = AutoModelForSequenceClassification.from_pretrained(
                base,
                dtype=torch_dtype,
                trust_remote_code=trust_remote_code,
                **(extra or ({"num_labels": 1} if adapter else {})),
            )
        if adapter:
            from peft import PeftModel

            lm = PeftModel.from_pretrained(lm, str(folder)).merge_and_unload()  # one matmul a layer, cache-ready
        if lm.config.num_labels != 1:
            raise BadInputError(f"{model}: a reward model has one label, this one has {lm.config.num_labels}")
        tokenizer = critic_tokenizer(folder, trust_remote_code)
        lm = lm.to(inference_device())
        lm.eval()
        content = f"{_fingerprint(folder, base if adapter else None)}:{torch_dtype}"
        return cls(
            lm,
            tokenizer,
            name=f"{model}@{content}",
            content=content,
            calibration=RewardCalibration.load(folder),
            batch_size=batch_size,
            progress=progress,
        )

    # ----------------------------------------------------------------------------------- encoding
    def fit(self, question: str, response: str, truncate: str) -> tuple[list[int] | None, bool]:
        """The ids of one input within the model's context (:func:`fit_ids`)."""
        return fit_ids(self.tokenizer, question, response, self.context_length, truncate)

    # ----------------------------------------------------------------------------------- scoring
    def score(self, inputs: Sequence[Sequence[int]]) -> list[float]:
        """One reward per input of :meth:`fit` (token ids), batched, with a progress bar in responses/s when
        ``progress`` (:class:`hf_critic.critic.rewards.RewardScorer`)."""
        from tqdm.auto import tqdm

        with tqdm(total=len(inputs), desc="rewards", unit="response", disable=not self.progress) as bar:
            return self.rewards_of_ids(inputs, done=bar.update)

    def rewards_of_ids(
        self, encoded: Sequence[Sequence[int]], done: Callable[[int], None] | None = None
    ) -> list[float]:
        """One reward per token sequence, each read once, float32 out.

        The passes are planned by :func:`hf_critic.backends.prefill.plan_batches`: the responses to one question (both
        responses of a pair) share the question and its chat template, which is prefilled once and its KV cache reused;
        each pass then reads its rows' own tokens, longest first, at most ``batch_size`` rows and
        :attr:`max_batch_tokens` padded tokens. The reward is the score head at each row's last token.
        :attr:`last_readout` counts the call's passes and tokens.

        Args:
            encoded: token id lists, each within the context.
            done: called with the number of sequences finished after each batch (progress).
        """
        import torch

        from ..backends.prefill import PrefixCaches, ReadoutCounts, plan_batches, takes_prefilled_cache

        out = [0.0] * len(encoded)
        caches = PrefixCaches(self.model, self.tokenizer.pad_token_id)
        counts = ReadoutCounts(rows=len(encoded))
        share = takes_prefilled_cache(self.model)
        for batch in plan_batches(encoded, self.batch_size, self.max_batch_tokens, share=share):
            ids, mask, cache = caches.inputs([encoded[i] for i in batch.rows], batch.prefix, base=batch.base)
            start = batch.prefix
            with torch.inference_mode():
                logits = self.model(
                    input_ids=ids[:, start:],
                    attention_mask=mask,
                    position_ids=(mask.cumsum(-1) - 1).clamp(min=0)[:, start:],
                    **({caches.keyword: cache, "use_cache": True} if cache is not None else {}),
                ).logits
            for row, i in enumerate(batch.rows):
                out[i] = float(logits[row, 0].float())
            counts.add_pass(ids.shape[0] * (ids.shape[1] - start), int(mask[:, start:].sum()))
            if done is not None:
                done(len(batch.rows))
        self.last_readout = counts.with_prefixes(caches)
        return out
