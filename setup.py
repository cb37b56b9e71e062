"""The package list only (everything else is in pyproject.toml, which cannot add its mapped folders to a `find`).

The library is ``src/hf_critic/**``; ``metrics/`` and ``dataset_cards/`` of the checkout ship inside it as
``hf_critic._metrics`` and ``hf_critic._dataset_cards`` (``package-dir`` in pyproject.toml), one metric module per
sub-package, so a checkout and an install read the same single copy.
"""

from setuptools import find_namespace_packages, setup

CACHES = ["__pycache__", "*.__pycache__", "*.__pycache__.*"]
setup(
    packages=[
        *find_namespace_packages("src", include=["hf_critic*"], exclude=CACHES),
        "hf_critic._metrics",
        *(f"hf_critic._metrics.{name}" for name in find_namespace_packages("metrics", exclude=CACHES)),
        "hf_critic._dataset_cards",
    ]
)
