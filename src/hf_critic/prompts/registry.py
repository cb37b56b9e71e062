"""The built-in critic templates (``prompts/templates/<family>_<setting>_<language>.yaml``) and how a template
is chosen: by family, setting and language (:func:`get_template`), by name or file (:func:`load_template`), or from
either kind of spec (:func:`resolve_template`, what the critic and training use).
"""

from __future__ import annotations

import importlib.resources
import re
from functools import cache
from pathlib import Path

from hf_critic.schema import SETTINGS, Setting

from .template import LANGUAGES, PromptTemplate, parse_template

__all__ = [
    "AUTO",
    "DEFAULT_FAMILY",
    "KNOWN_CRITICS",
    "family_for_model",
    "published_chat_format",
    "get_template",
    "list_families",
    "list_templates",
    "load_template",
    "read_data",
    "resolve_template",
    "yaml_names",
]

DEFAULT_FAMILY = "critiquellm_v2"
_TEMPLATE_DIR = "templates"
#: ``--template auto``: the family is picked from the model's id or folder name.
AUTO = "auto"
#: A published critic's name as it appears in its Hub ids, folder and GGUF file names (lower case, letters and digits
#: only) -> the family of the prompts it was trained on. Every id a family's templates list under ``models`` maps back
#: to that family (tests/test_families.py).
KNOWN_CRITICS = {
    "prometheus": "prometheus2",
    "autoj": "autoj",
    "judgelm": "judgelm",
    "pandalm": "pandalm",
    "critiquellm": "critiquellm_6b",
}


def yaml_names(folder: str) -> list[str]:
    """Stems of the ``.yaml`` files in the package data folder ``hf_critic/prompts/<folder>``, sorted."""
    files = importlib.resources.files("hf_critic.prompts").joinpath(folder).iterdir()
    return sorted(p.name[: -len(".yaml")] for p in files if p.name.endswith(".yaml"))


def read_data(folder: str, name: str) -> str:
    """The text of the package data file ``hf_critic/prompts/<folder>/<name>.yaml``."""
    return importlib.resources.files("hf_critic.prompts").joinpath(folder, f"{name}.yaml").read_text(encoding="utf-8")


def list_templates() -> list[str]:
    """Names (file stems) of the built-in templates, sorted, e.g. ``"mtbench_pairwise_referenced_en"``."""
    return yaml_names(_TEMPLATE_DIR)


def list_families() -> list[str]:
    """Template families among the built-ins: names with the ``_<setting>_<language>`` suffix removed, sorted."""
    suffixes = [f"_{s.name}_{lang}" for s in SETTINGS for lang in LANGUAGES]
    return sorted({n[: -len(sfx)] for n in list_templates() for sfx in suffixes if n.endswith(sfx)})


@cache
def _builtin(name: str) -> PromptTemplate:
    return parse_template(read_data(_TEMPLATE_DIR, name), name, f"built-in template {name}.yaml")


def load_template(name_or_path: str | Path) -> PromptTemplate:
    """Load a built-in template by name, or a user's own YAML template file by path.

    Args:
        name_or_path: a name from :func:`list_templates`, or a path to a ``.yaml`` / ``.yml`` file laid out
            like the built-ins (see the module docstring). The template's name is the file stem.

    Returns:
        The validated :class:`PromptTemplate` (built-ins are cached; templates are immutable).

    Raises:
        FileNotFoundError: if it is neither a built-in name nor an existing file (the message lists built-ins).
        ValueError: naming the file and the key at fault: invalid YAML, unknown or missing keys, an unknown
            setting or language, a placeholder not declared in ``fields``, a declared field the prompt never
            uses, a setting field missing from ``fields``, defaults not matching the optional fields, or a bad
            ``output`` spec (see :meth:`OutputSpec.from_dict`).
    """
    if isinstance(name_or_path, str) and name_or_path in list_templates():
        return _builtin(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no built-in template or file {str(name_or_path)!r}; built-in templates: {list_templates()}"
        )
    return parse_template(path.read_text(encoding="utf-8"), path.stem, str(path))


def get_template(family: str, setting: Setting | str, language: str = "en") -> PromptTemplate:
    """The built-in template ``<family>_<setting.name>_<language>``.

    Args:
        family: a name from :func:`list_families`, e.g. :data:`DEFAULT_FAMILY`, ``"mtbench"``.
        setting: a :class:`~hf_critic.schema.Setting` or its name (``"pairwise_reference_free"``).
        language: ``"en"`` or ``"zh"``: the language of the critique.

    Raises:
        ValueError: for an unknown family (the message lists the families), or a family without a template
            for that setting and language (the message lists the templates the family has).
    """
    setting = Setting.from_name(setting) if isinstance(setting, str) else setting
    if family not in list_families():
        raise ValueError(f"unknown template family {family!r}; available families: {list_families()}")
    name = f"{family}_{setting.name}_{language}"
    if name not in list_templates():
        candidates = {f"{family}_{s.name}_{lang}" for s in SETTINGS for lang in LANGUAGES}
        have = [n for n in list_templates() if n in candidates]
        raise ValueError(f"family {family!r} has no template for {setting.name!r} in {language!r}; it has: {have}")
    return _builtin(name)


def resolve_template(spec: str | Path, setting: Setting, language: str = "en") -> PromptTemplate:
    """The template for ``setting`` named by ``spec``: a family, a built-in template name or a YAML file.

    Args:
        spec: a family from :func:`list_families` (the template of that family for ``setting`` and ``language``),
            a name from :func:`list_templates`, or a path to a ``.yaml`` / ``.yml`` template file.
        setting: the setting of the records to render.
        language: ``"en"`` or ``"zh"``; used with a family only (a named template or file has its own).

    Returns:
        The :class:`PromptTemplate`.

    Raises:
        ValueError: a named template or file written for another setting, or an unknown family.
        FileNotFoundError: a ``.yaml`` path that does not exist.
    """
    if Path(spec).suffix in (".yaml", ".yml") or spec in list_templates():
        template = load_template(spec)
        if template.setting != setting:
            raise ValueError(
                f"template {template.name!r} is for {template.setting.name}, but the data calls for "
                f"{setting.name}; pass a template for that setting or a family name"
            )
        return template
    return get_template(str(spec), setting, language)


def family_for_model(model: str | Path | None) -> str | None:
    """The template family of a known published critic, from its Hub id, folder or file name; None when unknown.

    The last path component is compared in lower case with everything but letters and digits removed, so
    ``prometheus-eval/prometheus-7b-v2.0``, ``/models/Prometheus_7B``, ``GAIR/autoj-13b``, ``auto-j-13b.Q4_K_M.gguf``
    and ``BAAI/JudgeLM-7B-v1.0`` are recognised (see :data:`KNOWN_CRITICS`).

    Args:
        model: a Hub id, a local folder or file, or None (the embedded default critic: None).

    Returns:
        A family name from :func:`list_families`, or None.
    """
    if model is None:
        return None
    name = re.sub(r"[^a-z0-9]", "", Path(str(model).rstrip("/\\")).name.lower())
    return next((family for key, family in KNOWN_CRITICS.items() if key in name), None)


@cache
def _chat_formats() -> dict[str, dict[str, str]]:
    from .template import read_yaml

    return read_yaml(
        importlib.resources.files("hf_critic.prompts").joinpath("chat_formats.yaml").read_text(encoding="utf-8"),
        "built-in chat_formats.yaml",
    )["formats"]


def published_chat_format(model: str | Path | None) -> tuple[str, str] | None:
    """The published input wrapper of a known critic: ``(family, Jinja chat template)``, or None.

    The wrappers (``prompts/chat_formats.yaml``, each with its source) are the formats the critics were trained and
    evaluated with: Llama 2's ``[INST] ... [/INST]`` for Auto-J, FastChat's Mistral format with the system line for
    Prometheus 2, the raw prompt after BOS for JudgeLM and PandaLM.

    Args:
        model: a Hub id, folder or file name (see :func:`family_for_model`).
    """
    family = family_for_model(model)
    formats = _chat_formats()
    return (family, formats[family]["template"]) if family in formats else None
