"""Which rows of two files are the same rows: how recorded verdicts find the rows they judged and how ``meta-eval``
pairs two critique files.

Rows are matched by ``id`` where both files have ids, and an id is trusted only when both files' rows of that id hold
the same text (:func:`id_conflicts`): an id that holds another pair in the other file is a conflict, counted and named,
never a match. Without ids, rows are matched by their exact text after whitespace normalisation only
(:func:`text_identity`): no Unicode folding, so "x² + 2x + 1" and "x2 + 2x + 1" are different rows, as are full-width
and ASCII letters. Rows that find no partner are counted and named (:func:`name_rows`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["id_conflicts", "name_rows", "text_identity"]

_WHITESPACE = re.compile(r"\s+")
#: How many rows a message names before it says "and N more".
NAMED_ROWS = 5


def text_identity(*texts: object) -> str:
    """The identity of a row by its texts: each text's whitespace runs made one space and its ends stripped, nothing
    else changed (no case or Unicode folding); None counts as "".

    Args:
        texts: the row's texts in a fixed order (e.g. question, response_1, response_2).

    Returns:
        A 64-character SHA-256 hex digest: equal exactly when every text is equal after whitespace normalisation.
    """
    parts = [_WHITESPACE.sub(" ", "" if t is None else str(t)).strip() for t in texts]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def id_conflicts(pairs: Sequence[tuple[int, int]], keys_a: Sequence[str], keys_b: Sequence[str]) -> list[int]:
    """The pairs matched by id whose rows hold different texts.

    Args:
        pairs: ``(row in a, row in b)`` matched by their id.
        keys_a, keys_b: each file's row identities (:func:`text_identity`).

    Returns:
        The positions in ``pairs`` of the conflicting ones, in order.
    """
    return [k for k, (i, j) in enumerate(pairs) if keys_a[i] != keys_b[j]]


def name_rows(rows: Sequence[int], ids: Sequence | None = None, limit: int = NAMED_ROWS) -> str:
    """Rows named for a message: ``"ids 'a', 'b' and 3 more"`` by their id when the file has ids, else ``"rows 3, 7"``
    (0-based row numbers).

    Args:
        rows: the rows' positions in their file.
        ids: the file's ids (None: the rows have none).
        limit: how many to name before "and N more".

    Returns:
        The phrase; "" for no rows.
    """
    if not len(rows):
        return ""
    shown = [repr(str(ids[r])) if ids is not None else str(r) for r in rows[:limit]]
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    noun = ("id" if ids is not None else "row") + ("s" if len(rows) > 1 else "")
    return f"{noun} {', '.join(shown)}{more}"
