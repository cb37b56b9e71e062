"""The Hub model card (README.md) of a trained critic: ``huggingface_hub.ModelCardData`` + a Jinja template.

Built as :mod:`hf_critic.eval_instruct.hub` builds the Eval-Instruct dataset card: the YAML header is a ``ModelCardData``
(``base_model``, ``library_name``, ``pipeline_tag``, ``tags``, ``datasets``), the body is :data:`MODEL_CARD_TEMPLATE`
rendered by ``ModelCard.from_template``: Usage, Training data, Prompt templates, Training hyper-parameters,
Validation results (CritiqueLLM v1 §4.3), Framework versions, Citation.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..formats import DEFAULT_FAMILY
from .mixture import MixtureResult

__all__ = ["MODEL_CARD_TEMPLATE", "REWARD_CARD_TEMPLATE", "model_card", "reward_model_card", "sft_model_card"]

_CITATION = """@inproceedings{ke-etal-2024-critiquellm,
    title = "{C}ritique{LLM}: Towards an Informative Critique Generation Model for Evaluation of Large Language Model Generation",
    author = "Ke, Pei and Wen, Bosi and Feng, Andrew and Liu, Xiao and Lei, Xuanyu and Cheng, Jiale and Wang, Shengyuan and Zeng, Aohan and Dong, Yuxiao and Wang, Hongning and Tang, Jie and Huang, Minlie",
    booktitle = "Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2024",
    pages = "13034--13054",
}"""

_HYPERPARAMETERS = (
    "learning_rate",
    "lr_scheduler_type",
    "warmup_steps",
    "weight_decay",
    "optim",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "num_train_epochs",
    "max_steps",
    "max_length",
    "packing",
    "padding_free",
    "assistant_only_loss",
    "completion_only_loss",
    "bf16",
    "activation_checkpointing",
    "seed",
)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


# The sections both cards end with (Jinja).
_HYPERPARAMETER_TABLE = """## Training hyper-parameters

| parameter | value |
|---|---|
{% for name, value in hyperparameters -%}
| {{ name }} | {{ value }} |
{% endfor -%}
| effective batch size | {{ effective_batch }} ({{ world_size }} process(es)) |
{% for name, value in lora -%}
| {{ name }} | {{ value }} |
{% endfor %}"""
_CARD_TAIL = """{% if best %}
Selected checkpoint: `{{ best.checkpoint }}` ({{ best.metric }} = {{ best.value }}).
{% endif %}
## Framework versions

- {{ versions }}

## Citation

```bibtex
{{ citation }}
```
"""

#: The card body (Jinja, rendered by ``huggingface_hub.ModelCard.from_template``).
MODEL_CARD_TEMPLATE = (
    """---
{{ card_data }}
---

# {{ model_name }}

A critic model fine-tuned from `{{ base_model }}` with [hf-critic](https://github.com/hf-critic/hf-critic) \
(`recipes/sft.py`, TRL `SFTTrainer`): it writes a critique, an explanation followed by a score (pointwise \
grading) or a verdict (pairwise comparison), as in CritiqueLLM (Ke et al., 2024, §3.3). The loss is on the \
critique tokens only; the prompts are the critic templates used at inference.

## Usage

```bash
hf-critic grade --model {{ usage_model }} --template {{ usage_template }} --data responses.jsonl --output graded.jsonl
```
{% if sources %}
## Training data

| source | split | rows | kept | weight | rows used | eval rows |
|---|---|---:|---:|---:|---:|---:|
{% for s in sources -%}
| `{{ s.name }}` | {{ s.split }} | {{ s.rows }} | {{ s.kept }} | {{ s.weight }} | {{ s.used }} | {{ s.test_rows }} |
{% endfor %}
`kept`: rows within `max_length` (longer ones are dropped, never truncated).
{% endif %}{% if templates %}
## Prompt templates

| setting | template | version |
|---|---|---|
{% for t in templates -%}
| {{ t.setting }} | `{{ t.template }}` | {{ t.template_version }} |
{% endfor %}{% endif %}
"""
    + _HYPERPARAMETER_TABLE
    + """{% if validation %}
## Validation results

Pearson / Spearman / Kendall between the critic's scores on the held-out pointwise set and the gold scores, at \
each evaluation (CritiqueLLM v1 §4.3 selects the checkpoint with the best Pearson).

| step | epoch | Pearson | Spearman | Kendall | parse rate | rows |
|---:|---:|---:|---:|---:|---:|---:|
{% for h in validation -%}
| {{ h.step }} | {{ h.epoch }} | {{ h.pearson }} | {{ h.spearman }} | {{ h.kendall }} | {{ h.parse_rate }} | {{ h.n }} |
{% endfor %}{% endif %}"""
    + _CARD_TAIL
)


def _lora_rows(model_args) -> list[tuple[str, Any]]:
    """The LoRA rows of a card's hyper-parameter table, from TRL's ``ModelConfig``."""
    return [
        ("LoRA r / alpha / dropout", f"{model_args.lora_r} / {model_args.lora_alpha} / {model_args.lora_dropout}"),
        ("LoRA target modules", model_args.lora_target_modules),
    ]


def model_card(
    *,
    model_name: str,
    base_model: str,
    training_args,
    model_args=None,
    mixture: MixtureResult | None = None,
    templates: Sequence[Mapping[str, str]] = (),
    validation: Sequence[Mapping[str, Any]] = (),
    best: Mapping[str, Any] | None = None,
    world_size: int = 1,
    usage_template: str = DEFAULT_FAMILY,
    usage_model: str | None = None,
) -> str:
    """A Hub model card (README.md) for a trained critic.

    Args:
        model_name: the model's name (output folder or Hub repo name).
        base_model: the model fine-tuned from (Hub id or path).
        training_args: the ``SFTConfig`` (hyper-parameters are read from it).
        model_args: the TRL ``ModelConfig`` (LoRA settings when ``use_peft``).
        mixture: the training data (per-source rows and weights).
        templates: prompt templates seen in the data: dicts with ``template`` and ``template_version`` (and
            optionally ``setting``); default ``mixture.templates``.
        validation: :attr:`CritiquePearsonCallback.history` (one dict per evaluation).
        best: ``{"checkpoint", "metric", "value"}`` of the selected checkpoint, if any.
        world_size: number of training processes (for the effective batch size).
        usage_template: template family shown in the usage example.
        usage_model: the ``--model`` value shown in the usage example (default: ``model_name``).

    Returns:
        Markdown with a YAML header (``base_model`` unless a local path, ``library_name``, ``pipeline_tag``,
        ``tags``, ``datasets`` = the Hub ids among the sources), then the sections of :data:`MODEL_CARD_TEMPLATE`.
    """
    import torch
    import transformers
    import trl
    from huggingface_hub import ModelCard, ModelCardData

    use_peft = getattr(model_args, "use_peft", False)
    sources = mixture.sources if mixture else []
    hub_ids = sorted({s["id"] for s in sources if s["id"].count("/") == 1 and not Path(s["id"]).exists()})
    card_data = ModelCardData(
        base_model=base_model if not Path(base_model).exists() else None,
        library_name="transformers",
        pipeline_tag="text-generation",
        tags=["hf-critic", "critiquellm", "llm-as-a-judge", "trl", "sft"] + (["peft", "lora"] if use_peft else []),
        datasets=hub_ids or None,
    )
    args = training_args.to_dict() if hasattr(training_args, "to_dict") else dict(training_args)
    effective = args.get("per_device_train_batch_size", 1) * args.get("gradient_accumulation_steps", 1) * world_size
    lora = _lora_rows(model_args) if use_peft else []
    card = ModelCard.from_template(
        card_data,
        template_str=MODEL_CARD_TEMPLATE,
        model_name=model_name,
        base_model=base_model,
        usage_model=usage_model or model_name,
        usage_template=usage_template,
        sources=[{**s, "weight": _fmt(s["weight"])} for s in sources],
        templates=[
            {k: t.get(k, "") for k in ("setting", "template", "template_version")}
            for t in (templates or (mixture.templates if mixture else ()))
        ],
        hyperparameters=[(k, _fmt(args[k])) for k in _HYPERPARAMETERS if k in args],
        effective_batch=effective,
        world_size=world_size,
        lora=lora,
        validation=[{k: _fmt(v) for k, v in h.items()} for h in validation],
        best={k: _fmt(v) for k, v in best.items()} if best and best.get("checkpoint") else None,
        versions=f"transformers {transformers.__version__}, TRL {trl.__version__}, torch {torch.__version__}",
        citation=_CITATION,
    )
    return str(card)


def sft_model_card(trainer, model_args, script_args, validation_args, mixture: MixtureResult, pearson=None) -> str:
    """The :func:`model_card` of a finished SFT run of ``recipes/sft.py``: named after ``hub_model_id`` or the output
    folder, its selected checkpoint from ``trainer.state``, the validation history of the ``pearson`` callback
    (:class:`~hf_critic.training.callbacks.CritiquePearsonCallback`, or None), and a usage example on the Hub repo
    (when pushed) or the output folder with the validation template (else the recipe's)."""
    args, state = trainer.args, trainer.state
    return model_card(
        model_name=args.hub_model_id or os.path.basename(os.path.normpath(args.output_dir)),
        base_model=model_args.model_name_or_path,
        training_args=args,
        model_args=model_args,
        mixture=mixture,
        validation=pearson.history if pearson else (),
        best={
            "checkpoint": state.best_model_checkpoint,
            "metric": args.metric_for_best_model,
            "value": state.best_metric,
        },
        world_size=args.world_size,
        usage_template=validation_args.validation_template or script_args.template,
        usage_model=args.hub_model_id if args.push_to_hub else args.output_dir,
    )


#: The card body of a reward-model critic (``recipes/reward.py``), rendered like :data:`MODEL_CARD_TEMPLATE`.
REWARD_CARD_TEMPLATE = (
    """---
{{ card_data }}
---

# {{ model_name }}

A reward-model critic trained from `{{ base_model }}` with [hf-critic](https://github.com/hf-critic/hf-critic) \
(`recipes/reward.py`, TRL `RewardTrainer`, Bradley-Terry loss on pairwise judgments): one scalar reward per \
(question, response). Pairwise comparison decides from the difference of two rewards (tie band below); pointwise \
grading maps the reward onto the template's scale.

## Usage

```bash
hf-critic compare --model {{ usage_model }} --data pairs.jsonl --output compared.jsonl
hf-critic grade --model {{ usage_model }} --data answers.jsonl --output graded.jsonl
```

## Training data

`{{ dataset }}`: {{ train_pairs }} training pairs (ties and swapped copies dropped).

## Calibration

- Pointwise map: {{ calibration_source }}.
- Pairwise tie band: {{ tie_margin }} (reward units; 0 = a tie only on equal rewards).
- Context: {{ max_length }} tokens (longer inputs are cut in the middle of the response, as in training).

"""
    + _HYPERPARAMETER_TABLE
    + """{% if validation %}
## Validation results

Within-question accuracy (the share of validation pairs whose preferred response gets the higher reward) and the \
correlation of the reward difference with the length difference, at each evaluation.

| step | within-question accuracy | reward-length r |
|---:|---:|---:|
{% for h in validation -%}
| {{ h.step }} | {{ h.accuracy }} | {{ h.length_r }} |
{% endfor %}{% endif %}"""
    + _CARD_TAIL
)


def reward_model_card(trainer, script_args, model_args, calibration) -> str:
    """The Hub model card (README.md) of a finished ``recipes/reward.py`` run.

    Args:
        trainer: the finished ``RewardTrainer`` (its ``args`` and ``state``: hyper-parameters, evaluations with
            ``eval_within_question_accuracy`` / ``eval_length_correlation``, the best checkpoint).
        script_args: :class:`~hf_critic.training.reward.RewardScriptArguments` (the training data).
        model_args: TRL's ``ModelConfig`` (base model; LoRA settings when ``use_peft``).
        calibration: the saved :class:`~hf_critic.critics.reward.RewardCalibration`.

    Returns:
        Markdown with a YAML header (``base_model`` unless a local path or ``default``, ``library_name`` peft or
        transformers, ``pipeline_tag: text-classification``, ``tags``) and the sections of
        :data:`REWARD_CARD_TEMPLATE`.
    """
    import torch
    import transformers
    import trl
    from huggingface_hub import ModelCard, ModelCardData

    args, state = trainer.args, trainer.state
    use_peft = getattr(model_args, "use_peft", False)
    base = model_args.model_name_or_path
    name = args.hub_model_id or os.path.basename(os.path.normpath(args.output_dir))
    card_data = ModelCardData(
        base_model=base if base != "default" and not Path(base).exists() else None,
        library_name="peft" if use_peft else "transformers",
        pipeline_tag="text-classification",
        tags=["hf-critic", "llm-as-a-judge", "reward-model", "trl"] + (["peft", "lora"] if use_peft else []),
    )
    settings = args.to_dict()
    evaluations = [log for log in state.log_history if "eval_within_question_accuracy" in log]
    lora = _lora_rows(model_args) if use_peft else []
    card = ModelCard.from_template(
        card_data,
        template_str=REWARD_CARD_TEMPLATE,
        model_name=name,
        base_model="the embedded SmolLM2-135M-Instruct" if base == "default" else base,
        usage_model=args.hub_model_id if args.push_to_hub else args.output_dir,
        dataset=os.path.join(script_args.dataset_name, script_args.dataset_config or ""),
        train_pairs=len(trainer.train_dataset),
        calibration_source=calibration.source,
        tie_margin=_fmt(float(calibration.tie_margin)),
        max_length=calibration.max_length or "the model's own limit",
        hyperparameters=[(k, _fmt(settings[k])) for k in _HYPERPARAMETERS if k in settings],
        effective_batch=args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size,
        world_size=args.world_size,
        lora=lora,
        validation=[
            {
                "step": log.get("step", ""),
                "accuracy": _fmt(log["eval_within_question_accuracy"]),
                "length_r": _fmt(log.get("eval_length_correlation", float("nan"))),
            }
            for log in evaluations
        ],
        best={
            "checkpoint": state.best_model_checkpoint,
            "metric": args.metric_for_best_model,
            "value": _fmt(state.best_metric),
        }
        if state.best_model_checkpoint
        else None,
        versions=f"transformers {transformers.__version__}, TRL {trl.__version__}, torch {torch.__version__}",
        citation=_CITATION,
    )
    return str(card)
