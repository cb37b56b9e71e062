"""Glass-box self-evaluation (Huang et al., seed 001): feature maths against numpy, token alignment, batching,
attention only on request, ensembles, reference strategies, multi-turn, the CLI and the shared SelfEval files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hf_critic import glassbox as gb
from hf_critic.glassbox import (
    BASIC_FEATURES,
    ComboNormalization,
    GlassBoxEvaluator,
    attention_entropy,
    attention_entropy_summary,
    encode_turn,
    end_of_turn_token_id,
    ensemble_uncertainty,
    masked_mean,
    masked_variance,
    oriented,
    resolve_features,
    response_features,
    shift_for_causal_lm,
    token_entropy,
    token_log_probs,
    token_vocab_log_prob_variance,
)
from hf_critic.glassbox import evaluator as glassbox_evaluator
from hf_critic.io import RecordError
from hf_critic.testing.tiny_models import chatml_tokenizer, tiny_llama

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "What is the capital of France? Paris is the capital.",
    "user assistant system hello world answer question reference",
] * 20


def make_tokenizer(bos_post_processor: bool = False):
    """The tiny ChatML tokenizer with BOS declared; optionally a post-processor that prepends it."""
    return chatml_tokenizer(CORPUS, vocab_size=300, bos_token="<|endoftext|>", bos_post_processor=bos_post_processor)


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


class TableLM(torch.nn.Module):
    """A "model" with known logits: the logits at a position are row ``input_ids[position]`` of a fixed table.

    Records the keyword arguments of every call so tests can check what the evaluator asked for.
    """

    def __init__(self, vocab_size: int, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = torch.nn.Parameter(3.0 * torch.randn(vocab_size, vocab_size, generator=g, dtype=torch.float64))
        self.calls: list[dict] = []

    def forward(self, input_ids, attention_mask=None, **kwargs):
        self.calls.append(dict(kwargs, attention_mask=attention_mask))
        return SimpleNamespace(logits=self.table[input_ids])


@pytest.fixture(scope="module")
def llama(tokenizer):
    return tiny_llama(tokenizer, max_position_embeddings=512)


def records(n: int = 8) -> list[dict]:
    """Single-turn records of clearly different prompt and response lengths."""
    out = []
    for i in range(n):
        out.append(
            {
                "question": "What is the capital of France? " * (1 + i % 3) + f"Case {i}.",
                "response": "Paris is the capital. " * (1 + (i * 5) % 7) + "The quick brown fox" * (i % 2),
                "reference": "Paris." if i % 4 else None,
            }
        )
    return out


# --------------------------------------------------------------------------------------------------
# numpy reference implementations (written from the paper's equations, independent of the module)
# --------------------------------------------------------------------------------------------------


def np_log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def np_features(rows: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """Eqs. 1-3 of §2.1 plus the released-code variance, for logits ``rows`` (T, V) scoring ``targets`` (T,)."""
    logp = np_log_softmax(rows.astype(np.float64))
    p = np.exp(logp)
    lp = logp[np.arange(len(targets)), targets]
    probs = np.exp(lp)
    return {
        "sent_prob": lp.sum() / len(lp),
        "sent_prob_sum": lp.sum(),
        "softmax_ent": -(p * logp).sum() / len(lp),
        "softmax_var": (probs**2).mean() - probs.mean() ** 2,
        "softmax_var_logprob": (lp**2).mean() - lp.mean() ** 2,
        "softmax_var_vocab": np.mean([(r**2).mean() - r.mean() ** 2 for r in logp]),
    }


def expected_ids(tokenizer, messages: list[dict], response: str) -> tuple[list[int], int, int]:
    """Prompt + response + <|im_end|> written out without the module: what generation would have produced."""
    prompt_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt_text.endswith("<|im_start|>assistant\n")
    prompt = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    resp = tokenizer(response, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    eot = tokenizer.convert_tokens_to_ids("<|im_end|>")
    ids = prompt + resp + [eot]
    return ids, len(prompt), len(ids)


def table_features(model: TableLM, tokenizer, messages: list[dict], response: str) -> dict[str, float]:
    ids, start, end = expected_ids(tokenizer, messages, response)
    table = model.table.detach().numpy()
    rows = table[np.array(ids[start - 1 : end - 1])]  # logits at position i score token i + 1
    return np_features(rows, np.array(ids[start:end]))


def user(q: str) -> list[dict]:
    return [{"role": "user", "content": q}]


# --------------------------------------------------------------------------------------------------
# Pure maths
# --------------------------------------------------------------------------------------------------


def test_token_level_maths_matches_numpy():
    g = torch.Generator().manual_seed(1)
    logits = 4 * torch.randn(3, 5, 11, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 11, (3, 5), generator=g)
    logp = np_log_softmax(logits.numpy())
    np.testing.assert_allclose(
        token_log_probs(logits, targets).numpy(), np.take_along_axis(logp, targets.numpy()[..., None], -1)[..., 0]
    )
    np.testing.assert_allclose(token_entropy(logits).numpy(), -(np.exp(logp) * logp).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(token_vocab_log_prob_variance(logits).numpy(), logp.var(-1), rtol=1e-12)


def test_entropy_is_minus_sum_p_log_p_not_log_softmax_times_logits():
    v = 7
    uniform = torch.zeros(v)
    assert token_entropy(uniform).item() == pytest.approx(math.log(v), abs=1e-6)
    one_hot = torch.tensor([0.0] + [-float("inf")] * (v - 1))
    assert token_entropy(one_hot).item() == 0.0  # 0 * log 0 = 0, no NaN
    logits = torch.tensor([2.0, 1.0, 0.0, -3.0])
    p = torch.softmax(logits, -1)
    assert token_entropy(logits).item() == pytest.approx(-(p * p.log()).sum().item(), abs=1e-6)
    buggy = (torch.log_softmax(logits, -1) * logits).mean().item()  # the released code's formula
    assert abs(token_entropy(logits).item() - buggy) > 0.1
    # shift-invariant like any function of the softmax; the buggy formula is not
    assert token_entropy(logits + 5).item() == pytest.approx(token_entropy(logits).item(), abs=1e-6)
    assert token_vocab_log_prob_variance(uniform).item() == pytest.approx(0.0, abs=1e-12)


def test_masked_reductions_ignore_masked_entries_and_give_nan_on_empty_rows():
    values = torch.tensor([[1.0, 2.0, 4.0, 100.0], [5.0, 5.0, 5.0, 5.0], [3.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    mean = masked_mean(values, mask)
    var = masked_variance(values, mask)
    assert mean[0].item() == pytest.approx(7 / 3)
    assert var[0].item() == pytest.approx(np.var([1.0, 2.0, 4.0]))  # population E[X^2] - E[X]^2
    assert math.isnan(mean[1].item()) and math.isnan(var[1].item())
    assert mean[2].item() == 3.0 and var[2].item() == 0.0


def test_shift_for_causal_lm_never_wraps_the_last_token_around():
    logits = torch.arange(4 * 3, dtype=torch.float32).reshape(1, 4, 3)
    ids = torch.tensor([[7, 8, 9, 10]])
    mask = torch.tensor([[True, False, True, True]])
    lg, tgt, m = shift_for_causal_lm(logits, ids, mask)
    assert lg.shape == (1, 3, 3)
    assert tgt.tolist() == [[8, 9, 10]]  # token 0 is never a target; nothing wraps to the front
    assert torch.equal(lg[0, -1], logits[0, 2])  # the last position's logits score nothing
    assert m.tolist() == [[False, True, True]]
    with pytest.raises(ValueError):
        shift_for_causal_lm(logits, ids[:, :3], mask)


def test_response_features_match_numpy_on_a_padded_batch():
    g = torch.Generator().manual_seed(2)
    logits = 3 * torch.randn(2, 6, 9, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 9, (2, 6), generator=g)
    mask = torch.tensor([[0, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], dtype=torch.bool)
    got = response_features(logits, targets, mask)
    assert set(got) == set(BASIC_FEATURES)
    for b in range(2):
        sel = mask[b].numpy()
        want = np_features(logits[b].numpy()[sel], targets[b].numpy()[sel])
        for name, value in want.items():
            assert got[name][b].item() == pytest.approx(value, rel=1e-9, abs=1e-12), name


def test_attention_entropy_and_summaries_match_numpy():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    attn = torch.softmax(scores.masked_fill(~causal, -float("inf")), -1)  # zeros above the diagonal
    qmask = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 0, 0]], dtype=torch.bool)
    got = attention_entropy(attn, qmask)
    a = attn.numpy()
    for b in range(2):
        for h in range(3):
            rows = [r[r > 0] for r, keep in zip(a[b, h], qmask[b].numpy(), strict=True) if keep]
            assert got[b, h].item() == pytest.approx(np.mean([-(r * np.log(r)).sum() for r in rows]), rel=1e-12)
    per = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, 2.5]])
    assert attention_entropy_summary(per) == (0.5, pytest.approx(per.mean()))
    with pytest.raises(ValueError):
        attention_entropy_summary(np.zeros((0, 0)))


def test_ensemble_uncertainty_is_mean_and_population_variance():
    values = [-1.0, -2.0, -4.0, float("nan")]
    exp, var = ensemble_uncertainty(values)
    assert exp == pytest.approx(-7 / 3)
    assert var == pytest.approx(np.mean(np.square([-1.0, -2.0, -4.0])) - (7 / 3) ** 2)
    assert all(math.isnan(x) for x in ensemble_uncertainty([]))


def test_combo_normalisation_minmax_and_zscore():
    ent = [1.0, 2.0, 3.0]
    var = [0.1, 0.3, 0.2]
    norm = ComboNormalization.fit(ent, var)
    # the paper's plain sum of the two min-max normalised features (the release's normalisation)
    np.testing.assert_allclose(norm.apply(ent, var), [0.0 + 0.0, 0.5 + 1.0, 1.0 + 0.5])
    assert norm.var_feature == "softmax_var_vocab" and (norm.ent_sign, norm.var_sign) == (1, 1)
    # the §2.1 reading: low entropy = confident = better, (max - ent) / (max - min)
    confident = ComboNormalization.fit(ent, var, ent_sign=-1)
    np.testing.assert_allclose(confident.apply(ent, var), [1.0 + 0.0, 0.5 + 1.0, 0.0 + 0.5])
    flipped = ComboNormalization.fit(ent, var, ent_sign=-1, var_sign=-1)
    np.testing.assert_allclose(flipped.apply(ent, var), [1.0 + 1.0, 0.5 + 0.0, 0.0 + 0.5])
    z = ComboNormalization.fit(ent, var, method="zscore", ent_sign=-1)
    e, v = np.array(ent), np.array(var)
    np.testing.assert_allclose(z.apply(ent, var), -(e - e.mean()) / e.std() + (v - v.mean()) / v.std())
    assert ComboNormalization.from_dict(norm.to_dict()) == norm
    const = ComboNormalization.fit([2.0, 2.0], [1.0, 1.0])
    assert const.ent_scale == 1.0 and const.var_scale == 1.0
    assert math.isnan(norm.apply([None], [0.1])[0])
    with pytest.raises(ValueError):
        ComboNormalization.fit([float("nan")], [1.0])
    with pytest.raises(ValueError):
        ComboNormalization.fit(ent, var, method="rank")
    with pytest.raises(ValueError):
        ComboNormalization.fit(ent, var, ent_sign=0)
    with pytest.raises(ValueError):
        ComboNormalization.from_dict({"method": "minmax"})


def test_feature_names_aliases_and_orientation():
    assert resolve_features(None) == ("sent_prob", "softmax_ent", "softmax_var")
    assert resolve_features("SentProb,Softmax-Ent, softmax_var") == ("sent_prob", "softmax_ent", "softmax_var")
    assert resolve_features(["DecEnsem-Var", "PrmtEnsem-Var", "Attn-Ent-Min", "AttnEnt-Avg"]) == (
        "dec_ensemble_var",
        "prm_ensemble_var",
        "attn_ent_min",
        "attn_ent_avg",
    )
    assert resolve_features("basic") == BASIC_FEATURES
    assert len(resolve_features("all")) == len(gb.FEATURES)
    with pytest.raises(ValueError, match="unknown glass-box feature"):
        resolve_features("perplexity")
    # the paper's direction (§2.1) and the one observed against GPT-4 grades disagree for these two
    np.testing.assert_array_equal(oriented([1.0, None], "softmax_ent", direction="paper"), [-1.0, np.nan])
    np.testing.assert_array_equal(oriented([1.0, None], "softmax_ent"), [1.0, np.nan])
    np.testing.assert_array_equal(oriented([1.0], "glassbox_sent_prob_calibrated"), [-1.0])
    np.testing.assert_array_equal(oriented([1.0], "glassbox_sent_prob_calibrated", direction="paper"), [1.0])
    np.testing.assert_array_equal(oriented([2.0], "attn_ent_min"), [2.0])  # no direction known: unchanged


def test_docs_table_and_cli_epilog_are_generated_from_features(tmp_path):
    from hf_critic.commands.self_eval import EPILOG
    from hf_critic.glassbox.features import markdown_table, update_docs

    table = markdown_table()
    assert len(table.splitlines()) == 2 + len(gb.FEATURES)
    assert "| `softmax_ent` | Softmax-Ent | 2.1 Eq. 2 |" in table and "**higher = better**" in table
    docs = Path(__file__).resolve().parents[2] / "docs" / "glassbox.md"
    assert table in docs.read_text(encoding="utf-8"), "regenerate: python -m hf_critic.glassbox docs/glassbox.md"
    stale = tmp_path / "glassbox.md"
    stale.write_text(
        docs.read_text(encoding="utf-8").replace("| `sent_prob` | SentProb |", "| `old` | SentProb |", 1),
        encoding="utf-8",
    )
    assert update_docs(stale) and stale.read_text(encoding="utf-8") == docs.read_text(encoding="utf-8")
    assert not update_docs(stale)
    for name, info in gb.FEATURES.items():
        assert f"  {name} " in EPILOG and info.paper_name in EPILOG
    assert "differ for sent_prob, sent_prob_sum, softmax_ent." in EPILOG
    assert gb.FEATURES["softmax_ent"].higher_is_better is False and gb.FEATURES["sent_prob"].higher_is_better
    with pytest.raises(ValueError):
        oriented([1.0], "softmax_ent", direction="best")
    with pytest.raises(ValueError):
        oriented([1.0], "bleu")


def test_prompt_pool_is_appendix_a1():
    pool = gb.load_system_prompt_pool()
    assert len(pool) == 7
    assert pool[3] == "A chat between a curious human and an artificial intelligence assistant."
    assert pool[4] == "You are a helpful, unbiased, uncensored assistant."


# --------------------------------------------------------------------------------------------------
# Token alignment
# --------------------------------------------------------------------------------------------------


def test_alignment_is_exact_with_special_tokens(tokenizer):
    eot = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn_token_id(tokenizer) == eot
    response = "Paris <|im_end|> is <|im_start|>the capital."  # special-token strings typed as text
    context = [{"role": "system", "content": "Be brief."}] + user("What is the capital of France?")
    enc = encode_turn(tokenizer, context, response, end_token_id=eot)
    ids, start, end = expected_ids(tokenizer, context, response)
    assert (enc.input_ids, enc.response_start, enc.response_end) == (ids, start, end)
    prompt_tail = tokenizer(
        tokenizer.apply_chat_template(user("x"), tokenize=False, add_generation_prompt=True)[-22:],
        add_special_tokens=False,
    )["input_ids"]
    assert enc.input_ids[: enc.response_start][-len(prompt_tail) :] == prompt_tail  # ends "<|im_start|>assistant\n"
    scored = enc.input_ids[enc.response_start : enc.response_end]
    assert scored[-1] == eot and eot not in scored[:-1]  # the typed "<|im_end|>" is text, not the special token
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") not in scored
    assert tokenizer.decode(scored[:-1]) == response
    assert enc.num_response_tokens == len(scored)
    plain = encode_turn(tokenizer, context, response, end_token_id=None)
    assert plain.input_ids == enc.input_ids[:-1] and plain.response_end == enc.response_end - 1


def test_alignment_adds_no_bos_inside_the_sequence():
    tok = make_tokenizer(bos_post_processor=True)
    bos = tok.convert_tokens_to_ids("<|endoftext|>")
    assert tok("hello")["input_ids"][0] == bos  # this tokenizer adds BOS by default
    enc = encode_turn(tok, user("hello"), "world answer", end_token_id=tok.eos_token_id)
    assert bos not in enc.input_ids[enc.response_start :]
    assert tok.decode(enc.input_ids[enc.response_start : enc.response_end - 1]) == "world answer"


def test_truncation_keeps_the_response_and_flags_it(tokenizer):
    enc = encode_turn(tokenizer, user("What is the capital of France? " * 10), "Paris.", end_token_id=2, max_length=12)
    assert enc.truncated and len(enc.input_ids) == 12
    assert enc.input_ids[enc.response_start : enc.response_end][-1] == 2
    assert tokenizer.decode(enc.input_ids[enc.response_start : enc.response_end - 1]) == "Paris."


def test_a_tokenizer_without_chat_template_is_refused(tokenizer):
    bare = make_tokenizer()
    bare.chat_template = None
    with pytest.raises(gb.AlignmentError, match="chat template"):
        encode_turn(bare, user("q"), "a")


# --------------------------------------------------------------------------------------------------
# The evaluator against the known-logits model
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [512, 3])
def test_every_basic_feature_matches_numpy_on_known_logits(tokenizer, chunk, monkeypatch):
    monkeypatch.setattr(glassbox_evaluator, "_CHUNK", chunk)  # vocabulary statistics computed 3 positions at a time
    model = TableLM(len(tokenizer))
    recs = records(5)
    ds = GlassBoxEvaluator(model, tokenizer=tokenizer, batch_size=3).score(recs, features="basic")
    for rec, row in zip(recs, ds, strict=True):
        want = table_features(model, tokenizer, user(rec["question"]), rec["response"])
        for name, value in want.items():
            assert row[f"glassbox_{name}"] == pytest.approx(value, rel=1e-9, abs=1e-12), name
        ids, start, end = expected_ids(tokenizer, user(rec["question"]), rec["response"])
        assert row["glassbox_num_tokens"] == end - start
        assert row["glassbox_truncated"] is False
    assert ds["question"] == [r["question"] for r in recs]  # input columns kept


def test_softmax_combo_fitted_on_the_data_or_passed_in(tokenizer):
    model = TableLM(len(tokenizer))
    recs = records(6)
    ev = GlassBoxEvaluator(model, tokenizer=tokenizer)
    ds = ev.score(recs, features=["softmax_combo", "softmax_ent"])
    want = [table_features(model, tokenizer, user(r["question"]), r["response"]) for r in recs]
    ent = np.array([w["softmax_ent"] for w in want])
    vocab = np.array([w["softmax_var_vocab"] for w in want])
    var = np.array([w["softmax_var"] for w in want])
    combo = (ent - ent.min()) / (ent.max() - ent.min()) + (vocab - vocab.min()) / (vocab.max() - vocab.min())
    np.testing.assert_allclose(ds["glassbox_softmax_combo"], combo, rtol=1e-9)
    assert ev.combo_normalization_.method == "minmax" and ev.combo_normalization_.var_feature == "softmax_var_vocab"
    other = ev.score(recs, features="softmax_combo", combo_var_feature="softmax_var", combo_ent_sign=-1)
    combo = (ent.max() - ent) / (ent.max() - ent.min()) + (var - var.min()) / (var.max() - var.min())
    np.testing.assert_allclose(other["glassbox_softmax_combo"], combo, rtol=1e-9)
    fixed = ComboNormalization("zscore", "softmax_var_vocab", -1, 1, 1.0, 2.0, 0.5, 4.0)
    ds2 = ev.score(recs[:2], features="softmax_combo", combo_normalization=fixed.to_dict())
    np.testing.assert_allclose(ds2["glassbox_softmax_combo"], -(ent[:2] - 1.0) / 2.0 + (vocab[:2] - 0.5) / 4.0)


def test_prompt_ensemble_uses_each_appendix_prompt_once(tokenizer):
    model = TableLM(len(tokenizer))
    rec = records(2)[1]
    ds = GlassBoxEvaluator(model, tokenizer=tokenizer).score([rec], features=["prm_ensemble_exp", "prm_ensemble_var"])
    sps = [
        table_features(model, tokenizer, [{"role": "system", "content": s}] + user(rec["question"]), rec["response"])[
            "sent_prob"
        ]
        for s in gb.load_system_prompt_pool()
    ]
    np.testing.assert_allclose(ds[0]["glassbox_prm_ensemble_values"], sps, rtol=1e-9)
    assert ds[0]["glassbox_prm_ensemble_exp"] == pytest.approx(np.mean(sps), rel=1e-9)
    assert ds[0]["glassbox_prm_ensemble_var"] == pytest.approx(np.var(sps), rel=1e-7)
    # a random draw of N prompts from the pool (with replacement), seeded
    ev = GlassBoxEvaluator(model, tokenizer=tokenizer, prompt_ensemble_size=3, seed=5)
    vals = ev.score([rec], features="prm_ensemble_exp")[0]["glassbox_prm_ensemble_values"]
    assert len(vals) == 3 and all(any(abs(v - s) < 1e-9 for s in sps) for v in vals)


def test_reference_illustration_and_calibration(tokenizer):
    model = TableLM(len(tokenizer))
    recs = records(4)  # record 0 has no reference
    ds = GlassBoxEvaluator(model, tokenizer=tokenizer).score(
        recs, features=["sent_prob", "softmax_ent"], illustration=True, calibrate=True
    )
    assert ds["glassbox_illustrated"] == [False, True, True, True]
    for rec, row in zip(recs, ds, strict=True):
        q, resp, ref = rec["question"], rec["response"], rec["reference"]
        if ref is None:
            plain = table_features(model, tokenizer, user(q), resp)
            assert row["glassbox_sent_prob"] == pytest.approx(plain["sent_prob"], rel=1e-9)
            assert row["glassbox_sent_prob_ref"] is None and row["glassbox_sent_prob_calibrated"] is None
            continue
        # Appendix A.2: [user q, assistant reference] as a demonstration, then the same q and the response
        demo = user(q) + [{"role": "assistant", "content": ref}] + user(q)
        ill = table_features(model, tokenizer, demo, resp)
        assert row["glassbox_sent_prob"] == pytest.approx(ill["sent_prob"], rel=1e-9)
        # §3.2: the reference scored under the plain prompt; calibrated = feature(response) - feature(reference)
        ref_f = table_features(model, tokenizer, user(q), ref)
        assert row["glassbox_sent_prob_ref"] == pytest.approx(ref_f["sent_prob"], rel=1e-9)
        assert row["glassbox_sent_prob_calibrated"] == pytest.approx(ill["sent_prob"] - ref_f["sent_prob"], rel=1e-9)
        assert row["glassbox_softmax_ent_calibrated"] == pytest.approx(
            ill["softmax_ent"] - ref_f["softmax_ent"], rel=1e-9
        )


def test_multi_turn_last_every_and_numbered_turns(tokenizer):
    model = TableLM(len(tokenizer))
    fastchat = [
        {"turns": ["hello", "world question"], "responses": ["answer", "the lazy dog"]},
        {"turns": ["What is the capital of France?"], "responses": ["Paris."]},
    ]
    ev = GlassBoxEvaluator(model, tokenizer=tokenizer)
    every = ev.score(fastchat, features="sent_prob", turn="all")
    conv = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "world question"},
    ]
    want = [
        table_features(model, tokenizer, conv[:1], "answer")["sent_prob"],
        table_features(model, tokenizer, conv, "the lazy dog")["sent_prob"],
    ]
    np.testing.assert_allclose(every[0]["glassbox_sent_prob"], want, rtol=1e-9)
    assert len(every[1]["glassbox_sent_prob"]) == 1
    last = ev.score(fastchat, features="sent_prob", turn="last")
    assert last[0]["glassbox_sent_prob"] == pytest.approx(want[1], rel=1e-9)
    second = ev.score(fastchat, features="sent_prob", turn=2)
    assert second[0]["glassbox_sent_prob"] == pytest.approx(want[1], rel=1e-9)
    assert second[1]["glassbox_sent_prob"] is None  # no second turn
    as_messages = [{"messages": conv + [{"role": "assistant", "content": "the lazy dog"}]}]
    assert ev.score(as_messages, features="sent_prob")[0]["glassbox_sent_prob"] == pytest.approx(want[1], rel=1e-9)


def test_malformed_records_name_the_row(tokenizer):
    ev = GlassBoxEvaluator(TableLM(len(tokenizer)), tokenizer=tokenizer)
    with pytest.raises(RecordError, match="row 1"):
        ev.score([{"question": "q", "response": "a"}, {"question": "", "response": "a"}])
    with pytest.raises(RecordError, match="2 user turns"):
        ev.score([{"turns": ["a", "b"], "responses": ["x"]}])
    with pytest.raises(ValueError, match="turn"):
        ev.score([{"question": "q", "response": "a"}], turn="first")
    with pytest.raises(ValueError, match="tokenizer"):
        GlassBoxEvaluator(TableLM(4))


def test_a_model_in_training_mode_is_scored_without_dropout(tokenizer):
    model = tiny_llama(tokenizer, num_hidden_layers=1, attention_dropout=0.5).train()
    model.set_attn_implementation("eager")
    ev = GlassBoxEvaluator(model, tokenizer=tokenizer)
    a = ev.score(records(2), features="sent_prob")["glassbox_sent_prob"]
    b = ev.score(records(2), features="sent_prob")["glassbox_sent_prob"]
    assert a == b and model.training  # same values twice; the caller's mode is restored


def test_empty_response_gives_none_not_nan(tokenizer):
    ev = GlassBoxEvaluator(TableLM(len(tokenizer)), tokenizer=tokenizer, include_end_token=False)
    row = ev.score([{"question": "q", "response": ""}], features="basic")[0]
    assert row["glassbox_num_tokens"] == 0
    assert row["glassbox_sent_prob"] is None and row["glassbox_softmax_ent"] is None
    assert row["glassbox_sent_prob_sum"] == 0.0


# --------------------------------------------------------------------------------------------------
# A real (tiny) transformers model: batching, attention on request, decoding ensemble
# --------------------------------------------------------------------------------------------------


def test_batch_of_one_equals_batch_of_eight_with_different_lengths(tokenizer, llama):
    recs = records(8)
    lengths = {len(encode_turn(tokenizer, user(r["question"]), r["response"]).input_ids) for r in recs}
    assert len(lengths) >= 6  # really different lengths, so batch 8 is padded
    feats = [
        "basic",
        "softmax_combo",
        "attn_ent",
        "attn_ent_min",
        "attn_ent_avg",
        "prm_ensemble_exp",
        "prm_ensemble_var",
    ]
    kw = {"features": feats, "calibrate": True, "illustration": True}
    pool = gb.load_system_prompt_pool()[:3]  # a shorter pool keeps the test fast; the maths is the same
    one = GlassBoxEvaluator(llama, tokenizer=tokenizer, batch_size=1, system_prompts=pool).score(recs, **kw)
    eight = GlassBoxEvaluator(llama, tokenizer=tokenizer, batch_size=8, system_prompts=pool).score(recs, **kw)
    assert one.column_names == eight.column_names
    for col in one.column_names:
        if not col.startswith("glassbox_"):
            continue
        for a, b in zip(one[col], eight[col], strict=True):
            if a is None or isinstance(a, bool):
                assert a == b, col
            else:
                np.testing.assert_allclose(
                    np.asarray(a, dtype=float), np.asarray(b, dtype=float), atol=1e-5, err_msg=col
                )


def test_llama_features_match_numpy_from_an_unpadded_forward(tokenizer, llama):
    rec = records(3)[2]
    ds = GlassBoxEvaluator(llama, tokenizer=tokenizer).score(
        [rec], features=["basic", "attn_ent", "attn_ent_min", "attn_ent_avg"]
    )
    ids, start, end = expected_ids(tokenizer, user(rec["question"]), rec["response"])
    with torch.no_grad():
        llama.set_attn_implementation("eager")
        out = llama(torch.tensor([ids]), output_attentions=True)
        llama.set_attn_implementation("sdpa")
    want = np_features(out.logits[0, start - 1 : end - 1].double().numpy(), np.array(ids[start:end]))
    for name, value in want.items():
        assert ds[0][f"glassbox_{name}"] == pytest.approx(value, rel=1e-4, abs=1e-6), name
    per = np.array(
        [
            [
                np.mean([-(r[r > 0] * np.log(r[r > 0])).sum() for r in layer[0, h, start:end].double().numpy()])
                for h in range(4)
            ]
            for layer in out.attentions
        ]
    )
    np.testing.assert_allclose(ds[0]["glassbox_attn_ent"], per, rtol=1e-4)
    assert ds[0]["glassbox_attn_ent_min"] == pytest.approx(per.min(), rel=1e-4)
    assert ds[0]["glassbox_attn_ent_avg"] == pytest.approx(per.mean(), rel=1e-4)


def _spy(model):
    calls: list[dict] = []
    handle = model.register_forward_pre_hook(lambda _m, _a, kw: calls.append(dict(kw)), with_kwargs=True)
    return calls, handle


def test_attentions_are_requested_only_for_attention_features(tokenizer, llama):
    recs = records(3)
    calls, handle = _spy(llama)
    try:
        GlassBoxEvaluator(llama, tokenizer=tokenizer).score(recs)  # default features
        GlassBoxEvaluator(llama, tokenizer=tokenizer, ensemble_size=2, max_new_tokens=4).score(
            recs, features="all", calibrate=True
        )
        n_default = 1
        assert calls and not any(c.get("output_attentions") for c in calls[:n_default])
        asked = [c for c in calls if c.get("output_attentions")]
        assert len(asked) == 1  # one batch of the main responses; references and ensembles never ask
        assert all("logits_to_keep" in c and c.get("use_cache") is False for c in calls if "attention_mask" in c)
    finally:
        handle.remove()
    assert llama.config._attn_implementation == "sdpa"  # eager only for the attention call
    known = TableLM(len(tokenizer))
    GlassBoxEvaluator(known, tokenizer=tokenizer).score(recs, features="basic")
    assert known.calls and not any("output_attentions" in c for c in known.calls)


def test_decoding_ensemble_is_seeded_and_consistent(tokenizer, llama):
    recs = records(2)
    kw = {"ensemble_size": 4, "max_new_tokens": 6}
    a = GlassBoxEvaluator(llama, tokenizer=tokenizer, batch_size=1, seed=3, **kw).score(
        recs, features="DecEnsem-Exp,DecEnsem-Var"
    )
    b = GlassBoxEvaluator(llama, tokenizer=tokenizer, batch_size=8, seed=3, **kw).score(
        recs, features="DecEnsem-Exp,DecEnsem-Var"
    )
    for row_a, row_b in zip(a, b, strict=True):
        vals = row_a["glassbox_dec_ensemble_values"]
        assert len(vals) == 4
        np.testing.assert_allclose(vals, row_b["glassbox_dec_ensemble_values"], atol=1e-5)
        assert row_a["glassbox_dec_ensemble_exp"] == pytest.approx(np.mean(vals), rel=1e-9)
        assert row_a["glassbox_dec_ensemble_var"] == pytest.approx(np.var(vals), rel=1e-6, abs=1e-12)
    c = GlassBoxEvaluator(llama, tokenizer=tokenizer, seed=4, **kw).score(recs, features="dec_ensemble_exp")
    assert c[0]["glassbox_dec_ensemble_values"] != a[0]["glassbox_dec_ensemble_values"]


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def test_self_eval_cli_end_to_end(tmp_path, tokenizer, llama):
    import argparse

    from hf_critic.commands import self_eval

    model_dir = tmp_path / "tiny"
    llama.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    data = tmp_path / "answers.jsonl"
    with data.open("w") as handle:
        for r in records(3):
            handle.write(json.dumps({"prompt": r["question"], "answer": r["response"], "id": 1}) + "\n")
    out = tmp_path / "out.jsonl"
    parser = argparse.ArgumentParser()
    self_eval.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "self-eval",
            "--data",
            str(data),
            "--output",
            str(out),
            "--model",
            str(model_dir),
            "--columns",
            "question=prompt,response=answer",
            "--features",
            "SentProb",
            "softmax_ent,softmax_combo",
            "--limit",
            "2",
            "--no-progress",
        ]
    )
    assert args.func(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    assert {"question", "response", "glassbox_sent_prob", "glassbox_softmax_ent", "glassbox_softmax_combo"} <= set(
        rows[0]
    )
    direct = GlassBoxEvaluator(llama, tokenizer=tokenizer).score(
        [{"question": r["question"], "response": r["response"]} for r in records(2)], features="sent_prob"
    )
    np.testing.assert_allclose([r["glassbox_sent_prob"] for r in rows], direct["glassbox_sent_prob"], rtol=1e-5)
    norm = json.loads((tmp_path / "out.jsonl.combo.json").read_text())
    assert ComboNormalization.from_dict(norm).method == "minmax"


# --------------------------------------------------------------------------------------------------
# The shared SelfEval files (skipped when ../shared/data is absent)
# --------------------------------------------------------------------------------------------------


def test_selfeval_feature_files_load_and_correlate(shared_data):
    from hf_critic.loaders.selfeval import load_judgments
    from hf_critic.meta_eval.selfeval import precomputed_table

    judgments = load_judgments(shared_data / "selfeval", "vicuna_bench")
    assert len(judgments) == 160 and set(judgments["model"]) == {"llama2-7b-chat", "vicuna-7b"}
    table = precomputed_table(shared_data / "selfeval")

    def cell(bench, model, feature):
        return table[(table.bench == bench) & (table.model == model) & (table.feature == feature)].iloc[0]

    # Table 1's SentProb for Vicuna-7B on MT-Bench and LLaMA2 on Vicuna-Bench is reproduced to the 4 printed
    # digits, with the opposite sign: the paper prints magnitudes (higher mean log-prob, LOWER GPT-4 grade here).
    for bench, model in (("mt_bench", "vicuna-7b"), ("vicuna_bench", "llama2-7b-chat")):
        row = cell(bench, model, "SentProb")
        for name in ("pearson", "kendall", "spearman"):
            assert round(-row[name], 4) == row[f"paper_{name}"], (bench, model, name)
    llama = cell("mt_bench", "llama2-7b-chat", "Softmax-Var")
    assert llama.n == 158 and llama.n_unparsed == 2  # two GPT-4 grades are -1 and are left out
    assert llama.duplicates == 70 and llama.n_matched == 2  # graded answers differ from the feature file's
