"""A jury of critics as one critic: its members' verdicts aggregated into one verdict with a confidence.

Verga et al., "Replacing Judges with Juries" (2024, §2: a panel of diverse smaller judges, pooled by voting) and
Trust or Escalate (Jung, Brahman, Choi, ICLR 2025, §3.2: the agreement of simulated annotators as the confidence).
Three aggregates:

* ``vote``: the majority label among the members that gave one; confidence = the share of those members agreeing.
  A tie between labels is **undecided** (no verdict: abstained, counted); a member without a verdict is skipped and
  counted (:class:`JuryCounts`).
* ``mean``: the mean over members of ``P(response 1 better)`` (:func:`member_probability`: from each member's label
  and confidence); the verdict is the side above 1/2, its confidence that side's probability; exactly 1/2 is
  undecided.
* ``fitted``: a logistic regression of the human preference on the members' signals (:func:`member_features`: the
  signed confidence of the verdict, the label probabilities of each order where a member has them, the reward
  margin), fitted on calibration rows only (:func:`fit_jury`) and applied unchanged to any other rows
  (:func:`apply_fit`). Its confidence is the fitted probability of the decided label.

Everything here is arithmetic on the members' critique columns; running the members is :mod:`hf_critic.critics.jury`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from .logistic import fit_logistic

__all__ = [
    "AGGREGATES",
    "JuryCounts",
    "JuryFit",
    "aggregate",
    "apply_fit",
    "fit_features",
    "fit_jury",
    "fit_rows",
    "fitted_verdicts",
    "group_folds",
    "jury_features",
    "member_features",
    "member_probability",
    "refit_difference",
]

#: The jury aggregates.
AGGREGATES = ("vote", "mean", "fitted")
#: The ridge penalties the fitted aggregate chooses from (a Gaussian prior of variance 1/penalty on its standardised
#: weights), by cross-validated log-loss on the calibration rows: few rows or collinear signals get a strong prior
#: (42 MT-Bench pairs for 7 signals overfit at the weakest), many rows a weak one that still keeps the fit finite
#: when one member predicts the calibration rows perfectly.
PENALTIES = (0.01, 0.1, 1.0, 10.0, 100.0)
#: The folds of that cross-validation.
PENALTY_FOLDS = 5
#: The share of a calibration's questions whose rows fit a ``fitted`` jury; the thresholds and their bounds are set
#: on the other rows only (sample splitting: rows that shaped the jury's ranking would make its bound optimistic,
#: measured 78.6% success at 1 - delta = 90% on Eval-P when the fit and the bound shared their rows).
FIT_SHARE = 0.5


@dataclass
class JuryCounts:
    """What a jury's aggregation left undecided or skipped.

    Attributes:
        rows: rows aggregated.
        undecided: rows with no verdict: a tie between labels (vote), a probability of exactly 1/2 (mean, fitted),
            or no member verdict at all.
        no_member_verdict: rows where no member gave a verdict (included in ``undecided``).
        missing: member verdicts skipped, per member (``{member: rows without its verdict}``).
    """

    rows: int = 0
    undecided: int = 0
    no_member_verdict: int = 0
    missing: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        """One plain line for the terminal."""
        skipped = ", ".join(f"{m} {k}" for m, k in self.missing.items() if k) or "none"
        return (
            f"{self.undecided} of {self.rows} rows undecided ({self.no_member_verdict} with no member verdict); "
            f"member verdicts skipped as missing: {skipped}"
        )


def member_probability(label, confidence) -> float | None:
    """A member's ``P(response 1 better)`` from its verdict: its confidence for response 1, one minus it for
    response 2, 1/2 for a tie; None without a verdict or a confidence.

    Raises:
        ValueError: a confidence outside [0, 1].
    """
    if label is None or confidence is None or (isinstance(confidence, float) and math.isnan(confidence)):
        return None
    if not 0 <= confidence <= 1:
        raise BadInputError(f"a member's confidence must lie in [0, 1], got {confidence}")
    if label == RESPONSE_1_WINS:
        return float(confidence)
    if label == RESPONSE_2_WINS:
        return 1.0 - float(confidence)
    return 0.5


def _decide(p: float | None) -> tuple[int | None, float | None]:
    """The verdict and confidence of a probability of response 1: undecided (None, None) at exactly 1/2."""
    if p is None or p == 0.5:
        return None, None
    return (RESPONSE_1_WINS, p) if p > 0.5 else (RESPONSE_2_WINS, 1.0 - p)


def _difference(distribution) -> float | None:
    """``P(response 1) - P(response 2)`` of a read-out distribution (JSON or mapping), None without one."""
    distribution = schema.read_distribution(distribution)
    if not distribution:
        return None
    return float(
        distribution.get(LABEL_NAMES[RESPONSE_1_WINS], 0.0) - distribution.get(LABEL_NAMES[RESPONSE_2_WINS], 0.0)
    )


def member_features(name: str, columns: Mapping[str, Sequence]) -> tuple[list[str], np.ndarray]:
    """The signals a member's critique columns carry, one column each (missing values 0: no evidence either way).

    * ``NAME:verdict``: ``2 P(response 1 better) - 1`` from its label and confidence (:func:`member_probability`);
    * ``NAME:first_order``, ``NAME:swapped_order``: ``P(response 1) - P(response 2)`` of its read-out distribution in
      each order (``critique_distribution``, ``critique_distribution_swapped``), where it has them;
    * ``NAME:reward_margin``: ``reward_1 - reward_2`` of a reward critic.

    Args:
        name: the member's name (prefix of its features).
        columns: its critique columns, each of length ``n``.

    Returns:
        ``(feature names, values of shape (n, features))``.
    """
    labels = columns[schema.CRITIQUE_LABEL]
    confidence = columns.get(schema.CRITIQUE_CONFIDENCE, [None] * len(labels))
    names, values = (
        [f"{name}:verdict"],
        [[2 * p - 1 if p is not None else 0.0 for p in map(member_probability, labels, confidence)]],
    )
    for column, feature in (
        (schema.CRITIQUE_DISTRIBUTION, "first_order"),
        (schema.CRITIQUE_DISTRIBUTION_SWAPPED, "swapped_order"),
    ):
        if column in columns:
            names.append(f"{name}:{feature}")
            values.append([d if (d := _difference(v)) is not None else 0.0 for v in columns[column]])
    if schema.CRITIQUE_REWARD in columns and schema.CRITIQUE_REWARD_2 in columns:
        names.append(f"{name}:reward_margin")
        values.append(
            [
                0.0 if a is None or b is None else float(a - b)
                for a, b in zip(columns[schema.CRITIQUE_REWARD], columns[schema.CRITIQUE_REWARD_2], strict=True)
            ]
        )
    return names, np.asarray(values, dtype=float).T.reshape(len(labels), len(names))


def aggregate(
    how: str, members: Mapping[str, Mapping[str, Sequence]], fit: JuryFit | None = None
) -> tuple[list, list, JuryCounts]:
    """Aggregate the members' verdicts row by row.

    Args:
        how: one of :data:`AGGREGATES`.
        members: ``{member: its critique columns}`` (``critique_label``, ``critique_confidence``, and for
            ``fitted`` whatever :func:`member_features` reads), each of the same length ``n``.
        fit: the fitted aggregate (``fitted`` only; :func:`fit_jury`).

    Returns:
        ``(labels, confidences, counts)``: label codes (None: undecided) and confidences in [1/2, 1] (None when
        undecided), each of length ``n``, and :class:`JuryCounts`.

    Raises:
        ValueError: an unknown aggregate, no member, members of different lengths, ``fitted`` without a fit (or with
            one for other signals, :func:`apply_fit`).
    """
    if how not in AGGREGATES:
        raise BadInputError(f"jury aggregate must be one of {AGGREGATES}, got {how!r}")
    if not members:
        raise BadInputError("a jury needs at least one member")
    lengths = {len(c[schema.CRITIQUE_LABEL]) for c in members.values()}
    if len(lengths) != 1:
        raise BadInputError(f"jury members judged different numbers of rows: {sorted(lengths)}")
    (n,) = lengths
    labels_of = {m: list(c[schema.CRITIQUE_LABEL]) for m, c in members.items()}
    counts = JuryCounts(rows=n, missing={m: sum(v is None for v in labels) for m, labels in labels_of.items()})
    counts.no_member_verdict = sum(all(labels_of[m][i] is None for m in members) for i in range(n))
    if how == "vote":
        out = [_vote([labels_of[m][i] for m in members]) for i in range(n)]
    elif how == "mean":
        probs = [
            [
                member_probability(lab, conf)
                for lab, conf in zip(labels_of[m], c.get(schema.CRITIQUE_CONFIDENCE, [None] * n), strict=True)
            ]
            for m, c in members.items()
        ]
        out = [_decide(_mean([p[i] for p in probs])) for i in range(n)]
    else:
        if fit is None:
            raise BadInputError("a fitted jury needs its fit: calibrate it with `hf-critic calibrate`")
        out = [_decide(float(p)) for p in apply_fit(fit, members)]
    labels, confidences = [o[0] for o in out], [o[1] for o in out]
    counts.undecided = sum(lab is None for lab in labels)
    return labels, confidences, counts


def _mean(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _vote(labels: list) -> tuple[int | None, float | None]:
    present = [lab for lab in labels if lab is not None]
    if not present:
        return None, None
    tally = {lab: present.count(lab) for lab in (RESPONSE_1_WINS, RESPONSE_2_WINS, TIE)}
    top = max(tally.values())
    winners = [lab for lab, k in tally.items() if k == top]
    if len(winners) > 1:  # a tie between labels: undecided, never a default
        return None, None
    return winners[0], top / len(present)


@dataclass
class JuryFit:
    """A fitted jury aggregate: ``P(response 1 better) = sigmoid(intercept + weights . (x - mean) / scale)``.

    Attributes:
        features: the members' feature names (:func:`member_features`), in order.
        weights: one weight per feature (0 for a feature that duplicates an earlier one on the calibration rows).
        intercept: the intercept.
        mean, scale: the standardisation of each feature, from the calibration rows.
        rows: calibration rows the fit used (those whose human label is response 1 or response 2).
        penalty: the ridge penalty chosen (:data:`PENALTIES`, by cross-validated log-loss on those rows).
        fit_rows: what the fit was made from, so that it can be made again (:func:`refit_difference`):
            ``{"features": [[one value per feature] per row], "human": [0 / 1 per row], "folds": [fold per row]}``
            over the ``rows`` rows it used; None for a fit read from a file without them.
    """

    features: list[str]
    weights: list[float]
    intercept: float
    mean: list[float]
    scale: list[float]
    rows: int
    penalty: float
    fit_rows: dict | None = None

    def to_dict(self) -> dict:
        """The fit as JSON-ready data (a calibration file's ``jury.fit``)."""
        return {
            "features": self.features,
            "weights": self.weights,
            "intercept": self.intercept,
            "mean": self.mean,
            "scale": self.scale,
            "rows": self.rows,
            "penalty": self.penalty,
            "fit_rows": self.fit_rows,
        }

    @classmethod
    def from_dict(cls, data: Mapping, where: str = "jury fit") -> JuryFit:
        """Read :meth:`to_dict`'s data back.

        Raises:
            ValueError: a missing field, lengths that differ or a non-finite number (names ``where``).
        """
        try:
            fit = cls(
                **{k: data[k] for k in ("features", "weights", "intercept", "mean", "scale", "rows", "penalty")},
                fit_rows=data.get("fit_rows"),
            )
        except (KeyError, TypeError) as err:
            raise BadInputError(f"{where}: malformed jury fit ({err})") from None
        numbers = [fit.intercept, fit.penalty, *fit.weights, *fit.mean, *fit.scale]
        if not len(fit.features) == len(fit.weights) == len(fit.mean) == len(fit.scale) or not all(
            isinstance(x, int | float) and math.isfinite(x) for x in numbers
        ):
            raise BadInputError(f"{where}: a jury fit needs one finite weight, mean and scale per feature")
        return fit


def jury_features(members: Mapping[str, Mapping[str, Sequence]]) -> tuple[list[str], np.ndarray]:
    """Every member's :func:`member_features`, side by side: ``(names, values of shape (n, features))``."""
    parts = [member_features(m, c) for m, c in members.items()]
    return [n for names, _ in parts for n in names], np.hstack([x for _, x in parts])


def fitted_verdicts(fit: JuryFit, names: list[str], x: np.ndarray) -> tuple[list, list]:
    """The verdicts and confidences of a fitted aggregate from the members' features (:func:`jury_features`).

    Returns:
        ``(labels, confidences)`` per row; None for both where the probability is exactly 1/2 (undecided).

    Raises:
        ValueError: see :func:`apply_fit`.
    """
    decided = [_decide(float(p)) for p in _probability(fit, names, x)]
    return [d[0] for d in decided], [d[1] for d in decided]


def fit_jury(
    members: Mapping[str, Mapping[str, Sequence]], human: Sequence[int], groups: Sequence | None = None
) -> JuryFit:
    """Fit the ``fitted`` aggregate by penalised maximum likelihood (:func:`~hf_critic.selective.logistic.fit_logistic`,
    a ridge penalty on the standardised
    weights chosen from :data:`PENALTIES` by :data:`PENALTY_FOLDS`-fold cross-validated log-loss) on the calibration
    rows **only**: ``members``, ``human`` and ``groups`` are those rows and nothing else.

    Args:
        members: ``{member: its critique columns}`` on the calibration rows.
        human: the human label codes of those rows, shape ``(n,)``; rows whose label is a tie or missing (-1 / None)
            are left out of the fit.
        groups: each row's question (or any key), shape ``(n,)``: rows of one group share a fold of the penalty's
            cross-validation, so pairs of one question do not vouch for each other; None: every row its own group.

    Returns:
        A :class:`JuryFit`. A feature equal to an earlier one on the calibration rows gets weight 0 (a jury of
        identical members fits as one member).

    Raises:
        ValueError: lengths differ, or the calibration rows lack either human preference (response 1 / response 2).
    """
    return fit_features(*jury_features(members), human, groups)


def _group_ranks(groups: Sequence, seed: int) -> tuple[np.ndarray, int]:
    """Each row's group's place in a seeded random order of the distinct groups (sorted first, so the order does not
    depend on the rows' order), shape ``(n,)``, and the number of groups."""
    keys = sorted({str(g) for g in groups})
    rank = {keys[j]: place for place, j in enumerate(np.random.default_rng(seed).permutation(len(keys)))}
    return np.array([rank[str(g)] for g in groups], dtype=int), len(keys)


def group_folds(groups: Sequence, folds: int, seed: int = 0) -> np.ndarray:
    """Each row's fold in ``[0, folds)``: the distinct groups sorted, permuted with ``seed`` and dealt round-robin, so
    a group's rows share a fold. Shape ``(n,)``."""
    return _group_ranks(groups, seed)[0] % folds


def fit_rows(groups: Sequence, share: float = FIT_SHARE, seed: int = 0) -> np.ndarray:
    """Which calibration rows fit a ``fitted`` jury: whole questions, about ``share`` of them (``share`` 1: every
    row), chosen with ``seed``; the rest set the thresholds. Sample splitting: a bound computed on rows that also
    shaped the jury's ranking is optimistic (Trust or Escalate §3.1's guarantee assumes the confidence is fixed before
    the calibration rows are seen). Shape ``(n,)``, bool.

    Raises:
        ValueError: a share outside (0, 1].
    """
    if not 0 < share <= 1:
        raise BadInputError(f"a jury's fit share must lie in (0, 1], got {share}")
    if share == 1:
        return np.ones(len(groups), dtype=bool)
    rank, count = _group_ranks(groups, seed)
    return rank < round(share * count)


def fit_features(
    names: list[str],
    x: np.ndarray,
    human: Sequence[int],
    groups: Sequence | None = None,
    folds: Sequence | None = None,
) -> JuryFit:
    """:func:`fit_jury` from the members' features (:func:`jury_features`), shape ``(n, features)``, of the
    calibration rows only; ``folds``: each row's cross-validation fold, given instead of ``groups`` (a stored fit's
    ``fit_rows`` made again). The fit keeps what it was made from in :attr:`JuryFit.fit_rows`."""
    gold = np.array([-1 if h is None else int(h) for h in human])
    if len(gold) != len(x) or (groups is not None and len(groups) != len(x)):
        raise BadInputError(
            f"{len(gold)} human labels and {len(x) if groups is None else len(groups)} groups for {len(x)} jury rows"
        )
    used = (gold == RESPONSE_1_WINS) | (gold == RESPONSE_2_WINS)
    y = (gold[used] == RESPONSE_1_WINS).astype(float)
    if not used.any() or y.min() == y.max():
        raise BadInputError(
            "a fitted jury needs calibration rows where humans prefer response 1 and rows where they prefer response 2"
        )
    x = x[used]
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (x - mean) / scale
    active = [j for j in range(z.shape[1]) if not any(np.array_equal(z[:, j], z[:, i]) for i in range(j))]
    za = z[:, active]
    if folds is not None:
        fold = np.asarray(folds, dtype=int)[used]
    else:
        keys = np.arange(len(y)) if groups is None else np.asarray([str(g) for g in groups], dtype=object)[used]
        fold = group_folds(keys, PENALTY_FOLDS)
    penalty = _choose_penalty(za, y, fold)
    params = fit_logistic(za, y, penalty=penalty)["coef"]
    weights = np.zeros(z.shape[1])
    weights[active] = params[1:]
    made_from = {
        "features": x.tolist(),
        "human": [RESPONSE_1_WINS if v else RESPONSE_2_WINS for v in y],
        "folds": fold.tolist(),
    }
    return JuryFit(
        names, weights.tolist(), float(params[0]), mean.tolist(), scale.tolist(), int(used.sum()), penalty, made_from
    )


def refit_difference(fit: JuryFit) -> str | None:
    """Make a stored fit again from its :attr:`JuryFit.fit_rows` and say how it differs, if it does.

    Returns:
        None when the refit's penalty equals the stored one and its intercept and weights agree within 1e-6
        (relative 1e-4: another BLAS may round otherwise); else one phrase naming the first field that differs,
        with both values.

    Raises:
        ValueError: no ``fit_rows``, or ones whose shapes do not fit the stored features and row count.
    """
    rows = fit.fit_rows
    if not isinstance(rows, dict) or set(rows) != {"features", "human", "folds"}:
        raise BadInputError("the fit carries no fit_rows {features, human, folds} to be made again from")
    x = np.asarray(rows["features"], dtype=float)
    if x.shape != (fit.rows, len(fit.features)) or not len(rows["human"]) == len(rows["folds"]) == fit.rows:
        raise BadInputError(
            f"its fit_rows do not hold {fit.rows} rows of {len(fit.features)} features with a human label "
            "and a fold each"
        )
    if not set(rows["human"]) <= {RESPONSE_1_WINS, RESPONSE_2_WINS} or not set(rows["folds"]) <= set(
        range(PENALTY_FOLDS)
    ):
        raise BadInputError(f"its fit_rows' human labels must be 0 / 1 and folds in [0, {PENALTY_FOLDS})")
    again = fit_features(fit.features, x, rows["human"], folds=rows["folds"])
    if again.penalty != fit.penalty:
        return f"penalty {fit.penalty} (its fit rows choose {again.penalty})"
    for what, stored, made in (
        ("intercept", [fit.intercept], [again.intercept]),
        ("weights", fit.weights, again.weights),
    ):
        if not np.allclose(stored, made, rtol=1e-4, atol=1e-6):
            return f"{what} {stored} (its fit rows give {[round(w, 6) for w in made]})"
    for what, stored, made in (("mean", fit.mean, again.mean), ("scale", fit.scale, again.scale)):
        if not np.allclose(stored, made, rtol=1e-9, atol=1e-12):
            return f"{what} {stored} (its fit rows give {made})"
    return None


def _choose_penalty(z: np.ndarray, y: np.ndarray, fold: np.ndarray) -> float:
    """The penalty of :data:`PENALTIES` with the lowest held-out log-loss over the folds (the stronger on a tie); the
    strongest where no fold leaves both preferences to fit on."""
    losses = {}
    for penalty in PENALTIES:
        total, counted = 0.0, False
        for k in np.unique(fold):
            train, held = fold != k, fold == k
            if not held.any() or not train.any() or y[train].min() == y[train].max():
                continue
            params = fit_logistic(z[train], y[train], penalty=penalty)["coef"]
            eta = params[0] + z[held] @ params[1:]
            total, counted = total + float(np.sum(np.logaddexp(0.0, eta) - y[held] * eta)), True
        if counted:
            losses[penalty] = total
    return min(losses, key=lambda p: (losses[p], -p)) if losses else PENALTIES[-1]


def apply_fit(fit: JuryFit, members: Mapping[str, Mapping[str, Sequence]]) -> np.ndarray:
    """``P(response 1 better)`` of every row under a fitted aggregate (no human label is read).

    Returns:
        Probabilities in (0, 1), shape ``(n,)``.

    Raises:
        ValueError: the members' signals are not the ones the fit was made on (a member changed its output).
    """
    return _probability(fit, *jury_features(members))


def _probability(fit: JuryFit, names: list[str], x: np.ndarray) -> np.ndarray:
    if names != fit.features:
        raise BadInputError(f"the jury's signals {names} differ from the fitted ones {fit.features}: calibrate again")
    eta = fit.intercept + ((x - np.asarray(fit.mean)) / np.asarray(fit.scale)) @ np.asarray(fit.weights)
    return 0.5 * (1.0 + np.tanh(eta / 2.0))
