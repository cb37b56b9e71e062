"""Prompts that share a prefix are read once: batches planned by shared prefix, and the prefixes' KV caches.

Critic prompts repeat themselves. Every prompt of a template starts with the same judge instructions (546 of 1,617
tokens a prompt on Auto-J Eval-P with the default template), and the two orders of a pair (``--swap``) share the
instructions and the question too (904 tokens a pair there); a reward model reads one question once per response.
A forward pass is proportional to the tokens it reads, so each such prefix is prefilled once and its KV cache
copied to the rows that continue it (vLLM's automatic prefix caching, within one call).

:func:`plan_batches` groups the rows: the prefix of every row of a call (the *call prefix*), then families of rows
sharing a longer prefix (the two orders of a pair, the responses to one question). :class:`PrefixCaches` holds the
caches and lays out a batch as ``prefix + padding + own tokens`` with a mask that zeroes the padding and positions
that follow the mask, so every row sees exactly its own prompt (outputs equal to plain batches up to float rounding;
``tests/backends/test_prefill.py``).
"""

from __future__ import annotations

import copy
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_SHARED_PREFIX",
    "PrefillBatch",
    "PrefixCaches",
    "ReadoutCounts",
    "cache_keyword",
    "plan_batches",
    "prefix_groups",
    "shared_prefix",
    "sliding_window",
    "takes_prefilled_cache",
    "token_batches",
]

#: Shortest common token prefix worth a prefill of its own: a few shared tokens are not worth the extra forward pass
#: and cache copies.
MIN_SHARED_PREFIX = 32


@dataclass(frozen=True)
class PrefillBatch:
    """One forward pass: ``rows`` (indices into the call's prompts, longest first) continuing the first ``prefix``
    tokens they all share (0: no prefix, plain left-padded rows), of which the first ``base`` are the call prefix
    every row of the call shares (prefilled first, once)."""

    rows: list[int]
    prefix: int
    base: int = 0


@dataclass
class ReadoutCounts:
    """What one call read, counted (not timed): for tests that keep passes and padding from growing back, and for
    the benchmarks' share of the machine's peak.

    Attributes:
        rows: prompts of the call.
        passes: forward passes over rows (prefix prefills apart).
        tokens: the rows' own tokens those passes read (padding excluded; verdict-trie tokens included).
        fed: tokens those passes were given (padding included).
        prefills: forward passes that prefilled a shared prefix.
        prefix_tokens: tokens those prefills read.
    """

    rows: int = 0
    passes: int = 0
    tokens: int = 0
    fed: int = 0
    prefills: int = 0
    prefix_tokens: int = 0

    def add_pass(self, fed: int, tokens: int) -> None:
        """Count one pass over rows: ``fed`` tokens given, ``tokens`` of them real."""
        self.passes, self.fed, self.tokens = self.passes + 1, self.fed + fed, self.tokens + tokens

    def with_prefixes(self, caches: PrefixCaches) -> ReadoutCounts:
        """These counts with ``caches``' prefix prefills added."""
        self.prefills, self.prefix_tokens = caches.prefills, caches.prefilled
        return self

    @property
    def read(self) -> int:
        """Every token a forward pass read, prefixes once, padding excluded."""
        return self.tokens + self.prefix_tokens

    @property
    def passes_per_row(self) -> float:
        """Forward passes over rows per prompt (1.0: one pass a prompt; prefix prefills apart)."""
        return self.passes / self.rows if self.rows else 0.0

    @property
    def padding_share(self) -> float:
        """Share of the tokens given to the model that were padding, in [0, 1)."""
        return 1 - self.tokens / self.fed if self.fed else 0.0


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    return len(os.path.commonprefix([list(a), list(b)]))


def shared_prefix(encoded: Sequence[Sequence[int]], min_shared: int | None = None) -> list[int]:
    """The token prefix every prompt starts with, each keeping one token of its own, or ``[]`` when there is one
    prompt or the prefix is shorter than ``min_shared`` (default :data:`MIN_SHARED_PREFIX`)."""
    min_shared = MIN_SHARED_PREFIX if min_shared is None else min_shared
    if len(encoded) < 2:
        return []
    shared = os.path.commonprefix([list(ids) for ids in encoded])[: min(map(len, encoded)) - 1]
    return shared if len(shared) >= min_shared else []


def prefix_groups(
    encoded: Sequence[Sequence[int]], base: int, min_shared: int | None = None
) -> list[tuple[int, list[int]]]:
    """Rows cut into families that share at least ``base + min_shared`` tokens (each row keeping one of its own).

    Rows sorted by their tokens put every family side by side; a row joins the family before it while the family's
    common prefix stays that long.

    Args:
        encoded: token ids per row.
        base: tokens every row shares already (the call prefix).
        min_shared: tokens beyond ``base`` worth a prefill of their own (default :data:`MIN_SHARED_PREFIX`).

    Returns:
        ``(shared tokens, row indices)`` per family, rows in token order; a family of one shares ``base``.
    """
    min_shared = MIN_SHARED_PREFIX if min_shared is None else min_shared
    groups: list[tuple[int, list[int]]] = []
    for i in sorted(range(len(encoded)), key=lambda i: list(encoded[i])):
        if groups:
            shared, rows = groups[-1]
            joined = min(shared, _common(encoded[rows[-1]], encoded[i]), len(encoded[i]) - 1)
            if joined >= base + min_shared:
                groups[-1] = (joined, rows + [i])
                continue
        groups.append((len(encoded[i]) - 1, [i]))
    return [(shared if len(rows) > 1 else base, rows) for shared, rows in groups]


def plan_batches(
    encoded: Sequence[Sequence[int]],
    batch_size: int,
    max_tokens: int | None,
    *,
    share: bool = True,
    min_shared: int | None = None,
) -> list[PrefillBatch]:
    """The forward passes that read ``encoded``: every row once, families first, rows longest first.

    A family of rows sharing more than the call prefix (:func:`prefix_groups`) is batched on its own prefix; the other
    rows together on the call prefix (:func:`shared_prefix`). Within each, batches hold at most ``batch_size`` rows
    and ``max_tokens`` padded tokens beyond the prefix (:func:`token_batches`: a longer row goes alone).

    Args:
        encoded: token ids per row.
        batch_size: rows per pass (>= 1).
        max_tokens: padded tokens beyond the prefix per pass, or None (rows only).
        share: False: no prefix at all (models that cannot take a prefilled cache).
        min_shared: as in :func:`prefix_groups`.

    Returns:
        The batches; every row index appears in exactly one.
    """
    base = len(shared_prefix(encoded, min_shared)) if share else 0
    families = prefix_groups(encoded, base, min_shared) if share else [(0, [i]) for i in range(len(encoded))]
    alone = [rows[0] for _, rows in families if len(rows) == 1]
    together = sorted((f for f in families if len(f[1]) > 1), key=lambda f: -max(len(encoded[i]) for i in f[1]))
    units = ([(base, alone)] if alone else []) + together
    batches = []
    for prefix, rows in units:
        lengths = {i: len(encoded[i]) - prefix for i in rows}
        order = sorted(rows, key=lambda i: -lengths[i])
        batches += [PrefillBatch(b, prefix, base) for b in token_batches(order, lengths, batch_size, max_tokens)]
    return batches


def token_batches(order: Sequence[int], lengths, batch_size: int, max_tokens: int | None) -> list[list[int]]:
    """``order`` (indices sorted longest first) cut into consecutive batches of at most ``batch_size`` rows whose
    padded size (rows x the batch's first, longest row) stays within ``max_tokens``; a row longer than
    ``max_tokens`` forms a batch alone. ``max_tokens=None`` cuts by rows only.

    Args:
        order: row indices, longest first.
        lengths: tokens of each row, indexed by row (a sequence or a mapping).
        batch_size: rows per batch (>= 1).
        max_tokens: padded tokens per batch, or None.

    Returns:
        The batches, in ``order``'s order.
    """
    batches: list[list[int]] = []
    for i in order:
        current = batches[-1] if batches else None
        full = current is None or len(current) == batch_size
        if not full and max_tokens is not None:
            full = (len(current) + 1) * lengths[current[0]] > max_tokens
        if full:
            batches.append([i])
        else:
            current.append(i)
    return batches


def takes_prefilled_cache(model) -> bool:
    """Whether ``model`` can continue a prefilled, row-copied KV cache with padding between prefix and rows.

    Positions must come from the attention mask, the cache must be transformers' own (remote-code models such as
    ChatGLM keep theirs), recurrent state cannot be copied row by row, and a sliding window (Mistral v0.1, Gemma 2/3)
    would count that padding as context.
    """
    forward = inspect.signature(model.forward).parameters
    config = model.config
    remote = bool(getattr(config, "auto_map", None))
    stateful = getattr(model, "_is_stateful", False)
    return "position_ids" in forward and not remote and not stateful and sliding_window(config) is None


def sliding_window(config) -> int | None:
    """The attention window of a model's sliding-window layers (Mistral v0.1, Gemma 2/3, some Qwen2), or None when
    every layer attends to the whole sequence."""
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return window if "sliding_attention" in layer_types else None
    return window if window and getattr(config, "use_sliding_window", True) else None


def cache_keyword(model) -> str:
    """The KV-cache keyword of ``model``'s ``forward`` and of its outputs: ``cache`` from transformers 5.x on
    (``past_key_values`` is deprecated there and warns on every call), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class PrefixCaches:
    """KV caches of token prefixes, each prefilled once, and batches laid out over them.

    A prefix is prefilled on top of the longest one already held (a family's prefix on the call prefix), and only the
    last two are kept: the call prefix and the current family's (batches come family by family,
    :func:`plan_batches`).

    Args:
        model: a transformers model that :func:`takes_prefilled_cache`.
        pad_token_id: the id padding the rows.
    """

    def __init__(self, model, pad_token_id: int):
        self.model, self.pad = model, pad_token_id
        self.keyword = cache_keyword(model)
        takes = inspect.signature(model.forward).parameters
        self._head_kwargs = {"logits_to_keep": 1} if "logits_to_keep" in takes else {}
        self._held: dict[tuple[int, ...], object] = {}
        self.prefills = self.prefilled = 0  # prefix passes and the tokens they read (:class:`ReadoutCounts`)

    def _cache(self, prefix: tuple[int, ...], base: int = 0):
        """The held cache of exactly ``prefix`` (one row), prefilled now if new, on top of its first ``base`` tokens'
        (the call prefix, kept for the next family)."""
        import torch
        from transformers import DynamicCache

        if 0 < base < len(prefix):
            self._cache(prefix[:base])
        if prefix not in self._held:
            base = max((k for k in self._held if prefix[: len(k)] == k), key=len, default=())
            cache = copy.deepcopy(self._held[base]) if base else DynamicCache(config=self.model.config)
            device = self.model.device
            with torch.inference_mode():
                self.model(
                    input_ids=torch.tensor([prefix[len(base) :]], device=device),
                    position_ids=torch.arange(len(base), len(prefix), device=device)[None],
                    cache_position=torch.arange(len(base), len(prefix), device=device),
                    **{self.keyword: cache},
                    **self._head_kwargs,
                )
            self.prefills, self.prefilled = self.prefills + 1, self.prefilled + len(prefix) - len(base)
            self._held = {k: v for k, v in self._held.items() if prefix[: len(k)] == k}  # its ancestors stay
            self._held[prefix] = cache
        return self._held[prefix]

    def inputs(self, rows: Sequence[Sequence[int]], prefix: int, copies: int = 1, base: int = 0):
        """``(input_ids, attention_mask, cache)`` of one batch laid out as ``prefix + padding + own tokens``; the
        first ``prefix`` columns are already in ``cache`` (pass ``input_ids[:, prefix:]`` to a forward pass; a
        ``generate`` call skips them itself). Positions follow the mask.

        Args:
            rows: token ids of the batch's rows, all starting with the same ``prefix`` tokens.
            prefix: shared tokens to take from the cache (0: plain left-padded rows, cache None).
            copies: sequences per row the caller runs (beams, samples): the cache is repeated that many times.
            base: the call prefix within ``prefix`` (:attr:`PrefillBatch.base`): prefilled apart and kept.
        """
        import torch

        device = self.model.device
        width = max(len(r) for r in rows) - prefix
        head = list(rows[0][:prefix])
        ids = [head + [self.pad] * (width - len(r) + prefix) + list(r[prefix:]) for r in rows]
        mask = [[1] * prefix + [0] * (width - len(r) + prefix) + [1] * (len(r) - prefix) for r in rows]
        cache = None
        if prefix:
            cache = copy.deepcopy(self._cache(tuple(head), base))
            if len(rows) * copies > 1:
                cache.batch_repeat_interleave(len(rows) * copies)
        return torch.tensor(ids, device=device), torch.tensor(mask, device=device), cache
