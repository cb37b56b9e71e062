"""The ``evaluate`` metric modules of hf-critic, one folder each (``<name>/<name>.py``, README, app, requirements).

Installed as ``hf_critic._metrics`` (package-dir mapping in ``pyproject.toml``); located by
:func:`hf_critic.meta_eval.modules.metric_path`.
"""
