"""``python -m hf_critic.glassbox docs/glassbox.md``: rewrite the feature table of the docs from ``FEATURES``."""

import sys

from .features import update_docs

for doc in sys.argv[1:]:
    print(f"{doc}: {'updated' if update_docs(doc) else 'up to date'}")
