"""Hub dataset card templates (Jinja) that the Eval-Instruct pipeline renders and pushes.

Installed as ``hf_critic._dataset_cards`` (package-dir mapping in ``pyproject.toml``); located by
:func:`hf_critic.eval_instruct.hub.default_card_template`.
"""
