"""The steps of ``recipes/sft.py`` that are not the script's own story, as alignment-handbook keeps them in its library
(``get_tokenizer``, ``get_model``, ``get_dataset``): logging, checkpoint resume, the tokenizer and its chat template,
the data mixture, the model's init arguments, and the save / evaluate / push tail of a run.

Each takes TRL's parsed arguments (``ScriptArguments``, ``SFTConfig``, ``ModelConfig``, ``ValidationArguments`` of
:func:`~hf_critic.training.config.parser`); a failure the user can fix raises :class:`RecipeError`, which the script
prints as one line with exit status 2.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import datasets
import transformers

from ..core.errors import BadInputError
from ..io import RecordError
from .callbacks import logged_eval_metrics
from .config import lora_on_top_layers
from .masks import loss_mode, set_chat_template
from .messages import ensure_messages
from .mixture import DatasetMixture, DatasetSource, MixtureResult, load_mixture

__all__ = [
    "RecipeError",
    "evaluate_selected",
    "get_dataset",
    "get_tokenizer",
    "last_checkpoint",
    "model_init_kwargs",
    "peft_config",
    "push_with_card",
    "resolve_loss_mode",
    "save_model_and_card",
    "setup_logging",
]

logger = logging.getLogger(__name__)


class RecipeError(BadInputError):
    """A failure the user can fix (data, model, hardware, recipe); the script prints it as one line and exits 2."""


def setup_logging(training_args, script_logger: logging.Logger) -> None:
    """Log to stdout at the process's level (``training_args.get_process_log_level()``) for the script's logger,
    hf_critic, datasets and transformers, and say which process this is."""
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    log_level = training_args.get_process_log_level()
    script_logger.setLevel(log_level)
    logging.getLogger("hf_critic").setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    script_logger.warning(
        f"Process rank: {training_args.process_index}, device: {training_args.device}, "
        f"world size: {training_args.world_size}, bf16: {training_args.bf16}"
    )


def last_checkpoint(training_args) -> str | None:
    """The checkpoint to resume from: ``resume_from_checkpoint``, else the last ``checkpoint-*`` folder in
    ``output_dir`` (logged), else None."""
    from transformers.trainer_utils import get_last_checkpoint

    found = get_last_checkpoint(training_args.output_dir) if os.path.isdir(training_args.output_dir) else None
    if found is not None and training_args.resume_from_checkpoint is None:
        logger.info(f"Checkpoint detected, resuming training at {found}.")
    return training_args.resume_from_checkpoint or found


def get_tokenizer(model_args, training_args):
    """The tokenizer of ``model_args.model_name_or_path`` with the recipe's training chat template
    (``chat_template_path``, with ``{% generation %}`` markers) and a pad token (the EOS token when it has none).

    ``model_name_or_path: default`` is the embedded default critic: it is replaced by its local folder here.

    Raises:
        RecipeError: the tokenizer cannot be loaded (offline and not cached, or not found), naming the fix.
    """
    from transformers import AutoTokenizer

    if model_args.model_name_or_path == "default":  # the embedded default critic (SmolLM2-135M-Instruct)
        from ..backends.models import default_model_dir

        model_args.model_name_or_path = str(default_model_dir())
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model_args.model_name_or_path,
            revision=model_args.model_revision,
            trust_remote_code=training_args.trust_remote_code,
        )
    except OSError as err:
        raise RecipeError(_model_hint(model_args.model_name_or_path, err)) from None
    if training_args.chat_template_path:
        set_chat_template(tokenizer, training_args.chat_template_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def resolve_loss_mode(tokenizer, training_args) -> str:
    """The loss mode (:func:`~hf_critic.training.masks.loss_mode`: ``assistant``, ``completion`` ...) this tokenizer
    can train with. A slow tokenizer (ChatGLM3's remote code) has no assistant masks: ``assistant_only_loss`` is then
    switched to ``completion_only_loss`` on prompt / completion pairs (``training_args`` changed, with a warning),
    which masks the same critique tokens."""
    mode = loss_mode(training_args)
    if mode == "assistant" and not tokenizer.is_fast:
        logger.warning(
            "slow tokenizer: switching from assistant_only_loss to completion_only_loss on prompt/completion"
        )
        training_args.assistant_only_loss, training_args.completion_only_loss, mode = False, True, "completion"
    return mode


def get_dataset(script_args, training_args, keep=None, *, scripts_dir: Path | None = None) -> MixtureResult:
    """The recipe's training data: ``dataset_mixture`` (weighted Eval-Instruct configs) or the single
    ``dataset_name`` / ``dataset_config``, rendered into conversations with the critic's templates.

    Args:
        script_args: the recipe's :class:`~hf_critic.training.config.ScriptArguments`.
        training_args: TRL's ``SFTConfig`` (seed, ``eval_strategy``).
        keep: a row filter (e.g. :func:`~hf_critic.training.masks.filter_by_length`), or None.
        scripts_dir: where the data-building scripts live, to name the one that builds missing local data.

    Returns:
        The :class:`~hf_critic.training.mixture.MixtureResult` (``dataset["train"]``, and ``["test"]`` when held out).

    Raises:
        RecipeError: local data missing (naming the folder and the script that builds it) or unreadable.
        ValueError: ``eval_strategy`` asks for evaluation and the data has no held-out split.
    """
    if script_args.dataset_mixture is not None:
        mixture = DatasetMixture.from_dict(script_args.dataset_mixture)
    else:
        source = DatasetSource(script_args.dataset_name, script_args.dataset_config, script_args.dataset_train_split)
        evaluate = training_args.eval_strategy != "no"
        test_split = script_args.dataset_test_split if evaluate else None
        mixture = DatasetMixture([source], seed=training_args.seed, test_split=test_split)

    def prepare(dataset, source):
        return ensure_messages(
            dataset,
            template=script_args.template,
            language=script_args.language,
            critique_column=script_args.critique_column,
            source=source.name,
        )

    try:
        data = load_mixture(mixture, prepare=prepare, keep=keep)
    except RecordError as err:
        raise RecipeError(_data_hint(mixture, err, scripts_dir)) from None
    logger.info(f"training data: {data.dataset}")
    if training_args.eval_strategy != "no" and "test" not in data.dataset:
        raise BadInputError(
            f"eval_strategy is {training_args.eval_strategy!r} but the data has no held-out split: set "
            "dataset_mixture.test_split (e.g. validation) or test_split_size, or eval_strategy: no"
        )
    return data


def model_init_kwargs(model_args, training_args):
    """Fill ``training_args.model_init_kwargs`` (revision, remote code, attention, dtype, KV cache off under activation
    checkpointing; the recipe's own values win) for the trainer to load ``model_name_or_path`` with, and return the
    quantization config (QLoRA) or None.

    A de-quantised GGUF folder (the embedded default critic) gets its clean config passed; under quantization each
    process loads its copy on its own device.
    """
    from trl import get_quantization_config

    from ..backends.models import dequantized_gguf_config

    quantization_config = get_quantization_config(model_args)
    kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        "use_cache": not training_args.activation_checkpointing,
        **(training_args.model_init_kwargs or {}),
    }
    clean_config = dequantized_gguf_config(model_args.model_name_or_path)
    if clean_config is not None:  # fp32 weights under a stale GGUF config
        clean_config.use_cache = kwargs.pop("use_cache", clean_config.use_cache)
        kwargs["config"] = clean_config
    if quantization_config is not None:
        from accelerate import PartialState

        kwargs.setdefault("device_map", {"": PartialState().local_process_index})
    training_args.model_init_kwargs = kwargs
    return quantization_config


def peft_config(model_args, script_args, training_args):
    """TRL's PEFT config of the recipe (``use_peft``, ``lora_*``; None without ``use_peft``), restricted to the top
    ``lora_top_layers`` decoder layers when that is set (:func:`~hf_critic.training.config.lora_on_top_layers`).
    The model's config is read for its layer count only when ``lora_top_layers`` is set.

    Returns:
        A ``peft.LoraConfig`` (``layers_to_transform`` set with ``lora_top_layers``), or None without ``use_peft``.

    Raises:
        RecipeError: ``lora_top_layers`` without ``use_peft``, or outside the model's layers.
    """
    from transformers import AutoConfig
    from trl import get_peft_config

    config = get_peft_config(model_args)
    top = script_args.lora_top_layers
    if not top:
        return config
    if config is None:
        raise RecipeError("lora_top_layers needs use_peft: true (it restricts the LoRA adapters)")
    model_config = (training_args.model_init_kwargs or {}).get("config") or AutoConfig.from_pretrained(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    try:
        lora_on_top_layers(config, top, model_config.num_hidden_layers)
    except ValueError as err:
        raise RecipeError(str(err)) from None
    return config


def save_model_and_card(trainer, tokenizer, model_args, card: str) -> None:
    """Save the trained model (an EOS token in its generation config) and, on the main process, the model card
    ``card`` as README.md and, for a full model, its config with the KV cache back on (an adapter folder gets no
    config.json)."""
    output_dir = trainer.args.output_dir
    generation = trainer.model.generation_config
    generation.eos_token_id = generation.eos_token_id or tokenizer.eos_token_id
    trainer.save_model(output_dir)
    logger.info(f"Model saved to {output_dir}")
    if trainer.accelerator.is_main_process:
        write_card(output_dir, card)
        if not model_args.use_peft:
            trainer.model.config.use_cache = True
            trainer.model.config.save_pretrained(output_dir)


def evaluate_selected(trainer, eval_dataset) -> dict[str, Any]:
    """Log and save the evaluation figures of the selected model (the best checkpoint, or the last step): those
    logged during training when there are any, else a fresh ``trainer.evaluate()``.

    Returns:
        The metrics, with ``eval_samples``.
    """
    args, state = trainer.args, trainer.state
    step = state.best_global_step if args.load_best_model_at_end else None
    metrics = logged_eval_metrics(state.log_history, step or state.global_step)
    if "eval_loss" not in metrics:
        metrics = trainer.evaluate()
    metrics["eval_samples"] = len(eval_dataset)
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)
    return metrics


def push_with_card(trainer, card: str, tags: list[str]) -> None:
    """Push the output folder to the Hub with ``tags``, then put the model card ``card`` back in place of TRL's
    generic one (locally and on the Hub; main process only)."""
    trainer.push_to_hub(tags=tags)
    if trainer.accelerator.is_main_process:
        from huggingface_hub import upload_file

        write_card(trainer.args.output_dir, card)
        upload_file(
            path_or_fileobj=card.encode(),
            path_in_repo="README.md",
            repo_id=trainer.hub_model_id,
            token=trainer.args.hub_token,
        )


def write_card(output_dir: str, card: str) -> None:
    """Write the model card ``card`` to ``output_dir/README.md`` (UTF-8)."""
    with open(os.path.join(output_dir, "README.md"), "w", encoding="utf-8") as handle:
        handle.write(card)


def _model_hint(name: str, err: OSError) -> str:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    where = "the Hub is offline (HF_HUB_OFFLINE=1) and it is not in the local cache" if offline else str(err)[:200]
    return (
        f"cannot load the tokenizer of {name!r}: {where}; download it first (`hf download {name}`) or set "
        "model_name_or_path to a local folder"
    )


def _data_hint(mixture: DatasetMixture, err: RecordError, scripts_dir: Path | None) -> str:
    """Name the missing local data and the script under ``scripts_dir`` (the checkout's ``scripts/``) that builds
    it (the one naming its path)."""
    for source in mixture.datasets:
        if Path(source.id).exists() or f"{source.id}:" not in str(err):
            continue
        builders = [
            str(script.relative_to(scripts_dir.parent))
            for script in sorted(scripts_dir.rglob("*.py") if scripts_dir else [])
            if script.name != "sft.py" and source.id in script.read_text(encoding="utf-8")
        ]
        build = f"; build it with `python {builders[0]}` (see its --help)" if builders else ""
        return (
            f"dataset {source.id!r}: no local folder {Path(source.id).resolve()} and not loadable from the Hub{build}"
        )
    return str(err)
