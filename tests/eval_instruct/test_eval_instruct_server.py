"""Eval-Instruct against a real OpenAI-compatible server started here (`transformers serve`, a tiny model built here):
the whole pipeline on ~10 queries, then faults injected by a proxy, a SIGKILL mid-stage and a restart."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
import yaml

from hf_critic.core.schema import query_id
from hf_critic.eval_instruct.config import load_config
from hf_critic.eval_instruct.pipeline import run_eval_instruct
from hf_critic.eval_instruct.stages import OUTPUT_FEATURES
from hf_critic.parsing import parse_label, parse_score
from hf_critic.prompts import get_template
from hf_critic.testing.servers import FaultInjectionProxy
from tests._eval_instruct_support import (
    REPO_ROOT,
    SCRIPT_TEXT,
    SEEDS,
    build_scripted_model,
    recipe,
    start_transformers_serve,
    stop_server,
)

pytestmark = pytest.mark.slow
SECRET = "sk-test-SECRET-never-written-77aa"
# The one Code Generation seed: its category sorts first, so balancing always keeps it.
FAILING_QUESTION = json.loads(SEEDS.read_text(encoding="utf-8").splitlines()[7])["question"]


def fails_always(body: dict) -> bool:
    """The generators' requests for FAILING_QUESTION (a lone user turn holding just the question) always get a 500."""
    messages = body.get("messages", [])
    return len(messages) == 1 and messages[0].get("content") == FAILING_QUESTION


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`transformers serve` on 127.0.0.1 with the scripted tiny model; torn down after the module."""
    folder = tmp_path_factory.mktemp("served")
    model = build_scripted_model(folder / "model")
    proc, url = start_transformers_serve(model, folder / "serve.log")
    try:
        yield url, str(model)
    finally:
        stop_server(proc)


def test_whole_pipeline_on_a_real_server(server, tmp_path):
    url, model = server
    path = recipe(tmp_path, url, model=model)
    data = yaml.safe_load(path.read_text())
    # the second generator runs in-process with transformers (the same scripted model, loaded from its folder)
    data["generators"][1] = {"name": "gen-b", "transformers": model, "max_new_tokens": 16, "batch_size": 4}
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    result = run_eval_instruct(config, echo=lambda line: None)
    report = result.report
    assert all(s.balanced for s in report.stages)
    assert not report.failures
    usage = report.total_usage()
    assert usage.items == 96 and 50 <= usage.requests < 96  # every stage asked (identical asks once, gen-b local)
    local = report.stage("collect_responses").usage
    assert local.items == 20 and local.requests == 10  # 10 over HTTP (gen-a), 10 generated in-process (gen-b)
    # ~10 queries: 10 seeds + the 3 queries the scripted model proposes, balanced back to 10
    assert report.stage("augment_queries").items_out == 3 and report.stage("balance_queries").items_out == 10
    counts = report.counts
    assert counts == {
        "pointwise_referenced": 20,
        "pointwise_reference_free": 20,
        "pairwise_referenced": 20,  # 10 pairs + swapped copies
        "pairwise_reference_free": 40,  # 10 pairs x 2 paths + swapped copies
    }
    assert report.stage("cross_validation").notes["filtered_share"] == 0.0
    data = result.dataset
    for name, split in data.items():
        assert split.features == OUTPUT_FEATURES[name] and len(set(split["id"])) == len(split)
        assert all(c == SCRIPT_TEXT for c in split["critique"])  # what the served model wrote, verbatim
    row = data["pointwise_referenced"][0]
    assert parse_score(row["critique"]).score == row["score"] == 7.0
    assert row["messages"][:-1] == get_template("critiquellm_v2", "pointwise_referenced", "en").render(row)
    pair = data["pairwise_reference_free"][0]
    assert parse_label(pair["critique"]).label == pair["label"] == 2
    assert [m["role"] for m in pair["messages"]] == ["user", "assistant"]
    hub = datasets.load_dataset(str(result.paths["hub"]), "pairwise_reference_free", split="train")
    assert hub["id"] == data["pairwise_reference_free"]["id"]
    again = run_eval_instruct(config, echo=lambda line: None)
    assert again.report.total_usage().requests == 0  # a rerun makes no request
    assert again.report.counts == counts


def _cached_keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {k for (k,) in db.execute("SELECT key FROM generations")}


def _run_cli(config: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "hf_critic.cli", "eval-instruct", "--config", str(config), "--no-progress"]
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=REPO_ROOT)


def _wait_idle(proxy: FaultInjectionProxy, timeout: float = 120.0) -> None:
    # The killed run's requests still queue in `transformers serve`; on a loaded 2-core machine draining them took
    # over 30 s once (a clean-clone CI run), so wait up to 2 minutes.
    deadline = time.monotonic() + timeout
    while proxy.in_flight and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proxy.in_flight == 0


def test_faults_kill_and_restart_lose_and_repeat_nothing(server, tmp_path):
    url, model = server
    with FaultInjectionProxy(url, fault_rate=0.3, delay=(0.2, 2.5), seed=1, always_fail=fails_always) as proxy:
        path = recipe(tmp_path, proxy.url, model=model, queries={"balance_total": 4})
        data = yaml.safe_load(path.read_text())
        # 9 attempts: an item fails at random with p ~ 0.26**9 (a fault, or a delay past the timeout, each time)
        retries = {"timeout": 1.5, "retry": {"max_retries": 8, "initial_backoff": 0.05, "max_backoff": 0.4}}
        data["teacher"].update(retries)
        for generator in data["generators"]:
            generator["endpoint"].update(retries)
        path.write_text(yaml.safe_dump(data))
        config = load_config(path)
        cache = config.cache_path

        # run 1: killed with SIGKILL in the middle of the grading stage
        first = _run_cli(path, tmp_path / "run1.log")
        deadline = time.monotonic() + 240
        while sum(r.stage == "grade_pointwise_referenced" for r in proxy.log) < 3 and first.poll() is None:
            assert time.monotonic() < deadline, (tmp_path / "run1.log").read_text()
            time.sleep(0.05)
        assert first.poll() is None, "the run ended before it could be killed: " + (tmp_path / "run1.log").read_text()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        _wait_idle(proxy)
        cached_before = _cached_keys(cache)
        assert cached_before and not (Path(config.output_dir) / "report.json").exists()
        seen = len(proxy.log)

        # run 2: the same command, through the same faulty proxy, to the end
        second = _run_cli(path, tmp_path / "run2.log")
        try:
            code = second.wait(timeout=300)
        finally:
            second.kill()
        log = (tmp_path / "run2.log").read_text()
        assert code == 1, log  # finished, and says that some items failed
        _wait_idle(proxy)
        again = [r for r in proxy.log[seen:] if r.key]

    # no call for work already cached
    assert again and not {r.key for r in again} & cached_before
    # every fault kind was met and retried
    assert set(proxy.faults_injected()) == {"429", "500", "garbage", "delay"}
    saved = json.loads((Path(config.output_dir) / "report.json").read_text())
    assert saved["usage"]["retries"] > 0 and saved["usage"]["cache_hits"] >= len(cached_before)
    # every item produced or reported failed: conserved stages balance, and the failures are listed
    assert all(stage["balanced"] for stage in saved["stages"])
    failed = {f["id"] for s in saved["stages"] for f in s["failures"]}
    failing = query_id(FAILING_QUESTION)
    assert {f"{failing}/gen-a", f"{failing}/gen-b"} <= failed
    named = [json.loads(line) for line in (Path(config.output_dir) / "failures.jsonl").read_text().splitlines()]
    assert {n["id"] for n in named if n["kind"] == "failed"} == failed
    # and every rejected or left-out item too, as many per stage and reason as the stage counts
    for stage in saved["stages"]:
        for reason, count in stage["rejected"].items():
            assert sum(n["stage"] == stage["name"] and n["reason"] == reason for n in named) == count, (stage, reason)
    assert "item(s) failed after retries" in log
    # no duplicates, and exactly the rows of a clean run minus those of the failed query
    data = datasets.load_from_disk(str(Path(config.output_dir) / "dataset"))
    clean = run_eval_instruct(
        load_config(recipe(tmp_path / "clean", url, model=model, queries={"balance_total": 4}, cache=str(cache))),
        echo=lambda line: None,
    ).dataset
    for name in OUTPUT_FEATURES:
        ids = data[name]["id"]
        assert len(set(ids)) == len(ids), name
        assert set(ids) <= set(clean[name]["id"]), name
        lost = {i for i in clean[name]["id"] if i not in set(ids)}
        assert all(i.startswith(failing) for i in lost), (name, lost)
        assert failing not in set(data[name]["query_id"])
    assert len(data["pointwise_referenced"]) == len(clean["pointwise_referenced"]) - 2
    # the key was read from the environment and written nowhere
    for file in [*Path(config.output_dir).rglob("*"), tmp_path / "run1.log", tmp_path / "run2.log"]:
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
