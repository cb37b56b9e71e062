"""The kinds of critic by name: the one place that maps a kind, as cascade files spell it, to its class.

The built-in kinds are named here by where their class lives and imported on first use (naming a kind loads no
engine; the classes stand above the protocol they implement): a generative critic and its read-out (``generative``)
and a critic behind an OpenAI-compatible server (``served``) are :class:`~hf_critic.critic.Critic`, a reward model
(``reward``) and one behind a vLLM pooling server (``pooling``) are
:class:`~hf_critic.critic.reward_critic.RewardCritic`, all built from ``compare``'s options; ``recorded`` verdicts,
the baselines that need no model (``longer-wins``, ``label-prior``: :mod:`hf_critic.critics.baselines`) and a ``jury``
have their own classes. A new kind is one module: a
:class:`~hf_critic.critics.protocol.CriticKind` subclass with a ``from_spec(options, where)`` classmethod, and one
:func:`register` call; a cascade file then names it ``kind: NAME`` with its ``options:``.
"""

from __future__ import annotations

import difflib
import importlib

from ..core.errors import BadInputError
from ..selective import add_confidence_kind
from .protocol import CriticKind

__all__ = ["critic_class", "kinds", "register"]

#: The built-in kinds: name -> ``module:class``, imported on first use.
_BUILT_IN = {
    "generative": "hf_critic.critic.core:Critic",
    "reward": "hf_critic.critic.reward_critic:RewardCritic",
    "served": "hf_critic.critic.core:Critic",
    "pooling": "hf_critic.critic.reward_critic:RewardCritic",
    "recorded": "hf_critic.selective.cascade:RecordedVerdicts",
    "longer-wins": "hf_critic.critics.baselines:LongerWins",
    "jury": "hf_critic.critics.jury:Jury",
    "label-prior": "hf_critic.critics.baselines:LabelPrior",
}
_REGISTERED: dict[str, type[CriticKind]] = {}


def register(name: str, cls: type[CriticKind]) -> type[CriticKind]:
    """Name a kind of critic: ``cls`` (a :class:`~hf_critic.critics.protocol.CriticKind` subclass) under ``name``,
    which it takes as its :attr:`~hf_critic.critics.protocol.CriticKind.kind`. Registering a name again
    replaces its class (a reloaded module).

    Its ``confidence_kinds`` become confidence kinds a calibration file may name
    (:func:`~hf_critic.selective.add_confidence_kind`).

    Returns:
        ``cls``.

    Raises:
        ValueError: an empty name, a built-in kind's name, or a class that does not implement the protocol.
    """
    if not isinstance(name, str) or not name.strip():
        raise BadInputError(f"a critic kind needs a non-empty name, got {name!r}")
    if name in _BUILT_IN:
        raise BadInputError(f"critic kind {name!r} is built in; name the new kind otherwise")
    if not (isinstance(cls, type) and issubclass(cls, CriticKind)):
        raise BadInputError(f"critic kind {name!r}: {cls!r} does not subclass hf_critic.critics.protocol.CriticKind")
    for confidence in cls.confidence_kinds:
        add_confidence_kind(confidence)
    cls.kind = name
    _REGISTERED[name] = cls
    return cls


def kinds() -> list[str]:
    """Every kind's name, the built-in ones first."""
    return [*_BUILT_IN, *_REGISTERED]


def critic_class(name: str, where: str = "critic") -> type[CriticKind]:
    """The class of the kind ``name``.

    Raises:
        ValueError: an unknown kind (one line naming ``where``, the name, the closest known one and every kind).
    """
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _BUILT_IN:
        close = difflib.get_close_matches(str(name), kinds(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise BadInputError(f"{where}: unknown critic kind {name!r}{hint}; the kinds are {', '.join(kinds())}")
    module, attribute = _BUILT_IN[name].split(":")
    return getattr(importlib.import_module(module), attribute)
