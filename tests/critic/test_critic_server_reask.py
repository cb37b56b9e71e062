"""Bad critiques not kept: ``hf-critic grade --base-url`` against a flaky critic server. A critique that does
not parse is asked again (at once, bounded; and from the cache on a rerun, which says how many it re-asked), so a rerun
against a healthy server gives the clean run's rows; a critique cut off at ``--max-new-tokens`` is kept and cached at
once, and counted as cut off, apart from prompts truncated to fit the context."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from hf_critic.backends.cache import GenerationCache, cache_key
from hf_critic.cli import main
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.testing.servers import FaultInjectionProxy, StubOpenAIServer, chat_completion_body

ROWS = 40


def critique(body: dict) -> str:
    """A deterministic critique in the mtbench template's format, its rating from a hash of the prompt."""
    prompt = body["messages"][-1]["content"]
    score = 1 + int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) % 10
    return f"The answer is relevant and mostly accurate. Rating: [[{score}]]"


def data(tmp_path: Path, n: int = ROWS) -> Path:
    path = tmp_path / "answers.jsonl"
    rows = [{"question": f"Question {i}: what is {i} + {i}?", "response": f"It is {2 * i}."} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def grade(url: str, answers: Path, out: Path, cache: Path, capsys) -> str:
    """``hf-critic grade --base-url`` (one request at a time, so the proxy's draws are reproducible); its summary."""
    argv = ["grade", "--base-url", url, "--model", "critic", "--data", str(answers), "--template", "mtbench"]
    argv += ["--verdict", "text", "--output", str(out), "--cache", str(cache), "--concurrency", "1", "--no-progress"]
    assert main(argv) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("critiques: "))


def rows(path: Path) -> list[dict]:
    keep = ("question", "critique_generation", "critique_score", "critique_status")
    return [{k: r[k] for k in keep} for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())]


def test_a_rerun_re_asks_the_bad_critiques_a_flaky_server_left_and_says_how_many(tmp_path, capsys):
    answers = data(tmp_path)
    with StubOpenAIServer(critique) as healthy:
        grade(healthy.url, answers, tmp_path / "clean.jsonl", tmp_path / "clean.sqlite", capsys)
        clean = rows(tmp_path / "clean.jsonl")
        assert {r["critique_status"] for r in clean} == {"ok"}
        # 60% of the critic's answers garbled (status 200, well-formed, no verdict): asked again at once, bounded
        with FaultInjectionProxy(healthy.url, fault_rate=0.6, faults=("garbled",), seed=7) as proxy:
            flaky = grade(proxy.url, answers, tmp_path / "flaky.jsonl", tmp_path / "c.sqlite", capsys)
            garbled = proxy.faults_injected()["garbled"]
        bad = [r["question"] for r in rows(tmp_path / "flaky.jsonl") if r["critique_status"] != "ok"]
        assert garbled > ROWS // 2 and 0 < len(bad) < garbled  # most were recovered in the same run
        assert f"unparsed {len(bad)}," in flaky
        before = healthy.requests
        # the same command once the fault is gone (the same URL: the cache is keyed by base URL and model):
        # only the bad critiques are asked again, and it says so
        with FaultInjectionProxy(
            healthy.url, fault_rate=0.0, port=int(proxy.url.rsplit(":", 1)[1].split("/")[0])
        ) as fixed:
            assert fixed.url == proxy.url
            again = grade(fixed.url, answers, tmp_path / "again.jsonl", tmp_path / "c.sqlite", capsys)
        assert healthy.requests - before == len(bad)
    assert f"{ROWS}/{ROWS} parsed" in again
    assert f"re-asked {len(bad)} cached critique(s) that did not parse, from cache {ROWS - len(bad)}" in again
    assert rows(tmp_path / "again.jsonl") == clean  # the clean run's rows


def test_a_critique_cut_off_at_max_new_tokens_is_kept_cached_at_once_and_counted_as_cut_off(tmp_path, capsys):
    answers = data(tmp_path, 4)

    def respond(body, headers):  # the critique of row 2 stops at max_tokens, as a server cuts a long answer
        if "Question 2:" in body["messages"][-1]["content"]:
            return 200, {}, chat_completion_body("The answer is relevant and mos", "critic", finish_reason="length")
        return None

    with StubOpenAIServer(critique, respond=respond) as server:
        first = grade(server.url, answers, tmp_path / "a.jsonl", tmp_path / "c.sqlite", capsys)
        assert server.requests == 4  # the cut-off critique was not asked again
        again = grade(server.url, answers, tmp_path / "b.jsonl", tmp_path / "c.sqlite", capsys)
        assert server.requests == 4  # nor on the rerun: it is that budget's critique, kept
    for line in (first, again):
        assert "3/4 parsed" in line and "unparsed 1," in line
        assert "truncated to fit the context 0, cut off at max tokens 1" in line
        assert "re-asked" not in line
    assert again.endswith("from cache 4")
    assert rows(tmp_path / "b.jsonl") == rows(tmp_path / "a.jsonl")


class Backend:
    """A server-like backend: a fixed text per conversation, and which of them stopped at max_new_tokens."""

    name = identity = "fake-server"

    def __init__(self, texts: dict[str, tuple[str, bool]]):
        self.texts, self.asked = texts, []

    def generate_checked(self, conversations, decoding, check=None):
        self.asked += [c[0]["content"] for c in conversations]
        return [[self.texts[c[0]["content"]][0]] for c in conversations], [
            [self.texts[c[0]["content"]][1]] for c in conversations
        ]

    def generate(self, conversations, decoding):
        return self.generate_checked(conversations, decoding)[0]


def test_the_cache_acceptance_rule_re_asks_bad_entries_and_keeps_cut_off_ones(tmp_path):
    from hf_critic.backends.cached import CachedBackend

    cache = GenerationCache(tmp_path / "c.sqlite")
    decoding = DecodingConfig()
    conversations = [[{"role": "user", "content": q}] for q in ("a", "b", "c")]
    key = {
        c[0]["content"]: cache_key(model="fake-server", messages=c, decoding=decoding.__dict__) for c in conversations
    }
    # an older run kept a garbled answer (texts only), a good one and one cut off at max_new_tokens
    cache.put_many(
        {key["a"]: ["~~garbled~~"], key["b"]: ["Rating: [[4]]"], key["c"]: {"texts": ["Rati"], "cut_off": [True]}}
    )
    check = lambda text: None if re.search(r"\[\[\d+\]\]", text) else "unparsed"  # noqa: E731
    backend = Backend({"a": ("Rating: [[7]]", False), "b": ("x", False), "c": ("x", False)})
    made = CachedBackend(backend, cache).generate(conversations, decoding, check=check)
    assert made.texts == [["Rating: [[7]]"], ["Rating: [[4]]"], ["Rati"]] and backend.asked == ["a"]
    assert (made.cached, made.reasked) == (2, 1) and made.cut_off == [[False], None, [True]]
    assert cache.get(key["a"]) == {"texts": ["Rating: [[7]]"], "cut_off": [False]}  # replaced
    # without a check every stored entry is read back, whatever it holds (local engines)
    plain = CachedBackend(backend, cache).generate(conversations, decoding)
    assert plain.cached == 3 and plain.reasked == 0 and backend.asked == ["a"]
