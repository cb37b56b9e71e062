"""Local, batched, offline generation with a `transformers` causal LM."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm
from transformers import DynamicCache, GenerationConfig

from ..core.control_tokens import control_tokens
from ..core.errors import BadInputError
from ..core.identity import model_identity
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictReadout
from ..formats import published_chat_format
from .base import Backend, Messages
from .models import batch_token_budget, load_model, model_digest, resolve_model
from .prefill import (
    PrefixCaches,
    ReadoutCounts,
    cache_keyword,
    plan_batches,
    shared_prefix,
    sliding_window,
    takes_prefilled_cache,
)
from .threads import num_threads_or_default
from .tokenized import TokenizedPrompts

logger = logging.getLogger(__name__)


class TransformersBackend(TokenizedPrompts, Backend):
    """Generate critiques with a local model: chat template, length-sorted left-padded batches, progress bar.

    The judged text's control-token strings (``<|im_end|>`` inside an answer) are encoded as text, the template's own
    as control tokens (:mod:`hf_critic.core.control_tokens`), in generation and in the verdict read-out alike.

    Args:
        model: a loaded causal LM in eval mode.
        tokenizer: its tokenizer, with a chat template (left padding is enforced here).
        name: identity for cache keys (use the model path or Hub id).
        batch_size: conversations per ``generate`` call (>= 1). Under self-consistency each carries
            ``num_samples`` sequences.
        progress: show a tqdm bar with critiques/s and generated tokens/s.
        max_batch_tokens: padded prompt tokens per forward pass of the verdict read-out (rows x the batch's longest
            row; a longer row goes alone), besides the ``batch_size`` rows; None: rows only. Default
            :data:`hf_critic.backends.models.READOUT_BATCH_TOKENS` on a CPU, None elsewhere.

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
        identity: str | None = None,
        batch_size: int = 8,
        progress: bool = True,
        max_batch_tokens: int | None | str = "auto",
    ):
        if not getattr(tokenizer, "chat_template", None):
            raise BadInputError(f"{name}: the tokenizer has no chat template; critic prompts are chat messages")
        if batch_size < 1:
            raise BadInputError("batch_size must be >= 1")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer, self.name = model, tokenizer, name
        # the chat template the prompts are rendered with, wherever it came from (file, published format, code)
        self._identity = model_identity(identity or name, chat_template=tokenizer.chat_template)
        self.batch_size, self.progress = batch_size, progress
        self.max_batch_tokens = batch_token_budget(max_batch_tokens, model.device.type)
        self.context_length = getattr(model.config, "max_position_embeddings", None)
        self._cache = cache_keyword(model)
        self.control_tokens = control_tokens(tokenizer)
        self.last_readout: ReadoutCounts | None = None  # what the last verdict_probabilities call read

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
            model: local folder, Hub id, or None; see :func:`hf_critic.backends.models.resolve_model`.
            trust_remote_code: only when the user asks (e.g. ChatGLM3).
            num_threads: torch intra-op threads on CPU (>= 1); default :func:`hf_critic.backends.threads.default_num_threads`
                (``OMP_NUM_THREADS`` when set, else one per physical core).
            dtype: ``"auto"`` (per CPU and batch size, see :func:`hf_critic.backends.models.auto_dtype`) or a torch dtype
                name; part of the backend's name, so cached generations never mix dtypes.
            **kwargs: ``batch_size`` (also decides ``"auto"``), ``progress``.

        A known published critic (Prometheus 2, Auto-J, JudgeLM, PandaLM, by its id or folder name) is wrapped in the
        input format it was trained on (:func:`hf_critic.formats.published_chat_format`) instead of its tokenizer's
        chat template, which those checkpoints lack or which refuses their system message.

        Raises:
            hf_critic.backends.models.ModelNotFoundError: the model cannot be found offline.
            ValueError: ``num_threads`` below 1 (checked before the model loads).
        """
        batch_size = kwargs.get("batch_size", 8)
        threads = num_threads_or_default(num_threads)
        lm, tokenizer = load_model(model, trust_remote_code=trust_remote_code, dtype=dtype, batch_size=batch_size)
        if lm.device.type == "cpu":
            torch.set_num_threads(threads)
        # known by content: a folder retrained in place, or two checkpoints under one name, never share keys
        digest = model_digest(resolve_model(model))
        content = f"transformers|{str(lm.dtype).removeprefix('torch.')}|weights:{digest}"
        name = f"{model or 'default:smollm2-135m-instruct'}|{content.removeprefix('transformers|')}"
        published = published_chat_format(model)
        if published is not None:  # a known critic gets the input format it was trained on (part of the cache key)
            family, tokenizer.chat_template = published
            name += f"|chat:{family}"
            logger.info("%s: using the published %s input format (hf_critic.formats)", model, family)
        return cls(lm, tokenizer, name=name, identity=content, **kwargs)

    def _shared_prefix(self, encoded: Sequence[Sequence[int]]) -> list[int]:
        """The token prefix every prompt of a call starts with (each keeps one token of its own), or ``[]`` when it is
        shorter than :data:`hf_critic.backends.prefill.MIN_SHARED_PREFIX` or the model cannot take a prefilled cache."""
        return shared_prefix(encoded) if self._prefix_sharing else []

    @property
    def _prefix_sharing(self) -> bool:
        return takes_prefilled_cache(self.model)

    @property
    def _sliding_window(self) -> int | None:
        return sliding_window(self.model.config)

    @torch.inference_mode()
    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """Generate in length-sorted batches of equal size; results in input order.

        Sorting by length buckets similar prompts together (less padding). The ``ceil(n / batch_size)`` batches are
        of equal size (17 prompts at batch 8: 6 + 6 + 5, not 8 + 8 + 1), so no run ends on a lone prompt, which on
        CPUs without AMX is the slowest shape in bfloat16 (:func:`hf_critic.backends.models.auto_dtype`).

        The token prefix all prompts share (the template's judge instructions: 133 of 261 tokens on the demo
        records) is prefilled once per call and its KV cache copied into every batch (prefix caching, as vLLM's
        automatic prefix caching does across requests), so each batch prefills only its rows' own tokens. Outputs
        are those of the plain batches up to floating-point rounding (float32: identical on the demo prompts;
        ``tests/backends/test_models.py``).

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
        prefix, caches = len(self._shared_prefix(encoded)), PrefixCaches(self.model, self.tokenizer.pad_token_id)
        results: list[list[str]] = [[] for _ in texts]
        new_tokens, started = 0, time.perf_counter()
        bar = tqdm(
            total=len(texts), unit="critique", disable=not self.progress, desc=f"generating ({config.strategy})"
        )
        for batch in _balanced(order, self.batch_size):
            ids, mask, cache = caches.inputs([encoded[i] for i in batch], prefix, copies)
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
    @torch.inference_mode()
    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Exact verdict probabilities from the model's logits (see :meth:`Backend.verdict_probabilities`).

        **One forward pass a prompt**, proportional to the tokens it must read. The passes are planned by
        :func:`hf_critic.backends.prefill.plan_batches`: a prefix all rows share (the judge instructions) and a prefix a family of
        rows shares (the two orders of a pair: instructions and question) are prefilled once and their KV caches
        reused; each pass then reads its rows' own tokens, longest first, at most ``batch_size`` rows and
        :attr:`max_batch_tokens` padded tokens, and after them the verdict trie's internal tokens (a multi-token verdict
        such as ``10``), with an attention mask that lets each trie token see the prompt and its own ancestors only, at
        the positions it would have in the sequence. The logits of the prompt's last token and of the trie tokens give
        every verdict's probability (float64 softmax); nothing is decoded. :attr:`last_readout` counts the call's
        passes and tokens.

        Returns:
            One readout per conversation, in input order.
        """
        if len(continuations) != len(conversations):
            raise BadInputError("verdict_probabilities needs one continuation per conversation")
        trie = self._verdict_trie(continuations, verdicts)
        texts = [self._prompt_text(c) + cont for c, cont in zip(conversations, continuations, strict=True)]
        encoded = self._encode(texts)
        device = self.model.device
        tokens = torch.tensor(trie.tokens[1:], device=device)
        sources = torch.tensor(trie.source[1:], device=device)
        fed = torch.tensor([trie.tokens[n] for n in trie.fed], dtype=torch.long, device=device)
        fed_depth = torch.tensor([trie.depth[n] for n in trie.fed], dtype=torch.long, device=device)
        tree = torch.from_numpy(trie.ancestors()).to(device)
        caches = PrefixCaches(self.model, self.tokenizer.pad_token_id)
        counts = ReadoutCounts(rows=len(texts))
        results: list[VerdictReadout | None] = [None] * len(texts)
        bar = tqdm(total=len(texts), unit="verdict", disable=not self.progress, desc="reading verdicts")
        started = time.perf_counter()
        for batch in plan_batches(encoded, self.batch_size, self.max_batch_tokens, share=self._prefix_sharing):
            ids, mask, cache = caches.inputs([encoded[i] for i in batch.rows], batch.prefix, base=batch.base)
            done, (b, length), n = batch.prefix, ids.shape, len(fed)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            if n:  # the trie's tokens after the prompt's, in the same pass
                if cache is None and self._sliding_window is not None:
                    cache = DynamicCache(config=self.model.config)  # sliding layers keep every key of the pass
                step = {
                    "input_ids": torch.cat([ids[:, done:], fed.expand(b, n)], dim=1),
                    "position_ids": torch.cat([positions[:, done:], positions[:, -1:] + fed_depth], dim=1),
                    "attention_mask": self._readout_mask(mask, done, tree, fed_depth),
                }
            else:
                step = {"input_ids": ids[:, done:], "position_ids": positions[:, done:], "attention_mask": mask}
            out = self.model(
                **step,
                **{self._cache: cache},
                cache_position=torch.arange(done, length + n, device=device),
                use_cache=cache is not None,
                logits_to_keep=n + 1,
            )
            stacked = torch.log_softmax(out.logits.double(), dim=-1)  # [B, 1 + n, V]: the root, then the trie
            node_lp = stacked[:, sources, tokens]  # [B, nodes - 1]
            row = torch.cat([torch.zeros_like(node_lp[:, :1]), node_lp], dim=1).cpu().numpy()
            for i, readout in zip(batch.rows, trie.probabilities(row), strict=True):
                results[i] = readout
            counts.add_pass(b * (length - done + n), int(mask[:, done:].sum()) + b * n)
            bar.update(b)
            bar.set_postfix(tok_s=f"{(counts.tokens + caches.prefilled) / (time.perf_counter() - started):.0f}")
        bar.close()
        self.last_readout = counts.with_prefixes(caches)
        return results  # type: ignore[return-value]

    def _readout_mask(self, mask: torch.Tensor, done: int, tree: torch.Tensor, depth: torch.Tensor):
        """The additive attention mask ``[B, 1, q, length + n]`` of a read-out pass: the prompt's own ``q - n`` tokens
        (cache slots ``done..length-1``) see the unpadded slots up to their own, the ``n`` trie tokens see the whole
        prompt and their own ancestors (``tree``). Sliding-window layers (Mistral v0.1, Gemma 2/3) see only the last
        ``window`` slots: a trie token at depth ``d`` stands at slot ``length - 1 + d``. Mistral takes one mask for all
        its layers, models with ``layer_types`` one per layer type.
        """
        b, length = mask.shape
        n = tree.shape[0]
        slots = torch.arange(length, device=mask.device)
        keys = mask.bool()[:, None, :]  # [B, 1, length]
        prompt = keys & (slots[None, :] <= slots[done:, None])[None]  # [B, length - done, length]
        prompt = torch.cat([prompt, prompt.new_zeros(b, length - done, n)], dim=-1)
        trie = torch.cat([keys.expand(b, n, length), tree.expand(b, n, n)], dim=-1)
        allowed = torch.cat([prompt, trie], dim=1)  # [B, q, length + n]

        def additive(keep: torch.Tensor) -> torch.Tensor:
            out = torch.zeros(keep.shape, dtype=self.model.dtype, device=keep.device)
            return out.masked_fill_(~keep, torch.finfo(self.model.dtype).min)[:, None]

        window = self._sliding_window
        if window is None:
            return additive(allowed)
        at = torch.cat([slots[done:], length - 1 + depth])  # each query's slot
        recent = torch.cat([slots, length - 1 + depth])[None, :] > at[:, None] - window  # [q, length + n]
        windowed = allowed & recent
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
