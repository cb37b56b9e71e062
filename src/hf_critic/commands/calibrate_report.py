"""What ``hf-critic calibrate`` adds for juries and risk-coverage: fitting a jury's aggregate on the calibration rows
(and again on each calibration half under ``--splits``), the jury's calibration-file entry, and the risk-coverage of
every critic, jury member and baseline on the calibration rows (``report.json``'s ``risk_coverage``,
``risk_coverage.png``)."""

from __future__ import annotations

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS
from ..selective.jury import aggregate, fit_features, fit_rows, fitted_verdicts, jury_features

__all__ = [
    "calibration_risk_coverage",
    "check_fit_shares",
    "jury_entry",
    "jury_lines",
    "jury_refits",
    "prepare_fits",
    "question_keys",
    "threshold_rows",
]


#: What a vote / mean jury's calibration entry keeps of each member on the threshold rows: {key: critique column}.
MEMBER_COLUMNS = {"labels": schema.CRITIQUE_LABEL, "confidences": schema.CRITIQUE_CONFIDENCE}


def question_keys(records) -> list:
    """Each row's question: its ``query_id`` where the data has one, else its question text (the unit of the
    bootstrap and of a fitted jury's cross-validation folds)."""
    return records["query_id"] if "query_id" in records.column_names else records[schema.QUESTION]


def _grouping(records) -> str:
    if "query_id" in records.column_names:
        return "by query_id"
    return (
        "by question text, as the data has no query_id column: pairs on one question are not independent, so "
        "they fit or set thresholds together; give each row a query_id to group otherwise"
    )


def check_fit_shares(stages, records, human, cascade: str) -> None:
    """Before any critic runs: each ``fitted`` jury's ``fit_share`` must choose at least one question to fit on, fit
    rows where humans prefer each response, and (all juries together) leave rows to set thresholds on.

    Args:
        stages: the cascade's stages; records: the calibration rows; human: their label codes; cascade: the cascade
            file, for messages.

    Raises:
        ValueError: one line naming the cascade file, the jury, its fit_share and the row and question counts.
    """
    questions = question_keys(records)
    count, rows = len({str(q) for q in questions}), len(records)
    fitting = np.zeros(rows, dtype=bool)
    for stage in stages:
        jury = stage.critic
        if not jury.fitted:
            continue
        where = f"--cascade {cascade}: jury {stage.name!r}: fit_share {jury.fit_share:g}"
        if count < 2:
            raise BadInputError(
                f"{where}: the data's {rows} rows are {count} question (grouped {_grouping(records)}): "
                "a fitted jury needs questions to fit on and others to set thresholds on"
            )
        chosen = fit_rows(questions, jury.fit_share)
        picked = len({str(q) for q, c in zip(questions, chosen, strict=True) if c})
        if not picked:
            raise BadInputError(
                f"{where} of the data's {count} questions rounds to no question to fit the jury on: "
                f"raise fit_share to at least {1 / count:.3g} (questions grouped {_grouping(records)})"
            )
        labels = {int(h) for h, c in zip(human, chosen, strict=True) if c}
        if not {RESPONSE_1_WINS, RESPONSE_2_WINS} <= labels:
            raise BadInputError(
                f"{where} fits the jury on {picked} of {count} questions ({int(chosen.sum())} rows), "
                "whose human labels do not prefer each response at least once: a fit needs both; "
                f"change fit_share or calibrate on more questions (questions grouped {_grouping(records)})"
            )
        fitting |= chosen
        if fitting.all():
            raise BadInputError(
                f"{where} fits the jury on {picked} of the data's {count} questions, all {rows} rows"
                f"{' with the other juries' if picked < count else ''}, and leaves none to set "
                f"thresholds on: lower fit_share or calibrate on more questions (questions grouped "
                f"{_grouping(records)})"
            )


def prepare_fits(stages, human, questions=None) -> None:
    """Hand every stage the rows about to be judged (the calibration rows, whose human label codes are ``human`` and
    questions ``questions``: :meth:`~hf_critic.critics.protocol.CriticKind.calibrate_on`): a ``fitted`` jury fits its
    aggregate there, a label prior (a stage, or a jury's member) its prior; other kinds fit nothing."""
    for stage in stages:
        stage.critic.calibrate_on(human, questions)


def threshold_rows(stages, rows: int) -> np.ndarray:
    """The calibration rows that set thresholds: all ``rows`` less those any ``fitted`` jury was fitted on
    (:attr:`~hf_critic.critics.jury.Jury.fit_rows`). Indices, ascending."""
    used = [s.critic.fit_rows for s in stages if s.critic.fit_rows is not None]
    everything = np.arange(rows)
    return everything[~np.isin(everything, np.concatenate(used))] if used else everything


def jury_entry(stage, setting, held) -> dict | None:
    """A stage's own calibration-file entry (:meth:`~hf_critic.critics.protocol.CriticKind.calibration_entry`: a
    label prior's prior; a jury's aggregate, members' fingerprints, fit with its fit rows and, on the threshold rows
    ``held``, a fitted jury's members' features or a vote / mean jury's members' labels and confidences, from which
    its verdicts there are re-derived on load); None for stages without one."""
    entry = stage.critic.calibration_entry(setting)
    if entry is None or not stage.critic.members:
        return entry
    if stage.critic.fitted:
        entry["threshold_features"] = jury_features(stage.critic.member_columns)[1][held].tolist()
    else:  # vote / mean: its members' verdicts, which its own are aggregated from again on load
        entry["threshold_members"] = {
            name: {key: [columns[column][i] for i in held] for key, column in MEMBER_COLUMNS.items()}
            for name, columns in stage.critic.member_columns.items()
        }
    return entry


def jury_lines(stages) -> list[str]:
    """One line per jury: how many rows it left undecided and how many member verdicts were missing."""
    return [
        f"  jury {s.name} ({s.critic.how}): {s.critic.counts.line()}" for s in stages if s.critic.counts is not None
    ]


def _corrects(labels, human) -> list[bool]:
    return [lab is not None and lab == h for lab, h in zip(labels, human, strict=True)]


def _check_half_fit(name: str, share: float, keys: np.ndarray, chosen: np.ndarray, labels: np.ndarray) -> None:
    """A split's calibration half: the jury's fit rows there must exist, hold both preferences and leave rows.

    Raises:
        ValueError: one line naming the jury, its fit_share, the half's counts and ``--calibration-fraction``.
    """
    count = len(set(keys.tolist()))
    if not chosen.any():
        why = f"rounds to no question of its {count}"
    elif chosen.all():
        why = f"takes all its {count} questions and leaves no row to set thresholds on"
    elif len(set(labels.tolist()) & {RESPONSE_1_WINS, RESPONSE_2_WINS}) < 2:
        why = (
            f"takes {len(set(keys[chosen].tolist()))} of its {count} questions ({int(chosen.sum())} rows), whose "
            "human labels do not prefer each response at least once"
        )
    else:
        return
    raise BadInputError(
        f"--splits: jury {name!r} (fit_share {share:g}) in a split's calibration half of {len(keys)} rows "
        f"{why}: raise fit_share or --calibration-fraction, or calibrate on more questions"
    )


def jury_refits(stages, human, questions=None) -> dict:
    """``{stage index: fn}`` for :func:`~hf_critic.selective.evaluation.split_protocol`: each ``fitted`` jury refit
    on the rows of half the questions of a split's calibration half only (:func:`~hf_critic.selective.jury.fit_rows`;
    its members' features are computed once; ``questions``: each row's question), applied to every row; it returns
    the rows it fitted on, which set no threshold."""
    refits = {}
    groups = None if questions is None else np.asarray([str(q) for q in questions], dtype=object)
    for i, stage in enumerate(stages):
        if stage.critic.fitted:
            names, x = jury_features(stage.critic.member_columns)
            gold = np.asarray(human)

            def refit(cal, names=names, x=x, gold=gold, share=stage.critic.fit_share, name=stage.name):
                keys = np.asarray(cal) if groups is None else groups[cal]
                chosen = fit_rows(keys, share)  # the rest of the calibration half sets the thresholds
                fitting = cal[chosen]
                _check_half_fit(name, share, keys, chosen, gold[fitting])
                fit = fit_features(names, x[fitting], gold[fitting], keys[chosen])
                labels, confidences = fitted_verdicts(fit, names, x)
                return confidences, _corrects(labels, gold), fitting

            refits[i] = refit
    return refits


def _without_baselines(jury, human, questions) -> tuple[list, list] | None:
    """The jury's verdicts with its baseline members (``longer-wins``, ``label-prior``) left out (a ``fitted`` one
    refit on the same rows); None when it has no such member or no other."""
    kept = {m.name: jury.member_columns[m.name] for m in jury.members if not m.critic.baseline}
    if len(kept) in (0, len(jury.members)):
        return None
    if jury.fitted:  # fitted on the jury's own fit rows, like the jury
        names, x = jury_features(kept)
        rows = jury.fit_rows if jury.fit_rows is not None else np.arange(len(human))
        gold, keys = np.asarray(human), np.asarray([str(q) for q in questions], dtype=object)
        return fitted_verdicts(fit_features(names, x[rows], gold[rows], keys[rows]), names, x)
    labels, confidences, _ = aggregate(jury.how, kept)
    return labels, confidences


def calibration_risk_coverage(stages, judged, records, human, held, *, resamples: int, seed: int):
    """The risk-coverage blocks and curves of every stage, every jury member (``JURY/MEMBER``; a baseline member is
    the baseline below), every jury without its baseline members (``JURY without longer-wins``, named by their
    kinds), and the baselines (``longer-wins``, the calibration rows' label prior), on the calibration rows.

    A fitted jury is measured on the rows it was fitted on (in-sample): its out-of-sample figures are ``--splits``'
    success rate and ``meta-eval`` on held-out rows judged with ``compare --cascade``.

    Returns:
        ``(blocks, curves)`` of :func:`~hf_critic.meta_eval.risk_coverage.risk_coverage_report`.
    """
    from ..meta_eval.risk_coverage import risk_coverage_report

    questions = question_keys(records)
    critics = {}
    for stage, (run, confidence, _) in zip(stages, judged, strict=True):
        critics[stage.name] = (run.columns[schema.CRITIQUE_LABEL], confidence)
        if stage.critic.members:
            for member in stage.critic.members:
                if member.critic.baseline:  # the baseline below
                    continue
                columns = stage.critic.member_columns[member.name]
                critics[f"{stage.name}/{member.name}"] = (
                    columns[schema.CRITIQUE_LABEL],
                    columns[schema.CRITIQUE_CONFIDENCE],
                )
            without = _without_baselines(stage.critic, human, questions)
            if without is not None:
                left_out = sorted({m.critic.kind for m in stage.critic.members if m.critic.baseline})
                critics[f"{stage.name} without {', '.join(left_out)}"] = without
    pick = lambda values: [values[i] for i in held]  # noqa: E731
    return risk_coverage_report(
        {name: (pick(labels), pick(conf)) for name, (labels, conf) in critics.items()},
        pick(list(human)),
        questions=pick(questions),
        response_1=pick(records[schema.RESPONSE_1]),
        response_2=pick(records[schema.RESPONSE_2]),
        resamples=resamples,
        seed=seed,
    )
