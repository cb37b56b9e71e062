# Copyright 2024 The hf-critic Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""
Supervised fine-tuning of a critic model (CritiqueLLM v2 §3.3 / §4.3, v1 §3.3 / §4.3) with TRL.

The model learns to write critiques (an explanation, then a score or a verdict) from teacher critiques: Eval-Instruct
configs mixed with per-config weights, the loss on the critique tokens only, the prompts rendered with the critic's
own templates through the model's chat template. Optionally the best checkpoint is chosen by the Pearson correlation
of its critiques with the gold scores of a held-out pointwise set (CritiqueLLM v1 §4.3).

Usage:

# ChatGLM3-6B, the paper's settings, 8 GPUs, DeepSpeed ZeRO-2
accelerate launch --config_file accelerate_configs/zero2.yaml recipes/sft.py \
    --config recipes/chatglm3-6b/sft/full.yaml

# See the examples (masks) before training
python recipes/sft.py --config recipes/chatglm3-6b/sft/full.yaml --dry-run

# SmolLM2-135M on CPU, on critiques built from published GPT-4 judgments (see recipes/smollm2-135m/README.md)
accelerate launch --num_processes 1 --use_cpu recipes/sft.py --config recipes/smollm2-135m/sft/cpu.yaml

Any recipe value can be overridden on the command line, e.g. `--learning_rate 1e-5 --output_dir data/run2`. The
arguments are hf_critic.training.config's ScriptArguments and ValidationArguments with TRL's SFTConfig and ModelConfig.

A dry run only renders examples and loss masks: it runs on CPU in float32 whatever the recipe says and loads only the
tokenizer. Expected failures (missing local data, a model not in the local cache while offline, a precision this
machine cannot run, a bad recipe value) end in one line naming the thing and the fix, with exit status 2.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import datasets
import transformers
from transformers import AutoTokenizer, set_seed
from transformers.trainer_utils import get_last_checkpoint
from trl import SFTTrainer, get_peft_config, get_quantization_config

from hf_critic import training
from hf_critic.io import RecordError
from hf_critic.models import ModelNotFoundError, dequantized_gguf_config

logger = logging.getLogger(__name__)


def main(script_args, training_args, model_args, validation_args):
    ###############################
    # Seed and logging
    ###############################
    set_seed(training_args.seed)
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    logging.getLogger("hf_critic").setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    logger.warning(
        f"Process rank: {training_args.process_index}, device: {training_args.device}, "
        f"world size: {training_args.world_size}, bf16: {training_args.bf16}"
    )
    logger.info(f"Model parameters {model_args}")
    logger.info(f"Script parameters {script_args}")
    logger.info(f"Training parameters {training_args}")

    ###############################
    # Checkpoint resume
    ###############################
    last_checkpoint = None
    if os.path.isdir(training_args.output_dir):
        last_checkpoint = get_last_checkpoint(training_args.output_dir)
    if last_checkpoint is not None and training_args.resume_from_checkpoint is None:
        logger.info(f"Checkpoint detected, resuming training at {last_checkpoint}.")

    ###############################
    # Tokenizer and chat template
    ###############################
    if model_args.model_name_or_path == "default":  # the embedded default critic (SmolLM2-135M-Instruct)
        from hf_critic.models import default_model_dir

        model_args.model_name_or_path = str(default_model_dir())
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model_args.model_name_or_path,
            revision=model_args.model_revision,
            trust_remote_code=training_args.trust_remote_code,
        )
    except OSError as err:
        raise RecipeError(_model_hint(model_args.model_name_or_path, err)) from None
    if training_args.chat_template_path:  # a training template with {% generation %} markers, from the recipe
        training.set_chat_template(tokenizer, training_args.chat_template_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    mode = training.loss_mode(training_args)
    if mode == "assistant" and not tokenizer.is_fast:
        # apply_chat_template's assistant masks need a fast tokenizer (ChatGLM3's remote-code one is slow): train on
        # prompt / completion pairs instead, which masks the same critique tokens from a common-prefix comparison.
        logger.warning(
            "slow tokenizer: switching from assistant_only_loss to completion_only_loss on prompt/completion"
        )
        training_args.assistant_only_loss, training_args.completion_only_loss, mode = False, True, "completion"

    ###############################
    # Data
    ###############################
    def prepare(dataset, source):
        return training.ensure_messages(
            dataset,
            template=script_args.template,
            language=script_args.language,
            critique_column=script_args.critique_column,
            source=source.name,
        )

    if script_args.dataset_mixture is not None:
        mixture = training.DatasetMixture.from_dict(script_args.dataset_mixture)
    else:
        mixture = training.DatasetMixture(
            [
                training.DatasetSource(
                    script_args.dataset_name, script_args.dataset_config, script_args.dataset_train_split
                )
            ],
            seed=training_args.seed,
            test_split=script_args.dataset_test_split if training_args.eval_strategy != "no" else None,
        )
    keep = training.filter_by_length(tokenizer, training_args.max_length) if script_args.drop_overlong else None
    try:
        data = training.load_mixture(mixture, prepare=prepare, keep=keep)
    except RecordError as err:
        raise RecipeError(_data_hint(mixture, err)) from None
    dataset = data.dataset
    logger.info(f"training data: {dataset}")
    if training_args.eval_strategy != "no" and "test" not in dataset:
        raise ValueError(
            f"eval_strategy is {training_args.eval_strategy!r} but the data has no held-out split: set "
            "dataset_mixture.test_split (e.g. validation) or test_split_size, or eval_strategy: no"
        )

    ###############################
    # Dry run: what the model learns
    ###############################
    if script_args.dry_run:
        print(
            training.dry_run_report(
                dataset["train"],
                tokenizer,
                mode=mode,
                num_examples=script_args.dry_run_examples,
                max_length=training_args.max_length,
                color=sys.stdout.isatty(),
            )
        )
        return None

    if mode == "completion" and not training_args.assistant_only_loss:
        dataset = datasets.DatasetDict({k: training.to_prompt_completion(v) for k, v in dataset.items()})

    ###############################
    # Model init kwargs
    ###############################
    quantization_config = get_quantization_config(model_args)
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        "use_cache": not training_args.activation_checkpointing,
        **(training_args.model_init_kwargs or {}),
    }
    clean_config = dequantized_gguf_config(model_args.model_name_or_path)
    if clean_config is not None:  # e.g. the embedded default critic: fp32 weights under a stale GGUF config
        clean_config.use_cache = training_args.model_init_kwargs.pop("use_cache", clean_config.use_cache)
        training_args.model_init_kwargs["config"] = clean_config
    if quantization_config is not None:  # QLoRA: each process loads its 4-bit / 8-bit copy on its own device
        from accelerate import PartialState

        training_args.model_init_kwargs.setdefault("device_map", {"": PartialState().local_process_index})

    ###############################
    # Trainer and validation callback
    ###############################
    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset["train"],
        eval_dataset=dataset["test"] if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        quantization_config=quantization_config,
        peft_config=get_peft_config(model_args),
    )
    pearson = training.validation_callback(
        validation_args,
        trainer,
        template=script_args.template,
        language=script_args.language,
        metric_for_best_model=training_args.metric_for_best_model,
    )
    if pearson is not None:
        trainer.add_callback(pearson)
        logger.info(f"validation Pearson on {len(pearson.records)} rows of {validation_args.validation_dataset}")

    ###############################
    # Training loop
    ###############################
    logger.info("*** Train ***")
    checkpoint = training_args.resume_from_checkpoint or last_checkpoint
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = train_result.metrics
    metrics["train_samples"] = len(dataset["train"])
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()

    ###############################
    # Save model and create model card
    ###############################
    logger.info("*** Save model ***")
    trainer.model.generation_config.eos_token_id = (
        trainer.model.generation_config.eos_token_id or tokenizer.eos_token_id
    )
    trainer.save_model(training_args.output_dir)
    logger.info(f"Model saved to {training_args.output_dir}")

    card = training.model_card(
        model_name=training_args.hub_model_id or os.path.basename(os.path.normpath(training_args.output_dir)),
        base_model=model_args.model_name_or_path,
        training_args=training_args,
        model_args=model_args,
        mixture=data,
        validation=pearson.history if pearson else (),
        best={
            "checkpoint": trainer.state.best_model_checkpoint,
            "metric": training_args.metric_for_best_model,
            "value": trainer.state.best_metric,
        },
        world_size=training_args.world_size,
        usage_template=validation_args.validation_template or script_args.template,
        usage_model=training_args.hub_model_id if training_args.push_to_hub else training_args.output_dir,
    )
    if trainer.accelerator.is_main_process:
        _write_card(training_args.output_dir, card)
        if not model_args.use_peft:  # restore k,v cache for fast inference (an adapter folder gets no config.json)
            trainer.model.config.use_cache = True
            trainer.model.config.save_pretrained(training_args.output_dir)

    ###############################
    # Evaluate
    ###############################
    if training_args.do_eval and "test" in dataset:
        logger.info("*** Evaluate ***")
        # The selected model (the best checkpoint, or the last step) was evaluated during training already: report
        # those figures rather than generating the validation critiques a second time.
        step = trainer.state.best_global_step if training_args.load_best_model_at_end else None
        metrics = training.logged_eval_metrics(trainer.state.log_history, step or trainer.state.global_step)
        if "eval_loss" not in metrics:
            metrics = trainer.evaluate()
        metrics["eval_samples"] = len(dataset["test"])
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)

    ###############################
    # Push to the Hub
    ###############################
    if training_args.push_to_hub:
        logger.info("Pushing to hub...")
        trainer.push_to_hub(tags=["hf-critic", "critiquellm"])
        if trainer.accelerator.is_main_process:  # push_to_hub wrote TRL's generic card: put ours back
            from huggingface_hub import upload_file

            _write_card(training_args.output_dir, card)
            upload_file(
                path_or_fileobj=card.encode(),
                path_in_repo="README.md",
                repo_id=trainer.hub_model_id,
                token=training_args.hub_token,
            )
    return trainer


def _write_card(output_dir: str, card: str) -> None:
    with open(os.path.join(output_dir, "README.md"), "w", encoding="utf-8") as handle:
        handle.write(card)


###############################
# Expected failures: one line, exit 2
###############################
class RecipeError(RuntimeError):
    """A failure the user can fix (data, model, hardware, recipe); ``cli`` prints it as one line and exits 2."""


# A dry run renders examples and masks only: CPU, float32, whatever the recipe asks for training.
DRY_RUN_OVERRIDES = ["--use_cpu", "true", "--bf16", "false", "--fp16", "false", "--dtype", "float32"]


def _model_hint(name: str, err: OSError) -> str:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    where = "the Hub is offline (HF_HUB_OFFLINE=1) and it is not in the local cache" if offline else str(err)[:200]
    return (
        f"cannot load the tokenizer of {name!r}: {where}; download it first (`hf download {name}`) or set "
        "model_name_or_path to a local folder"
    )


def _data_hint(mixture, err: RecordError) -> str:
    """Name the missing local data and the script under recipes/ that builds it (the one that mentions its path)."""
    for source in mixture.datasets:
        if Path(source.id).exists() or f"{source.id}:" not in str(err):
            continue
        recipes = Path(__file__).resolve().parent
        builders = [
            str(script.relative_to(recipes.parent))
            for script in sorted(recipes.rglob("*.py"))
            if script.name != "sft.py" and source.id in script.read_text(encoding="utf-8")
        ]
        build = f"; build it with `python {builders[0]}` (see its --help)" if builders else ""
        return (
            f"dataset {source.id!r}: no local folder {Path(source.id).resolve()} and not loadable from the Hub{build}"
        )
    return str(err)


def cli(argv: list[str] | None = None) -> int:
    """Parse the recipe and run :func:`main`; expected failures as one line on stderr and exit status 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--dry-run" in argv or "--dry_run" in argv:
        argv += DRY_RUN_OVERRIDES
    try:
        try:
            script_args, validation_args, training_args, model_args = training.parser().parse_args_and_config(argv)
        except ValueError as err:  # transformers' argument checks, e.g. bf16 on a machine without support
            fix = " (on CPU: --bf16 false --use_cpu true)" if "bf16" in str(err) or "fp16" in str(err) else ""
            raise RecipeError(f"the recipe cannot run here: {str(err).splitlines()[0]}{fix}") from None
        main(script_args, training_args, model_args, validation_args)
    except (RecipeError, ModelNotFoundError) as err:
        print(f"recipes/sft.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
