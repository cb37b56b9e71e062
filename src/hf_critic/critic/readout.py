"""The engines' read-outs of a verdict, through the critique cache: the probability read-out (the template's verdict
prefix appended, the next-token distribution over the allowed verdicts; :mod:`hf_critic.critic.verdicts`) and the
forced verdict (a critique whose verdict does not parse, continued under the template's verdict grammar;
:mod:`hf_critic.critic.grammars`).

Every read-out is cached under the conversation, the text it continues and what it reads, so a killed run resumed
asks for none of its finished read-outs again. :class:`~hf_critic.critic.Critic` calls these with its backend and
cache.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.base import Backend
from ..backends.cache import GenerationCache, cache_key
from ..core import schema
from ..core.progress import RunBar
from ..formats import parse_output
from ..parsing import ParsedCritique
from ..prompts import OutputSpec
from .verdicts import ProbabilityVerdict, VerdictReadout, aggregate_readouts

__all__ = ["cached_readouts", "force_verdicts", "read_verdicts", "verdict_continuation"]


def read_verdicts(
    backend: Backend,
    cache: GenerationCache | None,
    output: OutputSpec,
    conversations: list,
    samples: list[list[ParsedCritique] | None],
    *,
    explanation: str,
    min_mass: float,
) -> tuple[list[ProbabilityVerdict], int]:
    """One probability verdict per conversation, and the number of conversations whose read-outs all came from the
    cache.

    Args:
        backend: the engine that reads the next-token distribution (``verdict_probabilities``).
        cache: where finished read-outs are kept (None: no cache).
        output: the template's output format: its verdict prefix and allowed verdicts.
        conversations: chat messages per row (None: a row skipped as too long, whose verdict is ``skipped``).
        samples: the parsed sampled critiques per row (None or empty: nothing generated).
        explanation: ``"none"`` (the prefix right after the generation prompt) or ``"first"`` (after each sampled
            critique with its own verdict cut, :func:`verdict_continuation`).
        min_mass: read-outs with less probability than this on the allowed verdicts get status ``low_mass``.

    Raises:
        ValueError: the template declares no verdict prefix.
        hf_critic.backends.retry.ServedReadoutError: a server's read-outs mostly missed the allowed verdicts
            (:meth:`~hf_critic.backends.base.Backend.check_readouts`).
    """
    values = output.verdict_values()  # raises when the template declares no verdict prefix
    prefix = output.verdict_prefix
    items = []  # (row, conversation, continuation)
    for row, (conversation, parses) in enumerate(zip(conversations, samples, strict=True)):
        if conversation is None:
            continue
        if explanation == "none" or not parses:
            items.append((row, conversation, prefix))
        else:
            items += [(row, conversation, verdict_continuation(p.explanation, prefix)) for p in parses]
    readouts, hits = cached_readouts(backend, cache, [c for _, c, _ in items], [t for _, _, t in items], list(values))
    per_row: list[list[VerdictReadout]] = [[] for _ in conversations]
    missed = set()
    for (row, _, _), readout, hit in zip(items, readouts, hits, strict=True):
        per_row[row].append(readout)
        if not hit:
            missed.add(row)
    verdicts = [
        aggregate_readouts(r, values, kind=output.kind, min_mass=min_mass)
        if r
        else ProbabilityVerdict(schema.ParseStatus.SKIPPED, None, 0.0, None)
        for r in per_row
    ]
    backend.check_readouts(verdicts)
    return verdicts, len({row for row, _, _ in items} - missed)


def cached_readouts(
    backend: Backend,
    cache: GenerationCache | None,
    conversations: Sequence,
    continuations: Sequence[str],
    verdicts: list[str],
) -> tuple[list[VerdictReadout], list[bool]]:
    """The backend's read-outs of ``verdicts`` after each conversation and its continuation, through the cache (a
    killed run keeps every finished chunk), and per item whether it came from the cache."""
    keys = [
        cache_key(model=backend.identity, messages=c, continuation=t, verdicts=verdicts, readout="v1")
        for c, t in zip(conversations, continuations, strict=True)
    ]
    done = cache.get_many(set(keys)) if cache is not None else {}
    hits = [k in done for k in keys]
    todo = list(dict.fromkeys(k for k in keys if k not in done))
    where = {k: i for i, k in enumerate(keys)}
    chunk = max(getattr(backend, "batch_size", 8) * 4, 1) if cache is not None else max(len(todo), 1)
    with RunBar(len(todo), "verdict", "reading verdicts", backend) as bar:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            out = backend.verdict_probabilities(
                [conversations[where[k]] for k in part], [continuations[where[k]] for k in part], verdicts
            )
            fresh = {k: {"p": dict(r.probabilities), "unseen": list(r.unseen)} for k, r in zip(part, out, strict=True)}
            if cache is not None:
                cache.put_many(fresh)
            done.update(fresh)
            bar.done(len(part))
    return [VerdictReadout(done[k]["p"], tuple(done[k]["unseen"])) for k in keys], hits


def force_verdicts(
    backend: Backend,
    cache: GenerationCache | None,
    output: OutputSpec,
    grammar: str,
    conversations: list,
    generations: list,
) -> list:
    """Every generated text whose verdict does not parse in ``output``'s format, continued under ``grammar`` (the
    template's verdict grammar, :func:`hf_critic.critic.grammars.verdict_grammar`); the explanation stays as
    generated.

    The continuations are cached under the conversation, the text continued and the grammar, so a rerun asks for
    none again.
    """
    todo = [
        (i, j)
        for i, texts in enumerate(generations)
        for j, text in enumerate(texts or ())
        if parse_output(text, output).status is not schema.ParseStatus.OK
    ]
    keys = {
        (i, j): cache_key(model=backend.identity, messages=conversations[i], prefix=generations[i][j], grammar=grammar)
        for i, j in todo
    }
    done = cache.get_many(keys.values()) if cache is not None else {}
    missing = [ij for ij in todo if keys[ij] not in done]
    if missing:
        tails = backend.continue_under_grammar(
            [conversations[i] for i, _ in missing], [generations[i][j] for i, j in missing], grammar
        )
        fresh = {keys[ij]: tail for ij, tail in zip(missing, tails, strict=True)}
        if cache is not None:
            cache.put_many(fresh)
        done.update(fresh)
    out = [list(texts) if texts is not None else None for texts in generations]
    for i, j in todo:
        out[i][j] = generations[i][j] + done[keys[i, j]]
    return out


def verdict_continuation(explanation: str, prefix: str) -> str:
    """The assistant turn for ``--explanation first``: the critique with its own verdict cut, then the prefix."""
    explanation = explanation.strip()
    return f"{explanation}\n\n{prefix}" if explanation else prefix
