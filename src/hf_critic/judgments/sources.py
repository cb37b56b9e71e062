"""The published judgment sources :func:`~hf_critic.judgments.published.build_published_judgment_data` reads,
with their provenance and licences, and its configs."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


#: The sources :func:`build_published_judgment_data` reads (paths under the real-data folder), with provenance.
PUBLISHED_SOURCES: dict[str, dict[str, str]] = {
    "alpacaeval_cot_gpt4_turbo": {
        "path": "alpacaeval/cot_gpt4_turbo",
        "setting": "pairwise_reference_free",
        "repository": "tatsu-lab/alpaca_eval",
        "commit": "cd543a1",
        "upstream": "results/<model>/alpaca_eval_cot_gpt4_turbo_fn/annotations.json",
        "licence": "CC BY-NC 4.0 (AlpacaEval data; code Apache-2.0)",
        "judge": "GPT-4-turbo (gpt-4-1106-preview), AlpacaEval annotator alpaca_eval_cot_gpt4_turbo_fn",
        "what": "pairwise verdicts (output_1 / output_2 / tie) with a concise explanation",
    },
    "alpacaeval_weighted_gpt4_turbo": {
        "path": "alpacaeval/weighted_gpt4_turbo",
        "setting": "pairwise_reference_free",
        "repository": "tatsu-lab/alpaca_eval",
        "commit": "cd543a1",
        "upstream": "results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json",
        "licence": "CC BY-NC 4.0 (AlpacaEval data; code Apache-2.0)",
        "judge": "GPT-4-turbo (gpt-4-1106-preview), AlpacaEval annotator weighted_alpaca_eval_gpt4_turbo",
        "what": "soft preferences 1 + P(output_2 better) from the judge's token probabilities, no explanation",
    },
    "autoj_single_train": {
        "path": "autoj/training/single_traindata.jsonl",
        "setting": "pointwise_reference_free",
        "repository": "GAIR-NLP/auto-j",
        "commit": "2ae17a3",
        "upstream": "single_traindata.jsonl (single-response training data)",
        "licence": "none stated (research use only)",
        "judge": "GPT-4",
        "what": "single-response critiques ending in 'Rating: [[n]]' (1-10)",
    },
}
#: The configs :func:`build_published_judgment_data` returns.
PUBLISHED_CONFIGS = ("pointwise_reference_free", "pairwise_reference_free", "pairwise_preference")
_PUBLISHED_SPLITS = ("train", "validation")
