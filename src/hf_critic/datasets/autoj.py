"""Auto-J Eval-P (GAIR-NLP/auto-j ``data/test/testdata_pairwise.jsonl``) and its verdict files.

Eval-P (Li et al., ICLR 2024; used in CritiqueLLM v2 Table 3) has 1,392 English pairs from 58 real-world
scenarios: ``scenario, label, prompt, "response 1", "response 2"`` (label 0 = response 1 better, 1 = response
2, 2 = tie). Results are reported per scenario group (Summarization, Exam Questions, Code, ...): Auto-J's
``scenario_groups.json`` maps each group to its scenarios. Verdict files hold one ``{"output": 0/1/2}`` per
line, in pair order; the file for the swapped order is in swapped terms (see
:func:`hf_critic.meta_eval.agreement.pairwise_agreement`'s ``swapped_mapped_back``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import datasets

from ..io import RecordError, iter_rows, read_json_rows
from ._rows import as_dataset, field

__all__ = ["load_autoj_eval_p", "load_scenario_groups", "load_verdicts"]


def load_scenario_groups(path: str | os.PathLike) -> dict[str, str]:
    """Read Auto-J's ``scenario_groups.json`` (``{group: [scenario, ...]}``) as ``{scenario: group}``.

    Raises:
        RecordError: unreadable file, wrong shape, or a scenario listed in two groups.
    """
    path = Path(path)
    try:
        groups = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: cannot read scenario groups: {err}") from None
    if not isinstance(groups, dict) or not all(isinstance(v, list) for v in groups.values()):
        raise RecordError(f"{path}: expected {{group: [scenario, ...]}}")
    inverse: dict[str, str] = {}
    for group, scenarios in groups.items():
        for scenario in scenarios:
            if scenario in inverse:
                raise RecordError(f"{path}: scenario {scenario!r} is in groups {inverse[scenario]!r} and {group!r}")
            inverse[scenario] = group
    return inverse


def _default_groups(source: str | os.PathLike) -> Path | None:
    path = Path(source)
    for folder in (path.parent, path.parent.parent):
        if (folder / "scenario_groups.json").is_file():
            return folder / "scenario_groups.json"
    return None


def load_autoj_eval_p(
    source: str | os.PathLike,
    scenario_groups: str | os.PathLike | Mapping[str, Sequence[str]] | None = None,
    split: str = "train",
) -> datasets.Dataset:
    """Load Auto-J Eval-P pairs in the pairwise schema.

    Args:
        source: ``testdata_pairwise.jsonl`` (local) or a Hub dataset id with the same fields.
        scenario_groups: ``{group: [scenario, ...]}`` or a path to Auto-J's ``scenario_groups.json``; None looks
            for that file beside ``source`` or one folder up (the layout of the Auto-J repository and of
            ``shared/data/autoj``). Without groups, ``category`` is the scenario itself.

    Returns:
        ``query_id`` (the pair's 0-based position, as a string), ``question`` (= prompt), ``response_1``,
        ``response_2``, ``label`` (0/1/2), ``category`` (scenario group), ``scenario``; 1,392 rows for Eval-P.

    Raises:
        RecordError: naming file, line and field, for a missing field, a label outside 0/1/2, or a scenario
            that is in no group.
    """
    if scenario_groups is None:
        scenario_groups = _default_groups(source)
    if scenario_groups is None:
        inverse = None
    elif isinstance(scenario_groups, Mapping):
        inverse = {s: g for g, members in scenario_groups.items() for s in members}
    else:
        inverse = load_scenario_groups(scenario_groups)
    rows = []
    for where, raw in iter_rows(source, split=split):
        scenario = field(raw, "scenario", where)
        label = field(raw, "label", where, kind="int")
        if label not in (0, 1, 2):
            raise RecordError(f"{where}: field 'label' must be 0, 1 or 2, got {label!r}")
        if inverse is not None and scenario not in inverse:
            raise RecordError(f"{where}: field 'scenario' = {scenario!r} is in no scenario group")
        rows.append(
            {
                "query_id": str(len(rows)),
                "question": field(raw, "prompt", where, aliases=("question",)),
                "response_1": field(raw, "response 1", where, kind="str", aliases=("response_1",)),
                "response_2": field(raw, "response 2", where, kind="str", aliases=("response_2",)),
                "label": label,
                "category": inverse[scenario] if inverse is not None else scenario,
                "scenario": scenario,
            }
        )
    return as_dataset(rows)


def load_verdicts(path: str | os.PathLike, key: str = "output") -> list[int | None]:
    """Read an Auto-J-style verdict file: one ``{"output": 0|1|2|null}`` per line, in pair order.

    Returns:
        The verdicts; None stays None (unparsed).

    Raises:
        RecordError: naming the line, for a missing key or a value other than 0, 1, 2 or null.
    """
    verdicts: list[int | None] = []
    for where, raw in read_json_rows(path):
        if key not in raw:
            raise RecordError(f"{where}: field {key!r} is missing (the row has {sorted(raw)})")
        value = raw[key]
        if value is not None and (isinstance(value, bool) or value not in (0, 1, 2)):
            raise RecordError(f"{where}: field {key!r} must be 0, 1, 2 or null, got {value!r}")
        verdicts.append(None if value is None else int(value))
    return verdicts
