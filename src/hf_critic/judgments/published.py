"""Critic training data from published judgments (AlpacaEval pairwise, Auto-J pointwise; see
:mod:`hf_critic.judgments`): neutral explanations, both orders, decontaminated, split by question.

The configs' columns:

* ``pointwise_reference_free`` (Auto-J): ``id``, ``query_id``, ``question``, ``response``, ``score`` (GPT-4's
  rating, float in [1, 10]), ``critique`` (GPT-4's critique as published, ending in ``Rating: [[n]]``),
  ``explanation`` (the critique without the rating), ``source``, ``scenario``, ``category`` (Auto-J's
  scenario group), ``source_dataset``, ``template``, ``template_version``, ``messages`` (Auto-J's prompt,
  re-rendered by the ``autoj`` template and checked equal to the published one, then the critique);
* ``pairwise_reference_free`` (AlpacaEval pairs with an explanation, both orders): ``id`` (``/swap`` suffix
  for the swapped copy), ``query_id``, ``question``, ``response_1``, ``response_2``, ``label`` (0 = response
  1 better, 1 = response 2, 2 = tie), ``preference`` (float in [0, 1], P(response 2 better)), ``critique``
  (the neutral explanation then the template's verdict line: the SFT target), ``explanation``, ``source``,
  ``model_1``, ``model_2`` (generators), ``swapped``, ``category`` (AlpacaEval subset), ``gpt4_tie``,
  ``template``, ``template_version``, ``messages`` (the template's prompt, then ``critique``);
* ``pairwise_preference``: every AlpacaEval pair in both orders, with the pairwise columns but no
  ``template`` / ``messages``; ``critique`` and ``explanation`` are None for the soft preferences (and for
  the few explanations that cannot be rewritten). For preference / reward training.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from ..core.errors import BadInputError
from ..core.labels import swap_label
from ..core.schema import QUESTION, RESPONSE
from ..critic.grammars import verdict_ending
from ..prompts import OutputSpec, get_template
from .decontamination import benchmark_questions, decontaminate, normalize_question, parse_exclude
from .gpt4_single import _messages, split_by_question
from .sources import _PUBLISHED_SPLITS, PUBLISHED_CONFIGS, PUBLISHED_SOURCES

logger = logging.getLogger(__name__)


_QUOTE = "['\"\u2018\u2019]"
_APOSTROPHE = "['\u2019]"
# "The first model ('m')": the position words are the judge's prompt order, so the whole phrase is the name.
_ORDERED_NAME = re.compile(rf"\b[Tt]he (?:first|second) model \((?P<q>{_QUOTE}?)(?P<id>[Mm])(?P=q)\)")
_TWO_NAMES = re.compile(
    rf"\b[Mm]odels (?P<qa>{_QUOTE}?)(?P<a>[Mm])(?P=qa) and (?P<qb>{_QUOTE}?)(?P<b>[Mm])(?P=qb)(?!\w)"
)
# "Model M", "model 'm'", "Model 'M's" (the closing quote doubling as the possessive's apostrophe).
_MODEL_NAME = re.compile(rf"\b[Mm]odel (?P<q>{_QUOTE}?)(?P<id>[Mm])(?P=q)(?P<s>(?<={_APOSTROPHE})s)?(?!\w)")
_QUOTED_NAME = re.compile(rf"(?<![\w'\u2019])(?P<q>{_QUOTE})(?P<id>[Mm])(?P=q)(?P<s>(?<={_APOSTROPHE})s)?(?!\w)")
_OUTPUT_NAME = re.compile(r"\b[Oo]utput \((?P<id>[ab])\)")
# What must not survive the rewrite: a name left over, or a position word naming a response.
_UNRESOLVED = re.compile(
    rf"(?<![\w'\u2019]){_QUOTE}?[Mm]{_QUOTE}?(?![\w'\u2019])|\b[Oo]utput \([ab]\)|\b[Mm]odel [A-Za-z0-9]\b"
    r"|\b(?:first|second|former|latter) (?:model|output|response|answer|assistant)s?\b"
)


def neutral_explanation(
    text: str, names: Mapping[str, int], labels: Sequence[str] = ("Response 1", "Response 2")
) -> str:
    """Rewrite a judge's explanation so that it names the responses by position, as the critic's template does.

    AlpacaEval's judges name the outputs ``Model M`` / ``model 'm'`` (GPT-4-turbo CoT annotator, mapped to
    output_1 / output_2 by ``referenced_models``) or ``Output (a)`` / ``Output (b)``. Rewritten forms: ``Model M``,
    ``model m``, ``Model 'M'``, ``model "m"``, a bare quoted ``'m'``, ``models M and m``, ``The first model ('m')``,
    ``Output (a)``; a possessive ``'s`` is kept (``Model 'M's`` -> ``Response 1's``), and ``<name>'s response`` /
    ``output`` / ``answer`` becomes ``<name>``. Letter case matters: ``M`` and ``m`` are two names.

    Args:
        text: the explanation.
        names: ``{name: position}`` (1 or 2), e.g. ``{"M": 2, "m": 1}``; pass the positions of the order the
            example is shown in (swapped: ``3 - position``).
        labels: the names of response 1 and response 2 in the critic's template.

    Returns:
        The rewritten explanation.

    Raises:
        ValueError: the text uses a name that ``names`` lacks, or still names a response in a way that is not
            rewritten (a bare ``M``, ``the first response``, ``the latter model``...): after a swap it would be
            wrong. The message quotes the phrase.
    """
    unknown: list[str] = []

    def name(ident: str) -> str:
        if ident not in names or names[ident] not in (1, 2):
            unknown.append(ident)
            return ident
        return labels[names[ident] - 1]

    out = _ORDERED_NAME.sub(lambda m: name(m["id"]), text)
    out = _TWO_NAMES.sub(lambda m: f"{name(m['a'])} and {name(m['b'])}", out)
    out = _MODEL_NAME.sub(lambda m: name(m["id"]) + ("'s" if m["s"] else ""), out)
    out = _QUOTED_NAME.sub(lambda m: name(m["id"]) + ("'s" if m["s"] else ""), out)
    out = _OUTPUT_NAME.sub(lambda m: name(m["id"]), out)
    if unknown:
        raise BadInputError(f"explanation names {unknown[0]!r}, which the row's names {dict(names)} do not map")
    for label in labels:
        out = re.sub(rf"{re.escape(label)}{_APOSTROPHE}s (?:response|output|answer)\b", label, out)
    left = _UNRESOLVED.search(out)
    if left is not None:
        raise BadInputError(
            f"explanation names a response as {left.group(0)!r}, which cannot be rewritten by position"
        )
    return out


def verdict_text(output: OutputSpec, value: int | float) -> str:
    """The verdict line a template asks for, as a critique ends with it.

    Args:
        output: the template's output spec; its format must end a critique with the verdict (``autoj_decision``,
            ``autoj_rating``, ``pair_brackets``, ``rating_brackets``, ``comparison_dict``, ``score_dict``,
            ``prometheus_result``).
        value: a label (0 / 1 / 2, :mod:`hf_critic.core.schema`) for label templates, a score for score templates.

    Returns:
        E.g. ``"So, the final decision is Response 1."``, ``"[[A]]"``, ``"{'Overall Comparison Result': 'Tie'}"``,
        ``"Rating: [[7]]"``; :func:`hf_critic.parsing.parse` reads it back as ``value``.

    Raises:
        ValueError: a format whose verdict opens the critique, or a label the template has no verdict for
            (Prometheus 2's pairwise templates know no tie).
    """
    ending = verdict_ending(output)
    if ending is None:
        raise BadInputError(f"output format {output.format!r} does not end a critique with its verdict")
    prefix, closing = ending
    if output.kind == "label":
        if not 0 <= int(value) < len(output.labels or ()):
            raise BadInputError(f"label {value!r} has no verdict in this template (labels {output.labels})")
        shown = output.labels[int(value)]
    else:
        shown = str(int(value)) if float(value).is_integer() else str(value)
    space = " " if prefix[-1].isascii() and prefix[-1] not in "['" else ""
    return f"{prefix}{space}{shown}{closing}"


def _response_names(output: OutputSpec) -> tuple[str, str]:
    """How a pairwise template names the two responses: its labels (``Response 1``, ``Assistant 1``), or
    ``Assistant A`` / ``Assistant B`` for single-letter labels (MT-Bench)."""
    first, second = output.labels[:2]
    if len(first) == 1:
        return f"Assistant {first}", f"Assistant {second}"
    return first, second


@dataclass
class PublishedBuildReport:
    """What :func:`build_published_judgment_data` read, dropped and wrote.

    Attributes:
        sources: ``{source: {"read": rows in the files, "skipped": {reason: rows}, "relabelled": {reason: rows}
            (kept, label changed: the judge ranked both outputs first), "decontaminated": rows dropped, "kept": source
            rows kept, "rows": {config: output rows (both orders for pairs)}}}``.
        decontamination: per benchmark, as :func:`decontaminate` returns (plus ``"format"`` and ``"path"``).
        explanations: ``{"rewritten": explanations rewritten (per source row), "unresolved": explanations that
            name a response in a way that cannot be rewritten (the row keeps its preference, loses its critique),
            "unresolved_examples": the first few phrases}``.
        rows: ``{config: {split: rows}}``.
        questions: ``{split: distinct normalised questions}``.
        settings: the build's parameters (template, seed, validation fraction, swap).
    """

    sources: dict = field(default_factory=dict)
    decontamination: dict = field(default_factory=dict)
    explanations: dict = field(default_factory=lambda: {"rewritten": 0, "unresolved": 0, "unresolved_examples": []})
    rows: dict = field(default_factory=dict)
    questions: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready copy (``build_report.json``)."""
        return json.loads(json.dumps(asdict(self), default=dict))

    def summary(self) -> str:
        """Multi-line human-readable summary: per-source counts, decontamination per benchmark, split sizes."""
        lines = ["sources (rows read -> skipped -> decontaminated -> kept; output rows per config):"]
        for source, s in self.sources.items():
            skipped = ", ".join(f"{n} {reason}" for reason, n in s["skipped"].items()) or "none"
            rows = ", ".join(f"{c}: {n}" for c, n in s["rows"].items())
            lines.append(
                f"  {source}: read {s['read']}, skipped {sum(s['skipped'].values())} ({skipped}), "
                f"decontaminated {s['decontaminated']}, kept {s['kept']} -> {rows}"
            )
            for reason, n in s.get("relabelled", {}).items():
                lines.append(f"    {n} rows: {reason}")
        lines.append("decontamination (training examples dropped per benchmark; exact / normalised-only matches):")
        if not self.decontamination:
            lines.append("  no benchmark given")
        for name, d in self.decontamination.items():
            by_source = (
                ", ".join(
                    f"{src}: {n} examples / {d['questions_by_source'][src]} questions"
                    for src, n in d["by_source"].items()
                )
                or "-"
            )
            lines.append(
                f"  {name}: {d['questions']} benchmark questions; dropped {d['dropped']} examples "
                f"({d['exact']} exact, {d['normalised']} normalised) of {d['dropped_questions']} training questions "
                f"[{by_source}]"
            )
        e = self.explanations
        lines.append(
            f"explanations rewritten to neutral names: {e['rewritten']}; unresolved (critique dropped): "
            f"{e['unresolved']}"
        )
        lines.append(f"questions per split: {self.questions}")
        lines += [f"{config}: {counts}" for config, counts in self.rows.items()]
        return "\n".join(lines)


_PAIR_FEATURES = {
    "id": datasets.Value("string"),
    "query_id": datasets.Value("string"),
    "question": datasets.Value("string"),
    "response_1": datasets.Value("string"),
    "response_2": datasets.Value("string"),
    "label": datasets.Value("int64"),
    "preference": datasets.Value("float64"),
    "critique": datasets.Value("string"),
    "explanation": datasets.Value("string"),
    "source": datasets.Value("string"),
    "model_1": datasets.Value("string"),
    "model_2": datasets.Value("string"),
    "swapped": datasets.Value("bool"),
    "category": datasets.Value("string"),
    "gpt4_tie": datasets.Value("bool"),
}
_POINT_FEATURES = {
    "id": datasets.Value("string"),
    "query_id": datasets.Value("string"),
    "question": datasets.Value("string"),
    "response": datasets.Value("string"),
    "score": datasets.Value("float64"),
    "critique": datasets.Value("string"),
    "explanation": datasets.Value("string"),
    "source": datasets.Value("string"),
    "scenario": datasets.Value("string"),
    "category": datasets.Value("string"),
    "source_dataset": datasets.Value("string"),
}
_SFT_FEATURES = {
    "template": datasets.Value("string"),
    "template_version": datasets.Value("string"),
    "messages": [{"role": datasets.Value("string"), "content": datasets.Value("string")}],
}


def _pair_rows(
    record: Mapping[str, Any], source: str, names: tuple[str, str], report: PublishedBuildReport, swap: bool
):
    """The example of one AlpacaEval annotation in its published order and, with ``swap``, the swapped order."""
    explanation_names = json.loads(record["explanation_names"]) if record["explanation_names"] else None
    explanation = record["explanation"]
    if explanation is not None:
        try:
            neutral_explanation(explanation, explanation_names, names)
            report.explanations["rewritten"] += 1
        except ValueError as err:
            report.explanations["unresolved"] += 1
            if len(report.explanations["unresolved_examples"]) < 5:
                report.explanations["unresolved_examples"].append(f"{record['location']}: {err}")
            explanation = None
    rows = []
    for swapped in (False, True) if swap else (False,):
        positions = explanation_names
        if swapped and positions is not None:
            positions = {name: 3 - position for name, position in positions.items()}
        first, second = ("response_2", "response_1") if swapped else ("response_1", "response_2")
        rows.append(
            {
                "id": f"{source}/{Path(record['location']).name}" + ("/swap" if swapped else ""),
                "query_id": record["query_id"],
                "question": record["question"],
                "response_1": record[first],
                "response_2": record[second],
                "label": swap_label(record["label"]) if swapped else record["label"],
                "preference": 1.0 - record["preference"] if swapped else record["preference"],
                "critique": None,  # the explanation and the verdict line, set by the caller
                "explanation": neutral_explanation(explanation, positions, names) if explanation else None,
                "source": source,
                "model_1": record["model_2" if swapped else "model_1"],
                "model_2": record["model_1" if swapped else "model_2"],
                "swapped": swapped,
                "category": record["category"],
                "gpt4_tie": record["gpt4_tie"],
            }
        )
    return rows


def build_published_judgment_data(
    data_dir: str | Path,
    *,
    sources: Sequence[str] = tuple(PUBLISHED_SOURCES),
    exclude: Sequence[str] | Mapping[str, Iterable[str]] = (),
    validation_fraction: float = 0.1,
    seed: int = 0,
    swap: bool = True,
    pairwise_family: str = "autoj",
) -> tuple[dict[str, datasets.DatasetDict], PublishedBuildReport]:
    """Critic training data from published judgments (AlpacaEval, Auto-J), decontaminated and split by question.

    Steps: load each source through its loader (:func:`~hf_critic.loaders.alpacaeval.load_alpacaeval`,
    :func:`~hf_critic.loaders.autoj.load_autoj_single`; rows with a missing preference or output are skipped and
    counted), drop pairs whose two responses are identical (AlpacaEval's baseline judged against itself), drop
    every row whose question matches an excluded benchmark (:func:`decontaminate`), emit each AlpacaEval pair in
    both orders (``swap``), and assign every normalised question to train or validation (so no question, in any
    source or order, is in two splits).

    Args:
        data_dir: the real-data folder (``../shared/data``), holding the :data:`PUBLISHED_SOURCES` paths.
        sources: subset of :data:`PUBLISHED_SOURCES`.
        exclude: benchmarks to decontaminate against: ``[NAME=]FORMAT:PATH`` strings (:func:`parse_exclude`,
            read by :func:`benchmark_questions`) or ``{name: questions}``.
        validation_fraction: share of the distinct normalised questions in ``validation``, in [0, 1).
        seed: question split seed.
        swap: also emit every pair in swapped order (response 2 first).
        pairwise_family: template family of the pairwise SFT prompts and verdicts (default ``autoj``: responses
            named ``Response 1`` / ``Response 2``, verdict ``So, the final decision is Response 1.``); its pairwise
            reference-free English template must end the critique with a verdict and know ties.

    Returns:
        ``(configs, report)``. ``configs`` maps each of :data:`PUBLISHED_CONFIGS` that has rows to a
        ``DatasetDict(train, validation)`` (columns: see the module docstring).

    Raises:
        ValueError: an unknown source, a bad or repeated ``exclude`` spec, a bad fraction, a pairwise family without a
            tie verdict, or an Auto-J prompt that the ``autoj`` template does not re-render byte for byte (names file
            and line).
        RecordError: a malformed source or benchmark file (names file, row and field).
    """
    pair_template, point_template, names = _checked_templates(sources, validation_fraction, pairwise_family)
    report = PublishedBuildReport(
        settings={
            "pairwise_template": f"{pair_template.name}@{pair_template.version}",
            "pointwise_template": f"{point_template.name}@{point_template.version}",
            "response_names": list(names),
            "validation_fraction": validation_fraction,
            "seed": seed,
            "swap": swap,
        }
    )
    benchmarks, specs = _exclusions(exclude)
    records = _read_sources(data_dir, sources, report)
    kept, stats = decontaminate(records, benchmarks)
    report.decontamination = {name: {**specs[name], **entry} for name, entry in stats.items()}
    dropped = Counter(r["source"] for r in records) - Counter(r["source"] for r in kept)
    for source, info in report.sources.items():
        info["decontaminated"] = dropped.get(source, 0)
        info["kept"] = sum(1 for r in kept if r["source"] == source)

    assignment = split_by_question(
        {("published", normalize_question(r["question"])) for r in kept},
        test_fraction=0.0,
        validation_fraction=validation_fraction,
        seed=seed,
    )
    report.questions = dict(sorted(Counter(assignment.values()).items()))

    out = _rows_by_config(kept, assignment, report, point_template, pair_template, names, swap)
    return _as_datasets(out, report), report


def _checked_templates(sources: Sequence[str], validation_fraction: float, pairwise_family: str):
    """``(pairwise template, pointwise template, response names)`` of :func:`build_published_judgment_data`, its
    arguments checked first (ValueError: see there)."""
    unknown = [s for s in sources if s not in PUBLISHED_SOURCES]
    if unknown:
        raise BadInputError(f"unknown source(s) {unknown}; expected some of {tuple(PUBLISHED_SOURCES)}")
    if not 0 <= validation_fraction < 1:
        raise BadInputError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    pair_template = get_template(pairwise_family, "pairwise_reference_free", "en")
    if pair_template.output.kind != "label" or len(pair_template.output.labels or ()) < 3:
        raise BadInputError(f"template {pair_template.name} has no tie verdict; AlpacaEval has ties")
    verdict_text(pair_template.output, 0)  # raises for a format whose verdict opens the critique
    names = _response_names(pair_template.output)
    return pair_template, get_template("autoj", "pointwise_reference_free", "en"), names


def _rows_by_config(kept, assignment, report, point_template, pair_template, names, swap) -> dict[str, dict]:
    """``{config: {split: rows}}``: each kept record as its config's rows (an AlpacaEval pair in both orders with
    ``swap``; an Auto-J critique once) in its question's split; per-source row counts go in ``report``."""
    out: dict[str, dict[str, list]] = {c: {s: [] for s in _PUBLISHED_SPLITS} for c in PUBLISHED_CONFIGS}
    per_source: dict[str, Counter] = {s: Counter() for s in report.sources}
    for record in kept:
        split = assignment[("published", normalize_question(record["question"]))]
        source = record["source"]
        if PUBLISHED_SOURCES[source]["setting"] == "pointwise_reference_free":
            out["pointwise_reference_free"][split].append(_autoj_row(record, point_template))
            per_source[source]["pointwise_reference_free"] += 1
            continue
        for row in _pair_rows(record, source, names, report, swap):
            verdict = verdict_text(pair_template.output, row["label"])
            row["critique"] = f"{row['explanation']}\n\n{verdict}" if row["explanation"] else None
            out["pairwise_preference"][split].append(row)
            per_source[source]["pairwise_preference"] += 1
            if row["critique"] is not None:
                prompt = pair_template.render(row)
                out["pairwise_reference_free"][split].append(
                    {
                        **row,
                        "template": pair_template.name,
                        "template_version": pair_template.version,
                        "messages": _messages(prompt, row["critique"]),
                    }
                )
                per_source[source]["pairwise_reference_free"] += 1
        # explanations are counted once per source row, not per order
    for source, counts in per_source.items():
        report.sources[source]["rows"] = {c: counts[c] for c in PUBLISHED_CONFIGS if counts[c]}
    return out


def _exclusions(exclude: Sequence[str] | Mapping[str, Iterable[str]]) -> tuple[dict, dict]:
    """``({benchmark: questions}, {benchmark: {"format", "path"}})`` from ``--exclude`` specs or a mapping."""
    if isinstance(exclude, Mapping):
        benchmarks = {name: list(questions) for name, questions in exclude.items()}
        return benchmarks, {name: {"format": None, "path": None} for name in benchmarks}
    benchmarks, specs = {}, {}
    for spec in exclude:
        name, fmt, path = parse_exclude(spec)
        if name in benchmarks:
            raise BadInputError(f"exclude={spec!r}: the name {name!r} is given twice")
        benchmarks[name] = benchmark_questions(fmt, path)
        specs[name] = {"format": fmt, "path": path}
    return benchmarks, specs


def _read_sources(data_dir: str | Path, sources: Sequence[str], report: PublishedBuildReport) -> list[dict]:
    """Every usable row of each source, tagged with it; what was read, skipped and relabelled goes in ``report``."""
    from ..loaders.alpacaeval import load_alpacaeval
    from ..loaders.autoj import load_autoj_single

    records = []
    for source in sources:
        skipped: Counter = Counter()
        path = Path(data_dir) / PUBLISHED_SOURCES[source]["path"]
        if source.startswith("alpacaeval"):
            loaded = list(load_alpacaeval(path, skipped=skipped))
            relabelled = {k: skipped.pop(k) for k in list(skipped) if k.startswith("gpt-4 ranked")}
            rows = [r for r in loaded if r["response_1"] != r["response_2"]]
            if len(rows) < len(loaded):
                skipped["identical responses (baseline judged against itself)"] = len(loaded) - len(rows)
        else:
            loaded = rows = list(load_autoj_single(path))
            relabelled = {}
        read = len(loaded) + sum(v for k, v in skipped.items() if k.startswith("missing"))
        report.sources[source] = {
            "read": read,
            "skipped": dict(sorted(skipped.items())),
            "relabelled": relabelled,
            "decontaminated": 0,
            "kept": 0,
            "rows": {},
        }
        records += [{**r, "source": source} for r in rows]
    return records


def _autoj_row(record: dict, template) -> dict:
    """One Auto-J critique as a ``pointwise_reference_free`` row; its prompt re-rendered by ``template`` must be the
    published one, byte for byte."""
    from ..formats import parse_output

    prompt = template.render({QUESTION: record["question"], RESPONSE: record["response"]})
    if prompt[-1]["content"] != record["prompt"]:
        raise BadInputError(f"{record['location']}: the {template.name} template does not reproduce Auto-J's prompt")
    parsed = parse_output(record["critique"], template.output)
    return {
        "id": f"{record['source']}/{Path(record['location']).name}",
        "query_id": record["query_id"],
        "question": record["question"],
        "response": record["response"],
        "score": record["human_score"],
        "critique": record["critique"],
        "explanation": parsed.explanation or None,
        "source": record["source"],
        "scenario": record["scenario"],
        "category": record["category"],
        "source_dataset": record["source_dataset"],
        "template": template.name,
        "template_version": template.version,
        "messages": _messages(prompt, record["critique"]),
    }


def _as_datasets(out: dict[str, dict[str, list]], report: PublishedBuildReport) -> dict[str, datasets.DatasetDict]:
    """``{config: DatasetDict(train, validation)}`` of the configs that have rows (an empty split keeps its
    columns); the row counts go in ``report.rows``."""
    features = {
        "pointwise_reference_free": {**_POINT_FEATURES, **_SFT_FEATURES},
        "pairwise_reference_free": {**_PAIR_FEATURES, **_SFT_FEATURES},
        "pairwise_preference": _PAIR_FEATURES,
    }
    configs = {}
    for config, splits in out.items():
        if not any(splits.values()):
            continue
        feats = datasets.Features(features[config])
        configs[config] = datasets.DatasetDict(
            {
                s: datasets.Dataset.from_list(rows, features=feats)
                if rows
                else datasets.Dataset.from_dict({k: [] for k in feats}, features=feats)
                for s, rows in splits.items()
            }
        )
        report.rows[config] = {s: len(rows) for s, rows in splits.items()}
    return configs
