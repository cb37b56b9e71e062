"""AlpacaEval pairwise annotations (tatsu-lab/alpaca_eval ``results/<model>/<annotator>/annotations.json``).

AlpacaEval (Li et al., 2023; Dubois et al., 2024) compares every model's output with a baseline's on the same
instruction. Each annotation row has ``instruction``, ``output_1`` (the baseline, ``generator_1``), ``output_2``
(the evaluated model, ``generator_2``), ``dataset`` (the AlpacaEval subset) and ``preference`` in [1, 2]:

* ``alpaca_eval_cot_gpt4_turbo_fn``: GPT-4-turbo's hard verdict (1.0 = output_1 better, 2.0 = output_2, 1.5 = tie)
  with ``raw_completion = {'concise_explanation': ..., 'ordered_models': [{'model': 'M', 'rank': 1}, ...]}`` (a
  dict, or its Python-literal string) and ``referenced_models`` mapping the names the judge saw (``M`` / ``m``) to
  ``output_1`` / ``output_2`` (AlpacaEval shows the outputs in random order under those names);
* ``weighted_alpaca_eval_gpt4_turbo``: ``preference = 1 + P(output_2 better)`` from GPT-4-turbo's token
  probabilities, no explanation.

:func:`load_alpacaeval` maps them onto the pairwise schema (label 0 = response 1 = ``output_1`` better, 1 =
response 2 better, 2 = tie) and keeps the explanation with the positions of the names it uses, so that a caller can
rewrite it to neutral names in either order (:func:`hf_critic.judgments.neutral_explanation`).

Licence of the published annotations: CC BY-NC 4.0 (the repository's data licence; code Apache-2.0).
"""

from __future__ import annotations

import ast
import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import datasets

from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from ..core.schema import query_id
from ..io import RecordError, read_json_rows
from ._rows import as_dataset, field

__all__ = ["DEFAULT_NAMES", "alpacaeval_files", "load_alpacaeval", "parse_raw_completion"]

#: Positions of the names an explanation uses when the row has no ``referenced_models``: AlpacaEval's
#: ``Output (a)`` / ``Output (b)`` prompts show output_1 as (a) and output_2 as (b).
DEFAULT_NAMES = {"a": 1, "b": 2}
_OUTPUTS = {"output_1": 1, "output_2": 2}
_FEATURES = {
    "preference": datasets.Value("float64"),
    "alpacaeval_preference": datasets.Value("float64"),
    "model_1": datasets.Value("string"),
    "model_2": datasets.Value("string"),
    "annotator": datasets.Value("string"),
    "explanation": datasets.Value("string"),
    "explanation_names": datasets.Value("string"),
    "gpt4_tie": datasets.Value("bool"),
    "location": datasets.Value("string"),
}


def alpacaeval_files(source: str | os.PathLike) -> list[Path]:
    """The annotation files of ``source``: the file itself, or every ``*.json`` in the folder, sorted by name.

    Raises:
        RecordError: ``source`` does not exist, or the folder holds no ``.json`` file.
    """
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise RecordError(f"{path}: no such file or folder")
    files = sorted(p for p in path.glob("*.json") if p.is_file())
    if not files:
        raise RecordError(f"{path}: no AlpacaEval annotation file (*.json) in this folder")
    return files


def parse_raw_completion(value: Any, where: str) -> dict | None:
    """The judge's ``raw_completion``: ``{'concise_explanation': str, 'ordered_models': [{'model', 'rank'}, ...]}``.

    Args:
        value: the field as published: a dict, its Python-literal (or JSON) string, or None / ``"None"``.
        where: the row's location, for messages.

    Returns:
        ``{"explanation": str, "ranks": {name: rank}}``, or None when the row has no completion.

    Raises:
        RecordError: ``"<where>: field 'raw_completion' ..."`` for text that is no dict literal, or a dict without a
            non-empty ``concise_explanation`` or with ``ordered_models`` that is not a list of ``{model, rank}``.
    """
    if value is None or (isinstance(value, str) and value.strip() in ("", "None", "null")):
        return None
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise RecordError(f"{where}: field 'raw_completion' is not a dict literal: {value[:60]!r}") from None
    if not isinstance(value, dict):
        raise RecordError(f"{where}: field 'raw_completion' must be a dict, got {type(value).__name__}")
    explanation = value.get("concise_explanation")
    if not isinstance(explanation, str) or not explanation.strip():
        raise RecordError(f"{where}: field 'raw_completion' has no non-empty 'concise_explanation'")
    ordered = value.get("ordered_models", [])
    ranks: dict[str, float] = {}
    if not isinstance(ordered, list):
        raise RecordError(f"{where}: field 'raw_completion': 'ordered_models' must be a list")
    for entry in ordered:
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str) or "rank" not in entry:
            raise RecordError(
                f"{where}: field 'raw_completion': 'ordered_models' entry {entry!r} is not {{model, rank}}"
            )
        ranks[entry["model"]] = field(entry, "rank", f"{where} raw_completion.ordered_models", kind="score")
    return {"explanation": explanation.strip(), "ranks": ranks}


def _names(raw: dict, ranks: dict[str, float], where: str) -> dict[str, int]:
    """Name the judge saw -> position (1 = output_1, 2 = output_2), from ``referenced_models``.

    A mapping with one name (published for a few rows) is completed with the other name of ``ordered_models`` for the
    other output.
    """
    mapping = raw.get("referenced_models")
    if mapping is None or mapping == "None":
        return dict(DEFAULT_NAMES)
    if not isinstance(mapping, dict):
        raise RecordError(f"{where}: field 'referenced_models' must be a dict, got {type(mapping).__name__}")
    names: dict[str, int] = {}
    for name, output in mapping.items():
        if output not in _OUTPUTS:
            raise RecordError(f"{where}: field 'referenced_models' maps {name!r} to {output!r}, not output_1/output_2")
        names[name] = _OUTPUTS[output]
    if len(set(names.values())) != len(names):
        raise RecordError(f"{where}: field 'referenced_models' maps two names to the same output: {mapping}")
    missing = [name for name in ranks if name not in names]
    if len(names) == 1 and len(missing) == 1:
        names[missing[0]] = 3 - next(iter(names.values()))
    elif missing:
        raise RecordError(f"{where}: field 'referenced_models' {mapping} does not name {missing} of 'ordered_models'")
    return names


def _missing(raw: dict, name: str) -> bool:
    value = raw.get(name)
    return value is None or value == "None" or (isinstance(value, float) and math.isnan(value))


def load_alpacaeval(source: str | os.PathLike, *, skipped: Counter | None = None) -> datasets.Dataset:
    """Load AlpacaEval annotations (one file or a folder of them) in the pairwise schema.

    Rows with a missing (absent, null, NaN or ``"None"``) ``instruction``, ``output_1``, ``output_2`` or
    ``preference`` are skipped and counted in ``skipped`` (``"missing <field>"``), never an error: AlpacaEval
    publishes such rows when a model or the judge failed. An empty output (``""``) is kept: the judge compared it.

    Args:
        source: an ``annotations.json``-shaped file or a folder of them (``alpacaeval/cot_gpt4_turbo``).
        skipped: counter to add the skipped rows to, by reason (keys ``"missing preference"`` ...); also counts
            ``"gpt-4 ranked both outputs first: labelled tie"`` (see ``gpt4_tie`` below).

    Returns:
        One row per kept annotation: ``query_id`` (:func:`hf_critic.core.schema.query_id` of the instruction),
        ``question`` (the instruction), ``response_1`` (output_1), ``response_2`` (output_2), ``label`` (0 = response
        1 better, 1 = response 2, 2 = tie), ``preference`` (float in [0, 1], P(response 2 better): ``preference - 1``
        for soft preferences, 0 / 1 / 0.5 for hard verdicts), ``alpacaeval_preference`` (the published value in
        [1, 2]), ``category`` (the AlpacaEval subset, e.g. ``helpful_base``), ``model_1``, ``model_2`` (generators),
        ``annotator``, ``explanation`` (the judge's concise explanation, None without one), ``explanation_names``
        (JSON ``{name: position}``, e.g. ``{"M": 1, "m": 2}``: which response each name the explanation uses refers
        to; None without an explanation), ``gpt4_tie`` (True when the judge's ``ordered_models`` rank both outputs
        first: AlpacaEval's parser then published the first listed as the winner, here the row is a tie with
        preference 0.5, so that verdict and explanation agree) and ``location`` (``file[item]``).

        A soft preference gives label 0 below 0.5, 1 above and 2 (tie) at exactly 0.5.

    Raises:
        RecordError: naming file, item and field: a source with no file, a preference that is not a number in
            [1, 2], a malformed ``raw_completion`` or ``referenced_models``, or a strict ranking in ``ordered_models``
            that contradicts the published preference.
    """
    skipped = skipped if skipped is not None else Counter()
    rows = []
    for path in alpacaeval_files(source):
        for where, raw in read_json_rows(path):
            gone = [name for name in ("instruction", "output_1", "output_2", "preference") if _missing(raw, name)]
            if gone:
                skipped[f"missing {gone[0]}"] += 1
                continue
            question = field(raw, "instruction", where, kind="text")
            response_1 = field(raw, "output_1", where, kind="str")
            response_2 = field(raw, "output_2", where, kind="str")
            published = field(raw, "preference", where, kind="score")
            if not 1.0 <= published <= 2.0:
                raise RecordError(f"{where}: field 'preference' must be in [1, 2], got {published!r}")
            preference = published - 1.0
            label = RESPONSE_1_WINS if preference < 0.5 else RESPONSE_2_WINS if preference > 0.5 else TIE
            completion = parse_raw_completion(raw.get("raw_completion"), where)
            names, tie = None, False
            if completion is not None:
                names, both_first = _ranking(raw, completion, label, published, where)
                if both_first:
                    tie = label != TIE
                    label, preference = TIE, 0.5
                if tie:
                    skipped["gpt-4 ranked both outputs first: labelled tie"] += 1
            rows.append(
                {
                    "query_id": query_id(question),
                    "question": question,
                    "response_1": response_1,
                    "response_2": response_2,
                    "label": label,
                    "preference": preference,
                    "alpacaeval_preference": published,
                    "category": field(raw, "dataset", where, kind="str", default=""),
                    "model_1": field(raw, "generator_1", where, kind="str", default=""),
                    "model_2": field(raw, "generator_2", where, kind="str", default=""),
                    "annotator": field(raw, "annotator", where, kind="str", default=""),
                    "explanation": completion["explanation"] if completion else None,
                    "explanation_names": json.dumps(names, sort_keys=True) if names else None,
                    "gpt4_tie": tie,
                    "location": where,
                }
            )
    return as_dataset(rows, _FEATURES)


def _ranking(raw: dict, completion: dict, label: int, published: float, where: str) -> tuple[dict, bool]:
    """``(names, both_first)`` from the judge's ``ordered_models``: which response each name refers to, and whether
    both outputs are ranked first; RecordError when a strict ranking contradicts the published ``label``."""
    names = _names(raw, completion["ranks"], where)
    by_position = {names[n]: r for n, r in completion["ranks"].items() if n in names}
    if len(by_position) != 2:
        return names, False
    if by_position[1] == by_position[2]:
        return names, True
    if (RESPONSE_1_WINS if by_position[1] < by_position[2] else RESPONSE_2_WINS) != label:
        raise RecordError(
            f"{where}: field 'preference' = {published} contradicts 'raw_completion' ordered_models "
            f"(output_{1 if by_position[1] < by_position[2] else 2} ranked first)"
        )
    return names, False
