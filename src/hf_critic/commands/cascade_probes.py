"""What a calibration of a served critic can re-check at run time: a few of its calibration rows, judged again.

A critic behind ``--base-url`` is known to its calibration by the server's URL, the model name and what the server
reports of the model (:func:`hf_critic.core.identity.verdict_options`); another model served under the same URL and
name looks the same from outside. So ``hf-critic calibrate`` records, for each served critic of the cascade,
:data:`PROBES` calibration rows (spread over its confidences, highest first) with the verdict and confidence it gave
(a calibration file's ``probes``), and ``compare --cascade`` judges them again, past every cache, before it trusts the
threshold (:func:`recheck_served`): another label, or a confidence more than :data:`CONFIDENCE_TOLERANCE` away, is
refused in one line. Agreement on a few rows is evidence, not proof: the run says so, and says what it assumes where
it has nothing to re-check (a served member of a jury).
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..core import schema
from ..core.errors import BadInputError

__all__ = ["CONFIDENCE_TOLERANCE", "PROBES", "pick_probes", "recheck_served"]

#: Calibration rows recorded per served critic and judged again by ``compare --cascade``.
PROBES = 8
#: How far a re-judged confidence may lie from the recorded one (a server's batching can move log-probabilities).
CONFIDENCE_TOLERANCE = 0.01


def pick_probes(records, labels, confidences, rows, fields, count: int = PROBES) -> list[dict]:
    """``count`` rows of ``rows`` where the critic gave a verdict with a confidence, evenly spread over its
    confidences from the highest down, with what it gave.

    Args:
        records: the calibration data (a dataset); labels / confidences: the critic's on every row of it.
        rows: the row indices to pick from (the threshold rows, in the calibration file's order); fields: the input
            columns each probe keeps.

    Returns:
        ``[{"index": place in rows, "row": {field: text}, "label": code, "confidence": float}]`` (fewer when fewer
        rows have a verdict); ``index`` ties each probe to the critic's stored verdicts, which the claim is
        re-derived from (:mod:`hf_critic.selective.claim`).
    """
    judged = [place for place, i in enumerate(rows) if labels[i] is not None and confidences[i] is not None]
    judged.sort(key=lambda place: -confidences[rows[place]])
    if not judged:
        return []
    picks = sorted({judged[int(j)] for j in np.linspace(0, len(judged) - 1, min(count, len(judged)))})
    return [
        {
            "index": place,
            "row": {f: records[rows[place]][f] for f in fields},
            "label": int(labels[rows[place]]),
            "confidence": float(confidences[rows[place]]),
        }
        for place in picks
    ]


@contextlib.contextmanager
def _uncached(critic, client):
    """The critic with its generation cache and its client's request cache off (restored after)."""
    holders = [h for h in (critic, client) if hasattr(h, "cache")]
    saved = [h.cache for h in holders]
    for holder in holders:
        holder.cache = None
    try:
        yield
    finally:
        for holder, cache in zip(holders, saved, strict=True):
            holder.cache = cache


def _differences(probes: list[dict], columns: dict) -> list[str]:
    out = []
    labels, confidences = columns[schema.CRITIQUE_LABEL], columns[schema.CRITIQUE_CONFIDENCE]
    for k, (probe, lab, conf) in enumerate(zip(probes, labels, confidences, strict=True)):
        same = lab == probe["label"] and conf is not None and abs(conf - probe["confidence"]) <= CONFIDENCE_TOLERANCE
        if not same:
            out.append(
                f"probe {k}: calibrated {probe['label']} at {probe['confidence']:.3f}, now {lab} at "
                f"{'none' if conf is None else f'{conf:.3f}'}"
            )
    return out


def recheck_served(stages, calibration, path: str, source: str) -> list[str]:
    """Judge each served critic's recorded calibration rows again (past every cache) and compare.

    Args:
        stages: the cascade's :class:`~hf_critic.selective.cascade.CascadeStage` list; calibration: its (checked) file.
        path: the calibration file; source: the data's name, for messages.

    Returns:
        One line per served critic (or jury with a served member): what was re-checked, and what the run assumes.

    Raises:
        ValueError: a served critic whose re-judged rows differ from the recorded ones, or one that keeps rows and
            whose calibration records none (one line naming the file, the critic and the first difference).
    """
    import datasets

    from ..selective.cascade import judge_all

    again = "the server may run another model under the same URL and name: calibrate again with `hf-critic calibrate`"
    lines = []
    for stage, entry in zip(stages, calibration.critics, strict=True):
        served_members = [m.name for m in stage.critic.members if m.critic.served_client is not None]
        if served_members:
            lines.append(
                f"  {stage.name}: served members {served_members} are not re-checked: the guarantee assumes "
                "their servers still run the models they ran at calibration"
            )
        client = stage.critic.served_client
        if client is None:
            continue
        if entry.probes == [] and entry.threshold is None:  # no verdict at calibration, and it keeps no row
            lines.append(f"  {stage.name}: served; it keeps no row, so nothing of it is re-checked")
            continue
        if not entry.probes:
            raise BadInputError(
                f"{path}: critic {stage.name!r} is served ({client.display_url}) and its calibration records "
                f"no rows to judge again (probes): {again}"
            )
        if entry.logistic is not None:
            stage.logistic = tuple(entry.logistic)
        rows = datasets.Dataset.from_list([p["row"] for p in entry.probes])
        with _uncached(stage.critic, client):
            columns = judge_all([stage], rows, source)[0].columns
        differ = _differences(entry.probes, columns)
        if differ:
            raise BadInputError(
                f"{path}: critic {stage.name!r} ({client.display_url}, {client.model}) judges {len(differ)} "
                f"of its {len(entry.probes)} recorded calibration rows otherwise ({differ[0]}): "
                f"{again}"
            )
        lines.append(
            f"  {stage.name}: served; its {len(entry.probes)} recorded calibration rows judged again agree "
            f"(labels equal, confidences within {CONFIDENCE_TOLERANCE}); the guarantee assumes the server runs "
            "the same model on every other row"
        )
    return lines
