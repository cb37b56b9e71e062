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
import sys
from pathlib import Path

from transformers import set_seed

from hf_critic import training
from hf_critic.backends.models import ModelNotFoundError

logger = logging.getLogger(__name__)
#: the data-building scripts, one of which an error about missing local data names
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

# A dry run renders examples and masks only: CPU, float32, whatever the recipe asks for training.
# Logging at error level: the report (or one error line) is all a dry run prints.
DRY_RUN_OVERRIDES = ["--use_cpu", "true", "--bf16", "false", "--fp16", "false", "--dtype", "float32"]
DRY_RUN_OVERRIDES += ["--log_level", "error"]


def main(script_args, training_args, model_args, validation_args):
    ######## Seed, logging and checkpoint resume ########
    set_seed(training_args.seed)
    training.setup_logging(training_args, logger)
    for name, args in (("Model", model_args), ("Script", script_args), ("Training", training_args)):
        logger.info(f"{name} parameters {args}")
    checkpoint = training.last_checkpoint(training_args)

    ######## Tokenizer and chat template ########
    tokenizer = training.get_tokenizer(model_args, training_args)
    mode = training.resolve_loss_mode(tokenizer, training_args)

    ######## Data (a dry run shows what the model learns: examples and their loss masks) ########
    keep = training.filter_by_length(tokenizer, training_args.max_length) if script_args.drop_overlong else None
    data = training.get_dataset(script_args, training_args, keep, scripts_dir=SCRIPTS)
    dataset = data.dataset
    if script_args.dry_run:
        kwargs = {"num_examples": script_args.dry_run_examples, "max_length": training_args.max_length}
        print(training.dry_run_report(dataset["train"], tokenizer, mode=mode, color=sys.stdout.isatty(), **kwargs))
        return None
    # tokenised here: the judged text's control tokens stay text; the labels carry the loss mask (tokenize_for_trl)
    dataset = training.tokenize_for_trl(dataset, tokenizer, mode, training_args)

    ######## Model, trainer and validation callback ########
    quantization_config = training.model_init_kwargs(model_args, training_args)  # sets training_args' too
    trainer = training.CriticSFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset["train"],
        eval_dataset=dataset["test"] if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        quantization_config=quantization_config,
        peft_config=training.peft_config(model_args, script_args, training_args),
    )
    template, language = script_args.template, script_args.language
    best = training_args.metric_for_best_model
    pearson = training.validation_callback(
        validation_args, trainer, template=template, language=language, metric_for_best_model=best
    )
    if pearson is not None:
        trainer.add_callback(pearson)
        logger.info(f"validation Pearson on {len(pearson.records)} rows of {validation_args.validation_dataset}")

    ######## Training loop ########
    logger.info("*** Train ***")
    metrics = trainer.train(resume_from_checkpoint=checkpoint).metrics
    metrics["train_samples"] = len(dataset["train"])
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()

    ######## Save model and model card, evaluate, push to the Hub ########
    card = training.sft_model_card(trainer, model_args, script_args, validation_args, data, pearson)
    training.save_model_and_card(trainer, tokenizer, model_args, card)
    if training_args.do_eval and "test" in dataset:
        training.evaluate_selected(trainer, dataset["test"])
    if training_args.push_to_hub:
        training.push_with_card(trainer, card, tags=["hf-critic", "critiquellm"])
    return trainer


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
            raise training.RecipeError(f"the recipe cannot run here: {str(err).splitlines()[0]}{fix}") from None
        main(script_args, training_args, model_args, validation_args)
    except (training.RecipeError, ModelNotFoundError) as err:
        print(f"recipes/sft.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
