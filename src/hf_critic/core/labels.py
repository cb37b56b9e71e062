"""Pairwise label vocabulary: the codes, every spelling judges and datasets use for them, and swapping.

The ground floor for everything that reads or writes a pairwise verdict: loaders (gold labels in a dataset's own
spelling), parsing (the verdict words inside a critique), meta-evaluation (agreement, consistency) and Eval-Instruct
(swap augmentation). Codes as in the published CritiqueLLM and Auto-J files (CritiqueLLM v2 §3.1):
:data:`RESPONSE_1_WINS` = 0, :data:`RESPONSE_2_WINS` = 1, :data:`TIE` = 2; an unparsed verdict is None in a record
and :data:`UNPARSED` (-1) in a code array, never a tie.

* :data:`LABEL_ALIASES` / :func:`normalize_labels` / :func:`check_labels`: whole-label spellings ("Assistant 1",
  "response_2", "[[C]]", "tie", a dataset's own label map) read into codes;
* :data:`VERDICT_WORDS`: the words a critique's verdict slot holds (``[[A]]``, ``[[1]]``, ``平局``), for the parser;
* :data:`CHOICE_LETTERS`: the option letters of multiple-choice preferences (CriticBench's ``A`` / ``B`` / ``C``);
* :func:`swap_label` / :func:`swap_codes` / :func:`swap_critique`: a verdict, a code array or a critique's text given
  on the swapped pair (response 2 shown first) mapped to the other order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .errors import BadInputError

__all__ = [
    "CHOICE_LETTERS",
    "check_labels",
    "LABEL_ALIASES",
    "LABEL_NAMES",
    "normalize_labels",
    "RESPONSE_1_WINS",
    "RESPONSE_2_WINS",
    "swap_codes",
    "swap_critique",
    "swap_label",
    "TIE",
    "UNPARSED",
    "VERDICT_WORDS",
]

# As in the published CritiqueLLM and Auto-J files: 0 = response 1 is better, 1 = response 2 is better, 2 = tie.
RESPONSE_1_WINS, RESPONSE_2_WINS, TIE = 0, 1, 2
#: The codes' names: the keys of a pairwise verdict distribution and the ``--label-map`` targets.
LABEL_NAMES = {RESPONSE_1_WINS: "response_1", RESPONSE_2_WINS: "response_2", TIE: "tie"}


def swap_label(label: int | None) -> int | None:
    """Map a verdict given on the swapped pair (response 2 shown first) back to the original order.

    Args:
        label: 0, 1, 2 (see :data:`LABEL_NAMES`) or None for an unparsed verdict.

    Returns:
        1 for 0, 0 for 1, 2 for 2; None stays None (unparsed is never turned into a verdict).

    Raises:
        ValueError: for any other value.
    """
    if label is None:
        return None
    if label not in LABEL_NAMES:
        raise BadInputError(f"pairwise label must be 0, 1 or 2, got {label!r}")
    return {RESPONSE_1_WINS: RESPONSE_2_WINS, RESPONSE_2_WINS: RESPONSE_1_WINS, TIE: TIE}[label]


def swap_codes(codes: np.ndarray) -> np.ndarray:
    """Vectorised :func:`swap_label` over a code array of shape ``(n,)``: 0 <-> 1; 2 and -1 (unparsed) unchanged."""
    return np.where(
        codes == RESPONSE_1_WINS, RESPONSE_2_WINS, np.where(codes == RESPONSE_2_WINS, RESPONSE_1_WINS, codes)
    )


#: The verdict slot's words in a critique (``[[A]]``, ``[[1]]``, ``[RESULT] B``, ``平局``), lower case, for
#: :mod:`hf_critic.parsing`: A / 1 = response 1, B / 2 = response 2, C / tie (and its Chinese spellings) = tie.
VERDICT_WORDS: dict[str, int] = {
    "a": RESPONSE_1_WINS,
    "1": RESPONSE_1_WINS,
    "b": RESPONSE_2_WINS,
    "2": RESPONSE_2_WINS,
    "c": TIE,
    "tie": TIE,
    "质量相当": TIE,
    "平局": TIE,
    "相当": TIE,
}

#: Multiple-choice preference letters (CriticBench's comparison items): A = response 1, B = response 2, C = tie.
CHOICE_LETTERS: dict[str, int] = {"A": RESPONSE_1_WINS, "B": RESPONSE_2_WINS, "C": TIE}


#: Code :func:`normalize_labels` gives an unparsed verdict (None / NaN).
UNPARSED = -1


def _alias_table() -> dict[str, int]:
    table: dict[str, int] = {}
    for code, position, letter in ((RESPONSE_1_WINS, "1", "a"), (RESPONSE_2_WINS, "2", "b")):
        for word in ("assistant", "response", "output", "model", "answer", "system"):
            table[word + position] = code
            table[word + letter] = code
        table[letter] = code
    table.update(first=RESPONSE_1_WINS, win=RESPONSE_1_WINS, second=RESPONSE_2_WINS, lose=RESPONSE_2_WINS)
    table.update(c=TIE, tie=TIE, draw=TIE, equal=TIE, same=TIE)
    return table


#: Accepted label spellings after normalisation (lower case; spaces, ``_``, ``-``, brackets, quotes and a
#: trailing ``.`` removed), mapped to the schema codes. So ``"Assistant 1"``, ``"response_1"``,
#: ``"[[A]]"``, ``"Output (a)"``, ``"first"``, ``"win"`` → 0; ``"Assistant 2"``, ``"response_2"``,
#: ``"B"``, ``"second"``, ``"lose"`` → 1; ``"tie"``, ``"[[C]]"``, ``"draw"``, ``"equal"`` → 2.
#: ``win`` / ``lose`` are from response 1's point of view. Digit strings are handled by
#: :func:`normalize_labels`'s ``digits`` argument, not by this table.
LABEL_ALIASES: dict[str, int] = _alias_table()

_STRIP = re.compile(r"[\s_\-\[\]()'\"`.]+")


def _label_of(value: Any, digits: str) -> int:
    """Code of one distinct value (called once per distinct value, not per row); -2 when unknown."""
    if isinstance(value, (bool, np.bool_)):
        return -2
    if isinstance(value, (int, np.integer)):
        return int(value) if 0 <= value <= 2 else -2
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() and 0 <= value <= 2 else -2
    if isinstance(value, str):
        key = _STRIP.sub("", value.lower())
        if key.isdigit():
            if digits == "label":
                return int(key) if key in ("0", "1", "2") else -2
            return {"1": RESPONSE_1_WINS, "2": RESPONSE_2_WINS}.get(key, -2)
        return LABEL_ALIASES.get(key, -2)
    return -2


def _map_key(value: Any) -> str | None:
    """The text a value is looked up by in a label map: integral numbers as digits, strings stripped, lower case."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return str(int(value))
    if isinstance(value, str):
        return value.strip().lower()
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_labels(values: Sequence[Any] | None, name: str = "labels") -> list[Any] | None:
    """Check that ``values`` are labels before anything casts them, for the ``evaluate`` module's inputs.

    ``evaluate`` casts inputs to the declared feature type, which would turn the label 1.7 into 1 and crash on
    NaN; this runs first. Accepted: ints 0 / 1 / 2 (integral floats such as 2.0 become ints), strings, and
    None / NaN (unparsed or missing, returned as None). Everything is then read by :func:`normalize_labels`.

    Args:
        values: the labels as passed in, shape ``(n,)``, or None.
        name: the argument's name for messages (``predictions``, ``references``, ``swapped_predictions``).

    Returns:
        The values with NaN as None and integral floats as ints; None stays None.

    Raises:
        ValueError: a non-integral or out-of-range number (0.5, 1.7, 3), a boolean, anything that is neither a
            number nor a string, or strings mixed with numbers, naming the index and the value.
    """
    if values is None:
        return None
    out: list[Any] = []
    kind = None  # "str" or "number": the first non-missing value's
    for i, value in enumerate(values):
        if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
            out.append(None)
            continue
        if isinstance(value, (bool, np.bool_)):
            raise BadInputError(f"{name}[{i}] = {value!r}: booleans are not pairwise labels")
        if isinstance(value, str):
            this = "str"
        elif _is_number(value):
            if not float(value).is_integer() or not 0 <= value <= 2:
                raise BadInputError(f"{name}[{i}] = {value!r} is not a pairwise label (0, 1, 2 or a label string)")
            this, value = "number", int(value)
        else:
            raise BadInputError(f"{name}[{i}] = {value!r} is not a pairwise label (0, 1, 2 or a label string)")
        if kind is not None and this != kind:
            raise BadInputError(f"{name}[{i}] = {value!r} mixes strings and numbers: one label convention per input")
        kind = this
        out.append(value)
    return out


def normalize_labels(
    values: Sequence[Any] | np.ndarray,
    *,
    name: str = "labels",
    digits: Literal["label", "position"] = "label",
    label_map: Mapping[Any, Any] | None = None,
) -> np.ndarray:
    """Map pairwise verdicts to the schema codes 0 / 1 / 2, unparsed to :data:`UNPARSED` (-1).

    Mapping (CritiqueLLM v2 §3.1 and Auto-J label conventions; 0 = response 1 better, 1 = response 2
    better, 2 = tie):

    * ints 0, 1, 2 (and floats 0.0, 1.0, 2.0) are the codes themselves; 0.5, 1.7, 3 are errors;
    * digit strings: with ``digits="label"`` (default) ``"0"``, ``"1"``, ``"2"`` are the codes, as when
      an int column was read as text; with ``digits="position"`` ``"1"`` / ``"2"`` name the winning
      response (→ 0 / 1), as judges that answer ``[[1]]`` / ``[[2]]`` do, and ``"0"`` is an error;
    * words, see :data:`LABEL_ALIASES`: ``"Assistant 1"`` / ``"response_1"`` / ``"A"`` / ``"[[A]]"``
      → 0; ``"Assistant 2"`` / ``"response_2"`` / ``"B"`` → 1; ``"tie"`` / ``"C"`` / ``"draw"`` → 2
      (case, spaces, underscores, hyphens, brackets and quotes are ignored);
    * None, NaN and ``pd.NA`` → -1 (unparsed: never silently a tie; callers count it);
    * booleans are errors, and so are strings mixed with numbers under ``digits="position"`` (is ``1`` the code
      1 or the position 1?).

    With a ``label_map`` (a dataset's own convention, e.g. PandaLM's ``{"0": "tie", "1": "response_1", "2":
    "response_2"}``), every value that is not missing must be a key of the map, compared as text (the integer
    ``1``, the float ``1.0`` and the string ``" 1"`` all match the key ``"1"``; case is ignored); the map's
    values are read as above with ``digits="label"``. A value that is no key is an error, never passed through.

    Args:
        values: the labels, shape ``(n,)``.
        name: what to call the argument in error messages.
        digits: how to read digit strings, see above (ignored for values mapped by ``label_map``).
        label_map: ``{value in the data: label}``; see above.

    Returns:
        int64 array of shape ``(n,)`` with values in {-1, 0, 1, 2}.

    Raises:
        ValueError: for any other value (bools, 3, 0.5, "maybe", a list, a value missing from ``label_map``, a map
            value that is no label, strings mixed with numbers under ``digits="position"``), naming the value and
            its index.
    """
    if digits not in ("label", "position"):
        raise BadInputError(f"digits must be 'label' or 'position', got {digits!r}")
    arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise BadInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "b":
        raise BadInputError(f"{name}[0] = {arr[0]!r}: booleans are not pairwise labels")
    if label_map is None and arr.dtype.kind in "iuf":  # fast path: numeric codes
        return _numeric_codes(arr, name)
    try:
        codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    except TypeError:  # an unhashable value: a list or an object from a JSON row
        i = next(i for i, v in enumerate(arr) if not isinstance(v, Hashable))
        raise BadInputError(f"{name}[{i}] = {arr[i]!r} is not a pairwise label (0, 1, 2 or a label string)") from None
    uniques = uniques.tolist() if hasattr(uniques, "tolist") else list(uniques)

    def first(k: int) -> int:
        return int(np.flatnonzero(codes == k)[0])

    if label_map is not None:
        return _mapped_codes(uniques, label_map, name, first)[codes]
    kinds = [isinstance(u, str) for u in uniques]
    if digits == "position" and any(kinds) and any(_is_number(u) for u in uniques):
        k = next(k for k, u in enumerate(uniques) if _is_number(u) != _is_number(uniques[0]))
        raise BadInputError(
            f"{name}[{first(k)}] = {uniques[k]!r} mixes numbers and strings (first value {uniques[0]!r}): "
            "one convention per column, or give a label map"
        )
    mapped = np.array([_label_of(u, digits) for u in uniques] + [UNPARSED], dtype=np.int64)
    bad = np.flatnonzero(mapped == -2)
    if len(bad):
        i = first(int(bad[0]))
        raise BadInputError(
            f"{name}[{i}] = {arr[i]!r} is not a pairwise label; use 0/1/2 or one of the spellings in "
            "hf_critic.core.labels.LABEL_ALIASES (e.g. 'Assistant 1', 'response_2', 'tie')"
        )
    return mapped[codes]  # codes == -1 (NA) picks the appended UNPARSED


def _numeric_codes(arr: np.ndarray, name: str) -> np.ndarray:
    """:func:`normalize_labels` of a numeric array: 0 / 1 / 2 kept, NaN -> :data:`UNPARSED`, anything else an error."""
    v = arr.astype(np.float64)
    bad = np.isfinite(v) & ~np.isin(v, (0.0, 1.0, 2.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise BadInputError(f"{name}[{i}] = {arr[i]!r} is not a pairwise label (0, 1, 2)")
    return np.where(np.isfinite(v), v, UNPARSED).astype(np.int64)


def _mapped_codes(uniques: list, label_map: Mapping[Any, Any], name: str, first) -> np.ndarray:
    """The code of each distinct value through ``label_map`` (see :func:`normalize_labels`), then :data:`UNPARSED`
    for the missing ones (index -1); ``first(k)`` is the row of the ``k``-th distinct value, for messages."""
    lookup = {_map_key(k) if not isinstance(k, str) else k.strip().lower(): v for k, v in label_map.items()}
    targets = {k: _label_of(v, "label") for k, v in lookup.items()}
    wrong = [k for k, code in targets.items() if code == -2]
    if wrong:
        raise BadInputError(f"label map: {lookup[wrong[0]]!r} (for {wrong[0]!r}) is not a pairwise label")
    mapped_list = []
    for k, u in enumerate(uniques):
        key = _map_key(u)
        if key not in targets:
            raise BadInputError(
                f"{name}[{first(k)}] = {u!r} is not in the label map (its keys: {', '.join(map(repr, lookup))})"
            )
        mapped_list.append(targets[key])
    return np.array(mapped_list + [UNPARSED], dtype=np.int64)


# The leading lookahead lets the regex engine skip, by one character test, every position that cannot start a name
# (3x faster on a long critique).
_SWAP = re.compile(
    r"(?=[AaRr助回答\[])"
    r"(?:(?P<en>(?<![A-Za-z])(?:Assistant|assistant|ASSISTANT|Response|response|Answer|answer)\s?)(?P<en_n>[12AB])(?![A-Za-z0-9])"
    r"|(?P<zh>助手|回答|答案)(?P<zh_n>[12一二])(?![0-9])"
    r"|\[\[(?P<br>[AB])\]\])"
)
_SWAPPED = {"1": "2", "2": "1", "A": "B", "B": "A", "一": "二", "二": "一"}


def swap_critique(text: str) -> str:
    """Exchange the two responses' names in a pairwise critique (Auto-J's swap augmentation, used by CritiqueLLM v2
    §3.3: "swapping the order of two generated texts and exchanging the corresponding contents in critiques").

    Swapped in one pass: ``Assistant 1`` <-> ``Assistant 2`` (also ``Assistant A/B``, ``Response 1/2``,
    ``Answer 1/2``, any case), ``助手1`` <-> ``助手2`` (also ``回答``, ``答案``, ``一/二``) and ``[[A]]`` <-> ``[[B]]``;
    the final dict's value goes with them, so the verdict follows the swapped order and a tie stays a tie.

    Example:
        >>> swap_critique("Assistant 1 is vaguer than Assistant 2. {'Overall Comparison Result': 'Assistant 2'}")
        "Assistant 2 is vaguer than Assistant 1. {'Overall Comparison Result': 'Assistant 1'}"
    """

    def repl(m: re.Match) -> str:
        if m.group("en_n"):
            return m.group("en") + _SWAPPED[m.group("en_n")]
        if m.group("zh_n"):
            return m.group("zh") + _SWAPPED[m.group("zh_n")]
        return f"[[{_SWAPPED[m.group('br')]}]]"

    return _SWAP.sub(repl, text)
