"""The glass-box features: names, the paper's definitions and directions, and the table every listing is made from.

:data:`FEATURES` is the one list of features (Huang et al., seed ``001_…``, §2 and Table 1). The ``self-eval``
epilog (:func:`epilog`) and the feature table of ``docs/glassbox.md`` (:func:`markdown_table`) are generated from it;
``tests/glassbox/test_glassbox.py`` checks the docs table and ``python -m hf_critic.glassbox docs/glassbox.md``
rewrites it. Light on purpose (no torch): the CLI reads it to build its help.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import BadInputError

__all__ = [
    "BASIC_FEATURES",
    "CALIBRATABLE_FEATURES",
    "COLUMN_PREFIX",
    "DEFAULT_FEATURES",
    "FEATURES",
    "FeatureInfo",
    "column_name",
    "epilog",
    "markdown_table",
    "update_docs",
    "oriented",
    "resolve_features",
]

COLUMN_PREFIX = "glassbox_"


@dataclass(frozen=True)
class FeatureInfo:
    """Description of one glass-box feature.

    Attributes:
        name: feature name, also the column suffix (``glassbox_<name>``).
        paper_name: the paper's name (Table 1).
        section: paper section or table defining it.
        higher_is_better: the direction the paper argues for (§2: confident = better): True / False, or None
            where it gives none.
        group: what computing it costs: ``basic`` (one forward pass), ``combo`` (basic + a normalisation),
            ``prompt_ensemble`` (one pass per system prompt), ``decoding_ensemble`` (N sampled generations
            plus a pass each), ``attention`` (the basic pass with attention weights).
        value: the definition and its range, in the docs' notation.
        observed_sign: +1 / -1, the sign of the feature's correlation with GPT-4 grades on the SelfEval answers
            in every benchmark x answering-model cell measured (docs/glassbox.md); None when not measured or
            not consistent.
        observed_note: what was measured when ``observed_sign`` is None (empty: nothing).
    """

    name: str
    paper_name: str
    section: str
    higher_is_better: bool | None
    group: str
    value: str
    observed_sign: int | None = None
    observed_note: str = ""


FEATURES: dict[str, FeatureInfo] = {
    f.name: f
    for f in (
        FeatureInfo("sent_prob", "SentProb", "§2.1 Eq. 1", True, "basic", "mean_t log p(y_t), in (-inf, 0] nats", -1),
        FeatureInfo(
            "sent_prob_sum",
            "SentProb as printed (log of the product)",
            "§2.1 Eq. 1",
            True,
            "basic",
            "Σ_t log p(y_t) = log Π_t p(y_t)",
            -1,
        ),
        FeatureInfo(
            "softmax_ent",
            "Softmax-Ent",
            "§2.1 Eq. 2",
            False,
            "basic",
            "mean_t −Σ_v p_t(v) log p_t(v), in [0, log V]",
            +1,
        ),
        FeatureInfo(
            "softmax_var",
            "Softmax-Var, Eq. 3 as printed",
            "§2.1 Eq. 3",
            True,
            "basic",
            "Var_t p(y_t), in [0, 1/4]",
            +1,
        ),
        FeatureInfo(
            "softmax_var_logprob",
            "Softmax-Var, as the prose says",
            "§2.1",
            None,
            "basic",
            "Var_t log p(y_t), in [0, inf)",
            +1,
        ),
        FeatureInfo(
            "softmax_var_vocab",
            "Softmax-Var, as the released code computes it",
            "§2.1 / code",
            True,
            "basic",
            "mean_t Var_v log p_t(v), in [0, inf)",
            +1,
        ),
        FeatureInfo(
            "softmax_combo",
            "Softmax-combo",
            "Table 1",
            True,
            "combo",
            "min-max(Softmax-Ent) + min-max(`softmax_var_vocab`), in [0, 2]",
            +1,
        ),
        FeatureInfo(
            "prm_ensemble_exp",
            "PrmEnsem-Exp (Unt-Exp)",
            "§2.2 Eq. 4",
            True,
            "prompt_ensemble",
            "mean SentProb under the 7 system prompts of Appendix A.1",
            None,
            "not consistent (40 answers)",
        ),
        FeatureInfo(
            "prm_ensemble_var",
            "PrmEnsem-Var (Unt-Var)",
            "§2.2 Eq. 5",
            False,
            "prompt_ensemble",
            "variance of SentProb under the 7 system prompts, in [0, inf)",
            None,
            "not consistent (40 answers)",
        ),
        FeatureInfo(
            "dec_ensemble_exp",
            "DecEnsem-Exp (Unt-Exp)",
            "§2.2 Eq. 4",
            True,
            "decoding_ensemble",
            "mean SentProb of N responses sampled with random top-k (slow: generates)",
            None,
            "not consistent (20 answers)",
        ),
        FeatureInfo(
            "dec_ensemble_var",
            "DecEnsem-Var (Unt-Var)",
            "§2.2 Eq. 5",
            False,
            "decoding_ensemble",
            "variance of SentProb of N sampled responses (slow: generates)",
            None,
            "not consistent (20 answers)",
        ),
        FeatureInfo(
            "attn_ent", "AttnEnt_hl", "§2.3 Eq. 6", None, "attention", "[L][H] list of attention entropies (nats)"
        ),
        FeatureInfo(
            "attn_ent_min",
            "AttnEnt-Min",
            "§2.3 Eq. 7",
            None,
            "attention",
            "min over layers and heads, in [0, log n]",
            None,
            "+ on 40 answers (too few to claim)",
        ),
        FeatureInfo(
            "attn_ent_avg", "AttnEnt-Avg", "§2.3 Eq. 8", None, "attention", "mean over layers and heads, in [0, log n]"
        ),
    )
}

#: Features from one teacher-forced pass over the logits.
BASIC_FEATURES = tuple(n for n, f in FEATURES.items() if f.group == "basic")
#: What :meth:`GlassBoxEvaluator.score` computes when no feature is named.
DEFAULT_FEATURES = ("sent_prob", "softmax_ent", "softmax_var")
#: Features that probability calibration (§3.2) can be applied to: ``<f>_calibrated = f(response) − f(reference)``.
CALIBRATABLE_FEATURES = BASIC_FEATURES

_ALIASES = {
    "sentprob": "sent_prob",
    "softmaxent": "softmax_ent",
    "softmaxentropy": "softmax_ent",
    "softmaxvar": "softmax_var",
    "softmaxvariance": "softmax_var",
    "softmaxcombo": "softmax_combo",
    "decensemexp": "dec_ensemble_exp",
    "decensemvar": "dec_ensemble_var",
    "prmensemexp": "prm_ensemble_exp",
    "prmensemvar": "prm_ensemble_var",
    "prmtensemexp": "prm_ensemble_exp",
    "prmtensemvar": "prm_ensemble_var",
    "attnent": "attn_ent",
    "attnentmin": "attn_ent_min",
    "attnentavg": "attn_ent_avg",
}
_GROUPS = {"basic": BASIC_FEATURES, "default": DEFAULT_FEATURES, "all": tuple(FEATURES)}


def resolve_features(features: str | Iterable[str] | None) -> tuple[str, ...]:
    """Canonical feature names from names, the paper's names, or groups.

    Args:
        features: None (:data:`DEFAULT_FEATURES`), a comma-separated string, or an iterable of names. Accepts
            the names of :data:`FEATURES`, the paper's spellings (``"Softmax-Ent"``, ``"DecEnsem-Var"``,
            ``"AttnEnt-Min"``; case, ``-`` and ``_`` ignored) and the groups ``basic``, ``default``, ``all``.

    Returns:
        Names in :data:`FEATURES`, first-mention order, without duplicates.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if features is None:
        return DEFAULT_FEATURES
    items = features.split(",") if isinstance(features, str) else [p for f in features for p in str(f).split(",")]
    out: list[str] = []
    for item in filter(None, (i.strip() for i in items)):
        if item in FEATURES:
            names: Sequence[str] = (item,)
        elif item.lower() in _GROUPS:
            names = _GROUPS[item.lower()]
        else:
            key = re.sub(r"[\s_\-]+", "", item.lower())
            known = {re.sub(r"_", "", n): n for n in FEATURES} | _ALIASES
            if key not in known:
                raise BadInputError(
                    f"unknown glass-box feature {item!r}; known: {', '.join(FEATURES)} (or basic, all)"
                )
            names = (known[key],)
        out.extend(n for n in names if n not in out)
    if not out:
        raise BadInputError("no glass-box feature given")
    return tuple(out)


def column_name(feature: str) -> str:
    """Output column of a feature: ``glassbox_<feature>`` (e.g. ``glassbox_softmax_ent``)."""
    return COLUMN_PREFIX + feature


def oriented(values: Sequence[float] | np.ndarray, feature: str, direction: str = "observed") -> np.ndarray:
    """Values of ``feature`` turned so that higher = better, ready for a correlation metric.

    Args:
        values: feature values, shape ``(n,)``; None becomes NaN.
        feature: a name from :data:`FEATURES` (a ``glassbox_`` prefix and ``_calibrated`` / ``_ref`` suffixes
            are accepted and keep the base feature's direction).
        direction: ``"observed"`` (default: :attr:`FeatureInfo.observed_sign`, falling back to the paper's
            direction where none was measured) or ``"paper"`` (:attr:`FeatureInfo.higher_is_better`).

    Returns:
        float64 array ``(n,)``: ``values`` or ``-values``; unchanged where no direction is known.

    Raises:
        ValueError: unknown feature or direction.
    """
    base = re.sub(r"_(calibrated|ref)$", "", feature.removeprefix(COLUMN_PREFIX))
    if base not in FEATURES:
        raise BadInputError(f"unknown glass-box feature {feature!r}")
    if direction not in ("observed", "paper"):
        raise BadInputError(f"direction must be 'observed' or 'paper', got {direction!r}")
    info = FEATURES[base]
    sign = -1 if info.higher_is_better is False else 1
    if direction == "observed" and info.observed_sign is not None:
        sign = info.observed_sign
    arr = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return sign * arr


# --------------------------------------------------------------------------------------------------
# Listings generated from FEATURES
# --------------------------------------------------------------------------------------------------

_DIRECTION = {True: "higher = better", False: "lower = better", None: "—"}  # by "higher is better"
_TABLE_START = "<!-- features table: generated from hf_critic.glassbox.FEATURES -->"
_TABLE_END = "<!-- end of features table -->"


def _observed(info: FeatureInfo) -> str:
    if info.observed_sign is None:
        return info.observed_note or "—"
    text = _DIRECTION[info.observed_sign > 0]
    disagrees = info.higher_is_better is not None and (info.observed_sign > 0) != info.higher_is_better
    return f"**{text}**" if disagrees else text


def markdown_table() -> str:
    """The feature table of ``docs/glassbox.md``: one row per :data:`FEATURES` entry.

    Columns: name (``--features``), the paper's name, section, definition and range, the paper's direction, the
    observed direction (bold where the two disagree).

    Returns:
        Markdown text, a header and ``len(FEATURES)`` rows, ending in a newline.
    """
    lines = ["| name (`--features`) | paper | § | value | paper | observed |", "|---|---|---|---|---|---|"]
    for f in FEATURES.values():
        paper = _DIRECTION[f.higher_is_better]
        section = f.section.removeprefix("§")
        lines.append(f"| `{f.name}` | {f.paper_name} | {section} | {f.value} | {paper} | {_observed(f)} |")
    return "\n".join(lines) + "\n"


def update_docs(path: str | Path) -> bool:
    """Replace the table between the two marker comments of ``path`` with :func:`markdown_table`.

    Returns:
        True when the file changed.

    Raises:
        ValueError: the markers are missing.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if _TABLE_START not in text or _TABLE_END not in text:
        raise BadInputError(f"{path}: no {_TABLE_START!r} ... {_TABLE_END!r} markers")
    head, rest = text.split(_TABLE_START, 1)
    new = f"{head}{_TABLE_START}\n{markdown_table()}{_TABLE_END}{rest.split(_TABLE_END, 1)[1]}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def epilog() -> str:
    """The ``hf-critic self-eval`` help epilog: every feature with its paper name, section and definition."""
    width = max(map(len, FEATURES))
    differ = ", ".join(f.name for f in FEATURES.values() if "**" in _observed(f))
    rows = "\n".join(f"  {f.name:<{width}}  {f.paper_name} ({f.section}): {f.value}" for f in FEATURES.values())
    return (
        'Features (Huang et al., "Self-Evaluation of Large Language Model based on Glass-box Features"); each adds\n'
        "a column glassbox_<feature>:\n"
        f"{rows}\n"
        "The paper's spellings (Softmax-Ent, DecEnsem-Var, ...) and the groups `basic`, `default` and `all` work\n"
        "too. Directions: hf_critic.glassbox.FEATURES gives the paper's (confident = better) and the one observed\n"
        f"against GPT-4 grades (docs/glassbox.md); they differ for {differ}. The features are most meaningful\n"
        "when --model is the model that wrote the responses (self-evaluation). Records need question + response,\n"
        "or FastChat `turns` + `responses`, or chat `messages`; map your column names with --columns.\n"
    )
