"""hf_critic.selective.logistic, the one logistic fit (the length-controlled agreement, a reward critic's margin
confidence, a fitted jury), and hf_critic.selective.confidence.fit_margin_logistic on it."""

from __future__ import annotations

import numpy as np
import pytest

from hf_critic.selective.confidence import MIN_SLOPE, fit_margin_logistic
from hf_critic.selective.logistic import fit_logistic

#: A fixture and the fit statsmodels 0.15.0 printed for it (``sm.Logit(y, sm.add_constant(X)).fit(tol=1e-12)``:
#: params, bse), an implementation independent of this one.
C = [1, 1, -1, 0, 1, -1, -1, 1, 0, 1, -1, 1, 1, -1, 0, -1, 1, 1, -1, -1]
L = [0.9, 0.2, -0.5, 0.1, -0.3, -0.8, 0.4, 0.6, -0.2, 0.7, -0.1, -0.6, 0.3, -0.9, 0.5, 0.2, 0.8, -0.4, 0.1, -0.7]
Y = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0]
STATSMODELS_PARAMS = [-0.09545609161096831, 0.507585108059487, 3.9568051181232535]
STATSMODELS_BSE = [0.6277773676657591, 0.7132044445439065, 1.7770532387472906]


def test_logistic_fit_matches_statsmodels_and_sklearn():
    out = fit_logistic(np.column_stack([C, L]), np.array(Y))
    np.testing.assert_allclose(out["coef"], STATSMODELS_PARAMS, rtol=1e-9)
    np.testing.assert_allclose(out["se"], STATSMODELS_BSE, rtol=1e-9)
    linear_model = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    y = (rng.random(300) < 1 / (1 + np.exp(-(0.3 + x @ [1.0, -2.0])))).astype(int)
    model = linear_model.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x, y)
    np.testing.assert_allclose(fit_logistic(x, y)["coef"], [model.intercept_[0], *model.coef_[0]], rtol=1e-5)


def test_separation_gives_nan_not_a_huge_coefficient():
    out = fit_logistic(np.array([[1.0], [1.0], [-1.0], [-1.0]]), np.array([1, 1, 0, 0]))
    assert out["separated"] and np.isnan(out["coef"]).all()


def test_the_ridge_penalty_matches_sklearn_and_leaves_the_intercept_unshrunk():
    """A fitted jury's fit: ``penalty / 2 * |w|^2`` on the weights only, as sklearn's L2 with ``C = 1 / penalty``."""
    linear_model = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 3))
    y = (rng.random(200) < 1 / (1 + np.exp(-(1.5 + x @ [2.0, -1.0, 0.0])))).astype(int)
    for penalty in (0.01, 1.0, 100.0):
        fit = fit_logistic(x, y, penalty=penalty)
        model = linear_model.LogisticRegression(C=1 / penalty, tol=1e-12, max_iter=10_000).fit(x, y)
        assert fit["converged"]
        np.testing.assert_allclose(fit["coef"], [model.intercept_[0], *model.coef_[0]], rtol=1e-5, atol=1e-7)
    # a strong penalty shrinks the weights towards 0, never the intercept: it goes to the logit of the mean
    heavy = fit_logistic(x, y, penalty=1e9)["coef"]
    assert np.abs(heavy[1:]).max() < 1e-6 and heavy[0] == pytest.approx(np.log(y.mean() / (1 - y.mean())), abs=1e-6)
    # separated data: unpenalised the maximum is at infinity (NaN), penalised it is finite
    separated = (np.array([[1.0], [1.0], [-1.0], [-1.0]]), np.array([1, 1, 0, 0]))
    assert np.isfinite(fit_logistic(*separated, penalty=0.1)["coef"]).all()


def test_an_offset_holds_a_coefficient_and_bad_input_is_refused():
    """The intercept alone under a fixed offset (a coefficient held at a value): the mean of sigmoid(offset + b0) is
    the outcome's mean at the maximum."""
    rng = np.random.default_rng(3)
    offset, y = rng.normal(size=50), (rng.random(50) < 0.4).astype(float)
    fit = fit_logistic(np.empty((50, 0)), y, offset=offset)
    assert fit["coef"].shape == (1,)
    assert np.mean(1 / (1 + np.exp(-(offset + fit["coef"][0])))) == pytest.approx(y.mean(), abs=1e-10)
    with pytest.raises(ValueError, match="the ridge penalty must be >= 0, got -1"):
        fit_logistic(np.ones((3, 1)), np.array([0, 1, 1]), penalty=-1)
    with pytest.raises(ValueError, match=r"offset \(\(2,\)\) needs one value per outcome \(\(3,\)\)"):
        fit_logistic(np.ones((3, 1)), np.array([0, 1, 1]), offset=np.zeros(2))


def test_the_margin_logistic_is_the_one_fit_with_its_slope_bound():
    """A reward critic's margin confidence: the fit on |margin|; its slope held at MIN_SLOPE where a larger margin
    would mean less agreement; finite where the margins separate right from wrong verdicts."""
    rng = np.random.default_rng(4)
    margins = rng.normal(size=300) * 2
    correct = rng.random(300) < 1 / (1 + np.exp(-(0.8 * np.abs(margins) - 0.2)))
    slope, intercept = fit_margin_logistic(margins, correct)
    b0, b1 = fit_logistic(np.abs(margins)[:, None], correct.astype(float))["coef"]
    assert (slope, intercept) == (b1, b0) and 0.5 < slope < 1.2
    # reversed: agreement falls with the margin; the slope stays at its bound, the intercept fits the rest
    slope, intercept = fit_margin_logistic(margins, ~correct)
    p = 1 / (1 + np.exp(-(MIN_SLOPE * np.abs(margins) + intercept)))
    assert slope == MIN_SLOPE and p.mean() == pytest.approx((~correct).mean(), abs=1e-10)
    # separated: every small margin wrong, every large one right (the unpenalised maximum lies at infinity)
    slope, intercept = fit_margin_logistic([0.1, 0.2, 2.0, 3.0, 0.15, 2.5], [0, 1, 1, 1, 0, 1])
    assert 10 < slope < 1e4 and 0.15 < -intercept / slope < 0.2  # the boundary between 0.15 and 0.2
    assert fit_margin_logistic([1.0, 2.0], [1, 1]) == (1.0, pytest.approx(np.log(0.999 / 0.001)))
