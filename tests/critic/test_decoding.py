"""Self-consistency aggregation maths and decoding configuration (CritiqueLLM v1 §3.4, v2 §4.7)."""

from __future__ import annotations

import pytest

from hf_critic.core.schema import ParseStatus
from hf_critic.critic.decoding import DecodingConfig, aggregate_labels, aggregate_scores
from hf_critic.parsing import ParsedCritique

OK, UNPARSED, OUT = ParseStatus.OK, ParseStatus.UNPARSED, ParseStatus.OUT_OF_RANGE


def scores(*values):
    return [
        ParsedCritique(OK, score=v, explanation=f"e{i}") if v is not None else ParsedCritique(UNPARSED)
        for i, v in enumerate(values)
    ]


def labels(*values):
    return [
        ParsedCritique(OK, label=v, explanation=f"e{i}") if v is not None else ParsedCritique(UNPARSED)
        for i, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("values", "mean", "chosen"),
    [((7,), 7.0, 0), ((2, 8, 9, 7), 6.5, 3), ((4, 6), 5.0, 0), ((None, 3, None, 5), 4.0, 1), ((10, 10, 1), 7.0, 0)],
)
def test_score_mean_and_closest_sample(values, mean, chosen):
    result = aggregate_scores(scores(*values))
    assert result.parsed.score == pytest.approx(mean)
    assert result.chosen == chosen
    assert result.parsed.explanation == f"e{chosen}"


def test_score_dimensions_are_averaged_over_parsed_samples():
    samples = [
        ParsedCritique(OK, score=6, dimensions={"a": 6, "b": 4}),
        ParsedCritique(OK, score=8, dimensions={"a": 8}),
    ]
    assert aggregate_scores(samples).parsed.dimensions == {"a": 7.0, "b": 4.0}


def test_no_parsed_sample_stays_unparsed():
    result = aggregate_scores(scores(None, None))
    assert result.parsed.status is UNPARSED and result.parsed.score is None
    assert aggregate_scores([ParsedCritique(UNPARSED), ParsedCritique(OUT)]).parsed.status is OUT
    assert aggregate_labels(labels(None)).parsed.label is None
    with pytest.raises(ValueError):
        aggregate_scores([])


@pytest.mark.parametrize(
    ("votes", "label"),
    [
        ((0, 0, 1), 0),  # plain majority
        ((1, 1, 2, 2, 0), 1),  # 1 and tie share the top; mean = (-1-1+0+0+1)/5 < 0 -> response 2
        ((0, 0, 2, 2, 1), 0),  # mean > 0 -> response 1
        ((0, 0, 1, 1, 2), 2),  # even split between the responses: mean 0 -> tie
        ((0, 1), 2),
        ((None, None, 1), 1),  # unparsed samples do not vote
    ],
)
def test_label_majority_and_tie_break(votes, label):
    assert aggregate_labels(labels(*votes)).parsed.label == label


def test_label_explanation_is_a_sample_with_the_final_label():
    result = aggregate_labels(labels(1, 0, 0))
    assert result.chosen == 1 and result.parsed.explanation == "e1"


def test_generate_kwargs_per_strategy():
    assert DecodingConfig().generate_kwargs() == {
        "max_new_tokens": 512,
        "num_return_sequences": 1,
        "do_sample": False,
        "num_beams": 1,
    }
    beam = DecodingConfig(strategy="beam").generate_kwargs()
    assert beam["num_beams"] == 4 and beam["do_sample"] is False
    sc = DecodingConfig(strategy="self_consistency").generate_kwargs()
    assert (sc["do_sample"], sc["temperature"], sc["top_p"], sc["num_return_sequences"]) == (True, 0.9, 0.9, 5)
    with pytest.raises(ValueError):
        DecodingConfig(strategy="nucleus")
    with pytest.raises(ValueError):
        DecodingConfig(top_p=0)
