"""Reward-model training with TRL's ``RewardTrainer``: the library half of ``recipes/reward.py``.

A reward model is a critic that scores one response (Ouyang et al. 2022 §3.5; CritiqueLLM v2 §3.1's two tasks read
off its rewards, :mod:`hf_critic.critics.reward`). It is trained on pairwise judgments with the Bradley-Terry loss:

* :func:`preference_pairs`: judgment rows (``question``, ``response_1``, ``response_2``, ``label``; the
  ``pairwise_preference`` config ``scripts/smollm2-135m/build_judgment_data.py`` writes) become TRL's pre-tokenised
  preference rows (``chosen_ids`` / ``rejected_ids``), each response in its question's chat and cut in the middle to
  ``max_length`` exactly as :func:`hf_critic.critics.reward.fit_ids` cuts at judging time; ties and the swapped copies
  of swap augmentation are dropped (a reward model is order-free);
* :class:`CriticRewardTrainer`: ``RewardTrainer`` whose evaluation returns each pair's two rewards and two lengths,
  so :func:`reward_metrics` reports within-question accuracy (every pair is two answers to one question) and the
  correlation of the reward difference with the length difference at every evaluation;
* :class:`ThroughputCallback`: pairs/h, peak RSS and load average in every log line;
* :func:`fit_calibration`: the pointwise map and the tie band saved beside the model (``hf_critic_reward.json``).
"""

from __future__ import annotations

import logging
import os
import resource
import time
from dataclasses import dataclass, field

import datasets
import numpy as np
from transformers import TrainerCallback
from trl import RewardTrainer

from ..core.errors import BadInputError
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS
from ..critics.reward import RewardCalibration, fit_calibration, fit_ids, fit_tie_margin
from .config import lora_on_top_layers

logger = logging.getLogger(__name__)

__all__ = [
    "CriticRewardTrainer",
    "LengthCollator",
    "base_model_path",
    "calibrate",
    "configure_peft",
    "fit_tie_margin",
    "load_base",
    "load_pairs",
    "point_adapter_at_base",
    "RewardScriptArguments",
    "ThroughputCallback",
    "fit_calibration",
    "get_pairs",
    "get_tokenizer_and_model",
    "get_trainer",
    "preference_pairs",
    "reward_metrics",
    "save_reward_model",
]


@dataclass
class RewardScriptArguments:
    """The data arguments of ``recipes/reward.py`` (TRL's ``RewardConfig`` and ``ModelConfig`` hold the rest).

    Attributes:
        dataset_name: a ``save_to_disk`` DatasetDict folder (or a parent holding ``dataset_config``) with ``train``
            and a validation split of judgment pairs.
        dataset_config: its sub-folder, e.g. ``pairwise_preference``.
        dataset_train_split / dataset_test_split: split names.
        max_train_pairs / max_eval_pairs: keep the first N pairs after a seeded shuffle (None: all).
        grades_dataset: optional JSONL of graded single responses (``question``, ``response``, ``score``) the pointwise
            map is fitted on after training; ``grades_scale`` their ``[low, high]``.
        lora_top_layers: LoRA adapters on the top N decoder layers only (PEFT ``layers_to_transform``; 0: all).
        score_head_only: no LoRA at all: the frozen base with its score head trained (``modules_to_save``).
        full_top_layers: no LoRA: the top N decoder layers trained in full with the score head (``modules_to_save``).
        length_balance: resample the training pairs to as many "shorter wins" as "longer wins" pairs
            (:func:`hf_critic.training.against_length.length_balanced`).
        soft_labels: train against the judge's probability (the rows' ``preference``) instead of a hard label.
        length_head: ODIN's disentangled reward (a quality and a length head; only the quality head judges);
            ``length_correlation_weight`` and ``orthogonality_weight`` its two losses' weights.
    """

    dataset_name: str = field(default="outputs/judgment_data", metadata={"help": "Judgment data folder."})
    dataset_config: str | None = field(default="pairwise_preference", metadata={"help": "Config sub-folder."})
    dataset_train_split: str = field(default="train", metadata={"help": "Training split."})
    dataset_test_split: str = field(default="validation", metadata={"help": "Validation split (best checkpoint)."})
    max_train_pairs: int | None = field(default=None, metadata={"help": "Train on the first N shuffled pairs."})
    max_eval_pairs: int | None = field(default=None, metadata={"help": "Validate on the first N shuffled pairs."})
    grades_dataset: str | None = field(
        default=None, metadata={"help": "JSONL of graded responses (question, response, score) for the pointwise map."}
    )
    grades_scale: list[float] = field(default_factory=lambda: [1.0, 10.0], metadata={"help": "low, high of grades."})
    lora_top_layers: int = field(
        default=0, metadata={"help": "LoRA on the top N decoder layers only (0: on every layer)."}
    )
    score_head_only: bool = field(
        default=False, metadata={"help": "Frozen base: only the score head is trained (a PEFT modules_to_save)."}
    )
    full_top_layers: int = field(
        default=0, metadata={"help": "No LoRA: the top N decoder layers are trained in full (PEFT modules_to_save)."}
    )
    length_balance: bool = field(
        default=False, metadata={"help": "Resample the pairs to as many shorter-wins as longer-wins pairs."}
    )
    soft_labels: bool = field(
        default=False, metadata={"help": "Bradley-Terry loss against the judge's probability (the preference column)."}
    )
    length_head: bool = field(
        default=False, metadata={"help": "ODIN: a length head beside the quality head; only the quality head judges."}
    )
    length_correlation_weight: float = field(default=1.0, metadata={"help": "ODIN's length-correlation loss weight."})
    orthogonality_weight: float = field(default=1.0, metadata={"help": "ODIN's head-orthogonality loss weight."})


def preference_pairs(
    dataset: datasets.Dataset, tokenizer, max_length: int | None, *, source: str = "data"
) -> datasets.Dataset:
    """Judgment pairs as TRL preference rows, tokenised and cut to ``max_length`` the way the critic cuts.

    Args:
        dataset: rows with ``question``, ``response_1``, ``response_2`` and ``label`` (0 / 1 / 2, see
            :mod:`hf_critic.core.labels`); an optional boolean ``swapped`` marks swap-augmented copies.
        tokenizer: the reward model's tokenizer (its chat template formats each response).
        max_length: tokens per sequence (None: no cut).
        source: the data's name in errors.

    Returns:
        Rows with ``chosen_ids``, ``rejected_ids`` (token id lists), ``chosen_length`` / ``rejected_length`` (the
        responses' lengths in characters, for the length correlation), ``chosen_probability`` (the judge's
        probability that the chosen response is better, from an optional ``preference`` column = P(response 2
        better); 1.0 without one) and ``truncated`` (either side cut); ties and swapped copies dropped.

    Raises:
        ValueError: a missing column, or no pair left (names ``source``).
    """
    missing = {"question", "response_1", "response_2", "label"} - set(dataset.column_names)
    if missing:
        raise BadInputError(f"{source}: missing column(s) {', '.join(sorted(missing))} for preference pairs")
    keep = dataset.filter(
        lambda row: row["label"] in (RESPONSE_1_WINS, RESPONSE_2_WINS) and not row.get("swapped", False),
        desc=f"{source}: dropping ties and swapped copies",
    )
    if len(keep) == 0:
        raise BadInputError(f"{source}: no pair with a winner (ties and swapped copies are dropped)")

    def encode(row):
        first = row["label"] == RESPONSE_1_WINS
        chosen, rejected = (row["response_1"], row["response_2"]) if first else (row["response_2"], row["response_1"])
        chosen_ids, cut_chosen = fit_ids(tokenizer, row["question"], chosen, max_length, "middle")
        rejected_ids, cut_rejected = fit_ids(tokenizer, row["question"], rejected, max_length, "middle")
        preference = row.get("preference")
        probability = 1.0 if preference is None else (1.0 - preference if first else preference)
        return {
            "chosen_ids": chosen_ids,
            "rejected_ids": rejected_ids,
            "chosen_length": len(chosen),
            "rejected_length": len(rejected),
            "chosen_probability": float(probability),
            "truncated": cut_chosen or cut_rejected,
        }

    return keep.map(encode, remove_columns=keep.column_names, desc=f"{source}: tokenising pairs")


class CriticRewardTrainer(RewardTrainer):
    """TRL's ``RewardTrainer`` whose evaluation hands :func:`reward_metrics` each pair's rewards and lengths.

    ``prediction_step`` returns predictions of shape ``(batch, 2)`` (chosen, rejected rewards) and labels of shape
    ``(batch, 2)`` (the responses' lengths in characters), so the metrics see whole pairs whatever the batch size or
    the number of processes; training log lines carry a :class:`ThroughputCallback`'s figures. The pair columns
    (:data:`PAIR_COLUMNS`) reach the collator through the public ``remove_unused_columns=False`` (:func:`get_trainer`
    sets it).

    ``objective`` (the recipe's :class:`RewardScriptArguments`, set by :func:`get_trainer`) switches on soft labels
    and ODIN's disentangled reward (:mod:`hf_critic.training.against_length`); without either the loss is TRL's.
    """

    objective: RewardScriptArguments | None = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        extra = {k: inputs.pop(k) for k in PAIR_COLUMNS if k in inputs}
        goal = self.objective
        if goal is None or not (goal.soft_labels or goal.length_head):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        return self._against_length_loss(model, inputs, extra, return_outputs)

    def _against_length_loss(self, model, inputs, extra, return_outputs):
        """Soft-label and / or ODIN loss; the outputs' logits are the quality reward alone (what judges)."""
        import torch

        from .against_length import disentangled_loss, preference_loss, score_heads

        goal = self.objective
        outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], use_cache=False)
        rewards = outputs.logits.float()  # (2 x pairs, heads): chosen rows first, then rejected
        chosen, rejected = rewards.sum(-1).chunk(2)  # ODIN ranks with r_Q + r_L
        probability = extra["chosen_probability"].float() if goal.soft_labels else None
        loss = preference_loss(chosen - rejected, probability)
        if self.args.center_rewards_coefficient is not None:
            loss = loss + self.args.center_rewards_coefficient * torch.mean((chosen + rejected) ** 2)
        if goal.length_head:
            lengths = torch.cat([extra["chosen_length"], extra["rejected_length"]])
            head = next(h for h in score_heads(model) if h.weight.requires_grad)
            extra_loss, figures = disentangled_loss(
                rewards,
                lengths,
                head.weight.float(),
                correlation_weight=goal.length_correlation_weight,
                orthogonality_weight=goal.orthogonality_weight,
            )
            loss = loss + extra_loss
            mode = "train" if model.training else "eval"
            for name, value in figures.items():
                self._metrics[mode][name].append(value)
        outputs.logits = outputs.logits[:, :1]
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:  # a training log line: add the run's speed (ThroughputCallback)
            for callback in self.callback_handler.callbacks:
                if isinstance(callback, ThroughputCallback):
                    logs.update(callback.figures(self.state.global_step))
        super().log(logs, start_time)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        import torch

        inputs = self._prepare_inputs(inputs)
        lengths = torch.stack([inputs["chosen_length"], inputs["rejected_length"]], dim=-1).float()
        with torch.no_grad():
            loss, outputs = self.compute_loss(model, inputs, return_outputs=True)
        chosen, rejected = outputs.logits.squeeze(-1).float().chunk(2)
        return loss.detach(), torch.stack([chosen, rejected], dim=-1), lengths


#: per-pair columns the collator keeps as tensors beside TRL's (lengths for the metrics and ODIN, soft labels)
PAIR_COLUMNS = ("chosen_length", "rejected_length", "chosen_probability")


class LengthCollator:
    """TRL's reward collator plus :data:`PAIR_COLUMNS` (kept as tensors for :class:`CriticRewardTrainer`)."""

    def __init__(self, collator):
        self.collator = collator

    def __call__(self, examples):
        import torch

        batch = self.collator([{k: e[k] for k in ("chosen_ids", "rejected_ids")} for e in examples])
        for column in PAIR_COLUMNS:
            if column in examples[0]:
                batch[column] = torch.tensor([e[column] for e in examples])
        return batch


def reward_metrics(prediction) -> dict[str, float]:
    """Validation figures of a reward model from an ``EvalPrediction`` of :class:`CriticRewardTrainer`.

    Returns:
        ``within_question_accuracy`` (share of pairs whose chosen response gets the higher reward, in [0, 1]; equal
        rewards count half), ``length_correlation`` (Pearson r of ``r_chosen - r_rejected`` with the difference of
        the responses' lengths in characters, in [-1, 1]; how much the reward follows length) and
        ``longer_wins_accuracy`` (the same pairs judged by length alone, ties half).
    """
    from scipy.stats import pearsonr

    rewards, lengths = np.asarray(prediction.predictions), np.asarray(prediction.label_ids)
    margin, longer = rewards[:, 0] - rewards[:, 1], lengths[:, 0] - lengths[:, 1]
    accuracy = float(np.mean((margin > 0) + 0.5 * (margin == 0)))
    longer_wins = float(np.mean((longer > 0) + 0.5 * (longer == 0)))
    spread = np.std(margin) > 0 and np.std(longer) > 0
    correlation = float(pearsonr(margin, longer)[0]) if spread else float("nan")
    return {
        "within_question_accuracy": accuracy,
        "length_correlation": correlation,
        "longer_wins_accuracy": longer_wins,
    }


class ThroughputCallback(TrainerCallback):
    """Training speed for every log line of :class:`CriticRewardTrainer`: ``pairs_per_hour`` (training pairs since
    this run started or resumed, all processes), ``peak_rss_gb`` (this process, GB) and ``load_average`` (1 minute):
    what a CPU run needs to plan its hours.

    Args:
        pairs_per_step: pairs per optimiser step (batch x accumulation x processes).
    """

    def __init__(self, pairs_per_step: int):
        self.pairs_per_step, self.start, self.first_step = pairs_per_step, None, 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.start, self.first_step = time.perf_counter(), state.global_step

    def figures(self, step: int) -> dict[str, float]:
        """The three figures at optimiser step ``step`` (no ``pairs_per_hour`` before the first step)."""
        out = {
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
            "load_average": round(os.getloadavg()[0], 2),
        }
        hours = (time.perf_counter() - self.start) / 3600 if self.start is not None else 0
        if hours > 0 and step > self.first_step:
            out["pairs_per_hour"] = round((step - self.first_step) * self.pairs_per_step / hours, 1)
        return out


# ----------------------------------------------------------------------------------- recipe helpers
def base_model_path(name: str) -> str:
    """A local path for the recipe's ``model_name_or_path`` (``default``: the embedded default critic).

    Raises:
        hf_critic.backends.models.ModelNotFoundError: not on this machine.
    """
    from ..backends.models import default_model_dir, resolve_model

    return str(default_model_dir()) if name in ("default", None) else resolve_model(name)


def load_base(path: str, *, dtype: str | None = None, trust_remote_code: bool = False, num_labels: int = 1):
    """The base as a sequence classifier (``score`` head newly initialised for a causal LM checkpoint).

    Args:
        path: a local model folder (:func:`base_model_path`).
        dtype: torch dtype name (``bfloat16``, ``float32``; None / ``auto``: the checkpoint's).
        num_labels: the head's outputs: 1 (a reward), 2 for ODIN's quality and length heads.
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    from ..backends.models import dequantized_gguf_config

    config = dequantized_gguf_config(path)  # the embedded default critic: plain weights under a stale GGUF config
    kwargs = {"config": config} if config is not None else {"num_labels": num_labels}
    if config is not None:
        config.num_labels = num_labels
    torch_dtype = getattr(torch, dtype) if dtype not in (None, "auto") else "auto"
    return AutoModelForSequenceClassification.from_pretrained(
        path, dtype=torch_dtype, trust_remote_code=trust_remote_code, **kwargs
    )


def configure_peft(peft_config, script_args: RewardScriptArguments, num_layers: int) -> None:
    """Apply the recipe's PEFT choices: LoRA on the top layers only, the top layers trained in full, or the score
    head alone (no LoRA).

    Raises:
        ValueError: ``lora_top_layers`` or ``full_top_layers`` outside ``[0, num_layers]``.
    """
    top, full = script_args.lora_top_layers, script_args.full_top_layers
    for name, value in (("lora_top_layers", top), ("full_top_layers", full)):
        if not 0 <= value <= num_layers:
            raise BadInputError(f"{name} must be in [0, {num_layers}] (the model's layers), got {value}")
    if script_args.score_head_only or full:
        from peft.utils.constants import DUMMY_TARGET_MODULES  # PEFT's "no LoRA, only modules_to_save"

        peft_config.target_modules = DUMMY_TARGET_MODULES
        full_layers = [f"model.layers.{i}" for i in range(num_layers - full, num_layers)]
        peft_config.modules_to_save = list(dict.fromkeys([*(peft_config.modules_to_save or []), *full_layers]))
    elif top:
        lora_on_top_layers(peft_config, top, num_layers)
    if str(peft_config.task_type) != "SEQ_CLS":  # PEFT trains a SEQ_CLS model's classifier ("score") itself
        peft_config.modules_to_save = list(dict.fromkeys([*(peft_config.modules_to_save or []), "score"]))


def load_pairs(script_args: RewardScriptArguments, *, seed: int) -> dict[str, datasets.Dataset]:
    """``{"train": ..., "validation": ...}`` judgment rows from ``dataset_name[/dataset_config]``, shuffled with
    ``seed`` and cut to ``max_train_pairs`` / ``max_eval_pairs`` (counted before ties and swapped copies are dropped).

    Raises:
        FileNotFoundError: no such folder (names the script that builds it).
        ValueError: a split is missing.
    """
    from pathlib import Path

    folder = Path(script_args.dataset_name) / (script_args.dataset_config or "")
    if not folder.exists():
        raise FileNotFoundError(
            f"{folder}: no judgment data; build it with scripts/smollm2-135m/build_judgment_data.py "
            "(data_dir=../shared/data, output_dir=outputs/judgment_data)"
        )
    data = datasets.load_from_disk(str(folder))
    out = {}
    for name, split, limit in (
        ("train", script_args.dataset_train_split, script_args.max_train_pairs),
        ("validation", script_args.dataset_test_split, script_args.max_eval_pairs),
    ):
        if split not in data:
            raise BadInputError(f"{folder}: no split {split!r} (it has {', '.join(data)})")
        rows = data[split].shuffle(seed=seed)
        if limit is not None:
            unswapped = [i for i, s in enumerate(rows["swapped"]) if not s] if "swapped" in rows.column_names else None
            rows = (
                rows.select(unswapped[:limit]) if unswapped is not None else rows.select(range(min(limit, len(rows))))
            )
        out[name] = rows
    return out


def _rewards_of(model, tokenizer, items, max_length: int | None) -> np.ndarray:
    from ..critics.reward import RewardModel

    scorer = RewardModel(
        model,
        tokenizer,
        name="training",
        calibration=RewardCalibration(max_length=max_length),
        batch_size=8,
        progress=False,
    )
    ids = [scorer.fit(q, r, "middle")[0] for q, r in items]
    was_training = model.training
    model.eval()
    try:
        return np.asarray(scorer.rewards_of_ids(ids))
    finally:
        model.train(was_training)


def calibrate(trainer, script_args: RewardScriptArguments, tokenizer, max_length: int | None) -> RewardCalibration:
    """The trained model's calibration: tie band fitted on up to 400 validation pairs (ties included), pointwise map
    fitted on ``grades_dataset`` when given (else the documented sigmoid map)."""
    data = load_pairs(script_args, seed=0)["validation"]
    rows = data.select(range(min(400, len(data))))
    items = [(r["question"], x) for r in rows for x in (r["response_1"], r["response_2"])]
    rewards = _rewards_of(trainer.model, tokenizer, items, max_length)
    tau = fit_tie_margin(rewards[0::2] - rewards[1::2], np.asarray(rows["label"]))
    if not script_args.grades_dataset:
        return RewardCalibration(tie_margin=tau, max_length=max_length)
    graded = datasets.load_dataset("json", data_files=script_args.grades_dataset, split="train")
    scores = _rewards_of(trainer.model, tokenizer, [(r["question"], r["response"]) for r in graded], max_length)
    return fit_calibration(
        scores,
        np.asarray(graded["score"], dtype=float),
        tuple(script_args.grades_scale),
        tie_margin=tau,
        max_length=max_length,
        source=f"grades of {script_args.grades_dataset}",
    )


def point_adapter_at_base(folder: str, name: str) -> None:
    """Record the adapter's base by name (``smollm2-135m-instruct`` for the embedded critic) rather than this
    machine's cache path, so the folder loads on another machine (:func:`hf_critic.critics.reward.RewardModel`)."""
    import json
    from pathlib import Path

    from ..backends.models import DEFAULT_MODEL_NAME

    path = Path(folder) / "adapter_config.json"
    if path.is_file() and name in ("default", None):
        config = json.loads(path.read_text(encoding="utf-8"))
        config["base_model_name_or_path"] = DEFAULT_MODEL_NAME
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------------- the recipe's steps
def get_tokenizer_and_model(model_args, training_args, script_args: RewardScriptArguments | None = None):
    """The recipe's tokenizer and one-label sequence classifier (:func:`load_base`), with a pad token (the EOS token
    when the tokenizer has none) set on both.

    Args:
        model_args: TRL's ``ModelConfig`` (``model_name_or_path``: a local folder, a cached Hub id or ``default``;
            ``dtype``).
        training_args: TRL's ``RewardConfig`` (``trust_remote_code``).
        script_args: with ``length_head``, the head has two outputs (ODIN's quality and length rewards).

    Returns:
        ``(tokenizer, model)``.

    Raises:
        hf_critic.backends.models.ModelNotFoundError: the model is not on this machine.
    """
    from transformers import AutoTokenizer

    path = base_model_path(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=training_args.trust_remote_code)
    heads = 2 if script_args is not None and script_args.length_head else 1
    model = load_base(
        path, dtype=model_args.dtype, trust_remote_code=training_args.trust_remote_code, num_labels=heads
    )
    model.config.num_labels = (
        1  # what the saved critic has (ODIN's length head is cut off before saving); TRL checks it
    )
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, model


def get_pairs(script_args: RewardScriptArguments, tokenizer, training_args) -> dict[str, datasets.Dataset]:
    """``{"train": ..., "validation": ...}`` preference rows (:func:`load_pairs` then :func:`preference_pairs`, cut
    to ``training_args.max_length`` as the critic cuts; the training pairs length-balanced with
    ``script_args.length_balance``), each split's size and cut count logged.

    Raises:
        FileNotFoundError, ValueError: as :func:`load_pairs`.
    """
    data = load_pairs(script_args, seed=training_args.seed)
    pairs = {
        split: preference_pairs(
            rows, tokenizer, training_args.max_length, source=f"{script_args.dataset_name}:{split}"
        )
        for split, rows in data.items()
    }
    if script_args.length_balance:
        from .against_length import length_balanced

        pairs["train"] = length_balanced(pairs["train"], seed=training_args.seed)
    for split, rows in pairs.items():
        logger.info(f"{split}: {len(rows)} pairs, {sum(rows['truncated'])} cut to {training_args.max_length} tokens")
    return pairs


def get_trainer(
    model, tokenizer, pairs: dict[str, datasets.Dataset], training_args, peft_config, objective=None
) -> CriticRewardTrainer:
    """A :class:`CriticRewardTrainer` over ``pairs`` with the length-keeping collator, :func:`reward_metrics` at every
    evaluation and a :class:`ThroughputCallback` (pairs/h, peak RSS, load average); ``objective`` (the recipe's
    :class:`RewardScriptArguments`) turns on soft labels and ODIN's loss."""
    from trl.trainer.reward_trainer import DataCollatorForPreference

    training_args.remove_unused_columns = False  # the length columns go to LengthCollator, which picks its keys
    trainer = CriticRewardTrainer(
        model=model,
        args=training_args,
        train_dataset=pairs["train"],
        eval_dataset=pairs.get("validation"),
        processing_class=tokenizer,
        data_collator=LengthCollator(DataCollatorForPreference(pad_token_id=tokenizer.pad_token_id)),
        compute_metrics=reward_metrics,
        peft_config=peft_config,
    )
    trainer.objective = objective
    args = training_args
    trainer.add_callback(
        ThroughputCallback(args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size)
    )
    return trainer


def save_reward_model(trainer, script_args: RewardScriptArguments, model_args, tokenizer) -> str | None:
    """Save the trained model (a PEFT adapter with its score head when PEFT was used), its calibration
    (``hf_critic_reward.json``: :func:`calibrate`), the adapter's base by name (:func:`point_adapter_at_base`),
    ``training_summary.json`` (best checkpoint and metric, every evaluation, train pairs, calibration source) and the
    model card ``README.md`` (:func:`hf_critic.training.card.reward_model_card`) in ``output_dir``.

    Returns:
        The model card's text on the main process (for ``push_to_hub``), None on the others (which save nothing
        but the model).
    """
    import json

    from .against_length import keep_quality_head
    from .card import reward_model_card
    from .sft import write_card

    args = trainer.args
    if keep_quality_head(trainer.model):  # ODIN: only the quality reward judges, so only it is saved
        logger.info("length head dropped: the saved critic judges with the quality head alone")
    trainer.save_model(args.output_dir)
    if not trainer.accelerator.is_main_process:
        return None
    calibration = calibrate(trainer, script_args, tokenizer, args.max_length)
    calibration.save(args.output_dir)
    point_adapter_at_base(args.output_dir, model_args.model_name_or_path)
    state = trainer.state
    summary = {
        "best_checkpoint": state.best_model_checkpoint,
        "best_metric": state.best_metric,
        "evaluations": [log for log in state.log_history if "eval_within_question_accuracy" in log],
        "train_pairs": len(trainer.train_dataset),
        "calibration": calibration.source,
    }
    with open(os.path.join(args.output_dir, "training_summary.json"), "w") as handle:
        json.dump(summary, handle, indent=2, default=float)
    logger.info(f"best validation within-question accuracy {state.best_metric}; saved {args.output_dir}")
    logger.info(f"pointwise map: {calibration.source}; tie band {calibration.tie_margin:.3f}")
    card = reward_model_card(trainer, script_args, model_args, calibration)
    write_card(args.output_dir, card)
    return card
