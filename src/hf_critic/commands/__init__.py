"""CLI sub-commands. Each module exposes ``register(subparsers)``; heavy imports stay inside the handlers.

Options that several commands take are declared once in :mod:`hf_critic.commands.options`.
"""
