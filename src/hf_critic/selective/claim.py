"""A calibration file is a claim: that each critic's threshold is the one fixed-sequence testing stops at on the
calibration data, at the file's alpha and delta (Trust or Escalate, Jung et al., ICLR 2025, §3.1-3.3). Every field is
checked against the others before a cascade uses it, so that an edited or damaged file is refused rather than
printed as a guarantee it does not carry:

* alpha in (0, 1), delta in (0, 0.5], min_rows >= 1, the data's rows and hash present;
* the critics' deltas are positive and sum to the cascade's delta (a union bound: equal shares, Bonferroni, unless
  the cascade file names each critic's `delta_share`);
* each critic's calibration rows are the data's rows less those its predecessors kept; its coverage is ``n / rows``;
* where a critic keeps rows: ``0 <= k <= n``, ``n >= min_rows``, the stored bound is the exact (Clopper-Pearson)
  bound recomputed from n, k and its delta, and it is at most alpha;
* the candidate whose failure stopped the sequence (``failed``): below the threshold, keeping more rows, and its
  recomputed bound above alpha. Together with the passing bound this is what makes the threshold the one the stored
  selection implies: a threshold lowered to keep more rows, or an alpha raised to pass the failed candidate, is
  refused;
* where a critic keeps nothing, n = k = 0 and no bound; its failed candidate's bound is above alpha.

Then the claim is **re-derived** from the rows the file carries (format 3): the threshold rows' ids and human labels
must hash to ``data.sha256``; each critic's stored verdicts and confidences on those rows give its correct rows
(a verdict equal to the human label), and fixed-sequence testing run again on them, with the file's alpha, min_rows
and each critic's delta, must give every threshold, n, k, bound, failed candidate and calibration row count the file
states. A reward critic's confidences must be its stored margins through its ``logistic`` (slope > 0, so the ranking
is the margin's). A fitted jury's fit is made again from its stored fit rows (:func:`~hf_critic.selective.jury.
refit_difference`) and its verdicts and confidences on the threshold rows again from its members' stored features;
a vote or mean jury's verdicts are aggregated again from its members' stored labels and confidences; a label prior's
stored verdicts (a stage's, or a vote or mean jury member's) must all be its stored label at its stored share.
So a threshold, a bound, a removed failed candidate, negated jury weights or a reversed logistic are refused: what
no edit of the derived fields can fake is an edit of the observations themselves (the verdicts and labels): the
file vouches for its arithmetic, not for its rows; a served critic's rows are re-checked at run time
(:mod:`hf_critic.commands.cascade_probes`).

What the file cannot show (the data itself) is checked elsewhere: the critic's fingerprint and confidence kind
against the cascade (:func:`hf_critic.selective.cascade.check_calibration`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from .calibration import (
    CalibrationFile,
    CriticThreshold,
    calibrate_cascade,
    clopper_pearson_upper,
    data_hash,
    read_calibration,
)
from .confidence import confidence_kinds, margin_confidence
from .jury import JuryFit, aggregate, fitted_verdicts, refit_difference

__all__ = ["check_claim", "load_calibration", "rederive"]

_TOLERANCE = 1e-9


def _integer(value, what: str, path: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BadInputError(f"{path}: {what} must be an integer >= {low}, got {value!r}")
    return value


def _number(value, what: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInputError(f"{path}: {what} must be a finite number, got {value!r}")
    return float(value)


def _data_rows(calibration: CalibrationFile, path: str) -> int:
    data = calibration.data
    if not isinstance(data, dict):
        raise BadInputError(f"{path}: data must be a mapping with rows and sha256, got {data!r}")
    rows = _integer(data.get("rows"), "data.rows", path, low=1)
    if not isinstance(data.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{16}", data["sha256"]):
        raise BadInputError(
            f"{path}: data.sha256 must be 16 hex digits (the calibration rows' hash), got {data.get('sha256')!r}"
        )
    return rows


def _check_failed(c: CriticThreshold, where: str, path: str, alpha: float, min_rows: int) -> None:
    """The failed candidate: tested (at least ``min_rows`` rows), below the threshold with more rows, its bound
    recomputed and above alpha."""
    f = c.failed
    if not isinstance(f, dict) or set(f) != {"threshold", "n", "k", "upper_bound"}:
        raise BadInputError(f"{path}: {where}.failed must be {{threshold, n, k, upper_bound}} or null, got {f!r}")
    lam = _number(f["threshold"], f"{where}.failed.threshold", path)
    n = _integer(f["n"], f"{where}.failed.n", path, low=max(min_rows, 1))
    k = _integer(f["k"], f"{where}.failed.k", path)
    if not 0 <= lam <= 1 or k > n or n > c.calibration_rows:
        raise BadInputError(
            f"{path}: {where}.failed (threshold {lam}, n {n}, k {k}) does not fit its "
            f"{c.calibration_rows} calibration rows"
        )
    bound = clopper_pearson_upper(k, n, c.delta)
    if not math.isclose(bound, _number(f["upper_bound"], f"{where}.failed.upper_bound", path), abs_tol=_TOLERANCE):
        raise BadInputError(
            f"{path}: {where}.failed.upper_bound {f['upper_bound']} is not the exact bound of k={k} "
            f"of n={n} at delta {c.delta:.6g} ({bound:.6g})"
        )
    if bound <= alpha:
        raise BadInputError(
            f"{path}: {where}: the candidate {lam:.6g} passes at alpha {alpha:.6g} (bound {bound:.4f}), "
            f"so fixed-sequence testing would not stop at threshold {c.threshold}: the file's alpha or "
            "threshold was changed"
        )
    if c.threshold is not None and not (lam < c.threshold and n > c.n and k >= c.k):
        raise BadInputError(
            f"{path}: {where}.threshold {c.threshold} is not the one its selection implies: the "
            f"candidate that failed ({lam:.6g}, n {n}, k {k}) must lie below it and keep more rows "
            f"than its n {c.n}"
        )


def _check_critic(c: CriticThreshold, where: str, path: str, calibration: CalibrationFile, rows: int) -> None:
    alpha = calibration.alpha
    if c.confidence is not None and c.confidence not in confidence_kinds():
        raise BadInputError(
            f"{path}: {where}.confidence must be one of {confidence_kinds()} or null, got {c.confidence!r}"
        )
    if not isinstance(c.fingerprint, str) or not c.fingerprint:
        raise BadInputError(f"{path}: {where}.fingerprint must be the critic's fingerprint, got {c.fingerprint!r}")
    n, k = _integer(c.n, f"{where}.n", path), _integer(c.k, f"{where}.k", path)
    if k > n or n > c.calibration_rows:
        raise BadInputError(
            f"{path}: {where}: k={k}, n={n} and calibration_rows={c.calibration_rows} must satisfy "
            "k <= n <= calibration_rows"
        )
    if not math.isclose(_number(c.coverage, f"{where}.coverage", path), n / rows, abs_tol=_TOLERANCE):
        raise BadInputError(f"{path}: {where}.coverage {c.coverage} is not n / data.rows = {n} / {rows}")
    if c.threshold is None:
        if n or k or c.upper_bound is not None:
            raise BadInputError(
                f"{path}: {where} keeps no row (threshold null) but claims n={n}, k={k}, upper_bound={c.upper_bound}"
            )
    else:
        if n < max(calibration.min_rows, 1):
            raise BadInputError(
                f"{path}: {where}: n={n} rows at the threshold, fewer than min_rows {calibration.min_rows}"
            )
        bound = clopper_pearson_upper(k, n, c.delta)
        if not math.isclose(bound, _number(c.upper_bound, f"{where}.upper_bound", path), abs_tol=_TOLERANCE):
            raise BadInputError(
                f"{path}: {where}.upper_bound {c.upper_bound} is not the exact bound of k={k} of n={n} "
                f"at delta {c.delta:.6g} ({bound:.6g})"
            )
        if bound > alpha + _TOLERANCE:
            raise BadInputError(
                f"{path}: {where}: its bound {bound:.4f} exceeds alpha {alpha:.6g} (target agreement "
                f"{1 - alpha:.4g}): the threshold {c.threshold} carries no guarantee at this target"
            )
    if c.failed is not None:
        _check_failed(c, where, path, alpha, calibration.min_rows)


def check_claim(calibration: CalibrationFile, path: str) -> None:
    """Refuse a calibration file whose fields do not add up (module docstring).

    Args:
        calibration: the file as read (types and ranges of alpha, delta and thresholds already checked by
            :func:`~hf_critic.selective.calibration.read_calibration`).
        path: the file, for messages.

    Raises:
        ValueError: one line naming the file, the field and what it contradicts.
    """
    if calibration.task != "pairwise":
        raise BadInputError(f"{path}: task must be 'pairwise', got {calibration.task!r}")
    alpha, delta = calibration.alpha, calibration.delta
    if not 0 < alpha < 1:
        raise BadInputError(f"{path}: alpha must lie in (0, 1) (target agreement 1 - alpha), got {alpha}")
    if not 0 < delta <= 0.5:
        raise BadInputError(
            f"{path}: delta must lie in (0, 0.5] (a guarantee with probability 1 - delta), got {delta}"
        )
    _integer(calibration.min_rows, "min_rows", path, low=1)
    rows = _data_rows(calibration, path)
    if not calibration.critics:
        raise BadInputError(f"{path}: no critics")
    expected_rows = rows
    parts = [_number(c.delta, f"critics[{i}] ({c.name}).delta", path) for i, c in enumerate(calibration.critics)]
    if min(parts) <= 0 or not math.isclose(sum(parts), delta, rel_tol=1e-9):  # a union bound over the critics
        raise BadInputError(
            f"{path}: the critics' deltas {parts} must be positive and sum to the cascade's delta {delta}"
        )
    for i, c in enumerate(calibration.critics):
        where = f"critics[{i}] ({c.name})"
        if _integer(c.calibration_rows, f"{where}.calibration_rows", path) != expected_rows:
            raise BadInputError(
                f"{path}: {where}.calibration_rows {c.calibration_rows} is not the {expected_rows} rows "
                "its predecessors left (data.rows less the rows each kept)"
            )
        _check_critic(c, where, path, calibration, rows)
        expected_rows -= c.n
    rederive(calibration, path)


def _stored_rows(calibration: CalibrationFile, path: str) -> list[int]:
    """The threshold rows' human labels, checked against ``data.sha256``."""
    rows, stored = calibration.data["rows"], calibration.rows
    if (
        not isinstance(stored, dict)
        or not isinstance(stored.get("ids"), list)
        or not isinstance(stored.get("human"), list)
    ):
        raise BadInputError(
            f"{path}: rows must be {{ids, human}}: the calibration rows every threshold is re-derived "
            f"from, got {_short(stored)}"
        )
    human = stored["human"]
    if (
        len(stored["ids"]) != rows
        or len(human) != rows
        or not all(h in (0, 1, 2) and h is not True and h is not False for h in human)
    ):
        raise BadInputError(
            f"{path}: rows must hold data.rows = {rows} ids and human labels 0 / 1 / 2, got "
            f"{len(stored['ids'])} ids and {len(human)} labels"
        )
    if data_hash(stored["ids"], human) != calibration.data["sha256"]:
        raise BadInputError(
            f"{path}: rows (their ids and human labels) do not hash to data.sha256 "
            f"{calibration.data['sha256']}: the rows or the hash were edited"
        )
    return human


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _label(value) -> bool:
    return value is None or (value in (0, 1, 2) and not isinstance(value, bool))


def _confidence(value) -> bool:
    return value is None or (not isinstance(value, bool) and isinstance(value, int | float) and 0 <= value <= 1)


def _stored_verdicts(c: CriticThreshold, where: str, path: str, rows: int) -> tuple[list, list]:
    """A critic's stored labels and confidences on the threshold rows, checked for shape and range, and re-derived
    where they can be: a reward critic's from its margins, a fitted jury's from its fit and its members' features."""
    v = c.verdicts
    if not isinstance(v, dict) or not isinstance(v.get("labels"), list) or not isinstance(v.get("confidences"), list):
        raise BadInputError(
            f"{path}: {where}.verdicts must be {{labels, confidences}} on the {rows} calibration rows "
            f"(what its threshold is re-derived from), got {_short(v)}"
        )
    labels, confidences = v["labels"], v["confidences"]
    if len(labels) != rows or len(confidences) != rows:
        raise BadInputError(
            f"{path}: {where}.verdicts hold {len(labels)} labels and {len(confidences)} confidences for "
            f"the {rows} calibration rows"
        )
    for i, (lab, conf) in enumerate(zip(labels, confidences, strict=True)):
        if not _label(lab) or not _confidence(conf) or (lab is None and conf is not None):
            raise BadInputError(
                f"{path}: {where}.verdicts row {i}: label {lab!r} with confidence {conf!r} (a label "
                "0 / 1 / 2 with a confidence in [0, 1] or None; no confidence without a label)"
            )
    if c.probes is not None:
        _check_probes(c, where, path, labels, confidences)
    if c.confidence == "reward margin":
        _check_margins(c, where, path, labels, confidences)
    if c.confidence == "label prior":
        _check_label_prior(c, where, path, labels, confidences)
    if c.confidence == "fitted aggregate":
        _check_fitted_jury(c, where, path, labels, confidences)
    elif c.confidence in ("vote aggregate", "mean aggregate"):
        _check_aggregate(c, where, path, labels, confidences)
    return labels, confidences


def _check_probes(c: CriticThreshold, where: str, path: str, labels: list, confidences: list) -> None:
    """A served critic's re-checkable rows: each names its place among the threshold rows and repeats the verdict
    and confidence the critic's stored verdicts hold there (so editing one means editing the rows the threshold is
    re-derived from)."""
    for k, probe in enumerate(c.probes if isinstance(c.probes, list) else [None]):
        ok = isinstance(probe, dict) and set(probe) == {"index", "row", "label", "confidence"}
        ok = ok and isinstance(probe["row"], dict) and all(isinstance(v, str) for v in probe["row"].values())
        place = probe.get("index") if ok else None
        if not ok or not isinstance(place, int) or isinstance(place, bool) or not 0 <= place < len(labels):
            raise BadInputError(
                f"{path}: {where}.probes[{k}] must be {{index, row, label, confidence}} with index a "
                f"calibration row (0 to {len(labels) - 1}) and row its texts, got {_short(probe)}"
            )
        if probe["label"] != labels[place] or probe["confidence"] != confidences[place]:
            raise BadInputError(
                f"{path}: {where}.probes[{k}]: label {probe['label']!r}, confidence "
                f"{probe['confidence']!r} differ from its stored verdict on calibration row {place} "
                f"({labels[place]!r}, {confidences[place]!r}): the file was edited"
            )


def _check_margins(c: CriticThreshold, where: str, path: str, labels: list, confidences: list) -> None:
    """A reward critic's confidences are ``sigmoid(slope |margin| + intercept)`` of its stored margins, slope > 0."""
    margins = c.verdicts.get("margins")
    if (
        not isinstance(margins, list)
        or len(margins) != len(labels)
        or not all(m is None or _finite(m) for m in margins)
        or c.logistic is None
        or c.logistic[0] <= 0
    ):
        raise BadInputError(
            f"{path}: {where}: a reward critic's verdicts need margins on every row and a logistic with "
            f"slope > 0 (the margin's ranking), got logistic {c.logistic}"
        )
    for i, (lab, m, conf) in enumerate(zip(labels, margins, confidences, strict=True)):
        made = None if lab is None or m is None else margin_confidence(m, *c.logistic)
        if (made is None) != (conf is None) or (made is not None and not math.isclose(made, conf, abs_tol=1e-9)):
            raise BadInputError(
                f"{path}: {where}.verdicts row {i}: confidence {conf} is not its margin {m} through "
                f"logistic {c.logistic} ({made})"
            )


def _finite(value) -> bool:
    """A finite number (a margin: any sign and size)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _check_label_prior(c: CriticThreshold, where: str, path: str, labels: list, confidences: list) -> None:
    """A label prior: its entry's label and share, and that label at that share on every stored row (so the prior
    a cascade judges with is the one its threshold was set on)."""
    prior = c.jury.get("label_prior") if isinstance(c.jury, dict) else None
    _check_prior(prior, f"{where}.jury.label_prior", where, path, labels, confidences)


def _check_prior(prior, field: str, where: str, path: str, labels: list, confidences: list) -> None:
    """A stored label prior (``field``) is a label with a share in (0, 1], and ``labels`` / ``confidences`` (its
    verdicts on the threshold rows) repeat it on every row."""
    label, share = (prior.get("label"), prior.get("share")) if isinstance(prior, dict) else (None, None)
    if not _label(label) or label is None or not _confidence(share) or share is None or share == 0:
        raise BadInputError(f"{path}: {field} must be {{label: 0 / 1 / 2, share in (0, 1]}}, got {_short(prior)}")
    _compare_verdicts(
        where, path, labels, confidences, [label] * len(labels), [share] * len(labels), f"its label prior {prior}"
    )


def _check_fitted_jury(c: CriticThreshold, where: str, path: str, labels: list, confidences: list) -> None:
    """A fitted jury: its fit made again from its fit rows, its verdicts again from its members' features."""
    entry = c.jury
    if not isinstance(entry, dict) or entry.get("aggregate") != "fitted":
        raise BadInputError(
            f"{path}: {where}: confidences of a fitted aggregate need its jury entry (aggregate fitted, "
            f"members, fit), got {_short(entry)}"
        )
    fit = JuryFit.from_dict(entry.get("fit") or {}, f"{path}: {where}.jury.fit")
    try:
        differs = refit_difference(fit)
    except ValueError as err:
        raise BadInputError(f"{path}: {where}.jury.fit: {err}") from None
    if differs:
        raise BadInputError(
            f"{path}: {where}.jury.fit: {differs}: not the fit its stored fit rows give (the fit or its "
            "rows were edited)"
        )
    try:
        x = np.asarray(entry.get("threshold_features") or [], dtype=float)
    except (TypeError, ValueError):
        x = np.zeros(0)
    if x.shape != (len(labels), len(fit.features)) or not np.isfinite(x).all():
        raise BadInputError(
            f"{path}: {where}.jury.threshold_features must hold {len(fit.features)} features on each "
            f"of the {len(labels)} calibration rows, finite numbers, got shape {x.shape}"
        )
    made_labels, made_confidences = fitted_verdicts(fit, fit.features, x)
    _compare_verdicts(
        where, path, labels, confidences, made_labels, made_confidences, "its fit from its members' features"
    )


def _check_aggregate(c: CriticThreshold, where: str, path: str, labels: list, confidences: list) -> None:
    """A vote / mean jury: its verdicts aggregated again from its members' stored labels and confidences."""
    how = c.confidence.split()[0]
    entry = c.jury if isinstance(c.jury, dict) else {}
    members = entry.get("threshold_members")
    shaped = isinstance(members, dict) and members and entry.get("aggregate") == how
    shaped = shaped and all(
        isinstance(m, dict)
        and isinstance(m.get("labels"), list)
        and isinstance(m.get("confidences"), list)
        and len(m["labels"]) == len(m["confidences"]) == len(labels)
        and all(_label(x) for x in m["labels"])
        and all(_confidence(x) for x in m["confidences"])
        for m in members.values()
    )
    if not shaped:
        raise BadInputError(
            f"{path}: {where}.jury.threshold_members must hold each member's labels and confidences on the "
            f"{len(labels)} calibration rows (aggregate {how}), got {_short(members)}"
        )
    columns = {
        name: {schema.CRITIQUE_LABEL: m["labels"], schema.CRITIQUE_CONFIDENCE: m["confidences"]}
        for name, m in members.items()
    }
    for name, own in (entry.get("member_entries") or {}).items():  # a label-prior member's prior: its stored verdicts
        if isinstance(own, dict) and "label_prior" in own and name in members:
            field = f"{where}.jury.member_entries[{name!r}].label_prior"
            stored = members[name]
            _check_prior(
                own["label_prior"], field, f"{where} member {name!r}", path, stored["labels"], stored["confidences"]
            )
    made_labels, made_confidences, _ = aggregate(how, columns)
    _compare_verdicts(where, path, labels, confidences, made_labels, made_confidences, f"its members' {how}")


def _compare_verdicts(where, path, labels, confidences, made_labels, made_confidences, source: str) -> None:
    """Refuse the first row whose stored verdict or confidence is not the one re-derived from ``source``."""
    for i, (lab, conf, made_lab, made_conf) in enumerate(
        zip(labels, confidences, made_labels, made_confidences, strict=True)
    ):
        if (
            lab != made_lab
            or (conf is None) != (made_conf is None)
            or (conf is not None and not math.isclose(conf, made_conf, abs_tol=1e-9))
        ):
            raise BadInputError(
                f"{path}: {where}.verdicts row {i}: label {lab!r}, confidence {conf} is not what {source} gives "
                f"({made_lab!r}, {made_conf})"
            )


def rederive(calibration: CalibrationFile, path: str) -> None:
    """Run fixed-sequence testing again on the rows the file carries and refuse any field it does not give (module
    docstring).

    Args:
        calibration: a file whose fields were checked against each other (:func:`check_claim`).
        path: the file, for messages.

    Raises:
        ValueError: one line naming the file, the critic and the field, with the stored and the re-derived value.
    """
    rows = calibration.data["rows"]
    human = _stored_rows(calibration, path)
    confidences, corrects = [], []
    for i, c in enumerate(calibration.critics):
        labels, conf = _stored_verdicts(c, f"critics[{i}] ({c.name})", path, rows)
        confidences.append([np.nan if x is None else x for x in conf])
        corrects.append([lab is not None and lab == h for lab, h in zip(labels, human, strict=True)])
    again = calibrate_cascade(
        confidences,
        corrects,
        alpha=calibration.alpha,
        delta=calibration.delta,
        min_rows=calibration.min_rows,
        deltas=[c.delta for c in calibration.critics],
    )
    for i, (c, (lam, n, k, upper, cal_rows, failed)) in enumerate(zip(calibration.critics, again, strict=True)):
        stored = {
            "threshold": c.threshold,
            "n": c.n,
            "k": c.k,
            "upper_bound": c.upper_bound,
            "calibration_rows": c.calibration_rows,
            "failed": c.failed,
        }
        made = {"threshold": lam, "n": n, "k": k, "upper_bound": upper, "calibration_rows": cal_rows, "failed": failed}
        for name in stored:
            if not _same(stored[name], made[name]):
                raise BadInputError(
                    f"{path}: critics[{i}] ({c.name}).{name} {_short(stored[name])} is not what "
                    f"fixed-sequence testing gives on its stored rows ({_short(made[name])}): the file "
                    "was edited; calibrate again with `hf-critic calibrate`"
                )


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=_TOLERANCE)
    return a == b


def load_calibration(path: str | Path) -> CalibrationFile:
    """Read a calibration file and check it: its format, every field's range
    (:func:`~hf_critic.selective.calibration.read_calibration`), and that the fields add up (:func:`check_claim`:
    each bound recomputed from n, k and delta, the thresholds against alpha and the failed candidates, the deltas, row
    counts and coverages against each other; then every threshold and fit re-derived from the rows it carries,
    :func:`rederive`).

    Raises:
        ValueError: the file is missing, not JSON, of another format, a field is missing or out of range, or the
            fields do not add up (one line naming the file and the field).
    """
    calibration = read_calibration(path)
    check_claim(calibration, str(path))
    return calibration
