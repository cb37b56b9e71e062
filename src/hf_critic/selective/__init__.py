"""Selective judging: a confidence on every verdict, thresholds with a human-agreement guarantee, and cascades of
critics that escalate what one critic is unsure of and abstain where none is sure (Jung, Brahman, Choi, "Trust or
Escalate", ICLR 2025).

* :mod:`.confidence`: ``critique_confidence`` per critic kind (probability read-out, text votes, reward margin,
  recorded verdicts);
* :mod:`.calibration`: fixed-sequence testing with the exact binomial bound, per critic and per cascade, and the
  calibration file;
* :mod:`.claim`: a calibration file's fields checked against each other before any cascade uses it;
* :mod:`.evaluation`: the success rate over random calibration / test splits, coverage, shares, cost;
* :mod:`.risk_coverage`: the risk-coverage curve and its area (AURC), agreement at coverage, coverage at agreement
  (Geifman and El-Yaniv, 2017), and the agreement-coverage curve read from it;
* :mod:`.jury`: a jury of critics' verdicts aggregated into one (vote, mean, a fitted logistic regression).
* :mod:`.logistic`: the one logistic regression (a reward critic's margin confidence, a fitted jury, the
  length-controlled agreement of :mod:`hf_critic.meta_eval.length`).

Running a cascade of critics on data lives in :mod:`hf_critic.selective.cascade` (it drives critics, which stand above this).
"""

from .calibration import (
    CALIBRATION_FORMAT,
    DEFAULT_MIN_ROWS,
    CalibrationFile,
    CriticThreshold,
    as_confidences,
    calibrate_cascade,
    cascade_decisions,
    clopper_pearson_upper,
    data_hash,
    fixed_sequence_test,
    fixed_sequence_threshold,
    keepable_confidences,
    read_calibration,
)
from .claim import check_claim, load_calibration
from .confidence import (
    CONFIDENCE_KINDS,
    add_confidence_kind,
    confidence_kinds,
    confidence_of,
    fit_margin_logistic,
    margin_confidence,
    probability_confidence,
    sample_labels,
    vote_confidence,
)
from .evaluation import selective_figures, split_protocol
from .risk_coverage import agreement_coverage_curve

__all__ = [
    "CALIBRATION_FORMAT",
    "CONFIDENCE_KINDS",
    "DEFAULT_MIN_ROWS",
    "CalibrationFile",
    "CriticThreshold",
    "add_confidence_kind",
    "agreement_coverage_curve",
    "as_confidences",
    "calibrate_cascade",
    "cascade_decisions",
    "check_claim",
    "clopper_pearson_upper",
    "confidence_kinds",
    "confidence_of",
    "data_hash",
    "fit_margin_logistic",
    "fixed_sequence_test",
    "fixed_sequence_threshold",
    "keepable_confidences",
    "load_calibration",
    "margin_confidence",
    "probability_confidence",
    "read_calibration",
    "sample_labels",
    "selective_figures",
    "split_protocol",
    "vote_confidence",
]
