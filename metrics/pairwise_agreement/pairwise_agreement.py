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
"""Pairwise agreement: agreement and consistency of pairwise verdicts under order swap (CritiqueLLM Table 3)."""

import datasets
import evaluate

from hf_critic.core.labels import check_labels
from hf_critic.core.schema import ParseStatus
from hf_critic.meta_eval.agreement import pairwise_agreement
from hf_critic.meta_eval.chance import alpha_with_critic

ABSTAINED = ParseStatus.ABSTAINED.value

_DESCRIPTION = """
Agreement of a critic's pairwise comparisons with human preference labels, as in CritiqueLLM (Ke et al.,
2024, §4.4.2, Table 3) and Auto-J (Li et al., 2024). The critic judges each pair twice: in the original
order and with the two responses swapped. Agreement counts a pair as correct only when both verdicts (the
swapped one mapped back to the original order) equal the human label; consistency is the share of pairs
whose two verdicts are equal. First-order-only agreement, accuracy and macro precision / recall / F1 over
{response 1 better, response 2 better, tie} use the original-order verdict alone.
Labels: 0 = response 1 better, 1 = response 2 better, 2 = tie. Strings such as "Assistant 1",
"response_2", "A" / "B" / "C" (FastChat's [[A]] / [[B]] / [[C]]) and "tie" are accepted. An unparsed
verdict (None) counts as wrong and inconsistent, never as a tie, and is reported in n_unparsed. A cascade's
abstained verdict (status "abstained" in `statuses`: no critic was confident enough) is neither: its pair leaves
every figure, is counted in n_abstained, and coverage is the share of pairs decided.
Where the human labels contain no tie (chosen / rejected pairs, e.g. Anthropic HHH), the two-way accuracy is added
by default: the critic's choice between response 1 and response 2 alone, the tie option dropped. From verdict
distributions (P(response 1 better) against P(response 2 better), renormalised without the tie) when given, else
from the verdicts, a tie counting as half.
Agreement beyond chance: Cohen's kappa (1960) of the original-order verdicts against the labels (an unparsed verdict
is a category of its own) and, given several annotators' labels, Krippendorff's alpha (2011, nominal) among them,
alone and with the critic as one more annotator.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int` or `str`): the critic's verdict on each pair in the original order;
        None when unparsed.
    references (`list` of `int` or `str`): the human label of each pair.
    swapped_predictions (`list` of `int` or `str`, *optional*): the verdict on each pair with the two
        responses swapped. Without it only the first-order values are returned.
    swapped_mapped_back (`bool`, *optional*): True (default) when `swapped_predictions` are already in
        original-order terms (hf-critic's `critique_label_swapped` column); False when they are in swapped
        terms (0 = the response shown first, i.e. the original response 2, won), as in Auto-J's
        `pairwise_exchange_example_output.jsonl`.
    groups (`list`, *optional*): a group per pair (e.g. Auto-J scenario group); adds `per_group`.
    digits (`str`, *optional*): "label" (default): the strings "0", "1", "2" are the label codes;
        "position": "1" / "2" name the winning response (response 1 -> 0, response 2 -> 1).
    unparsed (`str`, *optional*): what an unparsed verdict counts as: "wrong" (default), "tie" or "drop"
        (the pair leaves every denominator).
    two_way (`str`, *optional*): when to add the two-way accuracies: "auto" (default) when the human labels contain
        no tie, "on" (pairs with a tie as gold label are left out of them and counted), "off".
    distributions (`list`, *optional*): the original order's verdict distribution per pair, a JSON object or dict
        {"response_1": p, "response_2": p, "tie": p} (hf-critic's `critique_distribution`), None where unparsed;
        the two-way choice is then the larger of P(response 1) and P(response 2) (equal: half).
    combined_distributions (`list`, *optional*): both orders' distributions averaged (`critique_distribution_combined`),
        for `two_way_accuracy_combined`; needs `swapped_predictions`.
    bootstrap (`int`, *optional*): resamples for 95% percentile confidence intervals (default 0: none); adds `ci`.
    seed (`int`, *optional*): the bootstrap's seed (default 0).
    annotations (`list` of `list`, *optional*): several annotators' labels, one list per annotator (any spelling,
        None = not labelled), for Krippendorff's alpha.
    statuses (`list` of `str`, *optional*): each verdict's hf-critic `critique_status` ("ok", "unparsed",
        "abstained", ...): pairs whose status is "abstained" (a selective judge or cascade kept no verdict) are left
        out of every figure and counted in `n_abstained`, never as unparsed; adds `n_abstained` and `coverage`.
Inputs are checked before anything is cast: a label must be 0, 1, 2 (2.0 is 2), a label string, or None / NaN
(unparsed); 0.5, 1.7, 3, booleans and strings mixed with numbers are errors naming the index and the value.
Returns:
    agreement (`float`): share of pairs whose verdicts in both orders equal the human label, in [0, 1].
        Only with `swapped_predictions`.
    consistency (`float`): share of pairs whose two verdicts are equal, in [0, 1]. Only with
        `swapped_predictions`.
    first_order_agreement (`float`): share of pairs whose original-order verdict equals the label.
    cohen_kappa (`float`): Cohen's kappa of the original-order verdicts against the labels, in [-1, 1] (0 = chance).
    krippendorff_alpha, krippendorff_alpha_with_critic (`float`): only with `annotations` (two or more): nominal
        alpha among the annotators, and with the critic's original-order verdicts as one more annotator;
        krippendorff_alpha_level (`str`): "nominal".
    accuracy (`float`): the same as `first_order_agreement`.
    macro_precision, macro_recall, macro_f1 (`float`): over the classes present in labels or verdicts.
    per_class (`dict`): {"response_1" | "response_2" | "tie": {"n_gold", "n_predicted", "n_correct", "precision",
        "recall", "f1"}}.
    win_rate, tie_rate, lose_rate (`float`): how often the critic prefers response 1 / calls a tie / prefers
        response 2 (with both orders, a conflict is a tie).
    n_dropped (`int`): pairs left out by `unparsed="drop"`; unparsed (`str`): the policy.
    Empty inputs give NaN values with the counts (n = 0).
    n (`int`): number of pairs with a human label.
    n_unparsed (`int`): original-order verdicts that are None / NaN.
    n_unparsed_swapped (`int`): the same for the swapped order (only with `swapped_predictions`).
    n_missing_references (`int`): pairs without a human label (left out of every value).
    n_abstained (`int`), coverage (`float`): only with `statuses`: pairs abstained (left out of every value) and
        the share of pairs decided, in [0, 1].
    per_group (`dict`): only with `groups`: {group: {"agreement", "consistency", "first_order_agreement", "n"}}
        (plus the two-way accuracies when they are computed).
    two_way_accuracy (`float`): only with the two-way figures (see `two_way`): share of the pairs without a gold
        tie whose original-order choice between response 1 and response 2 is the human one, an undecided pair (a
        tie verdict, equal probabilities) counting 1/2, in [0, 1].
    two_way_accuracy_combined (`float`): the same for both orders together (with `swapped_predictions`): from
        `combined_distributions`, else both verdicts added as one-hot votes (opposite choices count 1/2).
    two_way_n (`int`): pairs they count; two_way_n_gold_ties (`int`): pairs with a gold tie left out of them;
        two_way_source (`str`): "distribution" or "labels".
Examples:
    Example 1-Integer labels, swapped verdicts already mapped back.
        >>> pairwise_agreement = evaluate.load("pairwise_agreement")
        >>> results = pairwise_agreement.compute(
        ...     predictions=[0, 1, 2, 0], references=[0, 1, 1, 0], swapped_predictions=[0, 1, 2, 1]
        ... )
        >>> print(results["agreement"], results["consistency"], results["first_order_agreement"])
        0.5 0.75 0.75

    Example 2-Verdicts as text, swapped verdicts in swapped terms, an unparsed verdict, per-group values.
        >>> pairwise_agreement = evaluate.load("pairwise_agreement")
        >>> results = pairwise_agreement.compute(
        ...     predictions=["Assistant 1", "Assistant 2", "tie", "Assistant 1"],
        ...     references=["Assistant 1", "Assistant 2", "tie", "Assistant 2"],
        ...     swapped_predictions=["Assistant 2", "Assistant 2", "tie", None],
        ...     swapped_mapped_back=False,
        ...     groups=["code", "code", "math", "math"],
        ... )
        >>> print(results["agreement"], results["consistency"], results["n_unparsed_swapped"])
        0.5 0.5 1
        >>> print(results["per_group"]["math"])
        {'agreement': 0.5, 'consistency': 0.5, 'first_order_agreement': 0.5, 'n': 2}

    Example 3-Chosen / rejected pairs (no tie in the gold): the two-way accuracy from verdict distributions. The
    first two verdicts are ties, but the distributions lean the human way once the tie is dropped.
        >>> pairwise_agreement = evaluate.load("pairwise_agreement")
        >>> results = pairwise_agreement.compute(
        ...     predictions=[2, 2, 0, 0],
        ...     references=[0, 1, 0, 1],
        ...     distributions=[
        ...         {"response_1": 0.3, "response_2": 0.2, "tie": 0.5},
        ...         {"response_1": 0.1, "response_2": 0.4, "tie": 0.5},
        ...         {"response_1": 0.6, "response_2": 0.3, "tie": 0.1},
        ...         {"response_1": 0.7, "response_2": 0.2, "tie": 0.1},
        ...     ],
        ... )
        >>> print(results["first_order_agreement"], results["two_way_accuracy"], results["two_way_n"])
        0.25 0.75 4
        >>> print(pairwise_agreement.compute(predictions=[2, 2, 0, 0], references=[0, 1, 0, 1])["two_way_accuracy"])
        0.5

    Example 4-Agreement beyond chance: Cohen's kappa, and Krippendorff's alpha of three annotators with the critic.
        >>> pairwise_agreement = evaluate.load("pairwise_agreement")
        >>> results = pairwise_agreement.compute(
        ...     predictions=[0, 1, 0, 1, 0, 0],
        ...     references=[0, 1, 1, 1, 0, 0],
        ...     annotations=[[0, 1, 1, 1, 0, 0], [0, 1, 1, 0, 0, 0], [0, 1, 2, 1, 0, None]],
        ... )
        >>> print(round(results["cohen_kappa"], 3), round(results["krippendorff_alpha"], 3))
        0.667 0.595
        >>> print(round(results["krippendorff_alpha_with_critic"], 3))
        0.578
"""

_CITATION = """
@inproceedings{ke-etal-2024-critiquellm,
    title = "{C}ritique{LLM}: Towards an Informative Critique Generation Model for Evaluation of Large Language Model Generation",
    author = "Ke, Pei and Wen, Bosi and Feng, Andrew and Liu, Xiao and Lei, Xuanyu and Cheng, Jiale and Wang, Shengyuan and Zeng, Aohan and Dong, Yuxiao and Wang, Hongning and Tang, Jie and Huang, Minlie",
    booktitle = "Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2024",
    pages = "13034--13054",
}
@inproceedings{li2024generative,
    title = {Generative Judge for Evaluating Alignment},
    author = {Junlong Li and Shichao Sun and Weizhe Yuan and Run-Ze Fan and Hai Zhao and Pengfei Liu},
    booktitle = {The Twelfth International Conference on Learning Representations},
    year = {2024},
}
"""

_LABEL_FEATURES = {"int": datasets.Value("int64"), "str": datasets.Value("string")}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PairwiseAgreement(evaluate.Metric):
    """Agreement / consistency of pairwise verdicts with human labels under order swap (CritiqueLLM §4.4.2)."""

    def _info(self):
        # Strings first: a string feature refuses ints, whereas an int feature would turn "1" into 1.
        options = [("str", "str"), ("str", "int"), ("int", "str"), ("int", "int")]
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": _LABEL_FEATURES[p], "references": _LABEL_FEATURES[r]})
                for p, r in options
            ],
            codebase_urls=["https://github.com/thu-coai/CritiqueLLM", "https://github.com/GAIR-NLP/auto-j"],
            reference_urls=["https://aclanthology.org/2024.acl-long.704/", "https://arxiv.org/abs/2310.05470"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of inputs, checked first (see the inputs description)."""
        # Checked before evaluate casts them: an int64 feature would truncate 1.7 to 1 and crash on NaN.
        super().add_batch(
            predictions=check_labels(predictions, "predictions"),
            references=check_labels(references, "references"),
            **kwargs,
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Compute the module on all inputs (evaluate appends the inputs description below)."""
        if predictions is not None and references is not None and not len(predictions) and not len(references):
            return self._compute([], [], **kwargs)  # evaluate cannot pick a feature type for no rows
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        swapped_predictions=None,
        swapped_mapped_back=True,
        groups=None,
        digits="label",
        unparsed="wrong",
        two_way="auto",
        distributions=None,
        combined_distributions=None,
        bootstrap=0,
        seed=0,
        annotations=None,
        statuses=None,
    ):
        decided = None
        if statuses is not None:  # a cascade's abstentions: neither unparsed nor wrong, left out and counted
            if len(statuses) != len(predictions):
                raise ValueError(f"statuses has {len(statuses)} entries for {len(predictions)} predictions")
            decided = [i for i, status in enumerate(statuses) if status != ABSTAINED]
            keep = lambda values: None if values is None else [values[i] for i in decided]  # noqa: E731
            predictions, references, swapped_predictions = map(keep, (predictions, references, swapped_predictions))
            groups, distributions, combined_distributions = map(keep, (groups, distributions, combined_distributions))
            annotations = None if annotations is None else [keep(a) for a in annotations]
        out = pairwise_agreement(
            predictions,
            references,
            check_labels(swapped_predictions, "swapped_predictions"),
            swapped_mapped_back=swapped_mapped_back,
            groups=groups,
            digits=digits,
            unparsed=unparsed,
            two_way=two_way,
            distributions=distributions,
            combined_distributions=combined_distributions,
            bootstrap=bootstrap,
            seed=seed,
        )
        if annotations is not None:
            out.update(alpha_with_critic(annotations, predictions, pairwise=True))
        if decided is not None:
            out.update(
                n_abstained=len(statuses) - len(decided),
                coverage=len(decided) / len(statuses) if len(statuses) else float("nan"),
            )
        return out
