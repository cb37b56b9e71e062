# Copyright 2024 The hf-critic Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Critique correlation: text-level and system-level Pearson / Spearman / Kendall (CritiqueLLM Table 2), row-level
(pooled) correlation and within-question pairwise accuracy."""

import datasets
import evaluate

from hf_critic.meta_eval.chance import alpha_with_critic
from hf_critic.meta_eval.correlation import check_scores, critique_correlation

_DESCRIPTION = """
Correlation between a critic's pointwise grades and human scores, as in CritiqueLLM (Ke et al., 2024,
§4.4.1, Table 2; after Colombo et al., 2022).
Text-level correlation: for each query, the correlation between the human scores and the critic's scores
of that query's responses, averaged over queries. A query with fewer than two graded responses, or whose
human or critic scores are all equal, has no correlation: it is skipped and counted, never averaged in.
System-level correlation: the correlation between each system's (model's) mean critic score and its mean
human score, across systems.
Pearson r, Spearman rho and Kendall tau (tau-b, as scipy.stats.kendalltau) are reported for both, and for the
row-level (pooled) correlation over all rows as one sample. Rows whose prediction is None or NaN (a critique whose
score could not be parsed) are excluded and counted.
Within-question pairwise accuracy: does the critic score a question's better answer above its worse one? Every
pair of one query's responses with different human scores is ordered by the critic's scores; the accuracy is the
share of pairs ordered as the humans order them, a tie in the critic's scores counting as half ((1 + Somers' D) / 2
over the pooled pairs). Pairs with an unparsed critic score are left out and counted.
Agreement beyond chance: the quadratic-weighted kappa (Cohen, 1968) of the critic's scores binned to the scale of the
human scores (mapped linearly from the critic's range when it exceeds the human one, then to the nearest human
score) and, given several annotators' scores, Krippendorff's alpha (2011, interval) among them, alone and with the
binned critic as one more annotator.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): the critic's score for each response; None or NaN when unparsed.
    references (`list` of `float`): the human score for each response.
    query_ids (`list`, *optional*): the query each response answers (any hashable ids, any order, any
        number of responses per query). Defaults to None: all rows form one query, i.e. the plain
        correlation over all rows.
    system_ids (`list`, *optional*): the system (model) that wrote each response. When given, the
        system-level values are returned too.
    bootstrap (`int`, *optional*): resamples of the queries for 95% percentile confidence intervals (default 0:
        none; needs `query_ids`; a query's responses stay together); adds `ci`.
    seed (`int`, *optional*): the bootstrap's seed (default 0).
    annotations (`list` of `list`, *optional*): several annotators' scores, one list per annotator (None = not
        scored), for Krippendorff's alpha.
Scores are checked before anything is cast: a string ("7") or a boolean is an error naming the index and the
value; None / NaN is an unparsed score. Errors about the grouping name `query_ids` / `system_ids`.
Returns:
    text_pearson (`float`): mean per-query Pearson r, in [-1, 1] (NaN only when no query is usable).
    text_spearman (`float`): mean per-query Spearman rho, in [-1, 1].
    text_kendall (`float`): mean per-query Kendall tau-b, in [-1, 1].
    n_queries (`int`): number of distinct queries.
    n_queries_used (`int`): queries with a defined correlation.
    n_queries_skipped (`int`): queries with fewer than two valid rows or constant scores.
    n_rows (`int`): number of rows.
    n_unparsed (`int`): rows whose prediction is None or NaN.
    n_missing_references (`int`): rows whose human score is None or NaN.
    pooled_pearson, pooled_spearman, pooled_kendall (`float`): the row-level correlation, all rows with both
        scores as one sample, in [-1, 1] (the same as the text-level values without `query_ids`).
    within_question_accuracy (`float`): share of the pairs of one query's responses with different human scores
        that the critic's scores order the same way, a critic tie counting 1/2, in [0, 1] (NaN without a pair;
        without `query_ids`, every pair of rows).
    within_question_pairs (`int`): pairs counted; within_question_ties (`int`): of those, pairs the critic scored
        equal; within_question_pairs_unparsed (`int`): pairs with different human scores left out because a critic
        score is None / NaN; within_question_queries (`int`): queries with at least one counted pair.
    quadratic_weighted_kappa (`float`): Cohen's quadratic-weighted kappa of the critic's scores binned to the human
        scores' scale, in [-1, 1]; quadratic_weighted_kappa_n (`int`): rows it counts.
    krippendorff_alpha, krippendorff_alpha_with_critic (`float`): only with `annotations` (two or more): interval
        alpha among the annotators, and with the binned critic scores as one more annotator;
        krippendorff_alpha_level (`str`): "interval".
    system_pearson, system_spearman, system_kendall (`float`): only with `system_ids`; the correlation
        across systems of the per-system mean scores, NaN with fewer than two systems.
    n_systems (`int`): only with `system_ids`.
    per_system (`dict`): only with `system_ids`: {system: {"n", "critic_mean", "human_mean", "critic_rank",
        "human_rank"}} (rank 1 = highest mean).
    ci (`dict`): only with `bootstrap` and `query_ids`: {figure: [low, high]} for the text- and system-level
        correlations, pooled_pearson and within_question_accuracy.
    Empty inputs give NaN values with the counts (n_rows = 0).
Examples:
    Example 1-Text-level correlation over two queries with three responses each.
        >>> critique_correlation = evaluate.load("critique_correlation")
        >>> results = critique_correlation.compute(
        ...     predictions=[8, 6, 3, 9, 4, 7],
        ...     references=[5, 3, 4, 4, 2, 3],
        ...     query_ids=["q1", "q1", "q1", "q2", "q2", "q2"],
        ... )
        >>> print(round(results["text_pearson"], 2), round(results["text_spearman"], 2), round(results["text_kendall"], 2))
        0.7 0.75 0.67

    Example 2-System-level values, an unparsed critique and a query whose critic scores are constant.
        >>> critique_correlation = evaluate.load("critique_correlation")
        >>> results = critique_correlation.compute(
        ...     predictions=[8, 6, None, 9, 4, 7, 5, 5, 5],
        ...     references=[5, 3, 2, 4, 2, 3, 1, 3, 5],
        ...     query_ids=["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3", "q3"],
        ...     system_ids=["gpt", "glm", "llama"] * 3,
        ... )
        >>> print(results["n_queries_used"], results["n_queries_skipped"], results["n_unparsed"])
        2 1 1
        >>> print(round(results["system_pearson"], 2), round(results["system_spearman"], 2))
        0.43 0.5

    Example 3-Within-question pairwise accuracy: q1 orders its 3 pairs right; q2 has 2 pairs with different human
    scores (its first two responses tie for the humans) and orders both wrong; q3 orders 2 pairs right and ties 1.
        >>> critique_correlation = evaluate.load("critique_correlation")
        >>> results = critique_correlation.compute(
        ...     predictions=[3, 5, 9, 6, 6, 4, 8, 2, 8],
        ...     references=[1, 2, 3, 2, 2, 5, 4, 1, 3],
        ...     query_ids=["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3", "q3"],
        ... )
        >>> print(results["within_question_accuracy"], results["within_question_pairs"], results["within_question_ties"])
        0.6875 8 1
        >>> print(round(results["text_pearson"], 2), round(results["pooled_pearson"], 2))
        0.31 0.46

    Example 4-Agreement beyond chance: critic scores 1-10 binned to the human 1-5 scale for the quadratic-weighted
    kappa, and Krippendorff's alpha of three annotators with and without the critic.
        >>> critique_correlation = evaluate.load("critique_correlation")
        >>> results = critique_correlation.compute(
        ...     predictions=[2, 6, 9, 4, 7, 10],
        ...     references=[1, 3, 4, 2, 4, 5],
        ...     annotations=[[1, 3, 4, 2, 4, 5], [1, 2, 4, 2, 3, 5], [2, 3, 5, 1, 4, None]],
        ... )
        >>> print(round(results["quadratic_weighted_kappa"], 3), round(results["krippendorff_alpha"], 3))
        0.952 0.853
        >>> print(round(results["krippendorff_alpha_with_critic"], 3))
        0.879
"""

_CITATION = """
@inproceedings{ke-etal-2024-critiquellm,
    title = "{C}ritique{LLM}: Towards an Informative Critique Generation Model for Evaluation of Large Language Model Generation",
    author = "Ke, Pei and Wen, Bosi and Feng, Andrew and Liu, Xiao and Lei, Xuanyu and Cheng, Jiale and Wang, Shengyuan and Zeng, Aohan and Dong, Yuxiao and Wang, Hongning and Tang, Jie and Huang, Minlie",
    booktitle = "Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2024",
    pages = "13034--13054",
}
@inproceedings{colombo-etal-2022-glass,
    title = "The Glass Ceiling of Automatic Evaluation in Natural Language Generation",
    author = "Colombo, Pierre and Peyrard, Maxime and Noiry, Nathan and West, Robert and Piantanida, Pablo",
    booktitle = "Findings of the Association for Computational Linguistics: AACL-IJCNLP 2022",
    year = "2022",
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CritiqueCorrelation(evaluate.Metric):
    """Text-level, system-level and row-level correlation between critic and human scores (CritiqueLLM §4.4.1), and
    the within-question pairwise accuracy."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),
                    "references": datasets.Value("float64"),
                }
            ),
            codebase_urls=["https://github.com/thu-coai/CritiqueLLM"],
            reference_urls=["https://aclanthology.org/2024.acl-long.704/"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of inputs, checked first (see the inputs description)."""
        # Checked before evaluate casts them: a float64 feature would read "7" as 7.0 and True as 1.0.
        super().add_batch(
            predictions=check_scores(predictions, "predictions"),
            references=check_scores(references, "references"),
            **kwargs,
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Compute the module on all inputs (evaluate appends the inputs description below)."""
        if predictions is not None and references is not None and not len(predictions) and not len(references):
            return self._compute([], [], **kwargs)  # evaluate cannot write an empty batch
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(
        self, predictions, references, query_ids=None, system_ids=None, bootstrap=0, seed=0, annotations=None
    ):
        out = critique_correlation(
            predictions, references, query_ids=query_ids, system_ids=system_ids, bootstrap=bootstrap, seed=seed
        )
        if annotations is not None:
            out.update(alpha_with_critic(annotations, predictions, pairwise=False, references=references))
        return out
