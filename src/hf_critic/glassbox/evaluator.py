"""The glass-box evaluator: batched teacher-forced passes of a causal LM, and the feature columns they give.

:class:`GlassBoxEvaluator` implements Huang et al. (seed ``001_…``) §2-3 on top of :mod:`.features` (names),
:mod:`.maths` (per-token statistics) and :mod:`.encoding` (token alignment). Batches are right-padded and each
response's features come from its own rows only, so batch size and padding do not change any value;
``output_attentions`` (with eager attention, for that call only) is requested only when an attention feature is.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.errors import BadInputError
from .encoding import (
    Conversation,
    EncodedTurn,
    _illustrated,
    _prompt_ids,
    _supports_kwarg,
    _with_system,
    conversation_from_record,
    encode_turn,
    end_of_turn_token_id,
    load_system_prompt_pool,
)
from .features import BASIC_FEATURES, CALIBRATABLE_FEATURES, FEATURES, column_name, resolve_features
from .maths import (
    ComboNormalization,
    attention_entropy,
    attention_entropy_summary,
    ensemble_uncertainty,
    features_from_token_statistics,
    token_statistics,
)

logger = logging.getLogger(__name__)

__all__ = ["GlassBoxEvaluator"]

# Response positions whose vocabulary-sized statistics are computed at once (bounds memory: CHUNK x V floats).
_CHUNK = 512


@dataclass
class _Item:
    key: tuple
    enc: EncodedTurn


class GlassBoxEvaluator:
    """Score responses with glass-box features of a causal LM (Huang et al., §2-3).

    Args:
        model: a loaded causal LM (a ``transformers`` model, or any module whose ``forward(input_ids,
            attention_mask=…)`` returns an object with ``.logits``), a local folder / Hub id, or None for the
            embedded default critic (SmolLM2-135M-Instruct), loaded with :func:`hf_critic.backends.models.load_model`.
        tokenizer: required when ``model`` is a module; must have a chat template.
        batch_size: sequences per forward pass (>= 1). Values do not depend on it.
        trust_remote_code: passed to :func:`~hf_critic.backends.models.load_model`.
        include_end_token: score the template's end-of-turn token after the response, as part of ``y``
            (a generated response ends with it); False scores the response text only.
        max_length: token budget per sequence (default: the model's ``max_position_embeddings``).
        ensemble_size: N, the decoding-based ensemble's sampled passes (§4.2: "forward-pass number as 10").
        prompt_ensemble_size: passes of the prompt-based ensemble; None uses each pool prompt once (the released
            code, N = 7); an int draws that many prompts at random with replacement (§2.2, "randomly choose").
        top_k, temperature, max_new_tokens: the decoding-based ensemble's random top-k sampling (Fan et al.,
            2018; ``generate``'s defaults top_k=50 and FastChat's temperature 0.7 were used by the paper's code).
        ensemble_base: per-pass sentence score SP of the ensembles (§2.2: sentence-level probability, i.e.
            ``sent_prob``); any of :data:`BASIC_FEATURES` (the released files average entropy / variance).
        system_prompts: the prompt pool (default: :func:`load_system_prompt_pool`, Appendix A.1).
        seed: seeds the ensembles' draws; sampled passes of row r, turn k use ``seed + 1000 * r + k``.
        progress: show a progress bar.

    Raises:
        ValueError: bad arguments, or a module given without a tokenizer.
        hf_critic.backends.models.ModelNotFoundError: ``model`` cannot be loaded.
    """

    def __init__(
        self,
        model=None,
        *,
        tokenizer=None,
        batch_size: int = 8,
        trust_remote_code: bool = False,
        include_end_token: bool = True,
        max_length: int | None = None,
        ensemble_size: int = 10,
        prompt_ensemble_size: int | None = None,
        top_k: int = 50,
        temperature: float = 0.7,
        max_new_tokens: int = 256,
        ensemble_base: str = "sent_prob",
        system_prompts: Sequence[str] | None = None,
        seed: int = 0,
        progress: bool = False,
    ):
        if batch_size < 1:
            raise BadInputError("batch_size must be >= 1")
        if ensemble_size < 1 or (prompt_ensemble_size is not None and prompt_ensemble_size < 1):
            raise BadInputError("ensemble sizes must be >= 1")
        if ensemble_base not in BASIC_FEATURES:
            raise BadInputError(f"ensemble_base must be one of {BASIC_FEATURES}, got {ensemble_base!r}")
        if model is None or isinstance(model, str) or hasattr(model, "__fspath__"):
            from ..backends.models import load_model

            model, tokenizer = load_model(model, trust_remote_code=trust_remote_code, dtype="float32")
        elif tokenizer is None:
            raise BadInputError("pass the tokenizer together with a loaded model")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = batch_size
        self.include_end_token = include_end_token
        config = getattr(model, "config", None)
        self.max_length = max_length or getattr(config, "max_position_embeddings", None)
        self.ensemble_size, self.prompt_ensemble_size = ensemble_size, prompt_ensemble_size
        self.top_k, self.temperature, self.max_new_tokens = top_k, temperature, max_new_tokens
        self.ensemble_base = ensemble_base
        self.system_prompts = list(system_prompts) if system_prompts is not None else load_system_prompt_pool()
        if not self.system_prompts:
            raise BadInputError("the system prompt pool is empty")
        self.seed, self.progress = seed, progress
        self.end_token_id = end_of_turn_token_id(tokenizer) if include_end_token else None
        self.combo_normalization_: ComboNormalization | None = None
        self._logits_to_keep = _supports_kwarg(model.forward, "logits_to_keep")
        self._use_cache_kwarg = _supports_kwarg(model.forward, "use_cache")

    # ---------------------------------------------------------------- public API

    def score(
        self,
        records,
        features: str | Iterable[str] | None = None,
        *,
        turn: str | int = "last",
        illustration: bool = False,
        calibrate: bool = False,
        combo_normalization: ComboNormalization | Mapping[str, Any] | None = None,
        combo_method: str = "minmax",
        combo_var_feature: str = "softmax_var_vocab",
        combo_ent_sign: int = 1,
    ):
        """Add glass-box feature columns to ``records``.

        Args:
            records: a ``datasets.Dataset`` or a list of dicts in a layout of :func:`conversation_from_record`.
            features: names for :func:`resolve_features` (default :data:`DEFAULT_FEATURES`).
            turn: which assistant turn(s) to score: ``"last"``, ``"all"`` (every assistant turn; each feature
                column then holds one value per turn, in order, like FastChat's ``evaluations``) or a 1-based
                turn number (rows with fewer assistant turns get None).
            illustration: in-context illustration (§3.1, Appendix A.2): when the scored turn (and the turns
                before it) have a reference, the instruction and its reference are prepended as a prior
                exchange; adds ``glassbox_illustrated`` (bool, False where no reference).
            calibrate: probability calibration (§3.2): for each requested feature in
                :data:`CALIBRATABLE_FEATURES` also the same feature of the reference answer under the same
                (non-illustrated) prompt, ``glassbox_<f>_ref``, and ``glassbox_<f>_calibrated = f(response) −
                f(reference)`` (None without a reference). For ``sent_prob`` this is SentProb − SentProb-Ref.
            combo_normalization: fixed normalisation for ``softmax_combo`` (a :class:`ComboNormalization` or
                its dict); None fits one on these records (all scored turns) and stores it in
                ``self.combo_normalization_``.
            combo_method, combo_var_feature, combo_ent_sign: used when fitting (see
                :meth:`ComboNormalization.fit`; the variance enters with its paper direction, +1).

        Returns:
            A ``datasets.Dataset``: the input columns plus ``glassbox_<feature>`` per feature (float; None where
            undefined, e.g. an empty response), ``glassbox_num_tokens`` (T, scored tokens) and
            ``glassbox_truncated``; ``glassbox_prm_ensemble_values`` / ``glassbox_dec_ensemble_values`` (the N
            per-pass SP values) with the ensembles; ``glassbox_attn_ent`` is an ``[L][H]`` list.

        Raises:
            ValueError: unknown feature or ``turn``; hf_critic.io.RecordError: malformed records;
            AlignmentError: the tokenizer has no chat template.
        """
        import datasets

        feats = resolve_features(features)
        if turn not in ("last", "all") and not (isinstance(turn, int) and turn >= 1):
            raise BadInputError(f"turn must be 'last', 'all' or a 1-based turn number, got {turn!r}")
        if combo_var_feature not in BASIC_FEATURES:
            raise BadInputError(f"combo_var_feature must be one of {BASIC_FEATURES}")
        ds = records if isinstance(records, datasets.Dataset) else datasets.Dataset.from_list(list(records))
        groups = {FEATURES[f].group for f in feats}
        want_attn = "attention" in groups

        # 1. conversations and the turns to score: slots[row] = list of assistant-turn numbers (0-based) or None
        convs = [conversation_from_record(rec, row) for row, rec in enumerate(ds)]
        slots = [_turn_slots(len(conv.assistant_indices), turn) for conv in convs]

        # 2. teacher-forced items
        main, refs, prm, illustrated = self._items(convs, slots, illustration, calibrate, "prompt_ensemble" in groups)
        results = self._run(main, attention=want_attn, desc="glass-box")
        ref_results = self._run(refs, attention=False, desc="references") if refs else {}
        prm_results = self._run(prm, attention=False, desc="prompt ensemble") if prm else {}
        prm_values: dict[tuple, list[float]] = {}
        for key in sorted(prm_results):  # (row, turn, pass): passes in order
            prm_values.setdefault(key[:2], []).append(prm_results[key][self.ensemble_base])
        dec_values: dict[tuple, list[float]] = {}
        if "decoding_ensemble" in groups:
            dec_values = self._decoding_ensemble(convs, slots, illustration)

        # 3. combo normalisation
        combo_norm = None
        if "softmax_combo" in feats:
            combo_norm = self._combo(results, combo_normalization, combo_method, combo_var_feature, combo_ent_sign)

        # 4. one cell per column and scored turn, read through the _COLUMNS table
        passes = _Passes(results, ref_results, prm_values, dec_values, illustrated, combo_norm)
        return _add_columns(ds, passes, _output_names(feats, groups, illustration, calibrate), slots, turn)

    # ---------------------------------------------------------------- internals

    def _items(self, convs, slots, illustration: bool, calibrate: bool, prompt_ensemble: bool):
        """The teacher-forced passes of the scored turns: ``(main, references, prompt-ensemble passes,
        {(row, turn): illustrated})`` (§3.1 illustration, §3.2 calibration, the prompt ensemble's system prompts)."""
        main: list[_Item] = []
        refs: list[_Item] = []
        prm: list[_Item] = []
        illustrated: dict[tuple, bool] = {}
        rng = random.Random(self.seed)
        for row, k, conv, context, ill in _scored_turns(convs, slots, illustration):
            response = conv.messages[conv.assistant_indices[k]]["content"]
            ctx = ill or context
            if illustration:
                illustrated[(row, k)] = ill is not None
            main.append(_Item((row, k), self._encode(ctx, response)))
            if calibrate and conv.references[k] is not None:
                refs.append(_Item((row, k), self._encode(context, conv.references[k])))
            if prompt_ensemble:
                pool = self.system_prompts
                if self.prompt_ensemble_size is None:
                    chosen = list(range(len(pool)))
                else:
                    chosen = [rng.randrange(len(pool)) for _ in range(self.prompt_ensemble_size)]
                for n_pass, p in enumerate(chosen):
                    prm.append(_Item((row, k, n_pass), self._encode(_with_system(ctx, pool[p]), response)))
        return main, refs, prm, illustrated

    def _combo(self, results, given, method: str, var_feature: str, ent_sign: int) -> ComboNormalization:
        """The Softmax-combo normalisation: ``given`` (an instance or its dict), else fitted on ``results``; kept in
        ``self.combo_normalization_``."""
        if given is None:
            ent = [r["softmax_ent"] for r in results.values()]
            var = [r[var_feature] for r in results.values()]
            sign = -1 if FEATURES[var_feature].higher_is_better is False else 1
            norm = ComboNormalization.fit(
                ent, var, method=method, var_feature=var_feature, ent_sign=ent_sign, var_sign=sign
            )
        elif isinstance(given, ComboNormalization):
            norm = given
        else:
            norm = ComboNormalization.from_dict(given)
        self.combo_normalization_ = norm
        logger.info("Softmax-combo normalisation: %s", norm.to_dict())
        return norm

    def _encode(self, context: list[dict], response) -> EncodedTurn:
        return encode_turn(
            self.tokenizer, context, response, end_token_id=self.end_token_id, max_length=self.max_length
        )

    @property
    def _device(self) -> torch.device:
        try:
            return next(self.model.parameters()).device
        except (StopIteration, AttributeError):
            return torch.device("cpu")

    @contextlib.contextmanager
    def _eval_mode(self):
        """Dropout off while scoring (features must be deterministic); the caller's mode is restored."""
        training = bool(getattr(self.model, "training", False))
        if training:
            self.model.eval()
        try:
            yield
        finally:
            if training:
                self.model.train()

    @contextlib.contextmanager
    def _eager_attention(self):
        """Switch the model to eager attention (the only one returning weights) for the duration."""
        config = getattr(self.model, "config", None)
        before = getattr(config, "_attn_implementation", None)
        switch = before not in (None, "eager") and hasattr(self.model, "set_attn_implementation")
        if switch:
            self.model.set_attn_implementation("eager")
        try:
            yield
        finally:
            if switch:
                self.model.set_attn_implementation(before)

    @torch.inference_mode()
    def _run(self, items: list[_Item], *, attention: bool, desc: str) -> dict[tuple, dict[str, Any]]:
        """Forward ``items`` in right-padded batches; basic (and attention) features per item key."""
        out: dict[tuple, dict[str, Any]] = {}
        if not items:
            return out
        order = sorted(range(len(items)), key=lambda i: -len(items[i].enc.input_ids))
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        device = self._device
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc=desc, unit="resp")
        ctx = self._eager_attention() if attention else contextlib.nullcontext()
        with ctx, self._eval_mode():
            for batch in batches:
                encs = [items[i].enc for i in batch]
                length = max(len(e.input_ids) for e in encs)
                ids = torch.full((len(encs), length), pad_id, dtype=torch.long)
                mask = torch.zeros((len(encs), length), dtype=torch.long)
                for b, e in enumerate(encs):
                    ids[b, : len(e.input_ids)] = torch.tensor(e.input_ids)
                    mask[b, : len(e.input_ids)] = 1
                kwargs: dict[str, Any] = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
                first_scored = min(e.response_start for e in encs) - 1  # position whose logits score token 1
                keep = length - first_scored
                if self._logits_to_keep:
                    kwargs["logits_to_keep"] = keep
                if attention:
                    kwargs["output_attentions"] = True
                if self._use_cache_kwarg:
                    kwargs["use_cache"] = False
                output = self.model(**kwargs)
                logits = output.logits
                offset = length - logits.shape[1]  # absolute position of logits row 0
                for b, (i, e) in enumerate(zip(batch, encs, strict=True)):
                    s, t = e.response_start, e.response_end
                    lg = logits[b, s - 1 - offset : t - 1 - offset]  # (T, V): row j scores token s + j
                    tgt = ids[b, s:t].to(lg.device)
                    stats = [
                        token_statistics(lg[c : c + _CHUNK], tgt[c : c + _CHUNK]) for c in range(0, t - s, _CHUNK)
                    ]
                    stats = (
                        [torch.cat(parts)[None] for parts in zip(*stats, strict=True)]
                        if stats
                        else [lg[:0, 0][None]] * 3
                    )
                    m = torch.ones((1, t - s), dtype=torch.bool, device=lg.device)
                    feats = {k: _to_float(v[0]) for k, v in features_from_token_statistics(*stats, m).items()}
                    feats["num_tokens"] = t - s
                    feats["truncated"] = e.truncated
                    if attention:
                        per = []
                        for layer in output.attentions:
                            a = layer[b : b + 1, :, s:t, :]  # (1, H, T, L): response tokens as queries
                            per.append(attention_entropy(a, torch.ones((1, t - s), dtype=torch.bool))[0])
                        mat = torch.stack(per).double().cpu().numpy() if per else np.zeros((0, 0))
                        feats["attn_ent"] = [[_to_float(x) for x in r] for r in mat] if t > s else None
                        if t > s and mat.size:
                            feats["attn_ent_min"], feats["attn_ent_avg"] = attention_entropy_summary(mat)
                        else:
                            feats["attn_ent_min"] = feats["attn_ent_avg"] = None
                    out[items[i].key] = feats
                if bar is not None:
                    bar.update(len(batch))
        if bar is not None:
            bar.close()
        return out

    def _decoding_ensemble(self, convs, slots, illustration: bool) -> dict[tuple, list[float]]:
        """§2.2 decoding-based ensemble: N responses sampled with random top-k decoding, each scored.

        As in the released code (``ensemble-temper``), each pass samples a new response to the same prompt
        (``do_sample``, ``top_k``, ``temperature``) and SP is that response's ``ensemble_base`` feature under
        the unmodified (temperature 1) distribution. The spread reflects the model's uncertainty about the
        instruction, not about the given response.
        """
        if not hasattr(self.model, "generate"):
            raise BadInputError("the decoding-based ensemble needs a model with .generate()")
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        stop = {self.end_token_id, self.tokenizer.eos_token_id} - {None}
        items: list[_Item] = []
        device = self._device
        for row, k, _, context, ill in _scored_turns(convs, slots, illustration):
            ctx = ill or context
            prompt = _prompt_ids(self.tokenizer, ctx)
            with _seeded(self.seed + 1000 * row + k, device), torch.inference_mode(), self._eval_mode():
                gen = self.model.generate(
                    input_ids=torch.tensor([prompt], device=device),
                    attention_mask=torch.ones((1, len(prompt)), dtype=torch.long, device=device),
                    do_sample=True,
                    top_k=self.top_k,
                    top_p=1.0,
                    temperature=self.temperature,
                    max_new_tokens=self.max_new_tokens,
                    num_return_sequences=self.ensemble_size,
                    pad_token_id=pad_id,
                    eos_token_id=sorted(stop) or None,
                )
            for n_pass, seq in enumerate(gen[:, len(prompt) :].tolist()):
                cut = next((j for j, tok in enumerate(seq) if tok in stop), None)
                sample = seq if cut is None else seq[:cut]
                enc = encode_turn(
                    self.tokenizer,
                    ctx,
                    sample,
                    end_token_id=self.end_token_id if cut is not None else None,
                    max_length=self.max_length,
                )
                items.append(_Item((row, k, n_pass), enc))
        res = self._run(items, attention=False, desc="decoding ensemble")
        values: dict[tuple, list[float]] = {}
        for key in sorted(res):
            values.setdefault(key[:2], []).append(res[key][self.ensemble_base])
        return values


def _scored_turns(convs: list[Conversation], slots: list[list[int | None]], illustration: bool):
    """Yield ``(row, turn, conversation, context, illustrated context or None)`` for every scored turn.

    ``context`` is the conversation before assistant turn ``turn`` (0-based); the illustrated context (§3.1,
    Appendix A.2) is computed only when ``illustration`` is asked for, and is None where a reference is missing.
    """
    for row, conv in enumerate(convs):
        for k in slots[row]:
            if k is not None:
                ill = _illustrated(conv, k) if illustration else None
                yield row, k, conv, conv.messages[: conv.assistant_indices[k]], ill


@dataclass
class _Passes:
    """What the forward passes of one :meth:`GlassBoxEvaluator.score` call produced, keyed by (row, turn)."""

    main: dict[tuple, dict[str, Any]]  # basic and attention features, num_tokens, truncated
    refs: dict[tuple, dict[str, Any]]  # basic features of the reference (calibration)
    prm: dict[tuple, list[float]]  # per-pass SP of the prompt ensemble
    dec: dict[tuple, list[float]]  # per-pass SP of the decoding ensemble
    illustrated: dict[tuple, bool]
    combo: ComboNormalization | None


def _from_main_pass(p: _Passes, key: tuple, name: str):
    return p.main[key][name]


def _softmax_combo(p: _Passes, key: tuple, name: str) -> float:
    r = p.main[key]
    return float(p.combo.apply([r["softmax_ent"]], [r[p.combo.var_feature]])[0])


def _prompt_ensemble(p: _Passes, key: tuple, name: str):
    return _ensemble_value(name, p.prm.get(key, []))


def _decoding_ensemble(p: _Passes, key: tuple, name: str):
    return _ensemble_value(name, p.dec.get(key, []))


def _was_illustrated(p: _Passes, key: tuple, name: str) -> bool:
    return p.illustrated.get(key, False)


def _against_reference(p: _Passes, key: tuple, name: str) -> float | None:
    """``<f>_ref`` = f(reference); ``<f>_calibrated`` = f(response) − f(reference) (§3.2)."""
    base, kind = name.rsplit("_", 1)
    response, reference = p.main[key][base], p.refs.get(key, {}).get(base)
    if response is None or reference is None:
        return None
    return reference if kind == "ref" else response - reference


# How score() reads each output column of one scored turn: features by their group, then the extra columns.
_READ_GROUP = {
    "basic": _from_main_pass,
    "attention": _from_main_pass,
    "combo": _softmax_combo,
    "prompt_ensemble": _prompt_ensemble,
    "decoding_ensemble": _decoding_ensemble,
}
_COLUMNS = {name: _READ_GROUP[info.group] for name, info in FEATURES.items()} | {
    "num_tokens": _from_main_pass,
    "truncated": _from_main_pass,
    "prm_ensemble_values": _prompt_ensemble,
    "dec_ensemble_values": _decoding_ensemble,
    "illustrated": _was_illustrated,
    **{f"{f}_{kind}": _against_reference for f in CALIBRATABLE_FEATURES for kind in ("ref", "calibrated")},
}


def _ensemble_value(name: str, vals: list[float | None]):
    clean = [v for v in vals if v is not None]
    if name.endswith("_values"):
        return clean
    exp, var = ensemble_uncertainty(clean)
    return _to_float(exp if name.endswith("_exp") else var)


@contextlib.contextmanager
def _seeded(seed: int, device: torch.device):
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _to_float(x) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def _turn_slots(n: int, turn: str | int) -> list[int | None]:
    """The 0-based assistant turns to score of a conversation with ``n`` of them (None: a missing turn number)."""
    if turn == "last":
        return [n - 1]
    if turn == "all":
        return list(range(n))
    return [turn - 1 if turn <= n else None]


def _add_columns(ds, passes: _Passes, names, slots: list, turn: str | int):
    """``ds`` with one column per output name (replacing one of the same name), read through :data:`_COLUMNS` from
    ``passes``: per row, one cell per scored turn (``slots[row]``; None where the row has no such turn), a list of
    them with ``turn="all"``."""
    out = ds
    for name in names:
        col = column_name(name)
        cells = []
        read = _COLUMNS[name]
        for row in range(len(ds)):
            per_turn = [None if k is None else read(passes, (row, k), name) for k in slots[row]]
            cells.append(per_turn if turn == "all" else per_turn[0])
        if col in out.column_names:
            out = out.remove_columns(col)
        out = out.add_column(col, cells)
    return out


def _output_names(feats, groups, illustration: bool, calibrate: bool) -> list[str]:
    """The names of the columns :meth:`GlassBoxEvaluator.score` adds, in order (``glassbox_`` left out)."""
    names = list(feats) + ["num_tokens", "truncated"]
    if "prompt_ensemble" in groups:
        names.append("prm_ensemble_values")
    if "decoding_ensemble" in groups:
        names.append("dec_ensemble_values")
    if illustration:
        names.append("illustrated")
    if calibrate:
        for f in feats:
            if f in CALIBRATABLE_FEATURES:
                names += [f"{f}_ref", f"{f}_calibrated"]
    return names
