"""Auto-J Eval-P (GAIR-NLP/auto-j ``data/test/testdata_pairwise.jsonl``), its verdict files, and Auto-J's
single-response training critiques (``single_traindata.jsonl``).

Eval-P (Li et al., ICLR 2024; used in CritiqueLLM v2 Table 3) has 1,392 English pairs from 58 real-world
scenarios: ``scenario, label, prompt, "response 1", "response 2"`` (label 0 = response 1 better, 1 = response
2, 2 = tie). Results are reported per scenario group (Summarization, Exam Questions, Code, ...): Auto-J's
``scenario_groups.json`` maps each group to its scenarios. Verdict files hold one ``{"output": 0/1/2}`` per
line, in pair order; the file for the swapped order is in swapped terms (see
:func:`hf_critic.meta_eval.agreement.pairwise_agreement`'s ``swapped_mapped_back``).

Auto-J's training data for single-response grading (:func:`load_autoj_single`) holds 960 GPT-4 critiques of one
response each: ``usrmsg`` (Auto-J's critique prompt, with the query after ``[Query]:`` and the response after
``[Response]:``), ``target_output`` (the critique, ending in ``Rating: [[n]]``, 1-10), ``pred_score`` (that rating),
``scenario`` and ``source_dataset``. The repository states no licence for it (research use only).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import datasets

from ..core.schema import query_id
from ..io import RecordError, iter_rows, read_json_rows
from ._rows import as_dataset, field

__all__ = ["load_autoj_eval_p", "load_autoj_single", "load_scenario_groups", "load_verdicts"]

# Auto-J's single-response prompt (constants_prompt.py, "single"): the query and the response between "***" lines.
_SINGLE_PROMPT = re.compile(
    r"\[BEGIN DATA\]\n\*\*\*\n\[Query\]: (?P<question>.*?)\n\*\*\*\n\[Response\]: (?P<response>.*?)\n\*\*\*\n\[END DATA\]",
    re.S,
)
_RATING = re.compile(r"Rating: \[\[(\d+(?:\.\d+)?)\]\]")


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


def load_autoj_single(
    source: str | os.PathLike,
    scenario_groups: str | os.PathLike | Mapping[str, Sequence[str]] | None = None,
    split: str = "train",
) -> datasets.Dataset:
    """Load Auto-J's single-response training critiques (``single_traindata.jsonl``) in the pointwise schema.

    Args:
        source: ``single_traindata.jsonl`` (local) or a Hub dataset id with the same fields.
        scenario_groups: as for :func:`load_autoj_eval_p` (None: ``scenario_groups.json`` beside ``source`` or one
            folder up). A scenario in no group (Auto-J's ``default``) keeps its own name as ``category``.
        split: split to read from a Hub dataset.

    Returns:
        One row per critique (960 for the published file): ``query_id`` (:func:`hf_critic.core.schema.query_id` of the
        query), ``question`` and ``response`` (read back from the prompt), ``human_score`` (GPT-4's rating, float in
        [1, 10]), ``critique`` (GPT-4's critique, ending in ``Rating: [[n]]``), ``category`` (scenario group),
        ``scenario``, ``source_dataset``, ``prompt`` (Auto-J's prompt as published) and ``location`` (``file:line``).

    Raises:
        RecordError: naming file, line and field: a prompt not in Auto-J's single-response layout, a critique
            without ``Rating: [[n]]``, a rating outside [1, 10], or a ``pred_score`` different from the critique's
            last rating.
    """
    if scenario_groups is None:
        scenario_groups = _default_groups(source)
    if scenario_groups is None:
        inverse = {}
    elif isinstance(scenario_groups, Mapping):
        inverse = {s: g for g, members in scenario_groups.items() for s in members}
    else:
        inverse = load_scenario_groups(scenario_groups)
    rows = []
    for where, raw in iter_rows(source, split=split):
        prompt = field(raw, "usrmsg", where)
        match = _SINGLE_PROMPT.search(prompt)
        if match is None:
            raise RecordError(
                f"{where}: field 'usrmsg' is not Auto-J's single-response prompt ([Query]: / [Response]:)"
            )
        critique = field(raw, "target_output", where)
        ratings = _RATING.findall(critique)
        if not ratings:
            raise RecordError(f"{where}: field 'target_output' has no 'Rating: [[n]]'")
        score = float(ratings[-1])
        if not 1.0 <= score <= 10.0:
            raise RecordError(f"{where}: field 'target_output' rates {score}, outside [1, 10]")
        published = field(raw, "pred_score", where, kind="score", default=score)
        if published != score:
            raise RecordError(f"{where}: field 'pred_score' = {published} but the critique's rating is {score}")
        scenario = field(raw, "scenario", where, kind="str", default="")
        rows.append(
            {
                "query_id": query_id(match["question"]),
                "question": match["question"],
                "response": match["response"],
                "human_score": score,
                "critique": critique.strip(),
                "category": inverse.get(scenario, scenario),
                "scenario": scenario,
                "source_dataset": field(raw, "source_dataset", where, kind="str", default=""),
                "prompt": prompt,
                "location": where,
            }
        )
    return as_dataset(rows)
