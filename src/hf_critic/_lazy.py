"""Public names a package imports on first use (PEP 562), so that importing the package stays cheap: ``hf_critic``
(``import hf_critic`` loads neither torch nor the critic) and ``hf_critic.critic`` (importing one of its submodules
loads that submodule only)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_names(package: str, names: dict[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` whose ``names`` (name -> module that defines it,
    relative to ``package``, or ``module:attribute`` where the public name differs from the defined one) are imported
    on first access and then kept in ``namespace`` (the package's globals).

    Example:
        >>> __getattr__, __dir__ = lazy_names(__name__, {"Critic": ".core"}, globals())  # doctest: +SKIP
    """

    def __getattr__(name: str):
        """A lazy name, imported from its module on first use.

        Raises:
            AttributeError: any other unknown name.
        """
        if name in names:
            module, _, attribute = names[name].partition(":")
            value = getattr(importlib.import_module(module, package), attribute or name)
            namespace[name] = value  # later accesses skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        """The module's names, the lazy ones included."""
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
