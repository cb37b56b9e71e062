"""hf-critic: LLM-as-critic evaluation in the Hugging Face ecosystem.

``import hf_critic`` stays cheap (standard library only): :class:`~hf_critic.critic.Critic` is imported on first use,
so ``from hf_critic import Critic`` works without loading torch and transformers for ``hf_critic.__version__``.
"""

from __future__ import annotations

from ._version import __version__
from .meta_eval.modules import install_metrics, metric_path  # stdlib-only module: cheap to import

__all__ = ["Critic", "__version__", "install_metrics", "metric_path"]

# Public names imported on first access (PEP 562): name -> module that defines it.
_LAZY = {"Critic": ".critic"}


def __getattr__(name: str):
    """``hf_critic.Critic`` (and ``from hf_critic import Critic``): imported from :mod:`hf_critic.critic` on first use.

    Raises:
        AttributeError: any other unknown name.
    """
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later accesses skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted(set(globals()) | set(_LAZY))
