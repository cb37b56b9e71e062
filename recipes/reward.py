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
hf_critic.training.reward and hf_critic.critics.reward), PEFT LoRA plus the score head, DeepSpeed through accelerate.

Usage:

# SmolLM2-135M (the embedded default critic) on this CPU, on the judgment pairs of build_judgment_data.py
python scripts/smollm2-135m/build_judgment_data.py --data-dir ../shared/data --output-dir outputs/judgment_data
OMP_NUM_THREADS=2 accelerate launch --num_processes 1 --cpu recipes/reward.py --config recipes/smollm2-135m/reward.yaml

# Two CPU processes under DeepSpeed ZeRO-2
accelerate launch --config_file accelerate_configs/zero2.yaml --num_processes 2 --use_cpu true recipes/reward.py \
    --config recipes/smollm2-135m/reward.yaml

`--dry-run` checks the recipe without training: it parses it, finds the base model and reads the judgment pairs, then
prints one line (or one error line: a model not on this machine, a missing data folder).

Any value can be overridden on the command line (`--learning_rate 1e-4 --output_dir outputs/run2`). A run resumes
from the last checkpoint in its output_dir. The best checkpoint by validation within-question accuracy is kept; the
output folder is a PEFT adapter (score head included) with its model card (README.md) that `hf-critic grade|compare
--model FOLDER` loads; `--push_to_hub true --hub_model_id ORG/NAME` uploads it with that card.
"""

import logging
import sys

from transformers import set_seed
from trl import ModelConfig, RewardConfig, TrlParser, get_peft_config

from hf_critic import training
from hf_critic.backends.models import ModelNotFoundError
from hf_critic.training import reward

logger = logging.getLogger(__name__)


def main(script_args, training_args, model_args):
    ######## Seed, logging and checkpoint resume ########
    set_seed(training_args.seed)
    training.setup_logging(training_args, logger)
    logger.info(f"Script parameters {script_args}\nModel parameters {model_args}")
    checkpoint = training.last_checkpoint(training_args)

    ######## Tokenizer, model and PEFT (LoRA on the top layers, top layers in full, or the score head alone) ########
    tokenizer, model = reward.get_tokenizer_and_model(model_args, training_args, script_args)
    peft_config = get_peft_config(model_args)
    if peft_config is not None:
        reward.configure_peft(peft_config, script_args, model.config.num_hidden_layers)

    ######## Data: judgment pairs, cut to max_length as the critic cuts ########
    pairs = reward.get_pairs(script_args, tokenizer, training_args)

    ######## Trainer (within-question accuracy and reward-length correlation at every evaluation; soft labels and
    ######## ODIN's length head when asked) ########
    trainer = reward.get_trainer(model, tokenizer, pairs, training_args, peft_config, objective=script_args)

    ######## Training loop ########
    metrics = trainer.train(resume_from_checkpoint=checkpoint).metrics
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()

    ######## Save the model, its calibration, training summary and model card; push to the Hub ########
    card = reward.save_reward_model(trainer, script_args, model_args, tokenizer)
    if training_args.push_to_hub:
        training.push_with_card(trainer, card, tags=["hf-critic", "reward-model"])
    return trainer


def dry_run(script_args, training_args, model_args) -> None:
    """The recipe parsed, its base model found and its pairs read: one line, nothing loaded or trained."""
    path = reward.base_model_path(model_args.model_name_or_path)
    pairs = reward.load_pairs(script_args, seed=training_args.seed)
    sizes = ", ".join(f"{len(rows)} {split}" for split, rows in pairs.items())
    print(f"recipes/reward.py: dry run: base model {path}; judgment rows {sizes}; nothing trained")


def cli(argv=None) -> int:
    """Parse the recipe and run :func:`main` (or :func:`dry_run` with ``--dry-run``); expected failures are one line
    on stderr and exit status 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    dry = "--dry-run" in argv or "--dry_run" in argv
    argv = [a for a in argv if a not in ("--dry-run", "--dry_run")]
    if dry:  # CPU and float32 whatever the recipe asks for training, as sft.py's dry run
        argv += ["--use_cpu", "true", "--bf16", "false", "--fp16", "false", "--log_level", "error"]
    parser = TrlParser((reward.RewardScriptArguments, RewardConfig, ModelConfig))
    try:
        script_args, training_args, model_args = parser.parse_args_and_config(argv)
        (dry_run if dry else main)(script_args, training_args, model_args)
    except (ModelNotFoundError, FileNotFoundError, ValueError) as err:
        print(f"recipes/reward.py: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
