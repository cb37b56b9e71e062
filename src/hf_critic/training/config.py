"""The recipe's arguments (read by ``trl.TrlParser`` from a YAML recipe) and the accelerate / DeepSpeed config check.

As in alignment-handbook / open-r1, the script's dataclasses live in the library and ``recipes/sft.py`` parses them
with :func:`parser`: ``TrlParser((ScriptArguments, ValidationArguments, SFTConfig, ModelConfig))``. Every field is
a flat YAML key of ``recipes/<model>/sft/*.yaml`` and can be overridden on the command line (``--learning_rate 1e-5``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from trl import ScriptArguments as TrlScriptArguments

from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY
from ..io import read_json

__all__ = [
    "ScriptArguments",
    "ValidationArguments",
    "deepspeed_config_from_accelerate",
    "lora_on_top_layers",
    "parser",
]


@dataclass
class ScriptArguments(TrlScriptArguments):
    """Data, rendering and dry-run arguments (TRL's ``dataset_name`` / ``dataset_config`` / splits plus these).

    Raises:
        ValueError: (at construction) neither ``dataset_mixture`` nor ``dataset_name`` without ``dry_run``;
            ``json.JSONDecodeError`` for a ``dataset_mixture`` string that is not JSON.
    """

    dataset_mixture: dict | str | None = field(
        default=None,
        metadata={
            "help": "Weighted mixture of critique SFT configs (YAML mapping, or JSON on the command line): "
            "{datasets: [{id, config, split, weight, columns}], seed, test_split | test_split_size}. "
            "Overrides dataset_name."
        },
    )
    template: str = field(
        default=DEFAULT_FAMILY,
        metadata={"help": "Critic template family / name / YAML path for rows without a 'messages' column."},
    )
    language: str = field(default="en", metadata={"help": "Critique language (en / zh) for template families."})
    critique_column: str = field(
        default="critique", metadata={"help": "Column with the teacher critique, for rows without 'messages'."}
    )
    drop_overlong: bool = field(
        default=True,
        metadata={
            "help": "Drop examples longer than max_length instead of truncating them (truncation would cut the "
            "verdict, which comes last)."
        },
    )
    lora_top_layers: int = field(
        default=0,
        metadata={
            "help": "With use_peft: LoRA on the top N decoder layers only (0: every layer). The backward pass then "
            "stops at the lowest adapted layer: about 3x faster a step on CPU with 4 of 30 layers."
        },
    )
    dry_run: bool = field(
        default=False, metadata={"help": "Print a few rendered training examples with their loss masks, then exit."}
    )
    dry_run_examples: int = field(default=3, metadata={"help": "Examples shown by --dry-run."})

    def __post_init__(self):
        if isinstance(self.dataset_mixture, str):
            try:
                self.dataset_mixture = json.loads(self.dataset_mixture)
            except json.JSONDecodeError as err:
                raise BadInputError(f"dataset_mixture={self.dataset_mixture!r}: not JSON ({err.msg})") from None
        if self.dataset_mixture is None and self.dataset_name is None and not self.dry_run:
            raise BadInputError("give dataset_mixture (recommended) or dataset_name")


@dataclass
class ValidationArguments:
    """Best-checkpoint selection by validation Pearson (CritiqueLLM v1 §4.3), see
    :class:`~hf_critic.training.callbacks.CritiquePearsonCallback`.
    """

    validation_dataset: str | None = field(
        default=None,
        metadata={
            "help": "Held-out pointwise records (same forms as a mixture 'id') graded at each evaluation; their "
            "Pearson with the gold scores becomes eval_<validation_metric_name> (CritiqueLLM v1 §4.3)."
        },
    )
    validation_config: str | None = field(default=None, metadata={"help": "Config of validation_dataset."})
    validation_split: str = field(default="validation", metadata={"help": "Split of validation_dataset."})
    validation_score_column: str = field(
        default="score", metadata={"help": "Gold score column of the validation set."}
    )
    validation_query_column: str | None = field(
        default=None, metadata={"help": "Query id column: text-level (per-query) correlation instead of pooled."}
    )
    validation_template: str | None = field(
        default=None, metadata={"help": "Critic template for validation grading (default: --template)."}
    )
    validation_max_examples: int | None = field(
        default=None, metadata={"help": "Grade only the first N validation rows (generation is the slow part)."}
    )
    validation_max_new_tokens: int = field(
        default=256, metadata={"help": "Generation budget per validation critique."}
    )
    validation_batch_size: int = field(default=8, metadata={"help": "Validation conversations per generate call."})
    validation_verdict: str = field(
        default="text",
        metadata={
            "help": "Where validation verdicts come from: text (parsed from the generated critique) or probability "
            "(read from the model's next-token distribution after the template's verdict prefix, hf_critic.critic.verdicts: "
            "defined from the first evaluation on, before the model writes parseable verdicts).",
            "choices": ["text", "probability"],
        },
    )
    validation_explanation: str = field(
        default="none",
        metadata={
            "help": "With validation_verdict probability: none (one prefill per row, no decoding) or first (read "
            "after the generated critique).",
            "choices": ["none", "first"],
        },
    )
    validation_metric_name: str = field(
        default="critique_pearson",
        metadata={"help": "Name of the validation Pearson (use it as metric_for_best_model)."},
    )


_LINEAR_NAMES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def lora_on_top_layers(peft_config, top: int, num_layers: int) -> None:
    """Restrict a PEFT LoRA config to the top ``top`` of ``num_layers`` decoder layers (``layers_to_transform``), in
    place. ``"all-linear"`` becomes the Llama-style projection names, which ``layers_to_transform`` needs. An
    engineering choice beside CritiqueLLM's SFT (v1 §3.3, v2 §3.3): on CPU the backward pass stops at the lowest
    adapted layer.

    Raises:
        ValueError: ``top`` outside ``[1, num_layers]``, or target modules given as a regular expression (PEFT
            cannot restrict those to layers).
    """
    if not 1 <= top <= num_layers:
        raise BadInputError(f"lora_top_layers must be in [1, {num_layers}] (the model's layers), got {top}")
    targets = peft_config.target_modules
    if targets == "all-linear" or (not isinstance(targets, str) and set(targets or ()) == {"all-linear"}):
        peft_config.target_modules = list(_LINEAR_NAMES)
    elif isinstance(targets, str):
        raise BadInputError(f"lora_top_layers needs module names, not the pattern {targets!r}: list the modules")
    peft_config.layers_to_transform = list(range(num_layers - top, num_layers))


def parser():
    """``trl.TrlParser((ScriptArguments, ValidationArguments, SFTConfig, ModelConfig))``, what ``recipes/sft.py`` reads.

    Returns:
        The parser; ``parser.parse_args_and_config(argv)`` returns the four dataclasses in that order.
    """
    from trl import ModelConfig, SFTConfig, TrlParser

    return TrlParser((ScriptArguments, ValidationArguments, SFTConfig, ModelConfig))


class _Launched:
    """Training arguments as ``accelerate launch`` would see them: the config's world size (this process has no
    process group), and its mixed precision when the recipe's arguments are not given."""

    def __init__(self, args, world_size: int, precision: str | None = None):
        self._args, self.world_size = args, world_size
        if precision is not None:
            self.bf16, self.fp16 = precision == "bf16", precision == "fp16"

    def __getattr__(self, name):
        return getattr(self._args, name)


def deepspeed_config_from_accelerate(
    path: str | os.PathLike,
    *,
    micro_batch_size: int = 1,
    gradient_accumulation_steps: int = 1,
    training_args=None,
    model_config=None,
    num_training_steps: int = 1,
) -> dict | None:
    """Validate an ``accelerate`` config file and, for DeepSpeed ones, build, resolve and validate its DeepSpeed
    config as the training run will.

    The YAML is read with accelerate's own ``ClusterConfig`` (unknown keys fail). For ``distributed_type:
    DEEPSPEED`` the ``deepspeed_config`` block becomes an accelerate ``DeepSpeedPlugin`` (what ``accelerate
    launch`` does), or its ``deepspeed_config_file`` is read; its ``"auto"`` values are filled by transformers' own
    resolution, ``HfTrainerDeepSpeedConfig.trainer_config_process`` (batch sizes over the config's
    ``num_processes``, gradient clipping, optimizer and precision from the training arguments) and
    ``trainer_config_finalize`` (the ZeRO buckets from the model's hidden size, the scheduler's steps); the result is
    parsed by DeepSpeed's ``DeepSpeedConfig`` (its pydantic ZeRO, offload and precision classes). No process group and
    no GPU are needed.

    Args:
        path: the accelerate YAML.
        micro_batch_size, gradient_accumulation_steps: the batch values when ``training_args`` is None.
        training_args: the recipe's ``SFTConfig`` / ``TrainingArguments`` (None: defaults with the sizes above and
            the accelerate config's mixed precision).
        model_config: the model's config (its ``hidden_size``) for the ZeRO ``"auto"`` buckets; None: such keys are
            left ``"auto"`` (the launch fills them) and out of DeepSpeed's check.
        num_training_steps: for a scheduler's ``"auto"`` steps.

    Returns:
        The resolved DeepSpeed config dict, or None for a non-DeepSpeed config (e.g. ``MULTI_GPU``).

    Raises:
        ValueError / TypeError / pydantic.ValidationError: an invalid accelerate or DeepSpeed config, or ``"auto"``
            values that transformers cannot fill.
    """
    import tempfile
    from types import SimpleNamespace

    from accelerate.commands.config.config_args import ClusterConfig
    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    config = ClusterConfig.from_yaml_file(str(path))
    if str(config.distributed_type) not in ("DEEPSPEED", "DistributedType.DEEPSPEED"):
        return None
    precision = str(config.mixed_precision or "no").lower()
    plugin_config = _plugin(path, dict(config.deepspeed_config or {}), precision).deepspeed_config
    world = int(config.num_processes or 1) * int(config.num_machines or 1)
    launch_precision = None
    if training_args is None:
        training_args = TrainingArguments(
            output_dir=tempfile.gettempdir(),
            per_device_train_batch_size=micro_batch_size,
            gradient_accumulation_steps=gradient_accumulation_steps,
            use_cpu=True,
            report_to=[],
        )
        launch_precision = precision
    args = _Launched(training_args, world, launch_precision)
    hf = HfTrainerDeepSpeedConfig(json.loads(json.dumps(plugin_config)))
    hf.trainer_config_process(args)
    if model_config is not None:
        hf.trainer_config_finalize(args, SimpleNamespace(config=model_config), num_training_steps)
    resolved = hf.config
    from deepspeed.runtime.config import DeepSpeedConfig

    # DeepSpeed checks the batch arithmetic for the world it sees (1 process here): check it for that world, and
    # without the keys only the model can fill
    check = {
        **resolved,
        "train_batch_size": resolved["train_micro_batch_size_per_gpu"] * resolved["gradient_accumulation_steps"],
    }
    zero = {k: v for k, v in resolved.get("zero_optimization", {}).items() if v != "auto"}
    DeepSpeedConfig({**check, "zero_optimization": zero})
    return resolved


def _plugin(path: str | os.PathLike, ds: dict, mixed_precision: str):
    """The ``DeepSpeedPlugin`` ``accelerate launch`` builds from a ``deepspeed_config`` block (its file, or its
    keys), with the launch's mixed precision set by accelerate's own ``set_mixed_precision``."""
    from accelerate.utils import DeepSpeedPlugin

    if "deepspeed_config_file" in ds:
        config = read_json(Path(path).parent / ds["deepspeed_config_file"])  # names the file and the line
        plugin = DeepSpeedPlugin(hf_ds_config=config)
    else:
        known = {
            "zero_stage",
            "offload_optimizer_device",
            "offload_param_device",
            "zero3_init_flag",
            "zero3_save_16bit_model",
            "gradient_accumulation_steps",
            "gradient_clipping",
            "offload_optimizer_nvme_path",
            "offload_param_nvme_path",
        }
        unknown = set(ds) - known - {"deepspeed_multinode_launcher"}
        if unknown:
            raise BadInputError(f"{path}: unknown deepspeed_config key(s) {sorted(unknown)}")
        plugin = DeepSpeedPlugin(**{k: v for k, v in ds.items() if k in known})
    plugin.set_mixed_precision(mixed_precision)
    return plugin
