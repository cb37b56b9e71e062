"""The reward critic as a kind of its own (hf_critic.critic.reward_critic): built directly on any scorer, it judges
through the critic protocol order-free, with the rows and stats its Python API gives; the registry names it for
``reward`` and ``pooling``; the generative Critic no longer takes a reward scorer."""

from __future__ import annotations

import pytest

from hf_critic.core import schema
from hf_critic.core.identity import reward_options
from hf_critic.core.labels import swap_label
from hf_critic.critic import Critic, RewardCritic
from hf_critic.critics.protocol import identity_digest
from hf_critic.critics.registry import critic_class
from hf_critic.critics.reward import RewardCalibration

QUESTION = "Name a colour."
#: Rewards are word counts: (3, 1) -> response 1, (1, 3) -> response 2, (2, 2) -> a tie.
PAIRS = [("red green blue", "red"), ("red", "red green blue"), ("red green", "red blue")]


class WordCount:
    """A :class:`~hf_critic.critic.rewards.RewardScorer` whose reward is the response's word count; it counts the
    responses it scored."""

    name, identity, kind = "word-count", "word-count@1", "reward model"

    def __init__(self, tie_margin: float = 0.5):
        self.calibration = RewardCalibration(tie_margin=tie_margin)
        self.scored = 0

    def fit(self, question: str, response: str, truncate: str):
        return response, False

    def score(self, inputs):
        self.scored += len(inputs)
        return [float(len(text.split())) for text in inputs]


def _pairs(swapped: bool = False) -> list[dict]:
    return [
        {"question": QUESTION, "response_1": b if swapped else a, "response_2": a if swapped else b} for a, b in PAIRS
    ]


def test_a_reward_critic_judges_pairs_order_free_through_the_protocol():
    scorer = WordCount()
    critic = RewardCritic(scorer)
    judged = critic.judge(_pairs(), swap=True, source="pairs.jsonl")
    columns = judged.columns
    assert columns[schema.CRITIQUE_LABEL] == [0, 1, 2]
    assert columns[schema.CRITIQUE_REWARD] == [3.0, 1.0, 2.0] and columns[schema.CRITIQUE_REWARD_2] == [1.0, 3.0, 2.0]
    assert columns[schema.CRITIQUE_STATUS] == ["ok"] * 3
    assert columns[schema.CRITIQUE_EXPLANATION] == [None] * 3
    assert schema.CRITIQUE_LABEL_SWAPPED not in columns  # no second pass, no consistency reported as if measured
    assert judged.calls == 3 and scorer.scored == 4  # one pass, each distinct response scored once, swap or not
    assert (judged.stats.verdict, judged.stats.total, judged.stats.parsed) == ("reward", 3, 3)
    assert judged.stats is critic.last_stats
    assert judged.confidence_kind is not None and all(0.5 <= c <= 1 for c in columns[schema.CRITIQUE_CONFIDENCE][:2])
    swapped = critic.judge(_pairs(swapped=True)).columns
    assert swapped[schema.CRITIQUE_LABEL] == [swap_label(label) for label in columns[schema.CRITIQUE_LABEL]]
    assert swapped[schema.CRITIQUE_CONFIDENCE] == columns[schema.CRITIQUE_CONFIDENCE]


def test_judge_gives_the_columns_the_python_api_adds():
    critic = RewardCritic(WordCount())
    compared, stats = critic.compare(_pairs(), return_stats=True)
    judged = critic.judge(_pairs())
    assert compared.column_names == ["question", "response_1", "response_2", *judged.columns]
    for name, values in judged.columns.items():
        assert compared[name] == values, name
    assert stats.summary() == judged.stats.summary()
    graded = critic.judge([{"question": QUESTION, "response": "red green"}])
    assert graded.columns[schema.CRITIQUE_REWARD] == [2.0] and 1 <= graded.columns[schema.CRITIQUE_SCORE][0] <= 10


def test_its_identity_is_the_reward_parts_in_their_order():
    critic = RewardCritic(WordCount(), truncate="skip", tie_margin=0.25)
    setting = schema.Setting(schema.Task.PAIRWISE, False)
    parts = ["model=word-count@1", "verdict=reward", "truncate=skip", "tie_margin=0.25"]
    assert reward_options(critic.scorer, "skip") == parts
    assert critic.identity_parts(setting, swap=True) == [*parts, "swap=True"]
    assert critic.judge(_pairs()).identity == identity_digest(setting, [*parts, "swap=False"])


def test_the_registry_names_it_for_reward_and_pooling_and_it_says_which():
    assert critic_class("reward") is RewardCritic and critic_class("pooling") is RewardCritic
    critic = RewardCritic(WordCount())
    assert critic.kind == "reward" and critic.served_client is None
    assert not critic.writes_explanation and Critic.writes_explanation


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"verdict": "text"}, "verdict=text: a reward model's verdicts come from its rewards (use verdict=auto)"),
        ({"explanation": "first"}, "explanation=first: a reward model writes no critique text and cannot honour it"),
        ({"tie_margin": -1.0}, "tie_margin=-1.0: must be a finite number >= 0"),
        ({"truncate": "cut"}, "truncate must be one of"),
    ],
)
def test_what_it_cannot_honour_is_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RewardCritic(WordCount(), **options)


def test_a_reference_is_refused_when_forced_and_a_template_in_comparison():
    critic = RewardCritic(WordCount())
    with pytest.raises(ValueError, match="a reward model reads no reference"):
        critic.judge([{"question": QUESTION, "response": "red", "reference": "red"}], referenced=True)
    with pytest.raises(ValueError, match="template=mtbench: a reward model compares by rewards and reads no template"):
        RewardCritic(WordCount(), template="mtbench").judge(_pairs())


@pytest.mark.parametrize("option", ["reward", "tie_margin"])
def test_the_generative_critic_takes_no_reward_options(option):
    with pytest.raises(TypeError, match=option):
        Critic(None, **{option: WordCount() if option == "reward" else 0.5})
