"""The label prior as a critic kind (``label-prior``): fitted on the calibration rows' human labels, it answers that
label on every pair at that label's share; the calibration file keeps the prior and ``compare --cascade`` takes it
back from there; it refuses to judge before it has one; and it runs as a cascade stage and as a jury member."""

from __future__ import annotations

import json

import datasets
import pytest

from hf_critic.cli import main
from hf_critic.core import schema
from hf_critic.core.errors import BadInputError
from hf_critic.core.labels import LABEL_NAMES
from hf_critic.critics.baselines import LabelPrior, LongerWins
from hf_critic.critics.registry import critic_class
from hf_critic.selective.jury import fit_rows
from tests.critics.test_critic_protocol import PAIRWISE, ROWS, calibrate_argv, compare_argv, pairs

PAIRS = [{"question": f"q{i}?", "response_1": "a b", "response_2": "c"} for i in range(3)]


def _write(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _cascade(tmp_path, critics: list) -> str:
    path = tmp_path / "cascade.yaml"
    path.write_text(json.dumps({"critics": critics}), encoding="utf-8")
    return str(path)


def _judged(tmp_path, name: str = "judged.jsonl") -> list[dict]:
    return [json.loads(line) for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()]


def test_it_is_fitted_on_calibration_labels_and_judges_every_pair_with_that_label_and_share():
    prior = critic_class("label-prior")()
    assert isinstance(prior, LabelPrior) and prior.baseline and not prior.fitted
    before = prior.identity(PAIRWISE)
    prior.calibrate_on([1, 0, 1, 2, 1, None])  # five labels, three of them response 2
    judged = prior.judge(datasets.Dataset.from_list(PAIRS), swap=True)
    assert judged.columns[schema.CRITIQUE_LABEL] == [1, 1, 1]
    assert judged.columns[schema.CRITIQUE_CONFIDENCE] == [pytest.approx(0.6)] * 3
    assert judged.columns[schema.CRITIQUE_STATUS] == ["ok"] * 3
    assert judged.calls == 0 and judged.confidence_kind == "label prior"
    # the identity is the declaration's (the kind), not the prior's: the calibration file holds the prior
    assert judged.identity == before == LabelPrior(0, 0.9).identity(PAIRWISE) != LongerWins().identity(PAIRWISE)
    assert prior.calibration_entry(PAIRWISE) == {"label_prior": {"label": 1, "share": 0.6, "rows": 5}}


def test_with_a_share_it_is_fitted_on_the_rows_a_fitted_jury_with_that_share_fits_on():
    questions = [f"q{i // 2}" for i in range(20)]  # two rows a question
    chosen = fit_rows(questions, 0.5)
    human = [0 if c else 1 for c in chosen]  # the fit rows say response 1, the (as many) others response 2
    prior = LabelPrior()
    prior.calibrate_on(human, questions, share=0.5)
    assert (prior.label, prior.share, prior.fitted_on) == (0, 1.0, int(chosen.sum()))
    prior.calibrate_on(human, questions)  # no share: every row, equal counts go to response 1
    assert (prior.label, prior.share, prior.fitted_on) == (0, 0.5, 20)
    prior.calibrate_on([*human, 1])
    assert (prior.label, prior.share) == (1, pytest.approx(11 / 21))


def test_it_refuses_to_judge_before_it_has_a_prior_and_what_it_cannot_judge():
    with pytest.raises(
        BadInputError, match="label-prior: the label prior has no prior to judge with: fit it on human"
    ):
        LabelPrior().judge(datasets.Dataset.from_list(PAIRS))
    with pytest.raises(BadInputError, match="pointwise.jsonl: label-prior: needs pairs"):
        LabelPrior(0, 0.5).judge(datasets.Dataset.from_list([{"response": "a"}]), source="pointwise.jsonl")
    with pytest.raises(BadInputError, match="here: no human label to fit the label prior on \\(2 rows\\)"):
        LabelPrior(where="here").calibrate_on([None, -1])
    with pytest.raises(BadInputError, match="here: label-prior takes no options, got \\['label'\\]"):
        LabelPrior.from_spec({"label": 0}, "here")
    with pytest.raises(BadInputError, match="cal.json: label-prior: no label prior in the calibration file"):
        LabelPrior().check_calibration({"aggregate": "vote"}, PAIRWISE, "cal.json")
    with pytest.raises(BadInputError, match="a label prior is a label code 0 / 1 / 2 and its share in"):
        LabelPrior().check_calibration({"label_prior": {"label": 3, "share": 0.5}}, PAIRWISE, "cal.json")


def _skewed(tmp_path) -> list[dict]:
    """40 pairs, 36 of them labelled response 1 (the prior: response 1 at 0.9), written to ``pairs.jsonl``."""
    rows = [
        {"id": f"p{i}", "question": f"Q{i}?", "response_1": "x " * (i % 5 + 1), "response_2": "y", "label": int(i < 4)}
        for i in range(ROWS)
    ]
    _write(tmp_path / "pairs.jsonl", rows)
    return rows


def test_a_cascade_stage_keeps_its_prior_in_the_calibration_file_and_compare_reads_it_back(tmp_path, capsys):
    from hf_critic.selective import load_calibration

    _skewed(tmp_path)
    cascade = _cascade(tmp_path, ["label-prior"])
    assert main(calibrate_argv(tmp_path, cascade)) == 0
    (entry,) = load_calibration(str(tmp_path / "cal.json")).critics
    assert entry.confidence == "label prior" and entry.jury == {"label_prior": {"label": 0, "share": 0.9, "rows": 40}}
    assert (entry.threshold, entry.n, entry.k) == (pytest.approx(0.9), ROWS, 4)
    # new pairs without any human label: the prior comes from the calibration file, not from them
    _write(
        tmp_path / "pairs.jsonl", [{"question": f"N{i}?", "response_1": "a", "response_2": "b c"} for i in range(5)]
    )
    capsys.readouterr()
    assert main(compare_argv(tmp_path, cascade)) == 0
    assert "cascade: 5/5 rows decided" in capsys.readouterr().out
    judged = _judged(tmp_path)
    assert [r[schema.CRITIQUE_LABEL] for r in judged] == [0] * 5
    assert [r[schema.CRITIQUE_CONFIDENCE] for r in judged] == [pytest.approx(0.9)] * 5
    assert {r[schema.CRITIQUE_CRITIC] for r in judged} == {"label-prior"}
    # a prior edited in the file is not the one its threshold was set on: refused in one line
    data = json.loads((tmp_path / "cal.json").read_text(encoding="utf-8"))
    data["critics"][0]["jury"]["label_prior"]["label"] = 1
    (tmp_path / "cal.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(compare_argv(tmp_path, cascade, "edited.jsonl")) == 2
    err = capsys.readouterr().err.strip()
    assert "cal.json: critics[0] (label-prior).verdicts row 0: label 0" in err and "its label prior" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("how", ["vote", "fitted"])
def test_a_jury_member_is_fitted_through_calibrate_and_judges_with_its_stored_prior(tmp_path, capsys, how):
    from hf_critic.selective import load_calibration
    from tests.critics.test_critic_protocol import expected

    rows = pairs(tmp_path)
    members = ["label-prior", {"name": "distinct", "kind": "distinct-words", "options": {}}, "longer-wins"]
    cascade = _cascade(tmp_path, [{"name": "jury", "jury": {"aggregate": how, "members": members}}])
    assert main(calibrate_argv(tmp_path, cascade)) == 0
    (entry,) = load_calibration(str(tmp_path / "cal.json")).critics
    fitting = fit_rows([r["question"] for r in rows], 0.5) if how == "fitted" else [True] * ROWS
    labels = [r["label"] for r, f in zip(rows, fitting, strict=True) if f]
    label = max((0, 1, 2), key=lambda code: (labels.count(code), -code))  # the most frequent, ties to the lower code
    prior = {"label": label, "share": labels.count(label) / len(labels), "rows": len(labels)}
    assert entry.jury["member_entries"] == {"label-prior": {"label_prior": pytest.approx(prior)}}
    capsys.readouterr()
    assert main(compare_argv(tmp_path, cascade)) == 0
    judged = _judged(tmp_path)
    name = LABEL_NAMES[label]
    assert all(r["jury_members"]["label-prior"] == name for r in judged)
    assert [r["jury_members"]["distinct"] for r in judged] == [LABEL_NAMES[expected(r)[0]] for r in rows]
    data = json.loads((tmp_path / "cal.json").read_text(encoding="utf-8"))
    if how == "vote":  # a member's prior edited in the file is not the one its stored verdicts repeat
        edited = json.loads(json.dumps(data))
        edited["critics"][0]["jury"]["member_entries"]["label-prior"]["label_prior"]["label"] = 2
        (tmp_path / "cal.json").write_text(json.dumps(edited), encoding="utf-8")
        assert main(compare_argv(tmp_path, cascade, "edited.jsonl")) == 2
        err = capsys.readouterr().err
        assert "critics[0] (jury) member 'label-prior'.verdicts row 0" in err and "its label prior" in err
    # a calibration file whose jury entry lost the member's prior is refused before any row is judged
    del data["critics"][0]["jury"]["member_entries"]
    (tmp_path / "cal.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(compare_argv(tmp_path, cascade, "lost.jsonl")) == 2
    err = capsys.readouterr().err
    assert "cal.json: jury 'jury': " in err and "no label prior in the calibration file" in err
