"""A new kind of critic is one module: a toy kind defined here (one class, one registration) runs through
``calibrate``, ``compare --cascade`` and ``meta-eval`` with no change to the package, and the registry refuses what is
no kind. The toy critic prefers the response with more distinct words, with a confidence that grows with the
difference (a baseline in the spirit of "longer wins", made different enough to be told apart)."""

from __future__ import annotations

import json

import datasets
import numpy as np
import pytest

from hf_critic.cli import main
from hf_critic.core import schema
from hf_critic.core.errors import BadInputError
from hf_critic.critics.protocol import CriticKind, Critiques, setting_of
from hf_critic.critics.registry import critic_class, kinds, register

ROWS = 40
PAIRWISE = schema.Setting(schema.Task.PAIRWISE, False)


class DistinctWords(CriticKind):
    """The response with more distinct words wins (a tie on equal counts); confidence ``0.5 + 0.5 * |a - b| /
    max(a, b)`` in [0.5, 1]; ``lowercase`` folds case before counting."""

    confidence_kinds = ("distinct words",)

    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase

    @classmethod
    def from_spec(cls, options: dict, where: str) -> DistinctWords:
        unknown = sorted(set(options) - {"lowercase"})
        if unknown:
            raise BadInputError(f"{where}: distinct-words takes lowercase only, got {unknown}")
        return cls(**options)

    def count(self, text: str) -> int:
        return len(set((text.lower() if self.lowercase else text).split()))

    def judge(self, records, *, swap: bool = False, source: str = "data") -> Critiques:
        a = np.array([self.count(t) for t in records[schema.RESPONSE_1]])
        b = np.array([self.count(t) for t in records[schema.RESPONSE_2]])
        labels = np.where(a > b, 0, np.where(b > a, 1, 2))
        confidence = 0.5 + 0.5 * np.abs(a - b) / np.maximum(np.maximum(a, b), 1)
        columns = {
            schema.CRITIQUE_LABEL: labels.tolist(),
            schema.CRITIQUE_CONFIDENCE: confidence.tolist(),
            schema.CRITIQUE_STATUS: [schema.ParseStatus.OK.value] * len(records),
        }
        return Critiques(columns, "distinct words", 0, self.identity(setting_of(records), swap=swap))

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        return [f"distinct-words|lowercase={self.lowercase}"]


register("distinct-words", DistinctWords)


def expected(row: dict, lowercase: bool = True) -> tuple[int, float]:
    """The toy's verdict and confidence on one row, by hand."""
    fold = str.lower if lowercase else str
    a, b = (len(set(fold(row[f]).split())) for f in (schema.RESPONSE_1, schema.RESPONSE_2))
    label = 0 if a > b else 1 if b > a else 2
    return label, 0.5 + 0.5 * abs(a - b) / max(a, b, 1)


def pairs(tmp_path) -> list[dict]:
    """Pairs whose human label is the response with more distinct words where it has many more (the toy's confidence
    above 0.75) and the other response on every third pair where it has not, written to ``pairs.jsonl``; the
    responses repeat words so that distinct words and length differ."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(ROWS):
        rich = " ".join(f"w{k}" for k in range(int(rng.integers(4, 20))))
        poor = " ".join(["w0"] * int(rng.integers(3, 30)) + [f"v{k}" for k in range(int(rng.integers(1, 8)))])
        first, second = (rich, poor) if rng.integers(0, 2) == 0 else (poor, rich)
        row = {"id": f"p{i}", "question": f"Question {i}?", "response_1": first, "response_2": second}
        label, confidence = expected(row)
        row["label"] = 1 - label if confidence <= 0.75 and i % 3 == 0 else label
        rows.append(row)
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def cascade_file(tmp_path, options: dict, name: str = "cascade.yaml", kind: str = "distinct-words"):
    spec = {"critics": [{"name": "distinct", "kind": kind, "options": options}]}
    path = tmp_path / name
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def calibrate_argv(tmp_path, cascade) -> list[str]:
    return [
        "calibrate",
        "--data",
        str(tmp_path / "pairs.jsonl"),
        "--cascade",
        str(cascade),
        "--target-agreement",
        "0.8",
        "--delta",
        "0.2",
        "--min-rows",
        "10",
        "--output",
        str(tmp_path / "cal.json"),
    ]


def compare_argv(tmp_path, cascade, out: str = "judged.jsonl") -> list[str]:
    return [
        "compare",
        "--data",
        str(tmp_path / "pairs.jsonl"),
        "--cascade",
        str(cascade),
        "--calibration",
        str(tmp_path / "cal.json"),
        "--output",
        str(tmp_path / out),
    ]


def test_a_kind_registered_in_one_module_runs_through_calibrate_a_cascade_and_meta_eval(tmp_path, capsys):
    from hf_critic.selective import load_calibration

    rows = pairs(tmp_path)
    cascade = cascade_file(tmp_path, {"lowercase": True})
    assert main(calibrate_argv(tmp_path, cascade)) == 0
    calibration = load_calibration(str(tmp_path / "cal.json"))
    (entry,) = calibration.critics
    assert entry.name == "distinct" and entry.confidence == "distinct words"
    assert entry.fingerprint == DistinctWords(lowercase=True).identity(PAIRWISE)
    # the threshold keeps exactly the rows whose hand-computed confidence reaches it
    assert entry.threshold is not None
    kept = [i for i, r in enumerate(rows) if expected(r)[1] >= entry.threshold]
    assert 0 < len(kept) < ROWS and entry.n == len(kept)
    assert entry.k == sum(expected(rows[i])[0] != rows[i]["label"] for i in kept)

    capsys.readouterr()
    assert main(compare_argv(tmp_path, cascade)) == 0
    printed = capsys.readouterr().out
    assert f"cascade: {len(kept)}/{ROWS} rows decided" in printed and "distinct: asked 40" in printed
    judged = [json.loads(line) for line in (tmp_path / "judged.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, (row, out) in enumerate(zip(rows, judged, strict=True)):
        label, confidence = expected(row)
        if i in kept:
            assert out[schema.CRITIQUE_CRITIC] == "distinct" and out[schema.CRITIQUE_LABEL] == label
            assert out[schema.CRITIQUE_CONFIDENCE] == pytest.approx(confidence)
        else:  # escalated past the only critic: abstained, no verdict
            assert out[schema.CRITIQUE_STATUS] == "abstained" and out[schema.CRITIQUE_LABEL] is None

    meta = tmp_path / "meta"
    argv = ["meta-eval", "--critiques", f"distinct/pairs={tmp_path / 'judged.jsonl'}", "--output-dir", str(meta)]
    assert main(argv) == 0
    (run,) = json.loads((meta / "report.json").read_text(encoding="utf-8"))["runs"]
    assert run["critic"] == "distinct" and run["n_rows"] == len(kept) and run["n_abstained"] == ROWS - len(kept)
    hits = sum(judged[i][schema.CRITIQUE_LABEL] == rows[i]["label"] for i in kept)
    assert run["metrics"]["first_order_agreement"] == pytest.approx(hits / len(kept))
    assert run["metrics"]["coverage"] == pytest.approx(len(kept) / ROWS)


def test_a_changed_option_of_the_new_kind_is_a_changed_critic_and_an_unknown_kind_is_named(tmp_path, capsys):
    pairs(tmp_path)
    assert main(calibrate_argv(tmp_path, cascade_file(tmp_path, {"lowercase": True}))) == 0
    capsys.readouterr()
    changed = cascade_file(tmp_path, {"lowercase": False}, "changed.yaml")
    assert main(compare_argv(tmp_path, changed)) == 2
    err = capsys.readouterr().err
    assert "critic 'distinct' differs from the one calibrated" in err and "cal.json" in err
    typo = cascade_file(tmp_path, {}, "typo.yaml", kind="distinct-word")
    assert main(compare_argv(tmp_path, typo, "typo.jsonl")) == 2
    err = capsys.readouterr().err
    assert "unknown critic kind 'distinct-word' (did you mean 'distinct-words'?)" in err and "typo.yaml" in err
    bad = cascade_file(tmp_path, {"stem": True}, "bad.yaml")
    assert main(compare_argv(tmp_path, bad, "bad.jsonl")) == 2
    assert "distinct-words takes lowercase only, got ['stem']" in capsys.readouterr().err


def test_the_registry_names_every_kind_and_refuses_what_is_no_kind():
    from hf_critic.critic import Critic, RewardCritic
    from hf_critic.critics.baselines import LongerWins
    from hf_critic.critics.jury import Jury

    assert kinds()[:8] == [
        "generative",
        "reward",
        "served",
        "pooling",
        "recorded",
        "longer-wins",
        "jury",
        "label-prior",
    ]
    assert "distinct-words" in kinds() and critic_class("distinct-words") is DistinctWords
    assert all(issubclass(critic_class(name), CriticKind) for name in kinds())  # every built-in path resolves
    assert critic_class("generative") is Critic and critic_class("served") is Critic
    assert critic_class("reward") is RewardCritic and critic_class("pooling") is RewardCritic
    assert critic_class("jury") is Jury
    assert critic_class("longer-wins") is LongerWins and LongerWins.kind == "longer-wins"
    with pytest.raises(ValueError, match="critic kind 'jury' is built in"):
        register("jury", DistinctWords)
    with pytest.raises(ValueError, match="does not subclass hf_critic.critics.protocol.CriticKind"):
        register("plain", dict)
    with pytest.raises(ValueError, match="here: critic kind .recorded. is not declared with kind: and options:"):
        critic_class("recorded").from_spec({}, "here")


def test_every_built_in_kind_answers_the_protocol_on_the_same_rows(tmp_path):
    """Recorded verdicts, longer-wins and a jury of them judge through one call and say their confidence kind, calls
    and identity; the recorded critic's unmatched rows are named by position."""
    from hf_critic.critics.baselines import LongerWins
    from hf_critic.critics.jury import Jury
    from hf_critic.selective.cascade import CascadeStage, RecordedVerdicts

    rows = pairs(tmp_path)
    recorded = [{**r, schema.CRITIQUE_LABEL: r["label"], schema.CRITIQUE_CONFIDENCE: 0.9} for r in rows[:-2]]
    path = tmp_path / "earlier.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recorded), encoding="utf-8")
    data = datasets.Dataset.from_list(rows)
    earlier = RecordedVerdicts.from_critiques("earlier", str(path))
    judged = earlier.judge(data)
    assert judged.calls == 0 and judged.unmatched == [ROWS - 2, ROWS - 1] and judged.confidence_kind == "votes"
    assert judged.columns[schema.CRITIQUE_LABEL][:3] == [r["label"] for r in rows[:3]]
    length = LongerWins().judge(data, swap=True)
    assert length.confidence_kind == "length" and length.identity == LongerWins().identity(PAIRWISE)
    jury = Jury([CascadeStage("earlier", earlier), CascadeStage("length", LongerWins())], "vote")
    verdicts = jury.judge(data)
    assert verdicts.confidence_kind == "vote aggregate" and verdicts.calls == 0
    assert verdicts.identity == jury.identity(PAIRWISE) != jury.identity(schema.Setting(schema.Task.PAIRWISE, True))
    assert set(verdicts.columns["jury_members"][0]) == {"earlier", "length"}


def test_the_generative_critic_answers_the_protocol_in_both_tasks():
    """``Critic.judge``: pairs through ``compare`` (two calls a row under swap), responses through ``grade``; the
    confidence kind of its text verdicts, its kind and its identity as a cascade fingerprints it."""
    from hf_critic.critic import Critic
    from hf_critic.selective.cascade import CascadeStage, critic_fingerprint
    from tests.critic.test_critic import POINT, ScriptedBackend, grader

    backend = ScriptedBackend(lambda text, k: "Both fine, the first better. [[A]]")
    critic = Critic(backend, template="mtbench", verdict="text")
    pairs_ = datasets.Dataset.from_list(
        [{"question": f"q{i}?", "response_1": "a", "response_2": "b"} for i in range(3)]
    )
    judged = critic.judge(pairs_, swap=True)
    assert critic.kind == "generative" and critic.served_client is None
    assert judged.calls == backend.calls == 6 and judged.confidence_kind == "votes"
    # [[A]] in both orders: response 1 in the first, response 2 once mapped back: votes split, confidence 1/2
    assert judged.columns[schema.CRITIQUE_CONFIDENCE] == [0.5] * 3
    assert judged.identity == critic_fingerprint(CascadeStage("c", critic, swap=True), PAIRWISE)
    assert judged.identity != critic.identity(PAIRWISE, swap=False)
    graded = Critic(ScriptedBackend(grader), template="mtbench", verdict="text").judge(
        datasets.Dataset.from_list(POINT)
    )
    assert graded.columns[schema.CRITIQUE_SCORE] == [9.0, 2.0, None] and graded.calls == 3
    assert graded.columns[schema.CRITIQUE_STATUS] == ["ok", "ok", "unparsed"]
    assert graded.confidence_kind == "votes"


def test_a_reward_critic_behind_a_pooling_server_says_its_kind_and_client():
    """The kind a reward critic is comes from what it judges with: a reward model served for pooling is ``pooling``,
    its client the one ``compare --cascade`` re-checks; a served critic is no recorded one and has no members."""
    from hf_critic.backends.pooling import PoolingRewardClient
    from hf_critic.critic import RewardCritic
    from hf_critic.critic.rewards import ServedRewardModel

    client = PoolingRewardClient("http://127.0.0.1:1/v1", "rm")
    critic = RewardCritic(ServedRewardModel(client))
    assert critic.kind == "pooling" and critic.served_client is client
    assert not critic.recorded and not critic.members and not critic.fitted and critic.counts is None
