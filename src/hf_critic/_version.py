"""The package version (the same string as ``pyproject.toml``'s), on the ground floor so that any module can name it
in a card or a report without importing the package root."""

__version__ = "0.1.0"
