"""The reward head (hf_critic.reward_head): Rao-Kupper maths, training, save/load, and a critic that uses it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_critic.reward_head import (
    FeatureStore,
    HeadSpec,
    RewardHead,
    rao_kupper,
    response_features,
    train_reward_head,
    within_question_accuracy,
)


def test_rao_kupper_is_a_distribution_mirrored_under_swap():
    d = rao_kupper(1.3, 0.2, 0.5)
    assert math.isclose(sum(d.values()), 1.0)
    assert d["response_1"] == pytest.approx(1 / (1 + math.exp(-(1.1 - 0.5))))
    swapped = rao_kupper(0.2, 1.3, 0.5)
    assert swapped["response_1"] == pytest.approx(d["response_2"])
    assert swapped["tie"] == pytest.approx(d["tie"])
    assert rao_kupper(0.0, 0.0, 1.0)["tie"] > 0.4  # equal rewards inside the band: a tie is the most likely
    assert rao_kupper(0.4, 0.1, 0.0)["tie"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="tie band"):
        rao_kupper(0.0, 1.0, -0.1)


def test_within_question_accuracy_counts_ties_as_half():
    rewards = np.array([0.0, 1.0, 1.0, 2.0])
    pairs = np.array([[0, 1], [1, 2], [3, 2]])
    targets = np.array([1.0, 1.0, 0.5])  # right, critic tie (half), gold tie (half)
    assert within_question_accuracy(rewards, pairs, targets) == pytest.approx(2 / 3)


TRUTH = np.random.default_rng(42).normal(size=20)


def _synthetic(n_questions: int, seed: int, truth: np.ndarray = TRUTH):
    """Responses whose quality is a hidden linear function of 20 features, plus a per-question offset the head must
    not need: pairs are within a question."""
    rng = np.random.default_rng(seed)
    features, pairs, targets = [], [], []
    for _ in range(n_questions):
        offset = rng.normal(size=20) * 3
        base = len(features)
        for _ in range(3):
            features.append(offset + rng.normal(size=20))
        for i in range(3):
            for j in range(i + 1, 3):
                gap = (features[base + j] - features[base + i]) @ truth
                pairs.append((base + i, base + j))
                targets.append(1 / (1 + math.exp(-gap)))
    return np.array(features, dtype=np.float32), np.array(pairs), np.array(targets)


def test_bradley_terry_head_learns_the_within_question_order():
    x, pairs, targets = _synthetic(200, seed=0)
    vx, vpairs, vtargets = _synthetic(50, seed=1)
    spec = HeadSpec(layers=(1,))
    untrained = RewardHead(spec, x.mean(0), x.std(0), np.zeros(x.shape[1], dtype=np.float32))
    assert within_question_accuracy(untrained.reward(vx), vpairs, vtargets) == 0.5
    head = train_reward_head(x, pairs, targets, l2=1e-4, spec=spec)
    assert within_question_accuracy(head.reward(vx), vpairs, vtargets) > 0.9


def test_grades_calibrate_the_score_scale():
    x, pairs, targets = _synthetic(100, seed=2)
    truth = x @ np.random.default_rng(0).normal(size=20)  # any linear grade
    grades = np.clip(5.5 + (truth - truth.mean()) / truth.std() * 2, 1, 10)
    graded = np.arange(len(x))
    head = train_reward_head(
        x, pairs, targets, graded=graded, grades=grades, grade_weight=1.0, l2=1e-4, spec=HeadSpec()
    )
    scores = head.score(head.reward(x))
    assert scores.min() >= 1 and scores.max() <= 10
    assert np.corrcoef(scores, grades)[0, 1] > 0.9
    # another template scale is a linear map of the same scores
    assert head.score(head.reward(x), (1, 5)) == pytest.approx(1 + (scores - 1) * 4 / 9)


def test_save_and_load_give_the_same_rewards(tmp_path):
    x, pairs, targets = _synthetic(30, seed=3)
    head = train_reward_head(x, pairs, targets, spec=HeadSpec(layers=(1, 2)))
    head.tie_band, head.info = 0.7, {"id": "test"}
    loaded = RewardHead.load(head.save(tmp_path / "head"))
    assert loaded.spec == head.spec and loaded.tie_band == 0.7 and loaded.info == {"id": "test"}
    np.testing.assert_allclose(loaded.reward(x), head.reward(x), rtol=1e-6)
    with pytest.raises(FileNotFoundError, match="no head.json"):
        RewardHead.load(tmp_path)


def test_feature_store_resumes(tmp_path):
    store = FeatureStore(tmp_path / "f.sqlite")
    store.put_many({"a": np.arange(3, dtype=np.float32)})
    again = FeatureStore(tmp_path / "f.sqlite")
    assert len(again) == 1
    np.testing.assert_array_equal(again.get_many(["a", "b"])["a"], [0, 1, 2])


# ------------------------------------------------------------------------------------- on a tiny model
GOOD = "the answer is correct and clear and kind"
BAD = "the answer is wrong and vague and rude"


def _tiny_pairs(n: int, offset: int = 0):
    questions = [f"question number {i} about topic {i % 7}" for i in range(offset, offset + n)]
    items, pairs, targets = [], [], []
    for k, q in enumerate(questions):
        good, bad = GOOD.split(), BAD.split()
        rng = np.random.default_rng(k + offset)
        rng.shuffle(good), rng.shuffle(bad)
        items += [(q, " ".join(bad)), (q, " ".join(good))]
        pairs.append((2 * k, 2 * k + 1))
        targets.append(1.0)
    return items, np.array(pairs), np.array(targets)


@pytest.fixture(scope="module")
def tiny_lm():
    from hf_critic.tiny_models import chatml_tokenizer, tiny_llama

    tokenizer = chatml_tokenizer()
    return tiny_llama(tokenizer, num_hidden_layers=2), tokenizer


def test_head_on_a_tiny_model_raises_validation_accuracy(tiny_lm):
    model, tokenizer = tiny_lm
    spec = HeadSpec(layers=(1, 2), max_question_tokens=16, max_response_tokens=16)
    items, pairs, targets = _tiny_pairs(40)
    v_items, v_pairs, v_targets = _tiny_pairs(20, offset=100)
    x = response_features(model, tokenizer, items, spec, batch_size=4)
    vx = response_features(model, tokenizer, v_items, spec, batch_size=4)
    assert x.shape == (80, 3 * 32 + 3)
    # batching and padding do not change a response's features
    alone = response_features(model, tokenizer, items[:1], spec, batch_size=1)
    np.testing.assert_allclose(alone[0], x[0], atol=1e-5)
    zero = RewardHead(spec, x.mean(0), x.std(0) + 1e-6, np.zeros(x.shape[1], dtype=np.float32))
    before = within_question_accuracy(zero.reward(vx), v_pairs, v_targets)
    head = train_reward_head(x, pairs, targets, l2=1e-2, spec=spec)
    after = within_question_accuracy(head.reward(vx), v_pairs, v_targets)
    assert before == 0.5 and after >= 0.9


def test_critic_with_a_head_grades_and_compares_consistently(tiny_lm, tmp_path):
    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.critic import Critic

    model, tokenizer = tiny_lm
    spec = HeadSpec(layers=(1, 2), max_question_tokens=16, max_response_tokens=16)
    items, pairs, targets = _tiny_pairs(40)
    x = response_features(model, tokenizer, items, spec, batch_size=4)
    head = train_reward_head(x, pairs, targets, l2=1e-2, spec=spec)
    head.tie_band = 0.1
    backend = TransformersBackend(model, tokenizer, name="tiny", batch_size=4, progress=False)
    backend.embedded = False
    critic = Critic(backend, template="mtbench", head=head, cache_path=tmp_path / "c.sqlite")
    v_items, _, _ = _tiny_pairs(6, offset=200)
    rows = [{"question": q, "response": r} for q, r in v_items]
    graded = critic.grade(rows)
    scores = graded["critique_score"]
    assert all(1 <= s <= 10 for s in scores)
    assert sum(scores[2 * k + 1] > scores[2 * k] for k in range(6)) >= 5  # the good twin above the bad one
    assert set(graded["critique_status"]) == {"ok"} and critic.last_stats.cached == 0
    again = critic.grade(rows)
    assert again["critique_score"] == scores and critic.last_stats.cached == len(rows)
    pairs_rows = [
        {"question": v_items[2 * k][0], "response_1": v_items[2 * k][1], "response_2": v_items[2 * k + 1][1]}
        for k in range(6)
    ]
    with pytest.raises(ValueError, match="--template mtbench: a reward head compares by rewards"):
        critic.compare(pairs_rows)  # issue 31: a template a reward critic cannot use is refused, not ignored
    critic = Critic(backend, head=head, cache_path=tmp_path / "c.sqlite")
    compared = critic.compare(pairs_rows, swap=True)
    assert (
        "critique_consistent" not in compared.column_names
    )  # order-free: no second pass, no consistency as if measured
    assert sum(label == 1 for label in compared["critique_label"]) >= 5
    with pytest.raises(ValueError, match="reward head"):
        Critic(backend, template="mtbench", head=head, verdict="text")
    long_rows = [{"question": v_items[0][0], "response": "word " * 64}]  # over the head's 16 response tokens
    assert critic.grade(long_rows)["critique_truncated"] == [True]  # issue 31: the head's cut is reported


def test_summary_names_the_reward_head_as_the_verdict_source():
    """A head's grades sit in critique_score and its pair distributions in critique_distribution: the summary said
    "text verdicts" and "probability" for them."""
    import argparse
    import json

    import datasets

    from hf_critic.commands.critique import _figures

    graded = datasets.Dataset.from_dict({
        "query_id": ["a", "a", "b", "b"], "question": ["qa", "qa", "qb", "qb"], "response": ["1", "2", "3", "4"],
        "human_score": [2.0, 8.0, 3.0, 7.0], "critique_score": [3.0, 6.0, 6.0, 5.0],
        "critique_status": ["ok"] * 4, "critique_reward": [0.1, 0.5, 0.4, 0.3],
    })  # fmt: skip
    line = _figures(graded, argparse.Namespace(task="grade", human_score=None))[0]
    assert line.startswith("vs human_score (reward): row-level Pearson")
    assert "within-question accuracy 50.0%" in line  # one of the two questions ordered right
    dist = [json.dumps({"response_1": 0.7, "response_2": 0.2, "tie": 0.1})] * 2
    compared = datasets.Dataset.from_dict({
        "question": ["q", "q"], "response_1": ["a", "b"], "response_2": ["c", "d"], "label": [0, 1],
        "critique_label": [0, 0], "critique_status": ["ok"] * 2, "critique_distribution": dist,
        "critique_reward": [0.3, 0.2], "critique_reward_2": [-0.4, -0.1],
    })  # fmt: skip
    lines = _figures(compared, argparse.Namespace(task="compare", human_label=None, two_way="auto"))
    assert any(line.startswith("vs label (reward, order-free): ") for line in lines), lines
    assert not any("probability" in line for line in lines), lines
