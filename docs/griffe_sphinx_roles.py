"""A griffe extension (mkdocs.yml, ``extensions:`` of the Python handler): the Sphinx roles of hf-critic's docstrings
(``:func:`name```, ``:class:``, ``:mod:``, ``:meth:``, ``:attr:``, ``:data:``, ``:exc:``, ``:obj:``) become
cross-reference links on the API pages, instead of literal text.

Each role's target is resolved as Python would in the docstring's own scope (the object's members, its module's
names and imports, then its parents), then as a module path relative to the object's package (``:mod:`.confidence```,
``:mod:`grouped```) and as an absolute ``hf_critic`` path. A resolved target becomes an *optional* autorefs reference
(``<autoref identifier=... optional>``): mkdocs-autorefs links it to the page that documents the object, or leaves its
code span where no page does. A target outside hf-critic (``datasets.Dataset``) or not found stays a code span. The
docstrings in ``src/`` are not changed; only what mkdocstrings renders.

``~name`` shows the last component only (Sphinx's spelling); ``title <target>`` shows the title.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(mod|class|func|data|meth|attr|exc|obj):`([^`]+)`")
ROOT = "hf_critic"


def _exists(collection, path: str):
    """The object at ``path`` of the loaded packages, or None."""
    try:
        return collection.get_member(path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _scopes(obj):
    """The object and its parents, innermost first."""
    while obj is not None:
        yield obj
        obj = obj.parent


def resolve(obj, target: str) -> str | None:
    """The full hf_critic path ``target`` names when written in ``obj``'s docstring, or None."""
    collection = obj.modules_collection
    name = target.lstrip(".")
    if not name:
        return None
    first, _, rest = name.partition(".")
    candidates = []
    if not target.startswith("."):
        candidates.append(name)  # absolute: hf_critic.meta_eval.grouped
    try:
        base = obj.resolve(first)  # the docstring's scope: members, imports, parents
    except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
        pass
    else:
        candidates.append(f"{base}.{rest}" if rest else base)
    for scope in _scopes(obj):  # a module path relative to the package: .confidence, grouped, critic.core
        if scope.is_module:
            candidates.append(f"{scope.path}.{name}")
    candidates.append(f"{ROOT}.{name}")
    for path in candidates:
        if (path == ROOT or path.startswith(ROOT + ".")) and _exists(collection, path) is not None:
            return path
    # Last: the one object of the package whose path ends with the name, or with its tail (a lazily re-exported
    # ``hf_critic.critic.Critic.grade`` is ``hf_critic.critic.core.Critic.grade``).
    index = _index(collection)
    parts = name.split(".")
    last = len(parts) if parts[0] == ROOT or len(parts) == 1 else len(parts) - 1  # str.format is not a format()
    for start in range(last):
        found = index.get(".".join(parts[start:]), ())
        if len(found) == 1:
            return found[0]
    return None


_INDEXES: dict[int, dict[str, list[str]]] = {}


def _index(collection) -> dict[str, list[str]]:
    """Every dotted tail (``Critic.grade``, ``core.Critic.grade``...) of every hf_critic object path, to the paths."""
    key = id(collection)
    if key not in _INDEXES:
        index: dict[str, list[str]] = {}
        root = _exists(collection, ROOT)
        for obj in _walk(root) if root is not None else ():
            parts = obj.path.split(".")
            for start in range(1, len(parts)):
                index.setdefault(".".join(parts[start:]), []).append(obj.path)
        _INDEXES[key] = index
    return _INDEXES[key]


def render(obj, role: str, text: str) -> str:
    """One role's replacement: an optional autorefs reference where the target resolves, a code span otherwise."""
    title = None
    if text.endswith(">") and " <" in text:  # `title <target>`
        title, _, text = text[:-1].partition(" <")
    text = text.lstrip("!")
    short = text.startswith("~")
    target = text.lstrip("~")
    shown = title or (target.rsplit(".", 1)[-1] if short else target.lstrip("."))
    path = resolve(obj, target.removesuffix("()"))
    code = f"<code>{html.escape(shown)}</code>"
    if path is None:
        return code
    return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'


def convert(obj, text: str) -> str:
    """``text`` (a docstring of ``obj``) with every Sphinx role replaced."""
    return ROLE.sub(lambda m: render(obj, m.group(1), m.group(2)), text)


def _walk(obj):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded hf_critic package (see the module docstring)."""

    def on_package(self, *, pkg, **kwargs) -> None:
        if pkg.name != ROOT:
            return
        for obj in _walk(pkg):
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = convert(obj, obj.docstring.value)
