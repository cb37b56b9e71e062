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
Train a reward model as a critic with TRL's RewardTrainer (Bradley-Terry loss on pairwise judgments; see
hf_critic.training.reward and hf_critic.reward_model), PEFT LoRA plus the score head, DeepSpeed through accelerate.

Usage:

# SmolLM2-135M (the embedded default critic) on this CPU, on the judgment pairs of build_judgment_data.py
python recipes/smollm2-135m/build_judgment_data.py --data-dir ../shared/data --output-dir outputs/judgment_data
OMP_NUM_THREADS=2 accelerate launch --num_processes 1 --cpu recipes/reward.py --config recipes/smollm2-135m/reward.yaml

# Two CPU processes under DeepSpeed ZeRO-2
accelerate launch --config_file accelerate_configs/zero2.yaml --num_processes 2 --use_cpu true recipes/reward.py \
    --config recipes/smollm2-135m/reward.yaml

Any value can be overridden on the command line (`--learning_rate 1e-4 --output_dir outputs/run2`). A run resumes
from the last checkpoint in its output_dir. The best checkpoint by validation within-question accuracy is kept; the
output folder is a PEFT adapter (score head included) that `hf-critic grade|compare --model FOLDER` loads.
"""

import json
import logging
import os
import sys

import datasets
import transformers
from transformers import AutoTokenizer, set_seed
from transformers.trainer_utils import get_last_checkpoint
from trl import ModelConfig, RewardConfig, TrlParser, get_peft_config
from trl.trainer.reward_trainer import DataCollatorForPreference

from hf_critic.models import ModelNotFoundError
from hf_critic.training import reward

logger = logging.getLogger(__name__)


def main(script_args, training_args, model_args):
    ###############################
    # Seed and logging
    ###############################
    set_seed(training_args.seed)
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", handlers=[logging.StreamHandler(sys.stdout)]
    )
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    logger.info(f"Script parameters {script_args}\nModel parameters {model_args}")

    ###############################
    # Checkpoint resume
    ###############################
    last_checkpoint = (
        get_last_checkpoint(training_args.output_dir) if os.path.isdir(training_args.output_dir) else None
    )
    if last_checkpoint is not None:
        logger.info(f"Checkpoint detected, resuming training at {last_checkpoint}.")

    ###############################
    # Tokenizer and model
    ###############################
    path = reward.base_model_path(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=training_args.trust_remote_code)
    model = reward.load_base(path, dtype=model_args.dtype, trust_remote_code=training_args.trust_remote_code)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    peft_config = get_peft_config(model_args)
    if peft_config is not None:
        reward.configure_peft(peft_config, script_args, model.config.num_hidden_layers)

    ###############################
    # Data: judgment pairs, cut to max_length as the critic cuts
    ###############################
    data = reward.load_pairs(script_args, seed=training_args.seed)
    pairs = {
        split: reward.preference_pairs(
            rows, tokenizer, training_args.max_length, source=f"{script_args.dataset_name}:{split}"
        )
        for split, rows in data.items()
    }
    for split, rows in pairs.items():
        logger.info(f"{split}: {len(rows)} pairs, {sum(rows['truncated'])} cut to {training_args.max_length} tokens")

    ###############################
    # Trainer
    ###############################
    trainer = reward.CriticRewardTrainer(
        model=model,
        args=training_args,
        train_dataset=pairs["train"],
        eval_dataset=pairs.get("validation"),
        processing_class=tokenizer,
        data_collator=reward.LengthCollator(DataCollatorForPreference(pad_token_id=tokenizer.pad_token_id)),
        compute_metrics=reward.reward_metrics,
        peft_config=peft_config,
    )
    pairs_per_step = (
        training_args.per_device_train_batch_size
        * training_args.gradient_accumulation_steps
        * training_args.world_size
    )
    trainer.add_callback(reward.ThroughputCallback(pairs_per_step))

    ###############################
    # Training loop
    ###############################
    train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint or last_checkpoint)
    trainer.log_metrics("train", train_result.metrics)
    trainer.save_metrics("train", train_result.metrics)
    trainer.save_state()

    ###############################
    # Save the model, its calibration and card
    ###############################
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        calibration = reward.calibrate(trainer, script_args, tokenizer, training_args.max_length)
        calibration.save(training_args.output_dir)
        reward.point_adapter_at_base(training_args.output_dir, model_args.model_name_or_path)
        history = [log for log in trainer.state.log_history if "eval_within_question_accuracy" in log]
        summary = {"best_checkpoint": trainer.state.best_model_checkpoint, "best_metric": trainer.state.best_metric,
                   "evaluations": history, "train_pairs": len(pairs["train"]), "calibration": calibration.source}  # fmt: skip
        with open(os.path.join(training_args.output_dir, "training_summary.json"), "w") as handle:
            json.dump(summary, handle, indent=2, default=float)
        logger.info(
            f"best validation within-question accuracy {trainer.state.best_metric}; saved {training_args.output_dir}"
        )
        logger.info(f"pointwise map: {calibration.source}; tie band {calibration.tie_margin:.3f}")
    return trainer


def cli(argv=None) -> int:
    """Parse the recipe and run :func:`main`; expected failures are one line on stderr and exit status 2."""
    parser = TrlParser((reward.RewardScriptArguments, RewardConfig, ModelConfig))
    try:
        script_args, training_args, model_args = parser.parse_args_and_config(argv)
        main(script_args, training_args, model_args)
    except (ModelNotFoundError, FileNotFoundError, ValueError) as err:
        print(f"recipes/reward.py: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
