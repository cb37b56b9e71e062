"""The two errors of reading and writing: bad input data (:class:`RecordError`) and an output that cannot or must not
be written (:class:`OutputError`)."""

from __future__ import annotations

from ..core.errors import BadInputError


class RecordError(BadInputError):
    """Bad input data: the message names the source, the row (0-based) or line (1-based), and the field."""


class OutputError(BadInputError):
    """An output that cannot or must not be written: the message names the path and the fix."""
