"""The critic templates (``prompts/templates/<family>_<setting>_<language>.yaml`` for the built-in families) and how a
template is chosen: by family, setting and language (:func:`get_template`), by name or file (:func:`load_template`), or
from either kind of spec (:func:`resolve_template`, what the critic and training use). Which families exist, and which
templates each has, is declared in :mod:`hf_critic.formats` (one module per family).
"""

from __future__ import annotations

import importlib.resources
from functools import cache
from pathlib import Path

from hf_critic.formats import families, get_family

from ..core.errors import BadInputError
from ..core.schema import Setting
from .template import PromptTemplate, parse_template

__all__ = [
    "get_template",
    "list_families",
    "list_templates",
    "load_template",
    "read_data",
    "resolve_template",
    "yaml_names",
]

_TEMPLATE_DIR = "templates"


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
    """The registered template families (:func:`hf_critic.formats.families` with templates), sorted."""
    return sorted(f.name for f in families() if f.templates)


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
    """The template ``<family>_<setting.name>_<language>`` of a registered family (:mod:`hf_critic.formats`).

    Args:
        family: a name from :func:`list_families`, e.g. :data:`hf_critic.formats.DEFAULT_FAMILY`, ``"mtbench"``.
        setting: a :class:`~hf_critic.core.schema.Setting` or its name (``"pairwise_reference_free"``).
        language: ``"en"`` or ``"zh"``: the language of the critique.

    Returns:
        The :class:`PromptTemplate`, read from the family's ``template_dir`` (the built-ins are cached).

    Raises:
        ValueError: for an unknown family (the message lists the families), or a family without a template
            for that setting and language (the message lists the templates the family has).
    """
    setting = Setting.from_name(setting) if isinstance(setting, str) else setting
    declared = get_family(family)
    if not declared.templates:
        raise BadInputError(f"unknown template family {family!r}; available families: {list_families()}")
    name = f"{family}_{setting.name}_{language}"
    if not declared.has_template(setting.name, language):
        have = declared.template_names()
        raise BadInputError(f"family {family!r} has no template for {setting.name!r} in {language!r}; it has: {have}")
    if declared.template_dir is None:
        return _builtin(name)
    path = Path(declared.template_dir) / f"{name}.yaml"
    return parse_template(path.read_text(encoding="utf-8"), name, str(path))


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
            raise BadInputError(
                f"template {template.name!r} is for {template.setting.name}, but the data calls for "
                f"{setting.name}; pass a template for that setting or a family name"
            )
        return template
    return get_template(str(spec), setting, language)
