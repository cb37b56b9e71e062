"""hf-critic: LLM-as-critic evaluation in the Hugging Face ecosystem.

``import hf_critic`` stays cheap (standard library only): :class:`~hf_critic.critic.Critic` is imported on first use,
so ``from hf_critic import Critic`` works without loading torch and transformers for ``hf_critic.__version__``;
:func:`~hf_critic.critics.specs.load_cascade` reads a cascade file into its critics, without the command line.
"""

from __future__ import annotations

import os

# OpenMP threads that spin while they wait starve a shared CPU: under a second busy process, a 1,000-token prefill at
# 2 threads took 5.4 s spinning and 3.9 s passive (2.0 s quiet either way; docs/performance.md). It must be set before
# torch loads its OpenMP runtime, hence here; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._lazy import lazy_names
from ._version import __version__
from .meta_eval.modules import metric_path  # stdlib-only module: cheap to import

__all__ = ["Critic", "__version__", "install_metrics", "load_cascade", "metric_path"]

# Public names imported on first access (PEP 562): name -> module that defines it.
_LAZY = {
    "Critic": ".critic",
    "install_metrics": ".reports.metric_modules",
    "load_cascade": ".critics.specs",
}
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
