"""The one generator of command-line options: argparse options from the fields of an option dataclass (as TRL's
``HfArgumentParser`` builds its parsers), and the dataclass read back from the parsed options.

The option dataclasses are declared where they belong: the critic's in :class:`~hf_critic.critic.config.CriticConfig`,
:class:`~hf_critic.critic.decoding.DecodingConfig` and :mod:`hf_critic.critics.options`, the commands' own in
:mod:`hf_critic.commands.option_groups`. A value is converted by :func:`~hf_critic.critic.config.field_converter`, the
function a critic spec (a cascade file) converts through, so a flag and a spec key mean the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.errors import BadInputError
from ..critic.config import OptionValueError, field_converter

__all__ = ["add_dataclass_args", "add_option", "argparse_type", "dataclass_from_args"]


def add_dataclass_args(
    parser,
    cls: type,
    *,
    only: Iterable[str] | None = None,
    defaults: Mapping[str, object] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    show_default: bool = False,
) -> None:
    """One option per field of the dataclass ``cls``, generated from the fields (as TRL's parser does).

    The flag is ``--<field-name>`` (or ``metadata["flag"]``); the help, ``choices``, ``metavar``, ``type`` and
    ``action`` come from the field's metadata; a bool field without an ``action`` becomes a
    ``BooleanOptionalAction``; otherwise the type is the field's annotation (``X | None`` reads as ``X``). A field
    without a default is a required option; a ``default_factory`` gives each parse its own default.
    ``args.<field_name>`` holds the value. Options are added in the order of the fields.

    Args:
        parser: a parser or argument group.
        cls: the dataclass.
        only: field names to offer (default: all).
        defaults: per field name, a default replacing the dataclass's.
        overrides: per field name, ``add_argument`` keyword arguments replacing the generated ones (a command's own
            help text, ``action="append"``).
        show_default: append ``(default: %(default)s)`` to each help text.

    Raises:
        KeyError: a name in ``only``, ``defaults`` or ``overrides`` that is not a field, or an override for a field
            not offered.
        ValueError: a field without help text, or with ``type=bool`` (it would read "False" as True).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = (set(only or ()) | set(defaults or {}) | set(overrides or {})) - set(fields)
    if unknown:
        raise KeyError(f"not {cls.__name__} fields: {sorted(unknown)}")
    if only is not None and set(overrides or {}) - set(only):
        raise KeyError(f"overrides for options not added: {sorted(set(overrides) - set(only))}")
    hints = typing.get_type_hints(cls)
    for name, f in fields.items():
        if only is None or name in only:
            kwargs = _field_kwargs(f, hints[name], defaults or {}, show_default)
            kwargs.update((overrides or {}).get(name, {}))
            flag = f.metadata.get("flag", "--" + name.replace("_", "-"))
            parser.add_argument(flag, **kwargs)


def add_option(parser, cls: type, name: str, **override: Any) -> None:
    """The one option of field ``name`` of ``cls``, with a command's own ``add_argument`` settings ``override``
    (its help, default, ``required``): ``add_option(group, ReportOptions, "title", default="Meta-evaluation")``.

    Raises:
        KeyError: ``name`` is not a field of ``cls``.
    """
    add_dataclass_args(parser, cls, only=[name], overrides={name: override} if override else None)


def _field_kwargs(f: dataclasses.Field, hint, defaults: Mapping[str, object], show_default: bool) -> dict[str, Any]:
    """``add_argument`` keyword arguments of one dataclass field (see :func:`add_dataclass_args`).

    Raises:
        ValueError: no help text in the metadata, or ``type=bool``.
    """
    meta = {k: v for k, v in f.metadata.items() if k not in ("flag", "type")}
    if not meta.get("help"):
        raise BadInputError(f"field {f.name!r} needs help text in its metadata")
    if f.metadata.get("type") is bool:
        raise BadInputError(f"field {f.name!r}: type=bool reads 'False' as True; use a bool annotation")
    kwargs: dict[str, Any] = {"dest": f.name}
    kwargs["help"] = meta.pop("help") + (" (default: %(default)s)" if show_default else "")
    if f.name in defaults:
        kwargs["default"] = defaults[f.name]
    elif f.default is not dataclasses.MISSING:
        kwargs["default"] = f.default
    elif f.default_factory is not dataclasses.MISSING:
        kwargs["default"] = f.default_factory()
    else:
        kwargs["required"] = True
    convert = field_converter(f, hint)
    if "action" in meta:
        kwargs["action"] = meta.pop("action")
    elif convert is None:
        kwargs["action"] = argparse.BooleanOptionalAction
    if convert is not None:
        kwargs["type"] = argparse_type(convert)
    kwargs.update((k, v) for k, v in meta.items() if v is not None)
    return kwargs


@functools.cache
def argparse_type(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert`` as an argparse ``type``: its range errors (:class:`~hf_critic.critic.config.OptionValueError`)
    printed as they are after the flag; other ValueErrors read as argparse's "invalid <name> value"."""
    if convert in (int, str, float):
        return convert

    def parse(text: str):
        try:
            return convert(text)
        except OptionValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = convert.__name__
    return parse


def dataclass_from_args(cls: type, args: argparse.Namespace, **replace: Any):
    """An instance of the dataclass ``cls`` from the parsed options of :func:`add_dataclass_args` (a field the command
    does not offer keeps its default; ``replace`` sets fields outright).

    Raises:
        TypeError: a field without a default that neither ``args`` nor ``replace`` gives.
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **replace})
