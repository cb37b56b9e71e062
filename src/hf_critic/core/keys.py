"""Unknown keys in the YAML files hf-critic reads are errors: a typo (``option:``, ``recroded:``) or
a key the file cannot hold (a cascade's ``thresholds:``) never silently turns into a default. One line names the file,
each unknown key and the closest known key (:mod:`difflib`)."""

from __future__ import annotations

from .errors import BadInputError

__all__ = ["check_keys", "unknown_keys_message"]


def unknown_keys_message(data, known, where: str, what: str = "") -> str | None:
    """The one-line complaint about ``data``'s keys outside ``known``, each with the closest known key, or None.

    Args:
        data: a parsed mapping (a YAML file's, or one of its sections).
        known: the keys it may hold.
        where: the file (and section) for the message, e.g. ``"cascade.yaml: critics[1]"``.
        what: what the keys belong to, for the message (``"a critic"``); "" for nothing.

    Returns:
        ``"WHERE: unknown key 'thresholds' (did you mean 'threshold'?); KNOWN: a, b"`` (difflib's closest match, cutoff
        0.6), or None when every key is known.
    """
    import difflib

    known = sorted(str(k) for k in known)
    unknown = [str(k) for k in data if str(k) not in known]
    if not unknown:
        return None
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    noun = "key" if len(unknown) == 1 else "keys"
    owner = f" of {what}" if what else ""
    return f"{where}: unknown {noun}{owner} {', '.join(parts)}; known: {', '.join(known)}"


def check_keys(data, known, where: str, what: str = "") -> None:
    """Refuse a mapping holding keys outside ``known`` (a typo never silently becomes a default).

    Raises:
        ValueError: one line naming ``where``, each unknown key, its closest known key, and the known keys
            (:func:`unknown_keys_message`).
    """
    message = unknown_keys_message(data, known, where, what)
    if message:
        raise BadInputError(message)
