"""hf_critic.meta_eval.ppi: prediction-powered inference against ppi_python's values, and its coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_critic.meta_eval.ppi import (
    classical_mean_interval,
    draw_human_subset,
    ppi_comparison,
    ppi_mean_interval,
    win_predictions,
    win_values,
)

#: Human scores 1-5 on 12 labelled rows, a critic's 1-10 grades on them and on 20 unlabelled rows, and the 95%
#: intervals ppi_python 0.2.3 printed for them: ``ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=1)`` (the
#: Science paper's PPI), ``lam=None`` (PPI++'s tuned lambda) and ``classical_mean_ci(Y, alpha=0.05)``.
Y = [1, 3, 4, 2, 5, 3, 4, 2, 1, 5, 3, 4]
YHAT = [2, 7, 8, 3, 9, 5, 9, 6, 3, 10, 4, 6]
YHAT_UNLABELLED = [4, 8, 2, 9, 6, 6, 3, 7, 10, 1, 5, 8, 7, 2, 9, 4, 6, 5, 8, 3]
PPI_PYTHON = {
    "lam=1": [1.329123026777712, 4.137543639888955],
    "lam=None": [2.4553934280472447, 3.5170318541647],
    "classical": [2.336346266351984, 3.830320400314683],
}


def _rows():
    return Y + [None] * len(YHAT_UNLABELLED), YHAT + YHAT_UNLABELLED


def test_intervals_match_ppi_python():
    labels, predictions = _rows()
    np.testing.assert_allclose(ppi_mean_interval(labels, predictions)["ci"], PPI_PYTHON["lam=1"], rtol=1e-12)
    tuned = ppi_mean_interval(labels, predictions, power_tuning=True)
    np.testing.assert_allclose(tuned["ci"], PPI_PYTHON["lam=None"], rtol=1e-12)
    assert 0 < tuned["lambda"] < 1  # the critic's 1-10 scale: PPI++ shrinks its weight
    np.testing.assert_allclose(classical_mean_interval(labels)["ci"], PPI_PYTHON["classical"], rtol=1e-12)


def test_ppi_is_the_papers_formula():
    """theta = mean(f_unlabelled) - mean(f_labelled - Y); se^2 = var(f_unlabelled) / N + var(f_labelled - Y) / n."""
    labels, predictions = _rows()
    out = ppi_mean_interval(labels, predictions, confidence=0.9)
    f_l, f_u, y = np.array(YHAT, float), np.array(YHAT_UNLABELLED, float), np.array(Y, float)
    theta = f_u.mean() - (f_l - y).mean()
    se = np.sqrt(f_u.var() / len(f_u) + (f_l - y).var() / len(y))
    assert out["estimate"] == pytest.approx(theta) and out["se"] == pytest.approx(se)
    assert out["ci"] == pytest.approx([theta - 1.6448536269514722 * se, theta + 1.6448536269514722 * se])


def _simulate(seed: int, n_rows=1000, fraction=0.1, informative=True):
    """Human win values with a known mean (0.6) and a critic right 90% of the time (or a coin)."""
    rng = np.random.default_rng(seed)
    gold = (rng.random(n_rows) < 0.6).astype(float)
    critic = np.where(rng.random(n_rows) < 0.9, gold, 1 - gold) if informative else rng.integers(0, 2, n_rows)
    labelled = draw_human_subset(n_rows, fraction, seed)
    return np.where(labelled, gold, np.nan), critic.astype(float)


def test_ppi_covers_the_true_mean_and_is_narrower_than_human_only():
    covered = covered_tuned = narrower = 0
    ratios = []
    for seed in range(200):
        labels, critic = _simulate(seed)
        out = ppi_comparison(labels, critic)
        low, high = out["ppi"]["ci"]
        covered += low <= 0.6 <= high
        low, high = ppi_mean_interval(labels, critic, power_tuning=True)["ci"]
        covered_tuned += low <= 0.6 <= high
        narrower += out["ppi"]["width"] < out["human_only"]["width"]
        ratios.append(out["width_ratio"])
    assert covered >= 180 and covered_tuned >= 180  # at least 90% of 200 (nominal 95%)
    assert narrower >= 195 and np.mean(ratios) < 0.8  # expected ratio sqrt((0.09 + 0.024) / 0.24) = 0.69
    labels, critic = _simulate(0)
    out = ppi_comparison(labels, critic)
    assert out["labels_saved"] > 0 and out["n_equivalent"] == pytest.approx(
        out["human_only"]["n"] * (out["human_only"]["width"] / out["ppi"]["width"]) ** 2
    )


def test_a_useless_critic_widens_ppi_and_ppi_plus_plus_falls_back():
    labels, coin = _simulate(3, informative=False)
    out = ppi_comparison(labels, coin)
    assert out["ppi"]["width"] > out["human_only"]["width"] and out["labels_saved"] < 0
    tuned = ppi_comparison(labels, coin, power_tuning=True)
    assert tuned["width_ratio"] < out["width_ratio"] and tuned["ppi"]["lambda"] < 0.2


def test_human_subset_and_win_values():
    mask = draw_human_subset(100, 0.1, seed=4)
    assert mask.sum() == 10 and (draw_human_subset(100, 0.1, seed=4) == mask).all()
    assert draw_human_subset(5, 0.01).sum() == 2
    with pytest.raises(ValueError, match="fraction"):
        draw_human_subset(100, 1.0)
    assert np.array_equal(win_values([0, 1, 2, None]), [1.0, 0.0, 0.5, np.nan], equal_nan=True)
    assert win_predictions([0, 1, 2, None, None], [1, 1, None, None, 0]).tolist() == [0.5, 0.0, 0.5, 0.5, 1.0]
    distribution = '{"response_1": 0.6, "response_2": 0.2, "tie": 0.2}'
    assert win_predictions([0, None], None, [distribution, None]).tolist() == pytest.approx([0.7, 0.5])
    with pytest.raises(ValueError, match="prediction on every row"):
        ppi_mean_interval([1, None], [0.5, None])


def test_one_human_label_gives_no_zero_width_interval():
    """One label has no spread; its interval is 'n too small', not [x, x]."""
    from hf_critic.meta_eval.bootstrap import TOO_SMALL

    one = classical_mean_interval([4.0, None, None])
    assert one["estimate"] == 4.0 and one["ci"] == TOO_SMALL and math.isnan(one["width"])
    assert classical_mean_interval([4.0, 2.0])["ci"][0] < 3.0 < classical_mean_interval([4.0, 2.0])["ci"][1]
