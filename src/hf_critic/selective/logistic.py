"""The one logistic regression of the toolkit: maximum likelihood by Newton-Raphson with step halving, an intercept
added, optionally with a ridge penalty on the weights and a fixed offset.

Three figures are fitted with it: the length-controlled agreement of the meta-evaluation (AlpacaEval's GLM of the
human preference on the critic's decision and the length difference, Dubois et al., 2024, §3;
:func:`hf_critic.meta_eval.length.length_controlled_agreement`), a reward critic's margin confidence
(:func:`hf_critic.selective.confidence.fit_margin_logistic`) and a fitted jury's weights (ridge-penalised,
:func:`hf_critic.selective.jury.fit_features`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from ..core.errors import BadInputError

__all__ = ["fit_logistic"]


def _design(features: np.ndarray, outcome: np.ndarray, offset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x with an intercept column first, y, offset)``, checked.

    Raises:
        ValueError: features not ``(n, p)``, an outcome or offset not ``(n,)``.
    """
    y = np.asarray(outcome, dtype=np.float64)
    f = np.asarray(features, dtype=np.float64).reshape(len(y), -1) if np.size(features) else np.empty((len(y), 0))
    if f.shape[0] != len(y) or y.ndim != 1:
        raise BadInputError(f"features ({f.shape}) and outcome ({y.shape}) need one row per outcome")
    eta0 = np.zeros(len(y)) if offset is None else np.asarray(offset, dtype=np.float64)
    if eta0.shape != y.shape:
        raise BadInputError(f"offset ({eta0.shape}) needs one value per outcome ({y.shape})")
    return np.column_stack([np.ones(len(y)), f]), y, eta0


def fit_logistic(
    features: np.ndarray,
    outcome: np.ndarray,
    *,
    penalty: float = 0.0,
    offset: np.ndarray | None = None,
    max_iter: int = 100,
) -> dict[str, Any]:
    """Maximum-likelihood logistic regression ``P(outcome = 1) = sigmoid(offset + b0 + features @ b)`` (Newton-Raphson
    with step halving), an intercept added.

    Args:
        features: float array ``(n, p)`` (``p`` may be 0: the intercept alone).
        outcome: 0 / 1 array ``(n,)``.
        penalty: a ridge penalty ``penalty / 2 * |b|^2`` on the weights (the intercept is not shrunk); 0: none.
        offset: a fixed term added to every row's linear predictor, shape ``(n,)`` (a coefficient held at a value);
            None: 0.
        max_iter: Newton steps at most.

    Returns:
        ``{"coef": (p + 1,) intercept first, "se": standard errors from the inverse (penalised) Fisher information,
        "converged", "separated"}``. Without a penalty, with (quasi-)complete separation (a feature predicts the
        outcome perfectly, the maximum is at infinity) or a singular design the coefficients are NaN and ``separated``
        / ``converged`` say why; unpenalised, it equals ``sklearn.linear_model.LogisticRegression(penalty=None)``.
        With a penalty the maximum is finite and unique, and its coefficients are returned.

    Raises:
        ValueError: a negative penalty, or shapes that do not fit.
    """
    if not penalty >= 0:
        raise BadInputError(f"the ridge penalty must be >= 0, got {penalty}")
    x, y, eta0 = _design(features, outcome, offset)
    ridge = penalty * np.eye(x.shape[1])
    ridge[0, 0] = 0.0
    beta = np.zeros(x.shape[1])
    nan = np.full(x.shape[1], np.nan)

    def objective(b):
        eta = eta0 + x @ b
        return float((y * eta - np.logaddexp(0, eta)).sum()) - 0.5 * float(b @ ridge @ b)

    def unfit(converged: bool, separated: bool) -> dict[str, Any]:
        return {"coef": nan, "se": nan, "converged": converged, "separated": separated}

    current = objective(beta)
    for _ in range(max_iter):
        p = special.expit(eta0 + x @ beta)
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + ridge
        if np.linalg.matrix_rank(hessian) < x.shape[1]:
            return unfit(False, bool(np.abs(x @ beta).max() > 15))
        step = np.linalg.solve(hessian, x.T @ (y - p) - ridge @ beta)
        t = 1.0
        while objective(beta + t * step) < current - 1e-12 and t > 1e-6:
            t /= 2
        beta = beta + t * step
        new = objective(beta)
        done = abs(new - current) < 1e-12 * (1 + abs(new))
        current = new
        if done and np.abs(t * step).max() < 1e-8:
            if not penalty and np.abs(x @ beta).max() > 30:  # fitted probabilities of 0 or 1: the maximum at infinity
                return unfit(False, True)
            p = special.expit(eta0 + x @ beta)
            cov = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]) + ridge)
            return {"coef": beta, "se": np.sqrt(np.diag(cov)), "converged": True, "separated": False}
    if penalty:
        return {"coef": beta, "se": nan, "converged": False, "separated": False}
    return unfit(False, bool(np.abs(x @ beta).max() > 15))
