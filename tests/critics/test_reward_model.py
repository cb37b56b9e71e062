"""Reward models as critics (hf_critic.critics.reward, hf_critic.critic.rewards): detection, scoring, tie band, swap,
cache, truncation, PEFT adapter folders and the options a reward critic refuses."""

from __future__ import annotations

import json
import math

import pytest

from hf_critic import Critic, RewardCritic
from hf_critic.core import schema
from hf_critic.critic import ContextLengthError
from hf_critic.critics.reward import (
    RewardCalibration,
    RewardModel,
    fit_ids,
    is_reward_model,
    pairwise_verdict,
    rao_kupper,
)
from hf_critic.testing.tiny_models import build_tiny_model, build_tiny_reward_model, chatml_tokenizer

QUESTION = "What is the capital of France?"
GOOD, BAD = "The capital of France is Paris.", "Rating: [[5]] Tie"


@pytest.fixture(scope="module")
def reward_folder(tmp_path_factory):
    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "model")


@pytest.fixture()
def critic(reward_folder, tmp_path):
    return Critic.from_pretrained(
        str(reward_folder), cache_path=tmp_path / "c.sqlite", progress=False, dtype="float32"
    )


def test_detection_from_files_alone(reward_folder, tmp_path):
    assert is_reward_model(reward_folder)
    assert not is_reward_model(build_tiny_model(tmp_path / "causal"))
    assert not is_reward_model(None)
    assert not is_reward_model(tmp_path / "missing")


def test_a_reward_model_is_never_loaded_as_a_causal_lm(critic, reward_folder):
    assert isinstance(critic, RewardCritic) and not hasattr(critic, "backend")  # Critic.from_pretrained's own kind
    direct = RewardCritic.from_pretrained(str(reward_folder), progress=False, dtype="float32", tie_margin=0.5)
    assert direct.kind == critic.kind == "reward" and direct.scorer.calibration.tie_margin == 0.5
    assert direct.scorer.identity != critic.scorer.identity  # the tie band is part of what it is
    assert type(critic.scorer.model).__name__ == "LlamaForSequenceClassification"
    assert critic.verdict == "reward" and critic.kind == "reward" and not critic.writes_explanation


def test_pointwise_scores_follow_the_rewards_on_the_templates_scale(critic):
    rows = [{"question": QUESTION, "response": r} for r in (GOOD, BAD, "Paris.", "")]
    graded = critic.grade(rows)
    rewards, scores = graded[schema.CRITIQUE_REWARD], graded[schema.CRITIQUE_SCORE]
    assert all(1 <= s <= 10 for s in scores)
    for r, s in zip(rewards, scores, strict=True):  # not fitted: the documented sigmoid map
        assert s == pytest.approx(1 + 9 / (1 + math.exp(-r)))
    assert graded[schema.CRITIQUE_EXPLANATION] == [None] * 4
    assert critic.last_stats.summary().startswith("4/4 verdicts from the reward model")


def test_rewards_equal_a_direct_forward_pass(critic, reward_folder):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(reward_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(reward_folder)
    chat = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": GOOD}]
    ids = tokenizer.apply_chat_template(chat, return_tensors="pt", return_dict=True)["input_ids"]
    with torch.no_grad():
        expected = model(input_ids=ids).logits[0, 0].item()
    got = critic.grade([{"question": QUESTION, "response": GOOD}])[schema.CRITIQUE_REWARD][0]
    assert got == pytest.approx(expected, abs=1e-3)


def test_token_limited_batches_give_the_rewards_of_row_batches(critic):
    """Reward scoring is cut into batches by padded tokens, as the read-out is, outputs unchanged."""
    from hf_critic.backends.models import READOUT_BATCH_TOKENS

    scorer = critic.scorer
    assert scorer.max_batch_tokens == READOUT_BATCH_TOKENS  # the default on a CPU
    responses = [GOOD, "Paris. " * 40, "", "It is Paris, the largest city of France. " * 12, "No."]
    inputs = [scorer.fit(QUESTION, r, "error")[0] for r in responses]
    lengths = sorted((len(ids) for ids in inputs), reverse=True)
    rows_only = RewardModel(scorer.model, scorer.tokenizer, name="t", batch_size=8, max_batch_tokens=None)
    token_limited = RewardModel(scorer.model, scorer.tokenizer, name="t", batch_size=8, max_batch_tokens=lengths[0])
    calls = []
    hook = scorer.model.register_forward_hook(
        lambda m, args, kw, out: calls.append(kw["input_ids"].shape), with_kwargs=True
    )
    try:
        expected = rows_only.rewards_of_ids(inputs)
        assert len(calls) == 1
        got = token_limited.rewards_of_ids(inputs)
    finally:
        hook.remove()
    assert len(calls) > 2 and all(rows * width <= lengths[0] or rows == 1 for rows, width in calls[1:])
    assert got == pytest.approx(expected, abs=1e-5)


def test_pairwise_labels_distribution_and_ties(critic):
    rows = [
        {"question": QUESTION, "response_1": GOOD, "response_2": BAD},
        {"question": QUESTION, "response_1": BAD, "response_2": GOOD},
        {"question": QUESTION, "response_1": GOOD, "response_2": GOOD},  # equal rewards: a tie, never "response 1"
    ]
    out, stats = critic.compare(rows, swap=True, return_stats=True)
    assert (stats.verdict, stats.total, stats.parsed) == ("reward", 3, 3)  # order-free: no second pass under swap
    r1, r2 = out[schema.CRITIQUE_REWARD], out[schema.CRITIQUE_REWARD_2]
    assert r1[0] == pytest.approx(r2[1]) and r2[0] == pytest.approx(r1[1])
    first = 0 if r1[0] > r2[0] else 1
    assert out[schema.CRITIQUE_LABEL][:2] == [first, 1 - first]  # order-free: the same verdict either way
    assert out[schema.CRITIQUE_LABEL][2] == 2
    dist = json.loads(out[schema.CRITIQUE_DISTRIBUTION][0])
    assert dist["response_1"] == pytest.approx(1 / (1 + math.exp(-(r1[0] - r2[0]))), abs=1e-5)
    # no second pass under --swap: nothing looks like a measured consistency
    assert schema.CRITIQUE_LABEL_SWAPPED not in out.column_names
    assert schema.CRITIQUE_CONSISTENT not in out.column_names


def test_tie_band_and_rao_kupper():
    assert pairwise_verdict(1.0, 1.0)[0] == 2
    assert pairwise_verdict(1.2, 1.0, tie_margin=0.3)[0] == 2
    assert pairwise_verdict(1.5, 1.0, tie_margin=0.3)[0] == 0
    assert pairwise_verdict(0.0, 1.0)[0] == 1
    d = rao_kupper(1.0, 0.0, 0.5)
    assert sum(d.values()) == pytest.approx(1.0) and d["tie"] > 0
    with pytest.raises(ValueError, match="tie band"):
        pairwise_verdict(0.0, 1.0, tie_margin=-1)


def test_cache_makes_a_rerun_free(critic, reward_folder, tmp_path):
    rows = [{"question": QUESTION, "response": r} for r in (GOOD, BAD)]
    first = critic.grade(rows)
    again = Critic.from_pretrained(
        str(reward_folder), cache_path=tmp_path / "c.sqlite", progress=False, dtype="float32"
    )
    again.scorer.score = None  # any model call would fail
    second = again.grade(rows)
    assert second[schema.CRITIQUE_REWARD] == first[schema.CRITIQUE_REWARD]
    assert again.last_stats.cached == 2


def test_truncation_is_done_reported_and_policed(reward_folder, tmp_path):
    long = {"question": QUESTION, "response": "Paris is the capital. " * 400}
    short = {"question": QUESTION, "response": GOOD}
    RewardCalibration(max_length=48).save(reward_folder)
    try:
        critic = Critic.from_pretrained(str(reward_folder), progress=False, dtype="float32")
        out = critic.grade([long, short])
        assert out[schema.CRITIQUE_TRUNCATED] == [True, False]
        assert critic.last_stats.truncated == 1 and "truncated to fit the context 1" in critic.last_stats.summary()
        skip = Critic.from_pretrained(str(reward_folder), truncate="skip", progress=False, dtype="float32").grade(
            [long, short]
        )
        assert skip[schema.CRITIQUE_SCORE][0] is None and skip[schema.CRITIQUE_STATUS][0] == "skipped"
        with pytest.raises(ContextLengthError, match="over the reward model's context of 48"):
            Critic.from_pretrained(str(reward_folder), truncate="error", progress=False, dtype="float32").grade([long])
    finally:
        (reward_folder / "hf_critic_reward.json").unlink()


def test_fit_ids_cuts_the_middle_of_the_response_then_the_question():
    tokenizer = chatml_tokenizer()
    ids, cut = fit_ids(tokenizer, QUESTION, "word " * 300, 60, "middle")
    assert cut and len(ids) <= 60
    ids, cut = fit_ids(tokenizer, "long question " * 200, "short", 60, "middle")
    assert cut and len(ids) <= 60 and "short" in tokenizer.decode(ids)
    assert fit_ids(tokenizer, QUESTION, GOOD, 60, "skip") == (fit_ids(tokenizer, QUESTION, GOOD, None, "x")[0], False)


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"explanation": "first"}, "explanation=first: a reward model writes no critique text"),
        ({"verdict": "text"}, "verdict=text: a reward model's verdicts come from its rewards"),
        ({"constrain_verdict": True}, "constrain_verdict=True: a reward model writes no critique text"),
        ({"min_verdict_mass": 0.5}, "min_verdict_mass=0.5: a reward model writes no critique text"),
        ({"language": "zh"}, "language=zh: a reward model writes no critique text"),
    ],
)
def test_options_a_reward_critic_cannot_honour_are_refused(reward_folder, kwargs, option):
    with pytest.raises(ValueError, match=option):
        Critic.from_pretrained(str(reward_folder), progress=False, dtype="float32", **kwargs)


def test_a_reference_is_refused_or_said_ignored(critic, caplog):
    row = {"question": QUESTION, "response": GOOD, "reference": "Paris"}
    with pytest.raises(ValueError, match="reads no reference"):
        critic.grade([row], referenced=True)
    with caplog.at_level("WARNING"):
        out = critic.grade([row])
    assert out[schema.CRITIQUE_SCORE][0] is not None
    assert "reference column is not shown" in caplog.text


def test_a_peft_adapter_folder_is_a_reward_critic(reward_folder, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification

    base = AutoModelForSequenceClassification.from_pretrained(reward_folder)
    peft = get_peft_model(base, LoraConfig(task_type="SEQ_CLS", r=2, target_modules=["q_proj", "v_proj"]))
    adapter = tmp_path / "adapter"
    peft.save_pretrained(adapter)
    assert is_reward_model(adapter)
    critic = Critic.from_pretrained(str(adapter), progress=False, dtype="float32")
    direct = RewardModel.from_pretrained(reward_folder, progress=False, dtype="float32")
    got = critic.grade([{"question": QUESTION, "response": GOOD}])[schema.CRITIQUE_REWARD][0]
    want = direct.score([direct.fit(QUESTION, GOOD, "middle")[0]])[0]
    assert got == pytest.approx(want, abs=1e-3)  # LoRA B starts at zero: the base's reward


def test_meta_eval_names_an_order_free_critic_and_measures_no_consistency(critic, tmp_path):
    from hf_critic.cli import main
    from hf_critic.io import save_records

    rows = [
        {"question": QUESTION, "response_1": GOOD, "response_2": BAD, "label": 0},
        {"question": QUESTION, "response_1": BAD, "response_2": GOOD, "label": 1},
        {"question": QUESTION, "response_1": "Paris.", "response_2": "", "label": 0},
    ]
    out = critic.compare(rows, swap=True)
    save_records(out, tmp_path / "c.jsonl")
    code = main(
        [
            "meta-eval",
            "--critiques",
            f"rm/demo={tmp_path / 'c.jsonl'}",
            "--output-dir",
            str(tmp_path / "me"),
            "--no-plots",
        ]
    )
    report = (tmp_path / "me" / "report.md").read_text()
    assert code == 0
    assert "| rm | demo | reward, order-free |" in report and "n/a (order-free)" in report
    assert "probability, first order" not in report


# ------------------------------------------------------------------------------------------- non-finite rewards and broken inputs
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"slope": 2.0}, "slope without intercept"),
        ({"intercept": 1.0}, "intercept without slope"),
        ({"slope": "2", "intercept": 1.0}, "slope must be a number"),
        ({"fitted_low": 5, "fitted_high": 5}, "fitted_high must exceed fitted_low"),
        ({"max_length": -5}, "max_length must be a whole number of tokens >= 1"),
        ({"tie_margin": float("nan")}, "tie_margin must be finite"),
        ({"slope": float("inf"), "intercept": 0.0}, "slope must be finite"),
    ],
)
def test_a_calibration_file_out_of_range_is_one_line_naming_the_file(tmp_path, fields, message):
    (tmp_path / "hf_critic_reward.json").write_text(json.dumps(fields))  # json writes NaN / Infinity as Python does
    with pytest.raises(ValueError, match=message) as err:
        RewardCalibration.load(tmp_path)
    assert str(tmp_path / "hf_critic_reward.json") in str(err.value) and "\n" not in str(err.value)


def test_non_finite_or_huge_tie_margins_are_refused_or_computed_not_overflowed(critic):
    with pytest.raises(ValueError, match="finite"):
        pairwise_verdict(1.0, 1.0, tie_margin=float("nan"))
    with pytest.raises(ValueError, match="finite"):
        pairwise_verdict(float("nan"), 1.0)
    label, d = pairwise_verdict(1.0, 0.0, tie_margin=1e6)  # exp(1e6) overflowed before: reported as a truncation
    assert label == 2 and d["tie"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="tie_margin=.*: must be a finite number"):
        RewardCritic(critic.scorer, tie_margin=float("nan"))


def test_a_reward_model_giving_nan_is_an_error_naming_the_row(critic):
    critic.scorer.score = lambda inputs: [0.5, float("nan")][: len(inputs)]
    rows = [{"question": QUESTION, "response": r} for r in (GOOD, BAD)]
    with pytest.raises(ValueError, match=r"gave reward nan for row 1 \(1 of 2"):
        critic.grade(rows, source="graded.jsonl")
    assert critic.cache.get_many([]) == {} and len(critic.cache) == 0


def test_non_finite_numbers_on_the_command_line_are_refused(capsys):
    from hf_critic.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["compare", "--data", "x.jsonl", "--tie-margin", "nan"])
    assert exit_.value.code == 2 and "not a finite number: 'nan'" in capsys.readouterr().err


def test_gguf_recode_is_refused_where_no_gguf_runs(reward_folder, tmp_path):
    from hf_critic.testing.tiny_models import build_tiny_model

    with pytest.raises(ValueError, match="gguf_recode=Q8_0: .* is a reward model on transformers; no GGUF runs"):
        Critic.from_pretrained(str(reward_folder), gguf_recode="Q8_0", progress=False)
    causal = build_tiny_model(tmp_path / "causal")
    with pytest.raises(ValueError, match="gguf_recode=off: the transformers engine runs no GGUF file"):
        Critic.from_pretrained(str(causal), engine="transformers", gguf_recode="off", progress=False)


def test_a_classifier_with_two_labels_is_refused_as_reward_and_as_text_critic(reward_folder, tmp_path, capsys):
    import shutil

    from hf_critic.cli import main

    two = tmp_path / "two-labels"
    shutil.copytree(reward_folder, two)
    config = json.loads((two / "config.json").read_text())
    config.update(num_labels=2, id2label={"0": "bad", "1": "good"}, label2id={"bad": 0, "good": 1})
    (two / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="a sequence classifier with 2 labels"):
        Critic.from_pretrained(str(two), progress=False)
    data = tmp_path / "g.jsonl"
    data.write_text(json.dumps({"question": QUESTION, "response": GOOD}) + "\n")
    for verdict in ("auto", "text"):
        code = main(
            [
                "grade",
                "--model",
                str(two),
                "--data",
                str(data),
                "--output",
                str(tmp_path / "o.jsonl"),
                "--verdict",
                verdict,
                "--no-cache",
                "--no-progress",
            ]
        )
        assert code == 2 and "2 labels" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("damage", ["junk", "empty", "truncated"])
def test_a_broken_adapter_file_is_one_line_naming_it_and_nothing_is_written(reward_folder, tmp_path, capsys, damage):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification

    from hf_critic.cli import main

    base = AutoModelForSequenceClassification.from_pretrained(reward_folder)
    adapter = tmp_path / "adapter"
    get_peft_model(base, LoraConfig(task_type="SEQ_CLS", r=2, target_modules=["q_proj"])).save_pretrained(adapter)
    weights = adapter / "adapter_model.safetensors"
    whole = weights.read_bytes()
    weights.write_bytes({"junk": b"not safetensors " * 8, "empty": b"", "truncated": whole[: len(whole) // 2]}[damage])
    data, out = tmp_path / "g.jsonl", tmp_path / "o.jsonl"
    data.write_text(json.dumps({"question": QUESTION, "response": GOOD}) + "\n")
    code = main(
        ["grade", "--model", str(adapter), "--data", str(data), "--output", str(out), "--no-cache", "--no-progress"]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("hf-critic")]  # not the test's own load bars
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    assert f"{weights}: not a readable safetensors file" in lines[0] and not out.exists()
