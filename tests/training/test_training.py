"""Critic SFT: mixtures and weights, rendering, loss masks, dry run, validation Pearson, recipes, configs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import yaml
from scipy import stats

from hf_critic import training
from hf_critic.core.schema import SETTINGS
from hf_critic.io import RecordError, load_records
from hf_critic.prompts import get_template

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted((REPO / "recipes").glob("*/sft/*.yaml"))
ACCELERATE_CONFIGS = sorted((REPO / "accelerate_configs").glob("*.yaml"))

RECORD = {
    "question": "What causes the seasons on Earth?",
    "reference": "The tilt of Earth's axis.",
    "response": "The distance to the Sun.",
    "response_1": "The tilt of the axis.",
    "response_2": "The distance to the Sun.",
}
CRITIQUES = {
    "pointwise_referenced": "Unlike the reference, the answer blames distance. {'Overall Score': 2}",
    "pointwise_reference_free": "The answer is a common misconception. {'Overall Score': 3}",
    "pairwise_referenced": "Assistant 1 matches the reference. {'Overall Comparison Result': 'Assistant 1'}",
    "pairwise_reference_free": "Assistant 1 is correct. {'Overall Comparison Result': 'Assistant 1'}",
}
# ChatGLM3-6B's published chat template (tokenizer_config.json of THUDM/chatglm3-6b).
CHATGLM3_PUBLISHED = (
    "{% for message in messages %}{% if loop.first %}[gMASK]sop<|{{ message['role'] }}|>\n {{ message['content'] }}"
    "{% else %}<|{{ message['role'] }}|>\n {{ message['content'] }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def parse_recipe(recipe: Path):
    """The recipe parsed as recipes/sft.py parses it: ``(script_args, validation_args, training_args, model_args)``.

    GPU recipes ask for bf16, which TrainingArguments refuses without a GPU: on a CPU-only machine the parse adds the
    command-line override ``--use_cpu true`` (everything else comes from the YAML).
    """
    import torch

    extra = [] if torch.cuda.is_available() else ["--use_cpu", "true"]
    return training.parser().parse_args_and_config(["--config", str(recipe), *extra])


def sft_rows(setting: str, n: int, *, with_messages: bool = True, offset: int = 0) -> list[dict]:
    template = get_template("critiquellm_v2", setting, "en")
    rows = []
    for i in range(offset, offset + n):
        record = {k: f"{v} #{i}" for k, v in RECORD.items() if k in template.setting.fields}
        row = {**record, "setting": setting, "critique": CRITIQUES[setting], "score": float(i % 10 + 1)}
        if with_messages:
            row["messages"] = training.critique_messages(record, template, CRITIQUES[setting])
        rows.append(row)
    return rows


@pytest.fixture
def eval_instruct_dir(tmp_path) -> Path:
    """An Eval-Instruct-like output: one save_to_disk DatasetDict (train / validation) per config."""
    root = tmp_path / "eval_instruct"
    for k, setting in enumerate(s.name for s in SETTINGS):
        datasets.DatasetDict(
            {
                "train": datasets.Dataset.from_list(sft_rows(setting, 10 + k)),
                "validation": datasets.Dataset.from_list(sft_rows(setting, 2, offset=100)),
            }
        ).save_to_disk(str(root / setting))
    return root


# ---------------------------------------------------------------------------------------------------- mixtures


def test_weighted_subset_counts_and_reproducibility():
    data = datasets.Dataset.from_dict({"x": list(range(10))})
    assert len(training.weighted_subset(data, 0, seed=0)) == 0
    assert len(training.weighted_subset(data, 1, seed=0)) == 10
    half = training.weighted_subset(data, 0.5, seed=3)
    assert len(half) == 5 and half["x"] == training.weighted_subset(data, 0.5, seed=3)["x"]
    assert len(set(half["x"])) == 5
    boosted = training.weighted_subset(data, 2.5, seed=1)
    assert len(boosted) == 25
    counts = {x: boosted["x"].count(x) for x in range(10)}
    assert sorted(counts.values()) == [2] * 5 + [3] * 5  # two full copies plus a random half
    with pytest.raises(ValueError, match=">= 0"):
        training.weighted_subset(data, -1, seed=0)


def test_mixture_with_per_config_weights_and_held_out_split(eval_instruct_dir):
    spec = {
        "datasets": [
            {"id": str(eval_instruct_dir), "config": "pointwise_referenced", "weight": 1.0},  # 10 rows
            {"id": str(eval_instruct_dir), "config": "pointwise_reference_free", "weight": 2.0},  # 11 rows
            {"id": str(eval_instruct_dir), "config": "pairwise_referenced", "weight": 0.5},  # 12 rows
        ],
        "seed": 7,
        "test_split": "validation",
    }
    result = training.load_mixture(training.DatasetMixture.from_dict(spec))
    assert [s["used"] for s in result.sources] == [10, 22, 6]
    assert [s["rows"] for s in result.sources] == [10, 11, 12]
    assert [s["test_rows"] for s in result.sources] == [2, 2, 2]
    assert result.dataset["train"].column_names == ["messages"]
    assert len(result.dataset["train"]) == 38 and len(result.dataset["test"]) == 6
    settings = [m[-1]["content"] for m in result.dataset["train"]["messages"]]
    assert settings.count(CRITIQUES["pointwise_reference_free"]) == 22
    assert settings.count(CRITIQUES["pairwise_referenced"]) == 6
    again = training.load_mixture(training.DatasetMixture.from_dict(spec))
    assert again.dataset["train"]["messages"] == result.dataset["train"]["messages"]  # seeded


def test_mixture_from_files_filtered_by_setting_and_random_test_split(tmp_path):
    rows = sft_rows("pointwise_referenced", 6) + sft_rows("pairwise_reference_free", 4)
    path = tmp_path / "all.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    mixture = training.DatasetMixture.from_dict(
        {"datasets": [{"id": str(path), "config": "pairwise_reference_free"}], "test_split_size": 0.25}
    )
    result = training.load_mixture(mixture)
    assert len(result.dataset["train"]) == 3 and len(result.dataset["test"]) == 1
    assert result.sources[0]["test_rows"] == 1 and result.sources[0]["used"] == 3
    assert {m[-1]["content"] for m in result.dataset["train"]["messages"]} == {CRITIQUES["pairwise_reference_free"]}


@pytest.fixture
def eval_instruct_output(tmp_path) -> Path:
    """Eval-Instruct's own ``dataset/`` folder: one DatasetDict keyed by the four configs, one split each; 10 rows
    per config over 5 queries (a query's responses and pairs share its ``query_id``)."""
    root = tmp_path / "dataset"
    configs = {}
    for setting in (s.name for s in SETTINGS):
        rows = [{**row, "query_id": f"q{i % 5}"} for i, row in enumerate(sft_rows(setting, 10))]
        configs[setting] = datasets.Dataset.from_list(rows)
    datasets.DatasetDict(configs).save_to_disk(str(root))
    return root


def test_training_rows_are_never_handed_out_as_held_out_rows(eval_instruct_output, tmp_path):
    """A one-split source (Eval-Instruct's output, a data file) has no validation split: it was read as one, so the
    eval loss and the best checkpoint were chosen on the training rows."""
    assert len(load_records(eval_instruct_output, config="pointwise_referenced")) == 10
    with pytest.raises(RecordError, match="pointwise_referenced: holds one split .'train'., no split 'validation'"):
        load_records(eval_instruct_output, config="pointwise_referenced", split="validation")
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in sft_rows("pointwise_referenced", 3)) + "\n")
    assert len(load_records(path, split="validation")) == 3  # a file named as a validation set is read as one
    with pytest.raises(RecordError, match="holds one split .'train'., no split 'validation'"):
        load_records(path, split="validation", split_must_exist=True)
    for source in (eval_instruct_output, path):
        mixture = training.DatasetMixture.from_dict(
            {"datasets": [{"id": str(source), "config": "pointwise_referenced"}], "test_split": "validation"}
        )
        with pytest.raises(RecordError, match="no source of the mixture has that split.*split_by_query.py"):
            training.load_mixture(mixture)


def test_split_by_query_holds_out_whole_queries_for_the_recipes(eval_instruct_output, tmp_path):
    script = REPO / "scripts" / "eval_instruct" / "split_by_query.py"
    out = tmp_path / "data" / "eval_instruct"
    run = subprocess.run(
        [sys.executable, str(script), str(eval_instruct_output), str(out), "--validation-fraction", "0.2"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "pointwise_referenced: train 8, validation 2" in run.stdout
    held_out = set()
    for setting in (s.name for s in SETTINGS):
        parts = datasets.load_from_disk(str(out / setting))
        assert sorted(parts) == ["train", "validation"] and len(parts["train"]) + len(parts["validation"]) == 10
        assert not set(parts["train"]["query_id"]) & set(parts["validation"]["query_id"])
        held_out.add(tuple(sorted(set(parts["validation"]["query_id"]))))
    assert len(held_out) == 1 and len(next(iter(held_out))) == 1  # one query of five, the same in every config
    mixture = training.DatasetMixture.from_dict(
        {"datasets": [{"id": str(out), "config": s.name} for s in SETTINGS], "test_split": "validation"}
    )
    result = training.load_mixture(mixture)
    assert len(result.dataset["train"]) == 32 and len(result.dataset["test"]) == 8
    too_many = subprocess.run(
        [sys.executable, str(script), str(eval_instruct_output), str(tmp_path / "x"), "--validation-fraction", "0.01"],
        capture_output=True,
        text=True,
    )
    assert too_many.returncode == 2 and too_many.stderr.count("\n") == 1 and "too few" in too_many.stderr


def test_mixture_keep_filter_applies_before_weights(eval_instruct_dir):
    mixture = training.DatasetMixture.from_dict(
        {"datasets": [{"id": str(eval_instruct_dir), "config": "pointwise_referenced", "weight": 2}]}
    )
    keep_even = iter(range(1000))
    result = training.load_mixture(mixture, keep=lambda row: next(keep_even) % 2 == 0)
    assert result.sources[0]["kept"] == 5 and result.sources[0]["used"] == 10


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"datasets": []}, "at least one"),
        ({"datasets": [{"id": "x", "weight": -0.5}]}, "weight must be a number >= 0"),
        ({"datasets": [{"id": "x", "wieght": 1}]}, "unknown key"),
        ({"datasets": [{"id": "x"}], "test_split": "validation", "test_split_size": 0.1}, "not both"),
        ({"datasets": [{"id": "x"}], "shuffle": True}, "unknown key"),
        ({"datasets": [{"id": "x"}], "test_split_size": 100}, "fraction in \\(0, 1\\)"),
    ],
)
def test_mixture_spec_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        training.DatasetMixture.from_dict(spec)


def test_missing_local_dataset_fails_fast(tmp_path):
    with pytest.raises(RecordError, match="no such file"):
        load_records(str(tmp_path / "nope.jsonl"))
    with pytest.raises(RecordError, match="no such file or folder"):
        load_records("./no/such/folder")


# ---------------------------------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("setting", [s.name for s in SETTINGS])
def test_ensure_messages_renders_rows_with_the_critic_templates(setting):
    rows = sft_rows(setting, 3, with_messages=False)
    rendered = training.ensure_messages(datasets.Dataset.from_list(rows), template="critiquellm_v2")
    template = get_template("critiquellm_v2", setting, "en")
    for row, messages in zip(rows, rendered["messages"], strict=True):
        assert messages[:-1] == template.render(row)  # exactly the inference prompt
        assert messages[-1] == {"role": "assistant", "content": CRITIQUES[setting]}


def test_ensure_messages_infers_the_setting_from_fields():
    rows = [
        {k: v for k, v in r.items() if k != "setting"} for r in sft_rows("pairwise_referenced", 2, with_messages=False)
    ]
    rendered = training.ensure_messages(datasets.Dataset.from_list(rows), template="critiquellm_v2")
    assert rendered["messages"][0][:-1] == get_template("critiquellm_v2", "pairwise_referenced").render(rows[0])


def test_ensure_messages_errors_name_the_row():
    bad = datasets.Dataset.from_list(
        [
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "c"}]},
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "  "}]},
        ]
    )
    with pytest.raises(ValueError, match="row 1: 'messages' must end with a non-empty assistant turn"):
        training.ensure_messages(bad, source="d")
    with pytest.raises(ValueError, match="no 'messages' column and no 'critique' column"):
        training.ensure_messages(datasets.Dataset.from_list([{"question": "q", "response": "r"}]))
    with pytest.raises(ValueError, match="row 1: .*question"):
        rows = [
            {"question": "q", "response": "r", "critique": "c"},
            {"question": " ", "response": "r", "critique": "c"},
        ]
        training.ensure_messages(datasets.Dataset.from_list(rows), template="mtbench")


# ---------------------------------------------------------------------------------------------------- loss masks


def cpu_sft_config(output_dir: Path, **config):
    """A CPU ``SFTConfig`` with the critique-only loss (assistant turns), no length limit and no reporting."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        assistant_only_loss=True,
        max_length=None,
        use_cpu=True,
        bf16=False,
        report_to="none",
        **config,
    )


def trainer_labels(model, tokenizer, conversations, tmp_path, **config):
    """input_ids and labels exactly as TRL's SFTTrainer prepares them for training."""
    from trl import SFTTrainer

    args = cpu_sft_config(tmp_path / "sft", **config)
    dataset = datasets.Dataset.from_list([{"messages": m} for m in conversations])
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    return [(row["input_ids"], row["labels"]) for row in trainer.train_dataset]


def split_by_label(tokenizer, input_ids, labels):
    trained = [t for t, label in zip(input_ids, labels, strict=True) if label != -100]
    assert [label for label in labels if label != -100] == trained  # labels are the tokens themselves
    first = next(i for i, label in enumerate(labels) if label != -100)
    last = max(i for i, label in enumerate(labels) if label != -100)
    assert all(label != -100 for label in labels[first : last + 1])  # one contiguous span
    return tokenizer.decode(input_ids[:first]), tokenizer.decode(trained), tokenizer.decode(input_ids[last + 1 :])


@pytest.mark.parametrize("setting", [s.name for s in SETTINGS])
def test_loss_mask_is_exactly_the_critique_for_each_setting(setting, tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    conversations = [r["messages"] for r in sft_rows(setting, 2)]
    for conversation, (input_ids, labels) in zip(
        conversations, trainer_labels(model, tokenizer, conversations, tmp_path), strict=True
    ):
        prompt, trained, rest = split_by_label(tokenizer, input_ids, labels)
        assert trained == CRITIQUES[setting] + "<|im_end|>"  # the critique and the end of turn, nothing else
        assert prompt == tokenizer.apply_chat_template(conversation[:-1], tokenize=False, add_generation_prompt=True)
        assert rest == "\n"
        mask = training.compute_loss_mask(tokenizer, conversation)  # what --dry-run shows
        assert mask.input_ids == input_ids and mask.labels == labels


def glm_tokenizer(tiny_model_dir, recipe: str):
    """The tiny tokenizer with GLM special tokens and a GLM recipe's chat template (ChatGLM3 / GLM-4 style)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    specials = ["[gMASK]", "sop", "<sop>", "<|system|>", "<|user|>", "<|assistant|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    tokenizer.eos_token = "<|endoftext|>"
    training.set_chat_template(tokenizer, REPO / "recipes" / recipe / "chat_template.jinja")
    return tokenizer


@pytest.mark.parametrize(("recipe", "opening"), [("chatglm3-6b", "\n "), ("glm-4-9b-chat-hf", "\n")])
def test_loss_mask_glm_style_templates(recipe, opening, tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    tokenizer = glm_tokenizer(tiny_model_dir, recipe)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    model.resize_token_embeddings(len(tokenizer))
    conversations = [sft_rows(s.name, 1)[0]["messages"] for s in SETTINGS]
    labelled = trainer_labels(model, tokenizer, conversations, tmp_path, eos_token="<|endoftext|>")
    for conversation, (input_ids, labels) in zip(conversations, labelled, strict=True):
        prompt, trained, rest = split_by_label(tokenizer, input_ids, labels)
        assert trained == opening + conversation[-1]["content"] + "<|endoftext|>"
        assert prompt.endswith("<|assistant|>") and prompt.startswith("[gMASK]") and rest == ""
        assert prompt == tokenizer.apply_chat_template(conversation[:-1], tokenize=False, add_generation_prompt=True)
        # The route for slow (remote-code) tokenizers: prompt / completion, common prefix; the same tokens.
        assert training.compute_loss_mask(tokenizer, conversation, "completion").labels == labels
        assert training.compute_loss_mask(tokenizer, conversation, "assistant").labels == labels


def test_recipe_templates_render_prompts_like_the_models_own(tiny_model_dir):
    from jinja2 import Environment

    tokenizer = glm_tokenizer(tiny_model_dir, "chatglm3-6b")
    published = Environment(trim_blocks=True, lstrip_blocks=True).from_string(CHATGLM3_PUBLISHED)
    for s in SETTINGS:
        prompt = sft_rows(s.name, 1)[0]["messages"][:-1]
        assert tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True) == published.render(
            messages=prompt, add_generation_prompt=True
        )
    smol = REPO / "recipes" / "smollm2-135m" / "chat_template.jinja"
    try:
        from transformers import AutoTokenizer

        from hf_critic.backends.models import ModelNotFoundError, default_model_dir

        original = AutoTokenizer.from_pretrained(default_model_dir())
    except (ModelNotFoundError, OSError) as err:
        pytest.skip(f"embedded default model unavailable: {err}")
    for prompt in (
        [{"role": "user", "content": "Q"}],
        [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
    ):
        expected = original.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        full = original.apply_chat_template([*prompt, {"role": "assistant", "content": "C"}], tokenize=False)
        training.set_chat_template(original, smol)
        assert original.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True) == expected
        assert original.apply_chat_template([*prompt, {"role": "assistant", "content": "C"}], tokenize=False) == full
        original = AutoTokenizer.from_pretrained(default_model_dir())


def test_loss_mask_errors(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    conversation = sft_rows("pointwise_referenced", 1)[0]["messages"]
    tokenizer.chat_template = tokenizer.chat_template.replace("{% generation %}", "").replace(
        "{% endgeneration %}", ""
    )
    with pytest.raises(ValueError, match="no \\{% generation %\\} markers"):
        training.compute_loss_mask(tokenizer, conversation, "assistant")
    # completion mode needs no markers and finds the same critique tokens
    mask = training.compute_loss_mask(tokenizer, conversation, "completion")
    assert mask.trained_text(tokenizer) == CRITIQUES["pointwise_referenced"] + "<|im_end|>\n"
    with pytest.raises(ValueError, match="loss mode"):
        training.compute_loss_mask(tokenizer, conversation, "prompt")


def test_dry_run_report_shows_the_masks(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = datasets.Dataset.from_list(sft_rows("pairwise_reference_free", 3))
    report = training.dry_run_report(rows, tokenizer, num_examples=2, max_length=10)
    assert report.count("[[LOSS>>" + CRITIQUES["pairwise_reference_free"] + "<|im_end|><<LOSS]]") == 2
    n = training.compute_loss_mask(tokenizer, rows[0]["messages"]).n_tokens
    n_crit = len(tokenizer(CRITIQUES["pairwise_reference_free"] + "<|im_end|>")["input_ids"])
    assert f"===== example 0: {n} tokens, {n_crit} with labels (longer than max_length 10) =====" in report
    assert "example 2" not in report


def test_filter_by_length(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    row = sft_rows("pointwise_referenced", 1)[0]
    n = training.compute_loss_mask(tokenizer, row["messages"], "all").n_tokens
    assert training.filter_by_length(tokenizer, None) is None
    assert training.filter_by_length(tokenizer, n)(row) and not training.filter_by_length(tokenizer, n - 1)(row)


# ---------------------------------------------------------------------------------------------------- validation Pearson


def pearson_records(n: int = 6) -> datasets.Dataset:
    return datasets.Dataset.from_list(
        [{"question": f"q{i}", "response": f"r{i}", "score": float(s)} for i, s in enumerate([1, 3, 2, 5, 4, 6][:n])]
    )


def test_pearson_callback_grades_with_the_in_training_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).train()
    callback = training.CritiquePearsonCallback(pearson_records(), template="mtbench", max_new_tokens=4, batch_size=3)
    values = callback.evaluate_model(model, tokenizer)
    # A random tiny model writes no "[[rating]]": every critique is unparsed, counted, never scored.
    assert math.isnan(values["critique_pearson"]) and values["critique_pearson_parse_rate"] == 0.0
    assert values["critique_pearson_n"] == 6.0
    assert model.training and tokenizer.padding_side == "right"  # state restored for training


def test_pearson_callback_with_probability_verdicts_is_defined_from_the_start(tiny_model_dir):
    """validation_verdict: probability: the same random model gets a verdict for every row, so Pearson is a number."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).train()
    callback = training.CritiquePearsonCallback(
        pearson_records(), template="mtbench", batch_size=3, verdict="probability", explanation="none"
    )
    values = callback.evaluate_model(model, tokenizer)
    assert values["critique_pearson_parse_rate"] == 1.0 and -1 <= values["critique_pearson"] <= 1
    assert model.training and tokenizer.padding_side == "right"
    with pytest.raises(ValueError, match="validation verdict"):
        training.CritiquePearsonCallback(pearson_records(), verdict="both")


def test_pearson_callback_picks_the_best_checkpoint(tiny_model_dir, tmp_path, monkeypatch):
    """Trainer wiring: eval_critique_pearson is logged and is what load_best_model_at_end selects on."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    records = pearson_records()
    gold = records["score"]
    # Scores the critic "writes" at evaluations 1, 2, 3: Pearson 0.2-ish, 1.0 (best), then lower; one unparsed.
    planned = [[3, 1, 2, 6, 5, 4], [1, 3, 2, 5, 4, 6], [2, 1, 3, None, 6, 4]]
    calls = iter(planned)
    monkeypatch.setattr(training.CritiquePearsonCallback, "_grade", lambda self, model, tok, idx: next(calls))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    data = datasets.Dataset.from_list(
        [{"messages": m} for m in (r["messages"] for r in sft_rows("pointwise_referenced", 8))]
    )
    args = cpu_sft_config(
        tmp_path / "out",
        max_steps=3,
        per_device_train_batch_size=2,
        eval_strategy="steps",
        eval_steps=1,
        save_strategy="steps",
        save_steps=1,
        metric_for_best_model="critique_pearson",
        greater_is_better=True,
        load_best_model_at_end=True,
        learning_rate=1e-3,
    )
    plain = SFTTrainer(model=model, args=args, train_dataset=data, eval_dataset=data, processing_class=tokenizer)
    plain.add_callback(training.CritiquePearsonCallback(records, trainer=plain, template="mtbench"))
    with pytest.raises(TypeError, match="needs hf_critic.training.CriticSFTTrainer"):
        plain.train()  # its evaluate() would not return the Pearson: refused before any step
    trainer = training.CriticSFTTrainer(
        model=model, args=args, train_dataset=data, eval_dataset=data.select(range(2)), processing_class=tokenizer
    )
    callback = training.CritiquePearsonCallback(records, trainer=trainer, template="mtbench")
    trainer.add_callback(callback)
    returned = []
    evaluate = trainer.evaluate
    trainer.evaluate = lambda *a, **k: returned.append(evaluate(*a, **k)) or returned[-1]
    trainer.train()
    # the Pearson is in what evaluate() returns, next to the loss (not written into the Trainer's dict)
    assert all("eval_critique_pearson" in m and "eval_loss" in m for m in returned) and len(returned) == 3

    expected = [
        stats.pearsonr(*zip(*[(s, g) for s, g in zip(p, gold, strict=True) if s is not None], strict=True))[0]
        for p in planned
    ]
    logged = [h["eval_critique_pearson"] for h in trainer.state.log_history if "eval_critique_pearson" in h]
    assert logged == pytest.approx(expected)
    assert [h["parse_rate"] for h in callback.history] == pytest.approx([1.0, 1.0, 5 / 6])
    assert trainer.state.best_metric == pytest.approx(1.0)
    assert trainer.state.best_model_checkpoint.endswith("checkpoint-2")


def test_logged_eval_metrics_merges_one_step():
    history = [
        {"loss": 1.0, "step": 10},
        {"eval_loss": 0.9, "epoch": 1.0, "step": 10},
        {"eval_critique_pearson": 0.4, "eval_critique_pearson_n": 8.0, "epoch": 1.0, "step": 10},
        {"eval_loss": 0.8, "step": 20},
    ]
    assert training.logged_eval_metrics(history, 10) == {
        "eval_loss": 0.9,
        "eval_critique_pearson": 0.4,
        "eval_critique_pearson_n": 8.0,
        "epoch": 1.0,
    }
    assert training.logged_eval_metrics(history, 30) == {}


def test_pearson_callback_needs_scores():
    with pytest.raises(ValueError, match="no 'gold' column"):
        training.CritiquePearsonCallback(pearson_records(), score_column="gold")


# ---------------------------------------------------------------------------------------------------- model card


def test_model_card(eval_instruct_dir):
    from trl import ModelConfig, SFTConfig

    mixture = training.load_mixture(
        training.DatasetMixture.from_dict(
            {"datasets": [{"id": str(eval_instruct_dir), "config": "pointwise_referenced", "weight": 0.5}]}
        )
    )
    args = SFTConfig(
        output_dir="x",
        learning_rate=6e-5,
        weight_decay=0.1,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=8,
        use_cpu=True,
        bf16=False,
    )
    history = [
        {"step": 10, "epoch": 1.0, "pearson": 0.41, "spearman": 0.4, "kendall": 0.3, "parse_rate": 0.9, "n": 20}
    ]
    card = training.model_card(
        model_name="critic-x",
        base_model="THUDM/chatglm3-6b",
        training_args=args,
        model_args=ModelConfig(use_peft=True, lora_r=8),
        mixture=mixture,
        templates=[
            {
                "setting": "pointwise_referenced",
                "template": "critiquellm_v2_pointwise_referenced_zh",
                "template_version": "1.0",
            }
        ],
        validation=history,
        best={"checkpoint": "out/checkpoint-10", "metric": "critique_pearson", "value": 0.41},
        world_size=8,
    )
    header = yaml.safe_load(card.split("---")[1])
    assert header["base_model"] == "THUDM/chatglm3-6b" and "hf-critic" in header["tags"] and "lora" in header["tags"]
    assert f"| `{eval_instruct_dir}/pointwise_referenced` | train | 10 | 10 | 0.5 | 5 | 0 |" in card
    assert "| learning_rate | 6e-05 |" in card and "| weight_decay | 0.1 |" in card
    assert "| effective batch size | 64 (8 process(es)) |" in card
    assert "| pointwise_referenced | `critiquellm_v2_pointwise_referenced_zh` | 1.0 |" in card
    assert "| 10 | 1 | 0.41 | 0.4 | 0.3 | 0.9 | 20 |" in card
    assert "Selected checkpoint: `out/checkpoint-10` (critique_pearson = 0.41)." in card


# ---------------------------------------------------------------------------------------------------- recipes and configs


def test_all_recipes_parse_with_trlparser():
    assert len(RECIPES) >= 5
    for recipe in RECIPES:
        script_args, validation_args, training_args, model_args = parse_recipe(recipe)
        mixture = training.DatasetMixture.from_dict(script_args.dataset_mixture)
        assert mixture.datasets, recipe
        if training_args.chat_template_path:
            text = (REPO / training_args.chat_template_path).read_text()
            assert training.has_generation_markers(text), recipe
        if training_args.metric_for_best_model:
            assert training_args.metric_for_best_model == validation_args.validation_metric_name
            assert validation_args.validation_dataset and training_args.load_best_model_at_end
        readme = (recipe.parent.parent / "README.md").read_text()
        launch = [line for line in readme.replace("\\\n", " ").splitlines() if "accelerate launch" in line]
        assert any(str(recipe.relative_to(REPO)) in line for line in launch), f"{recipe}: no launch line in README"
        assert model_args.model_name_or_path


def test_chatglm3_recipe_carries_the_paper_settings():
    """CritiqueLLM v2 §4.3: AdamW, wd 0.1, lr 6e-5, 10% warm-up, batch 64 (8 GPUs), length 8192, 5 epochs, ZeRO-2."""
    recipe = REPO / "recipes" / "chatglm3-6b" / "sft" / "full.yaml"
    script_args, _, args, model_args = parse_recipe(recipe)
    assert yaml.safe_load(recipe.read_text())["bf16"] is True
    assert args.optim.startswith("adamw") and args.weight_decay == 0.1 and args.learning_rate == 6e-5
    assert args.warmup_steps == 0.1 and args.num_train_epochs == 5 and args.max_length == 8192
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps * 8 == 64
    assert args.trust_remote_code and args.assistant_only_loss and model_args.model_name_or_path == "THUDM/chatglm3-6b"
    assert {d.config for d in training.DatasetMixture.from_dict(script_args.dataset_mixture).datasets} == {
        s.name for s in SETTINGS
    }
    readme = (REPO / "recipes" / "chatglm3-6b" / "README.md").read_text()
    assert "accelerate_configs/zero2.yaml" in readme


@pytest.mark.parametrize("path", ACCELERATE_CONFIGS, ids=lambda p: p.name)
def test_accelerate_configs_validate_with_deepspeed(path):
    expected = {
        "zero2.yaml": (2, "none"),
        "zero2_offload.yaml": (2, "cpu"),
        "zero3.yaml": (3, "none"),
        "multi_gpu.yaml": None,
    }
    resolved = training.deepspeed_config_from_accelerate(path, micro_batch_size=1, gradient_accumulation_steps=8)
    if expected[path.name] is None:
        assert resolved is None
        return
    stage, offload = expected[path.name]
    assert resolved["zero_optimization"]["stage"] == stage
    assert resolved["zero_optimization"]["offload_optimizer"]["device"] == offload
    assert resolved["train_batch_size"] == 64 and resolved["bf16"] == {"enabled": True}


def test_accelerate_config_names_and_readme():
    assert {p.name for p in ACCELERATE_CONFIGS} >= {"zero2.yaml", "zero3.yaml", "zero2_offload.yaml", "multi_gpu.yaml"}
    readme = (REPO / "accelerate_configs" / "README.md").read_text()
    assert all(p.name in readme for p in ACCELERATE_CONFIGS)


def test_broken_deepspeed_config_is_rejected(tmp_path):
    text = (REPO / "accelerate_configs" / "zero2.yaml").read_text()
    bad_device = tmp_path / "bad_device.yaml"
    bad_device.write_text(text.replace("offload_optimizer_device: none", "offload_optimizer_device: gpu"))
    with pytest.raises(Exception, match="(?i)offload|device|gpu"):
        training.deepspeed_config_from_accelerate(bad_device)
    bad_key = tmp_path / "bad_key.yaml"
    bad_key.write_text(text.replace("zero_stage: 2", "zero_stage: 2\n  zero_stgae: 3"))
    with pytest.raises(ValueError, match="unknown deepspeed_config key"):
        training.deepspeed_config_from_accelerate(bad_key)


def test_deepspeed_auto_values_are_resolved_by_transformers(tmp_path):
    """The "auto" values come from transformers' own HfTrainerDeepSpeedConfig (the training
    arguments, the model's hidden size), not from constants: the checked config is the one that trains."""
    from transformers import LlamaConfig, TrainingArguments

    (tmp_path / "ds.json").write_text(
        json.dumps(
            {
                "train_batch_size": "auto",
                "train_micro_batch_size_per_gpu": "auto",
                "gradient_accumulation_steps": "auto",
                "gradient_clipping": "auto",
                "zero_optimization": {
                    "stage": 3,
                    "reduce_bucket_size": "auto",
                    "stage3_prefetch_bucket_size": "auto",
                    "stage3_param_persistence_threshold": "auto",
                },
            }
        )
    )
    text = (REPO / "accelerate_configs" / "zero3.yaml").read_text()
    block = text[text.index("deepspeed_config:") : text.index("distributed_type")]
    path = tmp_path / "zero3_file.yaml"
    path.write_text(text.replace(block, "deepspeed_config:\n  deepspeed_config_file: ds.json\n"))
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        gradient_accumulation_steps=4,
        max_grad_norm=0.3,
        use_cpu=True,
        report_to=[],
        bf16=True,
    )
    resolved = training.deepspeed_config_from_accelerate(
        path, training_args=args, model_config=LlamaConfig(hidden_size=64)
    )
    zero = resolved["zero_optimization"]
    assert (zero["reduce_bucket_size"], zero["stage3_prefetch_bucket_size"]) == (64 * 64, int(0.9 * 64 * 64))
    assert zero["stage3_param_persistence_threshold"] == 10 * 64
    assert resolved["gradient_clipping"] == 0.3
    assert resolved["train_batch_size"] == 2 * 4 * 8  # 8 processes in zero3.yaml
    assert resolved["bf16"]["enabled"] is True  # the launch's mixed precision, set by accelerate
    unresolved = training.deepspeed_config_from_accelerate(path, training_args=args)
    assert unresolved["zero_optimization"]["reduce_bucket_size"] == "auto"  # only the model can fill it


# ------------------------------------------------------------------------------- LoRA on the top layers (recipes/sft.py)
def _sft_args(model_dir, *extra):
    script, _, training_args, model_args = training.parser().parse_args_and_config(
        [
            "--model_name_or_path",
            str(model_dir),
            "--dataset_name",
            "unused",
            "--output_dir",
            "unused",
            "--use_cpu",
            "true",
            "--bf16",
            "false",
            *extra,
        ]
    )
    return model_args, script, training_args


@pytest.mark.parametrize("targets", [["all-linear"], ["q_proj", "v_proj"]])
def test_sft_lora_top_layers_adapts_only_the_top_layers(tiny_model_dir, targets):
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    model_args, script, training_args = _sft_args(
        tiny_model_dir, "--use_peft", "true", "--lora_top_layers", "1", "--lora_target_modules", *targets
    )
    config = training.peft_config(model_args, script, training_args)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir), config)
    layers = {name.split("layers.")[1].split(".")[0] for name, p in model.named_parameters() if p.requires_grad}
    top = str(model.config.num_hidden_layers - 1)
    assert layers == {top}
    adapted = {
        name.split(f"layers.{top}.")[1].split(".lora")[0].split(".")[-1]
        for name, p in model.named_parameters()
        if p.requires_grad
    }
    assert adapted == (set(targets) if targets != ["all-linear"] else set(training.config._LINEAR_NAMES))


def test_sft_lora_top_layers_refuses_what_it_cannot_restrict(tiny_model_dir):
    model_args, script, training_args = _sft_args(tiny_model_dir, "--lora_top_layers", "1")
    with pytest.raises(training.RecipeError, match="needs use_peft"):
        training.peft_config(model_args, script, training_args)
    model_args, script, training_args = _sft_args(tiny_model_dir, "--use_peft", "true", "--lora_top_layers", "9")
    with pytest.raises(training.RecipeError, match=r"lora_top_layers must be in \[1, 2\]"):
        training.peft_config(model_args, script, training_args)
    model_args, script, training_args = _sft_args(tiny_model_dir, "--use_peft", "true")
    assert training.peft_config(model_args, script, training_args).layers_to_transform is None
