"""The glass-box paper's correlation tables on the SelfEval release (Huang et al., seed ``001``, Tables 1 and 2).

The paper's Table 1 correlates each glass-box feature with the GPT-4 grades over all graded turns of one model on one
benchmark (160 answers on MT-Bench, 80 on Vicuna-Bench); :func:`precomputed_table` does the same for the released
feature files (read by :mod:`hf_critic.loaders.selfeval`) through
:func:`hf_critic.meta_eval.correlation.text_level_correlation` (one group: the plain Pearson / Spearman / Kendall
tau-b), beside the paper's figures (:data:`PAPER_TABLE1`, :data:`PAPER_TABLE2`). The feature files do not always hold
the answers GPT-4 graded (MT-Bench llama2-7b-chat: 2 of 80 first-turn answers agree), see :func:`answers_match`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..loaders.selfeval import BENCHES, FEATURE_FILES, MODELS, load_feature_file, load_judgments
from .correlation import text_level_correlation

__all__ = ["PAPER_TABLE1", "PAPER_TABLE2", "answers_match", "correlations", "precomputed_table"]

#: Table 1 of the paper (Pearson, Kendall, Spearman) per (model, benchmark, row).
PAPER_TABLE1: dict[tuple[str, str, str], tuple[float, float, float]] = {}
_T1 = {
    "llama2-7b-chat": {
        "SentProb": (0.2034, 0.2099, 0.3067, 0.4970, 0.2304, 0.3192),
        "Softmax-Ent": (0.4666, 0.4395, 0.5978, 0.3730, 0.2441, 0.3223),
        "Softmax-Var": (0.5612, 0.4695, 0.6239, 0.6506, 0.4534, 0.5894),
        "Softmax-combo": (0.5879, 0.4638, 0.6222, 0.6209, 0.4352, 0.5650),
        "DecEnsem-Exp": (0.4105, 0.3877, 0.3526, 0.5606, 0.3545, 0.5051),
        "DecEnsem-Var": (0.3535, 0.3215, 0.3023, 0.2504, 0.1615, 0.3197),
        "PrmEnsem-Exp": (0.4242, 0.3054, 0.3692, 0.5381, 0.3359, 0.4675),
        "PrmEnsem-Var": (0.1695, 0.1692, 0.2441, 0.1321, 0.0895, 0.1250),
        "AttnEnt-Min": (0.1444, 0.1150, 0.1563, 0.1182, 0.1161, 0.1584),
        "AttnEnt-Avg": (0.1361, 0.1094, 0.1475, 0.0977, 0.1181, 0.1600),
        "GPT-3.5-Turbo": (0.4342, 0.3982, 0.5033, 0.6695, 0.3858, 0.4330),
        "Auto-J": (0.5024, 0.4092, 0.5112, 0.5233, 0.3403, 0.3773),
    },
    "vicuna-7b": {
        "SentProb": (0.2350, 0.1706, 0.2547, 0.4606, 0.2545, 0.3051),
        "Softmax-Ent": (0.4690, 0.3003, 0.4291, 0.6379, 0.2851, 0.3855),
        "Softmax-Var": (0.4632, 0.3171, 0.4403, 0.6146, 0.2879, 0.3772),
        "Softmax-combo": (0.5358, 0.3578, 0.5022, 0.6856, 0.3276, 0.4270),
        "DecEnsem-Exp": (0.4518, 0.2645, 0.2168, 0.5099, 0.5137, 0.6548),
        "DecEnsem-Var": (0.2091, 0.1476, 0.1622, 0.3246, 0.2931, 0.3014),
        "PrmEnsem-Exp": (0.4414, 0.2677, 0.2229, 0.4897, 0.4873, 0.6312),
        "PrmEnsem-Var": (0.2353, 0.0875, 0.1239, 0.2028, 0.1860, 0.3201),
        "AttnEnt-Min": (0.0463, 0.0307, 0.0530, 0.2161, 0.1888, 0.2459),
        "AttnEnt-Avg": (0.0355, 0.0234, 0.0043, 0.2254, 0.1981, 0.2567),
        "GPT-3.5-Turbo": (0.4812, 0.4358, 0.5353, 0.6946, 0.5901, 0.6733),
        "Auto-J": (0.5673, 0.4302, 0.5405, 0.6003, 0.4818, 0.5345),
    },
}
for _model, _rows in _T1.items():
    for _row, _v in _rows.items():
        PAPER_TABLE1[(_model, "mt_bench", _row)] = _v[:3]
        PAPER_TABLE1[(_model, "vicuna_bench", _row)] = _v[3:]


#: Table 2 of the paper (Vicuna-Bench, Pearson, Kendall, Spearman) per (model, row, strategy), strategy in
#: ``""`` (plain), ``"illustration"`` (§3.1), ``"calibration"`` (§3.2).
PAPER_TABLE2: dict[tuple[str, str, str], tuple[float, float, float]] = {
    ("llama2-7b-chat", "Softmax-Ent", ""): (0.3730, 0.2441, 0.3223),
    ("llama2-7b-chat", "Softmax-Ent", "illustration"): (0.3678, 0.2429, 0.3370),
    ("llama2-7b-chat", "Softmax-Ent", "calibration"): (0.3930, 0.2631, 0.3490),
    ("llama2-7b-chat", "Softmax-Var", ""): (0.6506, 0.4534, 0.5894),
    ("llama2-7b-chat", "Softmax-Var", "illustration"): (0.6580, 0.4472, 0.5865),
    ("llama2-7b-chat", "Softmax-Var", "calibration"): (0.6617, 0.4360, 0.5625),
    ("vicuna-7b", "Softmax-Ent", ""): (0.6379, 0.2851, 0.3855),
    ("vicuna-7b", "Softmax-Ent", "illustration"): (0.6375, 0.2982, 0.3960),
    ("vicuna-7b", "Softmax-Ent", "calibration"): (0.6441, 0.3177, 0.4240),
    ("vicuna-7b", "Softmax-Var", ""): (0.6146, 0.2879, 0.3772),
    ("vicuna-7b", "Softmax-Var", "illustration"): (0.6247, 0.2976, 0.3903),
    ("vicuna-7b", "Softmax-Var", "calibration"): (0.6526, 0.3099, 0.4133),
}


def answers_match(joined: pd.DataFrame) -> int:
    """How many rows of a judgments ⋈ feature-file join graded exactly the answer the feature was computed on."""
    return int(
        sum(a[-1].strip() == (b or "").strip() for a, b in zip(joined["answers"], joined["answer"], strict=True))
    )


def correlations(values: Iterable[float], scores: Iterable[float]) -> dict[str, float]:
    """Pearson, Kendall (tau-b) and Spearman between feature values and grades, via the project's metric.

    Uses :func:`hf_critic.meta_eval.correlation.text_level_correlation` with no query ids (one group = the plain coefficient
    over all rows, as Table 1 computes it). Rows with a missing value or grade are dropped.

    Returns:
        ``pearson``, ``kendall``, ``spearman`` and ``n`` (rows used).
    """
    x = np.asarray(list(values), dtype=np.float64)
    y = np.asarray(list(scores), dtype=np.float64)
    res = text_level_correlation(x, y)
    n = int((np.isfinite(x) & np.isfinite(y)).sum())
    return {"pearson": res["pearson"], "kendall": res["kendall"], "spearman": res["spearman"], "n": n}


def _minmax(v: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(v), np.nanmax(v)
    return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)


def precomputed_table(selfeval_dir: str | Path, benches: Iterable[str] = BENCHES) -> pd.DataFrame:
    """Correlation of every released feature file with the GPT-4 grades (the paper's Table 1 protocol).

    Each file is joined with the judgments of its model on (question_id, turn); all graded turns are pooled.
    Softmax-combo is added as the min-max normalised sum of the Softmax-Ent and Softmax-Var files (the release's
    ``normalize``), each taken in the direction it is published in (both correlate positively in Table 1).

    Returns:
        One row per (bench, model, feature): ``file``, ``what`` (what the released code computed), ``n``
        (rows used), ``n_nan`` (non-finite feature values dropped), ``n_unparsed`` (grades -1 dropped),
        ``duplicates`` (file rows dropped), ``n_matched`` (rows whose file answer is the graded answer),
        ``pearson``, ``kendall``, ``spearman``, and the paper's ``paper_pearson`` / ``paper_kendall`` /
        ``paper_spearman`` where Table 1 has the row.
    """
    root = Path(selfeval_dir)
    out = []
    for bench in benches:
        judgments = load_judgments(root, bench)
        for model in MODELS:
            jm = judgments[judgments.model == model]
            per_feature: dict[str, pd.DataFrame] = {}
            for suffix, (feature, what) in FEATURE_FILES.items():
                path = root / bench / "model_answer" / f"{model}-{suffix}.jsonl"
                if not path.is_file():
                    continue
                ff = load_feature_file(path)
                joined = jm.merge(ff, on=["question_id", "turn"], how="inner")
                per_feature[feature] = joined
                out.append(_row(bench, model, feature, path.name, what, joined, ff.attrs["duplicates"]))
            if "Softmax-Ent" in per_feature and "Softmax-Var" in per_feature:
                e, v = per_feature["Softmax-Ent"], per_feature["Softmax-Var"]
                both = e.merge(
                    v[["question_id", "turn", "value", "answer"]], on=["question_id", "turn"], suffixes=("_e", "_v")
                )
                both["value"] = _minmax(both["value_e"].to_numpy()) + _minmax(both["value_v"].to_numpy())
                both["answer"] = both["answer_e"]
                out.append(
                    _row(
                        bench,
                        model,
                        "Softmax-combo",
                        "entropy + variance files",
                        "min-max(ent) + min-max(var)",
                        both,
                        0,
                    )
                )
    return pd.DataFrame(out)


def _row(bench, model, feature, file, what, joined: pd.DataFrame, duplicates: int) -> dict:
    values = joined["value"].to_numpy(dtype=np.float64)
    scores = joined["score"].to_numpy(dtype=np.float64)
    res = correlations(values, scores)
    paper = PAPER_TABLE1.get((model, bench, feature), (math.nan,) * 3)
    return {
        "bench": bench,
        "model": model,
        "feature": feature,
        "file": file,
        "what": what,
        "n": res["n"],
        "n_nan": int((~np.isfinite(values)).sum()),
        "n_unparsed": int((~np.isfinite(scores)).sum()),
        "duplicates": duplicates,
        "n_matched": answers_match(joined),
        "pearson": res["pearson"],
        "kendall": res["kendall"],
        "spearman": res["spearman"],
        "paper_pearson": paper[0],
        "paper_kendall": paper[1],
        "paper_spearman": paper[2],
    }
