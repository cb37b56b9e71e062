"""The messages between hf-critic and its vLLM worker process (:mod:`hf_critic.backends.vllm_worker`), stdlib only.

The worker runs in vLLM's own virtualenv, which holds none of hf-critic's dependencies, so it imports this module by
its file alone. One JSON object a line each way. hf-critic tokenises every prompt itself (its chat template, the judged
text's control-token strings kept as text) and sends token ids; the worker answers with token ids, log-probabilities
or rewards, never text it would have tokenised or detokenised on its own.

Requests (``op``) and their answers:

- ``generate``: ``prompts`` (token id lists), ``params`` (``vllm.SamplingParams`` keywords) -> ``outputs``: per prompt,
  its ``n`` completions' token ids.
- ``logprobs``: ``prompts``, ``token_ids`` (per prompt, the ids whose next-token log-probability is wanted) ->
  ``logprobs``: per prompt, one float per id, in order (``SamplingParams(logprob_token_ids=...)``: exact, no top-k).
- ``reward``: ``prompts`` -> ``rewards``: per prompt the one-label classifier's raw logit (pooling runner, no
  activation).
- ``stop``: the worker exits.

The worker's first line says it is ready (``ready``: vLLM's version, the runner, ``max_model_len``); every answer
carries ``ok``; a failed request answers ``ok: false`` with ``error`` (one line) and the worker keeps serving.
"""

from __future__ import annotations

import json
from typing import IO, Any

OPS = ("generate", "logprobs", "reward", "stop")


def write_message(stream: IO[str], message: dict[str, Any]) -> None:
    """Write ``message`` as one JSON line and flush it."""
    stream.write(json.dumps(message, separators=(",", ":")) + "\n")
    stream.flush()


def read_message(stream: IO[str]) -> dict[str, Any] | None:
    """The next message on ``stream``, or None at its end.

    Raises:
        ValueError: the line is not a JSON object (a bug on one side: the two sides speak one protocol).
    """
    line = stream.readline()
    if not line:
        return None
    try:
        message = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a JSON line ({err}): {line[:80]!r}") from None
    if not isinstance(message, dict):
        raise ValueError(f"not a JSON object: {line[:80]!r}")
    return message


def request(op: str, **fields: Any) -> dict[str, Any]:
    """A request message.

    Raises:
        ValueError: an unknown ``op`` (one of :data:`OPS`).
    """
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; one of {', '.join(OPS)}")
    return {"op": op, **fields}


def answer(**fields: Any) -> dict[str, Any]:
    """A successful answer."""
    return {"ok": True, **fields}


def failure(error: BaseException | str) -> dict[str, Any]:
    """A failed answer: the error as one line (its type and message)."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return {"ok": False, "error": " ".join(str(text).split())}
