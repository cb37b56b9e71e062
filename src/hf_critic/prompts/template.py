"""The critic prompt template: a record in, the chat messages a critic model sees out, and the verdict format it asks for.

A :class:`PromptTemplate` turns one record (``question``, ``reference``, ``response`` or ``response_1`` /
``response_2``, see :mod:`hf_critic.core.schema`) into chat messages, and declares in :class:`OutputSpec` the verdict
format it asks for, so that parsing never has to guess. Templates are YAML data files; the keys are listed in
:mod:`hf_critic.prompts` and validated by :func:`parse_template`.
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml

from hf_critic.formats import output_formats

from ..core.errors import BadInputError
from ..core.keys import check_keys
from ..core.schema import RESPONSE, RESPONSE_1, RESPONSE_2, Setting, Task

# Responses may be empty strings: a model that answered nothing is graded, not rejected.
RESPONSE_FIELDS = frozenset({RESPONSE, RESPONSE_1, RESPONSE_2})
LANGUAGES = ("en", "zh")
#: Placeholders of a template whose score scale is configurable (``--score-range``); their defaults are the scale.
SCALE_FIELDS = ("score_low", "score_high")
_REQUIRED_KEYS = ("version", "source", "setting", "language", "fields", "prompt", "output")
_OPTIONAL_KEYS = ("defaults", "system", "required", "models", "license")


class TemplateFieldError(BadInputError):
    """A record lacks a value the template needs (key missing, None, or an empty / blank string).

    A ``ValueError`` (bad data, not a programming error). The message names the template and the field(s);
    callers add the row number. Attributes: ``template`` (template name) and ``fields`` (tuple of field names).
    """

    def __init__(self, template: str, fields: tuple[str, ...]):
        self.template = template
        self.fields = fields
        hint = (
            (
                "; give the criteria with rubric= (a score rubric YAML file, e.g. examples/rubric_helpfulness.yaml) or "
                "a 'rubric' column"
            )
            if "rubric" in fields
            else ""
        )
        super().__init__(f"template {template!r}: missing or empty field(s) {', '.join(map(repr, fields))}{hint}")


@dataclass(frozen=True)
class OutputSpec:
    """The verdict a template asks the critic for, so parsers read it without guessing.

    Attributes:
        kind: ``"score"`` (pointwise grading) or ``"label"`` (pairwise comparison).
        format: a registered verdict format (:func:`hf_critic.formats.output_formats`): ``"rating_brackets"``
            (``[[8]]``), ``"score_dict"`` (``{'Overall Score': 7}``), ``"pair_brackets"`` (``[[A]]``),
            ``"comparison_dict"`` (``{'Overall Comparison Result': 'Assistant 1'}``), or a published critic's own
            format (``"prometheus_result"``, ``"autoj_rating"``, ``"autoj_decision"``, ``"judgelm_scores"``,
            ``"pandalm_first_line"``; each declared by its family in :mod:`hf_critic.formats`).
        score_range: inclusive (low, high) for scores, e.g. ``(1.0, 10.0)``; None for labels.
        dimensions: True when per-dimension scores appear in the output (only with ``score_dict``).
        overall_key: the dict key holding the verdict for the dict formats (``"Overall Score"``, ``"综合得分"``,
            ``"Overall Comparison Result"``, ``"综合比较结果"``); None for the bracket formats.
        labels: for labels, the verdict strings exactly as the prompt asks for them, in the order
            response 1 better, response 2 better, tie (the :mod:`hf_critic.core.schema` labels 0, 1, 2): the text
            inside ``[[...]]`` for ``pair_brackets`` (``("A", "B", "C")``), the dict value for
            ``comparison_dict`` (``("助手1", "助手2", "质量相当")``); two strings for a critic that knows no tie
            (Prometheus 2: ``("A", "B")``); None for scores.
        verdict_prefix: the text the verdict follows in the requested format (``"Rating: [["``, ``"[["``,
            ``"{'Overall Score':"``, ``"{'综合比较结果': '"``), appended to the assistant turn for the probability
            read-out (:mod:`hf_critic.critic.verdicts`); no trailing space (tokenizers glue a space to the verdict, and
            the verdict is also scored with a leading space); ``""`` when the verdict opens the generation (PandaLM,
            JudgeLM's single-answer grading). None: the template has no read-out (JudgeLM's two scores).
        verdicts: the allowed verdict strings after the prefix; default: the integers of ``score_range`` for scores
            (``"1"`` .. ``"10"``), :attr:`labels` for labels. See :meth:`verdict_values`.
    """

    kind: str
    format: str
    score_range: tuple[float, float] | None = None
    dimensions: bool = False
    overall_key: str | None = None
    labels: tuple[str, ...] | None = None
    verdict_prefix: str | None = None
    verdicts: tuple[str, ...] | None = None

    def verdict_values(self) -> dict[str, float]:
        """Allowed verdict string -> its value: the score (float, in ``score_range``) or the label (0, 1, 2).

        Raises:
            ValueError: the template declares no ``verdict_prefix`` (no probability read-out).
        """
        if self.verdict_prefix is None:
            raise BadInputError("the template's output declares no 'verdict_prefix'; use verdict=text")
        if self.kind == "label":
            return {v: float(i) for i, v in enumerate(self.verdicts or self.labels)}
        low, high = self.score_range
        return {v: float(v) for v in self.verdicts or [str(i) for i in range(math.ceil(low), math.floor(high) + 1)]}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> OutputSpec:
        """Build and validate an ``output:`` mapping from a template file.

        Args:
            data: the parsed ``output`` value.
            where: the file (or template) name, used in error messages.

        Raises:
            ValueError: naming ``where`` and the key at fault, for an unknown key, an unknown kind or format,
                a format that does not carry that kind, a missing or empty score range (scores), a range or
                dimensions given for labels, anything but three distinct labels (labels), or a missing or
                superfluous ``overall_key``.
        """
        if not isinstance(data, Mapping):
            raise BadInputError(f"{where}: 'output' must be a mapping")
        keys = {"kind", "format", "score_range", "dimensions", "overall_key", "labels", "verdict_prefix", "verdicts"}
        check_keys(data, keys, f"{where}: output", "a template's output")
        kind, fmt = data.get("kind"), data.get("format")
        if kind not in ("score", "label"):
            raise BadInputError(f"{where}: 'output.kind' must be 'score' or 'label', got {kind!r}")
        formats = output_formats()
        if kind not in formats.get(fmt, ()):
            allowed = [f for f, kinds in formats.items() if kind in kinds]
            raise BadInputError(f"{where}: 'output.format' must be one of {allowed} for kind {kind!r}, got {fmt!r}")
        score_range, labels = data.get("score_range"), data.get("labels")
        dimensions = data.get("dimensions", False)
        if not isinstance(dimensions, bool) or (dimensions and fmt != "score_dict"):
            raise BadInputError(f"{where}: 'output.dimensions' must be a bool, and true only with 'score_dict'")
        if kind == "score":
            ok = isinstance(score_range, (list, tuple)) and len(score_range) == 2
            ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in score_range)
            if not ok or score_range[0] >= score_range[1]:
                raise BadInputError(f"{where}: 'output.score_range' must be [low, high] with low < high")
            score_range = (float(score_range[0]), float(score_range[1]))
            if labels is not None:
                raise BadInputError(f"{where}: 'output.labels' is only for kind 'label'")
        else:
            if score_range is not None:
                raise BadInputError(f"{where}: 'output.score_range' is only for kind 'score'")
            ok = isinstance(labels, (list, tuple)) and len(labels) in (2, 3) and len(set(labels)) == len(labels)
            if not ok or not all(isinstance(v, str) and v for v in labels):
                raise BadInputError(
                    f"{where}: 'output.labels' must be 3 distinct strings (response 1, response 2, tie), or 2 for a "
                    "critic without ties"
                )
            labels = tuple(labels)
        overall_key = data.get("overall_key")
        needs_key = fmt in ("score_dict", "comparison_dict")
        if needs_key != (isinstance(overall_key, str) and bool(overall_key)):
            raise BadInputError(f"{where}: 'output.overall_key' is required for dict formats and only for them")
        prefix, verdicts = data.get("verdict_prefix"), data.get("verdicts")
        if prefix is not None and (not isinstance(prefix, str) or prefix != prefix.rstrip(" ")):
            raise BadInputError(f"{where}: 'output.verdict_prefix' must be a string without a trailing space")
        if verdicts is not None:
            ok = prefix is not None and kind == "score" and isinstance(verdicts, list)
            if not ok or len(set(verdicts)) != len(verdicts) or not all(_number(v) is not None for v in verdicts):
                raise BadInputError(
                    f"{where}: 'output.verdicts' must list distinct numbers as strings (scores, with a prefix)"
                )
            if not all(score_range[0] <= _number(v) <= score_range[1] for v in verdicts):
                raise BadInputError(f"{where}: 'output.verdicts' must lie in 'score_range'")
            verdicts = tuple(verdicts)
        return cls(kind, fmt, score_range, dimensions, overall_key, labels, prefix, verdicts)


def _number(text: object) -> float | None:
    try:
        return float(text) if isinstance(text, str) else None
    except ValueError:
        return None


@dataclass(frozen=True)
class PromptTemplate:
    """One critic prompt for one setting and critique language, loaded from a YAML data file.

    Attributes:
        name: the file stem, e.g. ``"critiquellm_v2_pointwise_referenced_zh"``.
        version: the template's version string (bump it whenever the text changes).
        source: paper and table (or file) the text comes from, and what was adapted.
        setting: the CritiqueLLM v2 §3.1 setting the prompt serves.
        language: ``"en"`` or ``"zh"``: the language the critique is written in (the prompt itself may
            be in another language, as in CritiqueLLM v1's English prompts asking for Chinese critiques).
        fields: every placeholder of ``system`` and ``prompt``; includes all of ``setting.fields``.
        defaults: read-only values for the optional placeholders (those not in ``setting.fields`` nor in
            :attr:`required`).
        system: system message (a format string like ``prompt``), or None for no system message.
        prompt: user message, :meth:`str.format` syntax with literal braces doubled.
        output: the verdict format the prompt asks for.
        required: placeholders outside ``setting.fields`` that have no default and must be filled by every record
            (Eval-Instruct teacher prompts: ``critique_1`` / ``critique_2`` of f_P2P, ``reference`` / ``critique``
            of f_R2RF; the ``rubric`` of Prometheus 2); empty for most critic templates.
        models: Hub ids of the published critic models trained on this prompt (empty for general prompts).
        license: the licence of the prompt's source (and of the models, where they differ), for the record.
    """

    name: str
    version: str
    source: str
    setting: Setting
    language: str
    fields: tuple[str, ...]
    defaults: Mapping[str, str] = field(hash=False)
    system: str | None
    prompt: str
    output: OutputSpec
    required: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    license: str | None = None

    @property
    def scale_configurable(self) -> bool:
        """True when the prompt writes its scale from ``{score_low}`` / ``{score_high}`` (see :meth:`with_scale`)."""
        return SCALE_FIELDS[0] in self.fields

    def with_scale(self, low: int, high: int) -> PromptTemplate:
        """This template asking for (and parsing) scores from ``low`` to ``high`` instead of its default scale.

        Args:
            low, high: inclusive integer bounds, ``low < high``.

        Returns:
            A copy whose ``score_low`` / ``score_high`` defaults and ``output.score_range`` are the new scale (the same
            template when the scale is unchanged).

        Raises:
            ValueError: the template's scale is fixed (no ``{score_low}`` / ``{score_high}`` placeholders: its model
                was trained on one scale), it grades no scores, or the bounds are not integers with ``low < high``.
        """
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise BadInputError(f"a score range needs integers low < high, got {low!r}, {high!r}")
        if (float(low), float(high)) == self.output.score_range:
            return self
        if self.output.kind != "score" or not self.scale_configurable:
            fixed = self.output.score_range
            scale = f"a fixed {fixed[0]:g}-{fixed[1]:g} scale" if fixed else "no score scale (it compares)"
            raise BadInputError(
                f"template {self.name!r} has {scale} (its model was trained on it); a {low}-{high} scale needs a "
                "template with {score_low} / {score_high} placeholders, such as prometheus2's pointwise ones"
            )
        defaults = {**self.defaults, SCALE_FIELDS[0]: str(low), SCALE_FIELDS[1]: str(high)}
        output = dataclasses.replace(self.output, score_range=(float(low), float(high)))
        return dataclasses.replace(self, defaults=MappingProxyType(defaults), output=output)

    def values(self, record: Mapping[str, Any]) -> dict[str, str]:
        """The placeholder values for ``record``: its own for required fields, its own or the default otherwise.

        Args:
            record: any mapping; extra keys are ignored. Non-string values are passed through ``str()``.

        Returns:
            ``{field: text}`` for every name in :attr:`fields`.

        Raises:
            TemplateFieldError: if a required field (one without a default) is missing or None, or blank
                (a blank response is allowed: an empty answer is an answer to judge).
        """
        out, missing = {}, []
        for name in self.fields:
            value = record.get(name)
            blank = isinstance(value, str) and not value.strip() and name not in RESPONSE_FIELDS
            if value is None or blank:
                if name not in self.defaults:
                    missing.append(name)
                    continue
                value = self.defaults[name]
            out[name] = value if isinstance(value, str) else str(value)
        if missing:
            raise TemplateFieldError(self.name, tuple(missing))
        return out

    def render_text(self, record: Mapping[str, Any]) -> str:
        """The user message for ``record`` (see :meth:`values` for how fields are filled).

        Raises:
            TemplateFieldError: if a required field is missing, None or blank.
        """
        return self.prompt.format(**self.values(record))

    def render(self, record: Mapping[str, Any]) -> list[dict[str, str]]:
        """Chat messages for ``record``: ``[{"role": "system", ...}]`` when :attr:`system` is set, then the user turn.

        Returns:
            ``[{"role": "system", "content": str}?, {"role": "user", "content": str}]``.

        Raises:
            TemplateFieldError: if a required field is missing, None or blank.
        """
        values = self.values(record)
        messages = [{"role": "system", "content": self.system.format(**values)}] if self.system is not None else []
        return [*messages, {"role": "user", "content": self.prompt.format(**values)}]


def placeholders(text: str, where: str, key: str) -> set[str]:
    """Names of the ``{name}`` fields in a format string; bare identifiers only, no conversions or specs.

    Raises:
        ValueError: naming ``where`` and ``key``: a malformed format string, or a field that is not a bare name.
    """
    names = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:  # unbalanced braces
        raise BadInputError(f"{where}: {key!r} is not a valid format string ({err}); double literal braces") from err
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise BadInputError(f"{where}: {key!r} has placeholder {{{name}}}; use plain names like {{question}}")
        names.add(name)
    return names


def template_from_mapping(data: Any, name: str, where: str) -> PromptTemplate:
    """Validate a parsed template file and build the :class:`PromptTemplate`.

    Raises:
        ValueError: naming ``where`` and the key at fault: unknown or missing keys, an unknown setting or language,
            undeclared or unused placeholders, bad defaults, or a bad ``output`` spec.
    """
    setting = _check_keys(data, where)
    system, fields = data.get("system"), data["fields"]
    defaults, required = data.get("defaults") or {}, data.get("required") or []
    _check_placeholders(data["prompt"], system, fields, setting, defaults, required, where)
    output = _check_output(data["output"], setting, fields, defaults, where)
    models, license_ = data.get("models") or [], data.get("license")
    if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
        raise BadInputError(f"{where}: 'models' must be a list of model ids")
    if license_ is not None and not isinstance(license_, str):
        raise BadInputError(f"{where}: 'license' must be a string")
    return PromptTemplate(
        name=name,
        version=data["version"],
        source=data["source"].strip(),
        setting=setting,
        language=data["language"],
        fields=tuple(fields),
        defaults=MappingProxyType(dict(defaults)),
        system=system,
        prompt=data["prompt"],
        output=output,
        required=tuple(required),
        models=tuple(models),
        license=license_,
    )


def _check_keys(data: Any, where: str) -> Setting:
    """The template file's keys, each of its type (the prompt's placeholders aside): its setting.

    Raises:
        ValueError: unknown or missing keys, an empty string, an unknown setting or language, or a key of the wrong
            type.
    """
    if not isinstance(data, Mapping):
        raise BadInputError(f"{where}: a template file must be a YAML mapping")
    check_keys(data, (*_REQUIRED_KEYS, *_OPTIONAL_KEYS), where, "a template")
    for key in _REQUIRED_KEYS:
        if key not in data:
            raise BadInputError(f"{where}: missing key {key!r}")
    for key in ("version", "source", "prompt"):
        if not isinstance(data[key], str) or not data[key].strip():
            hint = ' (quote it: version: "1.0")' if key == "version" else ""
            raise BadInputError(f"{where}: {key!r} must be a non-empty string{hint}")
    try:
        setting = Setting.from_name(data["setting"])
    except ValueError as err:
        raise BadInputError(f"{where}: 'setting': {err}") from None
    if data["language"] not in LANGUAGES:
        raise BadInputError(f"{where}: 'language' must be one of {list(LANGUAGES)}, got {data['language']!r}")
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise BadInputError(f"{where}: 'system' must be a string or null")
    fields = data["fields"]
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields) or len(set(fields)) != len(fields):
        raise BadInputError(f"{where}: 'fields' must be a list of distinct names")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping) or not all(isinstance(v, str) for v in defaults.values()):
        raise BadInputError(f"{where}: 'defaults' must map field names to strings")
    required = data.get("required") or []
    if not isinstance(required, list) or not all(isinstance(f, str) for f in required):
        raise BadInputError(f"{where}: 'required' must be a list of distinct field names")
    if len(set(required)) != len(required) or set(required) & (set(defaults) | set(setting.fields)):
        raise BadInputError(
            f"{where}: 'required' must list distinct fields that have no default and are not the setting's"
        )
    return setting


def _check_placeholders(
    prompt: str,
    system: str | None,
    fields: list[str],
    setting: Setting,
    defaults: Mapping,
    required: list,
    where: str,
) -> None:
    """The placeholders of the prompt and system message are exactly ``fields``: the setting's, the ``required``
    ones, and the others each with a default.

    Raises:
        ValueError: an undeclared or unused placeholder, a field of the setting missing, a required field not
            declared, or defaults for other fields than the optional ones.
    """
    used = placeholders(prompt, where, "prompt")
    if system is not None:
        used |= placeholders(system, where, "system")
    if used - set(fields):
        raise BadInputError(
            f"{where}: 'prompt' uses placeholder(s) not declared in 'fields': {sorted(used - set(fields))}"
        )
    if set(fields) - used:
        raise BadInputError(f"{where}: 'fields' declares name(s) the prompt never uses: {sorted(set(fields) - used)}")
    absent = [f for f in setting.fields if f not in fields]
    if absent:
        raise BadInputError(f"{where}: 'fields' lacks {absent}, required by setting {setting.name!r}")
    optional = set(fields) - set(setting.fields) - set(required)
    if set(required) - set(fields):
        raise BadInputError(
            f"{where}: 'required' names field(s) not in 'fields': {sorted(set(required) - set(fields))}"
        )
    if set(defaults) != optional:
        raise BadInputError(
            f"{where}: 'defaults' must give exactly the fields outside setting {setting.name!r} and 'required' "
            f"(here {sorted(optional)}), got {sorted(defaults)}"
        )


def _check_output(spec: Any, setting: Setting, fields: list[str], defaults: Mapping, where: str) -> OutputSpec:
    """The ``output`` spec, of the setting's kind; a configurable scale's fields default to its score range.

    Raises:
        ValueError: a bad spec, a kind that does not fit the setting, or scale fields that disagree with it.
    """
    output = OutputSpec.from_dict(spec, where)
    if (output.kind == "score") != (setting.task is Task.POINTWISE):
        raise BadInputError(f"{where}: 'output.kind' {output.kind!r} does not fit setting {setting.name!r}")
    if set(SCALE_FIELDS) & set(fields):
        scale = tuple(defaults.get(f) for f in SCALE_FIELDS)
        if output.kind != "score" or scale != tuple(str(int(v)) for v in output.score_range):
            raise BadInputError(
                f"{where}: {list(SCALE_FIELDS)} must both be fields of a score template, with defaults equal to "
                f"'output.score_range' written as integers"
            )
    return output


def read_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load(text)``; a syntax error becomes a ``ValueError`` naming ``where``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise BadInputError(f"{where}: not valid YAML ({err})") from err


def parse_template(text: str, name: str, where: str) -> PromptTemplate:
    """A :class:`PromptTemplate` from the text of a template file.

    Args:
        text: the YAML text (keys: see :mod:`hf_critic.prompts`).
        name: the template's name (the file stem).
        where: how error messages name the file.

    Raises:
        ValueError: naming ``where`` and the key at fault (see :func:`template_from_mapping`).
    """
    return template_from_mapping(read_yaml(text, where), name, where)
