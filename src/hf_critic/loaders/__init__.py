"""Loaders that map published benchmark formats onto hf-critic records, as ``datasets.Dataset``.

Every loader returns the schema's columns (:mod:`hf_critic.core.schema`): ``query_id``, ``question``, ``reference``
(only for the referenced setting), and either ``system_id``, ``response``, ``human_score`` (pointwise grading)
or ``response_1``, ``response_2``, ``label`` (pairwise comparison: 0 = response 1 better, 1 = response 2,
2 = tie), plus ``category``. Errors are :class:`hf_critic.io.RecordError` naming file, line and field.

* :func:`load_alignbench`: CritiqueLLM's AlignBench evaluation files (pointwise / pairwise, referenced or not);
* :func:`load_autoj_eval_p` (+ :func:`load_verdicts`, :func:`load_scenario_groups`): Auto-J Eval-P;
* :func:`load_autoj_single`: Auto-J's GPT-4 single-response training critiques (pointwise, ``human_score`` = GPT-4's
  rating);
* :func:`load_alpacaeval`: AlpacaEval pairwise annotations (GPT-4-turbo verdicts with explanations, or soft
  preferences; ``label`` = the judge's verdict);
* :func:`load_fastchat`: MT-Bench / Vicuna-Bench FastChat folders with GPT-4 single-answer grades;
* :func:`load_prometheus`: Prometheus benchmark JSON (absolute grading sets, HHH pairs);
* :func:`load_generic`: anything else, with a column and label mapping;
* :mod:`hf_critic.loaders.selfeval`: the SelfEval release (glass-box features).

:func:`load_benchmark` dispatches on a format name (the ``--format`` of ``hf-critic meta-eval``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets

from ..core.errors import BadInputError
from .alignbench import load_alignbench
from .alpacaeval import load_alpacaeval
from .autoj import load_autoj_eval_p, load_autoj_single, load_scenario_groups, load_verdicts
from .fastchat import load_fastchat
from .generic import load_generic
from .prometheus import load_prometheus

__all__ = [
    "FORMATS",
    "load_alignbench",
    "load_alpacaeval",
    "load_autoj_eval_p",
    "load_autoj_single",
    "load_benchmark",
    "load_fastchat",
    "load_generic",
    "load_prometheus",
    "load_scenario_groups",
    "load_verdicts",
    "name_and_value",
    "parse_benchmark",
]

#: Format name -> loader.
FORMATS = {
    "alignbench": load_alignbench,
    "autoj": load_autoj_eval_p,
    "autoj_single": load_autoj_single,
    "alpacaeval": load_alpacaeval,
    "fastchat": load_fastchat,
    "prometheus": load_prometheus,
    "generic": load_generic,
}


def load_benchmark(fmt: str, source: str | os.PathLike, **kwargs: Any) -> datasets.Dataset:
    """Load ``source`` with the loader of format ``fmt`` (a key of :data:`FORMATS`), passing ``kwargs`` on.

    Raises:
        ValueError: an unknown format.
        RecordError: see the loaders.
    """
    if fmt not in FORMATS:
        raise BadInputError(f"unknown benchmark format {fmt!r}; use one of {sorted(FORMATS)}")
    return FORMATS[fmt](source, **kwargs)


def name_and_value(spec: str) -> tuple[str | None, str]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``; a spec without a name (or with an empty value) -> ``(None, spec)``."""
    name, sep, value = spec.partition("=")
    return (name.strip(), value.strip()) if sep and value else (None, spec.strip())


def parse_benchmark(spec: str, what: str = "--benchmark") -> tuple[str, str, str]:
    """``[NAME=]FORMAT:PATH`` -> (name, format, path); the name defaults to the file stem (or folder name); FORMAT is
    a key of :data:`FORMATS` or ``criticbench``.

    Args:
        spec: the benchmark as written.
        what: where it was written, for the message (an option, or a file and key).

    Raises:
        ValueError: no ``FORMAT:`` prefix or an unknown format (naming ``what`` and ``spec``).
    """
    name, rest = name_and_value(spec)
    fmt, sep, path = rest.partition(":")
    formats = sorted([*FORMATS, "criticbench"])
    if not sep or fmt not in formats:
        raise BadInputError(f"{what} {spec!r}: expected [NAME=]FORMAT:PATH with FORMAT one of {formats}")
    return name or Path(path).stem or Path(path).name, fmt, path
