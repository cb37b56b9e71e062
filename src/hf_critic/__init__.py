"""hf-critic: LLM-as-critic evaluation in the Hugging Face ecosystem."""

__version__ = "0.1.0"

from .meta_eval.modules import install_metrics, metric_path  # noqa: E402  (stdlib-only module: cheap to import)

__all__ = ["__version__", "install_metrics", "metric_path"]
