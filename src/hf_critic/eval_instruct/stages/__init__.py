"""The Eval-Instruct stages, each a function from ``datasets.Dataset`` to ``datasets.Dataset``, by what they do:
:mod:`.queries` (1-3), :mod:`.responses` (4-5), :mod:`.critiques` (the teacher's critiques: 6, 8 and v1's dialogue,
all through one loop, :func:`~._common.critique_rows`), :mod:`.pairs` (7, Path#2's inputs, 9-10) and :mod:`.output`
(11). How they chain is declared once, as lists of :class:`~hf_critic.eval_instruct.pipeline.Stage`, in
:mod:`hf_critic.eval_instruct.pipeline`.

CritiqueLLM v2 §3.2 (Eval-Instruct), in run order:

1. :func:`augment_queries` - self-instruct query augmentation with the Appendix A prompt, ROUGE-L (against the
   seeds) and Self-BLEU filters (§3.2.1; v1 §3.2.1);
2. :func:`score_difficulty` - difficulty 1-3 by the teacher (Appendix A 'Evaluation');
3. :func:`balance_queries` - balance by the 10 task categories, then by difficulty;
4. :func:`collect_responses` - responses from several generators (§3.2.1);
5. :func:`add_pseudo_references` - the best generator's answers as pseudo references, optionally manually
   revised (§3.2.1);
6. :func:`grade_pointwise_referenced` - the teacher's referenced pointwise critiques with the multi-dimension prompt
   (§3.2.2; the same stage with the ``critiquellm_v1`` family is v1's first dialogue turn);
7. :func:`make_pairs` - pairs of responses to the same query;
8. multi-path prompting (§3.2.2): Path#1 = :func:`pointwise_to_pairwise` (f_P2P, referenced) then
   :func:`referenced_to_reference_free` (f_R2RF, pairwise); Path#2 = :func:`referenced_to_reference_free` (f_R2RF,
   pointwise), :func:`attach_pointwise_critiques`, then :func:`pointwise_to_pairwise` (f_P2P, reference-free);
9. :func:`cross_validate` - keep a reference-free pair when both paths agree, with both critiques (§3.2.3);
10. :func:`swap_augment` - order-swapped copies of pairwise items (§3.3, as in Auto-J);
11. :func:`to_sft_dataset` - the output rows with SFT-ready ``messages`` rendered with the critic's own templates.

v1 (CritiqueLLM v1 §3.2.3, Table 6): :func:`grade_pointwise_referenced` with ``family="critiquellm_v1"`` (first
turn), then :func:`dialogue_revision` (second turn, score moves by at most 1).

Rule-based filters (:mod:`hf_critic.eval_instruct.filters`) run inside every prompting stage; every stage counts what
it rejected by reason and which items failed in a :class:`~hf_critic.eval_instruct.stage_report.StageReport`. Teacher and
generator calls go through a :class:`~hf_critic.backends.chat.ChatSource` (cached, so a rerun makes no call twice).
"""

from ._common import critique_rows
from .critiques import (
    dialogue_revision,
    grade_pointwise_referenced,
    pointwise_to_pairwise,
    referenced_to_reference_free,
)
from .output import OUTPUT_FEATURES, label_name, to_sft_dataset
from .pairs import attach_pointwise_critiques, cross_validate, make_pairs, swap_augment
from .queries import augment_queries, balance_queries, parse_difficulties, parse_generated_queries, score_difficulty
from .responses import add_pseudo_references, collect_responses

__all__ = [
    "OUTPUT_FEATURES",
    "add_pseudo_references",
    "attach_pointwise_critiques",
    "augment_queries",
    "balance_queries",
    "collect_responses",
    "critique_rows",
    "cross_validate",
    "dialogue_revision",
    "grade_pointwise_referenced",
    "label_name",
    "make_pairs",
    "parse_difficulties",
    "parse_generated_queries",
    "pointwise_to_pairwise",
    "referenced_to_reference_free",
    "score_difficulty",
    "swap_augment",
    "to_sft_dataset",
]
