"""CriticConfig: the critic's command-line options are generated from one dataclass."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from hf_critic.commands.arguments import add_dataclass_args, dataclass_from_args
from hf_critic.critic.config import CriticConfig, parse_score_range
from hf_critic.critic.verdicts import DEFAULT_MIN_VERDICT_MASS


def _parser(cls=CriticConfig) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_dataclass_args(parser, cls)
    return parser


def test_every_field_is_an_option_and_reads_back_into_the_config(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "criteria: Is it helpful?\nscore_descriptions:\n  1: not at all\n  2: somewhat\n  3: fully\n", encoding="utf-8"
    )
    argv = ["--template", "prometheus2", "--rubric", str(rubric), "--score-range", "1,3", "--language", "zh"]
    argv += ["--truncate", "skip", "--constrain-verdict", "--verdict", "both", "--explanation", "none"]
    argv += ["--min-verdict-mass", "0.2"]
    config = dataclass_from_args(CriticConfig, _parser().parse_args(argv))
    assert config == CriticConfig("prometheus2", str(rubric), "1,3", "zh", "skip", True, "both", "none", 0.2)
    kwargs = config.critic_kwargs()
    assert kwargs["score_range"] == (1, 3) and kwargs["rubric"].criteria == "Is it helpful?"
    assert (kwargs["verdict"], kwargs["explanation"], kwargs["min_verdict_mass"]) == ("both", "none", 0.2)
    defaults = dataclass_from_args(CriticConfig, _parser().parse_args([]))
    assert defaults == CriticConfig() and defaults.critic_kwargs()["min_verdict_mass"] == DEFAULT_MIN_VERDICT_MASS
    with pytest.raises(SystemExit):  # choices come from the field's metadata
        _parser().parse_args(["--verdict", "logits"])


def test_a_new_field_is_a_new_option():
    @dataclasses.dataclass(frozen=True)
    class Wider(CriticConfig):
        seed_words: int = dataclasses.field(default=3, metadata={"help": "words of context"})

    args = _parser(Wider).parse_args(["--seed-words", "5", "--verdict", "text"])
    assert dataclass_from_args(Wider, args) == Wider(verdict="text", seed_words=5)


def test_bad_rubric_and_scale_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"rubric=: cannot read the rubric file .*: no such file"):
        CriticConfig(rubric=str(tmp_path / "none.yaml")).critic_kwargs()
    with pytest.raises(ValueError, match=r"rubric=: cannot read .*: it is a folder"):
        CriticConfig(rubric=str(tmp_path)).critic_kwargs()
    for text in ("5,1", "1", "a,b", "1,2,3"):
        with pytest.raises(ValueError, match="score_range= must be LOW,HIGH"):
            parse_score_range(text)
    assert parse_score_range(None) is None and parse_score_range(" 1 , 10 ") == (1, 10)
