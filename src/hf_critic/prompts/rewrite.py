"""The generator's prompt in the critique-as-feedback loop (CritiqueLLM v1 §4.8, v2 §4.6): rewrite an answer given
a critique. Versioned YAML data files ``prompts/rewrite/rewrite_<language>.yaml`` (en, zh) with keys ``version``,
``source``, ``language``, ``fields`` and ``prompt`` (:meth:`str.format` syntax), like the critic's templates."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from ..core.errors import BadInputError
from ..core.keys import check_keys

__all__ = ["RewritePrompt", "load_rewrite_prompt"]


@dataclass(frozen=True)
class RewritePrompt:
    """A rewrite prompt.

    Attributes:
        name: the file stem (``rewrite_en``) or the user's file path.
        version: bumped whenever the text changes.
        source: where the text comes from.
        language: ``en`` or ``zh``.
        fields: the placeholders, all required: ``question``, ``response``, ``critique``.
        prompt: the user message.
    """

    name: str
    version: str
    source: str
    language: str
    fields: tuple[str, ...]
    prompt: str

    def messages(self, values: dict) -> list[dict[str, str]]:
        """The one-turn conversation the generator answers.

        Args:
            values: a mapping holding every field (extra keys ignored).

        Raises:
            KeyError: a field is missing or None (the message names the prompt and the field).
        """
        missing = [f for f in self.fields if values.get(f) is None]
        if missing:
            raise KeyError(f"rewrite prompt {self.name!r}: missing field(s) {missing}")
        return [{"role": "user", "content": self.prompt.format(**{f: str(values[f]) for f in self.fields})}]


@cache
def load_rewrite_prompt(spec: str = "en") -> RewritePrompt:
    """The built-in prompt of a language (``"en"``, ``"zh"``) or the user's own YAML file with the same keys.

    Raises:
        ValueError: an unknown language, or a file lacking a key / with a placeholder outside ``fields``.
    """
    if spec.endswith((".yaml", ".yml")):
        path, text = Path(spec), Path(spec).read_text(encoding="utf-8")
    elif spec in ("en", "zh"):
        path = Path(f"rewrite_{spec}.yaml")
        text = (importlib.resources.files("hf_critic.prompts") / "rewrite" / path.name).read_text(encoding="utf-8")
    else:
        raise BadInputError(f"rewrite prompt {spec!r}: give a language (en, zh) or a .yaml file")
    data = yaml.safe_load(text)
    if isinstance(data, dict):
        check_keys(data, ("version", "source", "language", "fields", "prompt"), str(path), "a rewrite prompt")
    missing = [k for k in ("version", "source", "language", "fields", "prompt") if k not in (data or {})]
    if missing:
        raise BadInputError(f"{path}: rewrite prompt lacks key(s) {missing}")
    prompt = RewritePrompt(
        name=path.stem if spec in ("en", "zh") else str(path),
        version=str(data["version"]),
        source=str(data["source"]),
        language=str(data["language"]),
        fields=tuple(data["fields"]),
        prompt=str(data["prompt"]),
    )
    try:
        prompt.prompt.format(**dict.fromkeys(prompt.fields, ""))
    except KeyError as err:
        raise BadInputError(f"{path}: placeholder {err} is not in fields {list(prompt.fields)}") from None
    return prompt
