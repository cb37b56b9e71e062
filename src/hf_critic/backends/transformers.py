"""Local, batched, offline generation with a `transformers` causal LM."""

from __future__ import annotations

import copy
import hashlib
import inspect
import logging
import os
import time
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm
from transformers import DynamicCache, GenerationConfig

from ..control_tokens import control_tokens, encode_rendered, encode_text, render_chat
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import TokenTrie, VerdictReadout, verdict_spellings
from ..formats import published_chat_format
from ..models import (
    batch_token_budget,
    default_num_threads,
    load_model,
    model_digest,
    resolve_model,
    token_batches,
)
from .base import Backend, Messages

logger = logging.getLogger(__name__)

# Shortest common token prefix worth a prefill of its own. Critic prompts share the template's judge instructions
# (133 of 261 tokens for the MT-Bench pointwise template on the demo records); a few shared tokens are not worth the
# extra forward pass and cache copies.
MIN_SHARED_PREFIX = 32


class TransformersBackend(Backend):
    """Generate critiques with a local model: chat template, length-sorted left-padded batches, progress bar.

    The judged text's control-token strings (``<|im_end|>`` inside an answer) are encoded as text, the template's own
    as control tokens (:mod:`hf_critic.control_tokens`), in generation and in the verdict read-out alike.

    Args:
        model: a loaded causal LM in eval mode.
        tokenizer: its tokenizer, with a chat template (left padding is enforced here).
        name: identity for cache keys (use the model path or Hub id).
        batch_size: conversations per ``generate`` call (>= 1). Under self-consistency each carries
            ``num_samples`` sequences.
        progress: show a tqdm bar with critiques/s and generated tokens/s.
        max_batch_tokens: padded prompt tokens per forward pass of the verdict read-out (rows x the batch's longest
            row; a longer row goes alone), besides the ``batch_size`` rows; None: rows only. Default
            :data:`hf_critic.models.READOUT_BATCH_TOKENS` on a CPU, None elsewhere.

    Raises:
        ValueError: the tokenizer has no chat template.
    """

    keeps_text = True

    def __init__(
        self,
        model,
        tokenizer,
        *,
        name: str,
        batch_size: int = 8,
        progress: bool = True,
        max_batch_tokens: int | None | str = "auto",
    ):
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(f"{name}: the tokenizer has no chat template; critic prompts are chat messages")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.batch_size, self.progress = batch_size, progress
        self.max_batch_tokens = batch_token_budget(max_batch_tokens, model.device.type)
        self.context_length = getattr(model.config, "max_position_embeddings", None)
        self._cache = _cache_keyword(model)
        self.control_tokens = control_tokens(tokenizer)

    @classmethod
    def from_pretrained(
        cls,
        model: str | None = None,
        *,
        trust_remote_code: bool = False,
        num_threads: int | None = None,
        dtype: str = "auto",
        **kwargs,
    ) -> TransformersBackend:
        """Load ``model`` (None = the embedded default critic) and set CPU threads.

        Args:
            model: local folder, Hub id, or None; see :func:`hf_critic.models.resolve_model`.
            trust_remote_code: only when the user asks (e.g. ChatGLM3).
            num_threads: torch intra-op threads on CPU; default :func:`hf_critic.models.default_num_threads`.
            dtype: ``"auto"`` (per CPU and batch size, see :func:`hf_critic.models.auto_dtype`) or a torch dtype
                name; part of the backend's name, so cached generations never mix dtypes.
            **kwargs: ``batch_size`` (also decides ``"auto"``), ``progress``.

        A known published critic (Prometheus 2, Auto-J, JudgeLM, PandaLM, by its id or folder name) is wrapped in the
        input format it was trained on (:func:`hf_critic.formats.published_chat_format`) instead of its tokenizer's
        chat template, which those checkpoints lack or which refuses their system message.

        Raises:
            hf_critic.models.ModelNotFoundError: the model cannot be found offline.
        """
        batch_size = kwargs.get("batch_size", 8)
        lm, tokenizer = load_model(model, trust_remote_code=trust_remote_code, dtype=dtype, batch_size=batch_size)
        if lm.device.type == "cpu":
            torch.set_num_threads(num_threads or default_num_threads())
        # known by content (issue 49): a folder retrained in place, or two checkpoints under one name, never share keys
        digest = model_digest(resolve_model(model))
        name = f"{model or 'default:smollm2-135m-instruct'}|{str(lm.dtype).removeprefix('torch.')}|weights:{digest}"
        published = published_chat_format(model)
        if published is not None:  # a known critic gets the input format it was trained on (part of the cache key)
            family, tokenizer.chat_template = published
            name += f"|chat:{family}"
            logger.info("%s: using the published %s input format (hf_critic.formats)", model, family)
        return cls(lm, tokenizer, name=name, **kwargs)

    def _prompt_text(self, conversation: Messages) -> str:
        """The chat-templated prompt with the messages' control-token strings marked as data
        (:func:`hf_critic.control_tokens.render_chat`; encode it with :meth:`_encode`)."""
        return render_chat(self.tokenizer, conversation, add_generation_prompt=True)

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of rendered prompts: the template's control tokens real, the judged text's kept as text."""
        return encode_rendered(self.tokenizer, list(texts))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (special-token strings in it count as the text they are)."""
        return len(encode_text(self.tokenizer, text))

    def prompt_tokens(self, conversation: Messages) -> int:
        """Tokens of the chat-templated prompt, generation prompt included."""
        return len(self._encode([self._prompt_text(conversation)])[0])

    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Remove ``num_tokens`` tokens from the middle of ``text`` and mark the cut with " ... "."""
        ids = encode_text(self.tokenizer, text)
        keep = max(len(ids) - num_tokens, 0)
        head, tail = keep - keep // 2, keep // 2
        return self.tokenizer.decode(ids[:head]) + " ... " + (self.tokenizer.decode(ids[-tail:]) if tail else "")

    def _shared_prefix(self, encoded: Sequence[Sequence[int]]) -> list[int]:
        """The token prefix every prompt of a call starts with (each keeps one token of its own), or ``[]`` when it is
        shorter than :data:`MIN_SHARED_PREFIX` or the model cannot take a prefilled cache with mid-sequence padding."""
        if len(encoded) < 2 or not self._prefix_sharing:
            return []
        shared = os.path.commonprefix([list(ids) for ids in encoded])[: min(map(len, encoded)) - 1]
        return shared if len(shared) >= MIN_SHARED_PREFIX else []

    @property
    def _prefix_sharing(self) -> bool:
        # Positions must come from the attention mask (padding sits between the prefix and each suffix), the cache
        # must be transformers' own (remote-code models such as ChatGLM keep theirs), recurrent state cannot be
        # copied row by row, and a sliding window (Mistral v0.1, Gemma 2/3) would count that padding as context.
        forward = inspect.signature(self.model.forward).parameters
        remote = bool(getattr(self.model.config, "auto_map", None))
        stateful = getattr(self.model, "_is_stateful", False)
        return "position_ids" in forward and not remote and not stateful and self._sliding_window is None

    @property
    def _sliding_window(self) -> int | None:
        """The attention window of the model's sliding-window layers (Mistral v0.1, Gemma 2/3, some Qwen2), or None
        when every layer attends to the whole sequence."""
        config = self.model.config
        window = getattr(config, "sliding_window", None)
        layer_types = getattr(config, "layer_types", None)
        if layer_types is not None:
            return window if "sliding_attention" in layer_types else None
        return window if window and getattr(config, "use_sliding_window", True) else None

    def _batch_inputs(self, rows: Sequence[Sequence[int]], prefix: list[int], memo: dict, copies: int = 1):
        """Token rows -> ``(input_ids, attention_mask, cache)`` tensors for one batch.

        Without a shared ``prefix``: left-padded rows and no cache. With one: the prefix is prefilled once per call
        (``memo``), its KV cache copied to ``len(rows) * copies`` rows, and each row is ``prefix + padding + own
        tokens``; the mask zeroes the padding, and positions follow the mask, so every row sees exactly its prompt.
        """
        device, pad = self.model.device, self.tokenizer.pad_token_id
        if not prefix:
            inputs = self.tokenizer.pad({"input_ids": list(rows)}, return_tensors="pt")
            return inputs["input_ids"].to(device), inputs["attention_mask"].to(device), None
        if "cache" not in memo:
            memo["cache"] = DynamicCache(config=self.model.config)
            self.model(
                input_ids=torch.tensor([prefix], device=device), **{self._cache: memo["cache"]}, logits_to_keep=1
            )
        width = max(len(r) for r in rows) - len(prefix)
        ids, mask = [], []
        for row in rows:
            own = list(row[len(prefix) :])
            ids.append(prefix + [pad] * (width - len(own)) + own)
            mask.append([1] * len(prefix) + [0] * (width - len(own)) + [1] * len(own))
        cache = copy.deepcopy(memo["cache"])
        cache.batch_repeat_interleave(len(rows) * copies)
        return torch.tensor(ids, device=device), torch.tensor(mask, device=device), cache

    @torch.inference_mode()
    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """Generate in length-sorted batches of equal size; results in input order.

        Sorting by length buckets similar prompts together (less padding). The ``ceil(n / batch_size)`` batches are
        of equal size (17 prompts at batch 8: 6 + 6 + 5, not 8 + 8 + 1), so no run ends on a lone prompt, which on
        CPUs without AMX is the slowest shape in bfloat16 (:func:`hf_critic.models.auto_dtype`).

        The token prefix all prompts share (the template's judge instructions: 133 of 261 tokens on the demo
        records) is prefilled once per call and its KV cache copied into every batch (prefix caching, as vLLM's
        automatic prefix caching does across requests), so each batch prefills only its rows' own tokens. Outputs
        are those of the plain batches up to floating-point rounding (float32: identical on the demo prompts;
        ``tests/test_models.py``).

        Each batch is seeded from ``config.seed`` and the batch's own prompts, so sampling is reproducible
        for the same inputs and batch size, including after a resumed run.

        Returns:
            ``config.num_return_sequences`` completions per conversation, special tokens stripped.
        """
        texts = [self._prompt_text(c) for c in conversations]
        encoded = self._encode(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        n = config.num_return_sequences
        gen_config = GenerationConfig(
            **config.generate_kwargs(),
            eos_token_id=self.model.generation_config.eos_token_id,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        copies = max(gen_config.num_beams or 1, n)  # generate runs this many sequences per prompt
        prefix, memo = self._shared_prefix(encoded), {}
        results: list[list[str]] = [[] for _ in texts]
        new_tokens, started = 0, time.perf_counter()
        bar = tqdm(
            total=len(texts), unit="critique", disable=not self.progress, desc=f"generating ({config.strategy})"
        )
        for batch in _balanced(order, self.batch_size):
            ids, mask, cache = self._batch_inputs([encoded[i] for i in batch], prefix, memo, copies)
            digest = hashlib.sha256("\x00".join(texts[i] for i in batch).encode()).digest()
            torch.manual_seed(config.seed + int.from_bytes(digest[:4], "little"))
            output = self.model.generate(
                input_ids=ids, attention_mask=mask, **{self._cache: cache}, generation_config=gen_config
            )
            generated = output[:, ids.shape[1] :]
            new_tokens += int((generated != self.tokenizer.pad_token_id).sum())
            decoded = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for j, i in enumerate(batch):
                results[i] = [s.strip() for s in decoded[j * n : (j + 1) * n]]
            bar.update(len(batch))
            bar.set_postfix(tok_s=f"{new_tokens / (time.perf_counter() - started):.1f}")
        bar.close()
        return results

    # ------------------------------------------------------------------------------------ verdict read-out
    def _verdict_trie(self, continuations: Sequence[str], verdicts: Sequence[str]) -> TokenTrie:
        """Token paths of every verdict spelling as they continue the rows' common tail (BPE merges across the
        boundary are what the model would see), else as tokenised alone."""
        tail = os.path.commonprefix([c[::-1] for c in continuations])[::-1][-32:]
        anchor = self.tokenizer(tail, add_special_tokens=False)["input_ids"] if tail else []
        paths = {}
        for verdict in verdicts:
            paths[verdict] = []
            for spelling in verdict_spellings(verdict):
                ids = self.tokenizer(tail + spelling, add_special_tokens=False)["input_ids"]
                alone = ids[len(anchor) :] if ids[: len(anchor)] == anchor else []
                paths[verdict].append(alone or self.tokenizer(spelling, add_special_tokens=False)["input_ids"])
        return TokenTrie(paths)

    @torch.inference_mode()
    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Exact verdict probabilities from the model's logits (see :meth:`Backend.verdict_probabilities`).

        Rows sorted longest first, in batches of at most ``batch_size`` rows and :attr:`max_batch_tokens` padded
        tokens (:func:`token_batches`). Per batch: one prefill of prompt + continuation (only the last position's logits are
        kept; the prefix all rows share is prefilled once per call, as in :meth:`generate`), then one forward pass
        of the verdict trie's internal tokens over the prefill's KV cache, with a tree attention mask (each trie
        token sees the prompt and its own ancestors) and the positions it would have in the sequence. No decoding.
        Float64 softmax of the logits.

        Returns:
            One readout per conversation, in input order.
        """
        if len(continuations) != len(conversations):
            raise ValueError("verdict_probabilities needs one continuation per conversation")
        trie = self._verdict_trie(continuations, verdicts)
        texts = [self._prompt_text(c) + cont for c, cont in zip(conversations, continuations, strict=True)]
        encoded = self._encode(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        tokens = torch.tensor(trie.tokens[1:], device=self.model.device)
        sources = torch.tensor(trie.source[1:], device=self.model.device)
        fed_tokens = torch.tensor([trie.tokens[n] for n in trie.fed], dtype=torch.long, device=self.model.device)
        depth = trie.depth
        fed_depth = torch.tensor([depth[n] for n in trie.fed], dtype=torch.long, device=self.model.device)
        tree = torch.from_numpy(trie.ancestors()).to(self.model.device)
        prefix, memo = self._shared_prefix(encoded), {}
        results: list[VerdictReadout | None] = [None] * len(texts)
        bar = tqdm(total=len(texts), unit="verdict", disable=not self.progress, desc="reading verdicts")
        for batch in token_batches(order, [len(ids) for ids in encoded], self.batch_size, self.max_batch_tokens):
            ids, mask, cache = self._batch_inputs([encoded[i] for i in batch], prefix, memo)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            done = len(prefix) if cache is not None else 0  # tokens already in the cache (the shared prefix)
            if cache is None and trie.fed and self._sliding_window is not None:
                cache = DynamicCache()  # sliding layers keep all keys too: the trie step's mask spans the prompt
            out = self.model(
                input_ids=ids[:, done:],
                attention_mask=mask,
                position_ids=positions[:, done:],
                **{self._cache: cache},
                cache_position=torch.arange(done, ids.shape[1], device=self.model.device),
                use_cache=bool(trie.fed) or cache is not None,
                logits_to_keep=1,
            )
            dists = [torch.log_softmax(out.logits[:, -1].double(), dim=-1)]  # [B, V] at the root
            if trie.fed:
                b, length, n = ids.shape[0], ids.shape[1], len(trie.fed)
                allowed = torch.cat([mask.bool()[:, None, :].expand(b, n, length), tree.expand(b, n, n)], dim=-1)
                step = self.model(
                    input_ids=fed_tokens.expand(b, n),
                    attention_mask=self._tree_mask(allowed, fed_depth),
                    position_ids=positions[:, -1:] + fed_depth,
                    **{self._cache: out[self._cache]},
                    cache_position=torch.arange(length, length + n, device=self.model.device),
                    use_cache=False,
                )
                dists.append(torch.log_softmax(step.logits.double(), dim=-1))  # [B, n, V]
            stacked = torch.cat([dists[0][:, None], *dists[1:]], dim=1)  # [B, 1 + n, V]
            node_lp = stacked[:, sources, tokens]  # [B, nodes - 1]
            row = torch.cat([torch.zeros_like(node_lp[:, :1]), node_lp], dim=1).cpu().numpy()
            for i, readout in zip(batch, trie.probabilities(row), strict=True):
                results[i] = readout
            bar.update(len(batch))
        bar.close()
        return results  # type: ignore[return-value]

    def _tree_mask(self, allowed: torch.Tensor, depth: torch.Tensor):
        """The additive attention mask of the trie step from ``allowed`` ``[B, n, length + n]`` (True = may attend).

        Models with sliding-window layers (Mistral v0.1, Gemma 2/3) get the window applied too: a trie token at depth
        ``d`` stands at cache slot ``length - 1 + d`` and sees prompt slots ``k > length - 1 + d - window``. Mistral
        takes one mask for all its layers, models with ``layer_types`` one per layer type.
        """

        def additive(keep: torch.Tensor) -> torch.Tensor:
            out = torch.zeros(keep.shape, dtype=self.model.dtype, device=keep.device)
            return out.masked_fill_(~keep, torch.finfo(self.model.dtype).min)[:, None]

        window = self._sliding_window
        if window is None:
            return additive(allowed)
        n, length = depth.shape[0], allowed.shape[-1] - depth.shape[0]
        slots = torch.arange(length, device=allowed.device)
        recent = slots[None, :] > length - 1 + depth[:, None] - window  # [n, length]
        windowed = allowed & torch.cat([recent, recent.new_ones(n, n)], dim=-1)
        if getattr(self.model.config, "layer_types", None) is None:
            return additive(windowed)
        return {"full_attention": additive(allowed), "sliding_attention": additive(windowed)}


def _balanced(items: list[int], batch_size: int) -> list[list[int]]:
    """``items`` cut into ``ceil(len / batch_size)`` consecutive batches whose sizes differ by at most one."""
    count = -(-len(items) // batch_size)
    size, extra = divmod(len(items), count) if count else (0, 0)
    batches, start = [], 0
    for k in range(count):
        end = start + size + (k < extra)
        batches.append(items[start:end])
        start = end
    return batches


def _cache_keyword(model) -> str:
    """The KV-cache keyword of ``model``'s ``forward`` / ``generate`` and of its outputs: ``cache`` from transformers
    5.x on (``past_key_values`` is deprecated there and warns on every call), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
