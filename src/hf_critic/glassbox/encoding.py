"""Records as conversations, and conversations as the token ids a generating model would have seen.

The prompt is the tokenizer's chat template of the conversation up to the scored assistant turn, with the
generation prompt and control-token strings inside messages kept as text; the response is tokenised on its own and
(by default) followed by the template's end-of-turn token, as generation would have produced it (Huang et al.,
seed ``001_…``; docs/glassbox.md, "Records, turns and token alignment"). Also the in-context illustration of §3.1
(Appendix A.2) and the system-prompt pool of the prompt-based ensemble (Appendix A.1).
"""

from __future__ import annotations

import importlib.resources
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..core.control_tokens import encode_chat, encode_text
from ..core.errors import BadInputError


class AlignmentError(BadInputError):
    """The prompt and response tokens cannot be laid out as the model would have generated them."""


@dataclass
class EncodedTurn:
    """Token ids of one (prompt, response) pair for teacher-forced scoring.

    Attributes:
        input_ids: prompt ids followed by response ids (and the end-of-turn token when included).
        response_start: index of the first scored token in ``input_ids`` (>= 1: something precedes it).
        response_end: one past the last scored token; tokens ``[response_start, response_end)`` are scored.
        truncated: True when the prompt (from the left) or the response (from the right) was cut to fit.
    """

    input_ids: list[int]
    response_start: int
    response_end: int
    truncated: bool = False

    @property
    def num_response_tokens(self) -> int:
        """T, the number of scored tokens."""
        return self.response_end - self.response_start


def _supports_kwarg(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


def _prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    if not getattr(tokenizer, "chat_template", None):
        raise AlignmentError("the tokenizer has no chat template; glass-box features score chat-templated prompts")
    return encode_chat(tokenizer, messages, add_generation_prompt=True)  # "<|im_end|>" typed by a user stays text


def _text_ids(tokenizer, text: str) -> list[int]:
    return encode_text(tokenizer, text)  # special-token strings inside a response are text


def end_of_turn_token_id(tokenizer) -> int | None:
    """The special token the chat template writes right after an assistant message (e.g. ``<|im_end|>``).

    Found by templating ``[user "x", assistant "y"]`` and taking the first token after the assistant text
    when it is a special token; else the tokenizer's ``eos_token_id``.

    Returns:
        A token id, or None when neither exists.
    """
    marker = "glassboxmarker"
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}], tokenize=False
        )
        after = text[text.rindex(marker) + len(marker) :]
        ids = tokenizer(after, add_special_tokens=False)["input_ids"]
        if ids and ids[0] in set(tokenizer.all_special_ids):
            return int(ids[0])
    except Exception:  # noqa: BLE001 - templates that reject this probe fall back to eos
        pass
    return tokenizer.eos_token_id


def encode_turn(
    tokenizer,
    context: list[dict],
    response: str | Sequence[int],
    *,
    end_token_id: int | None = None,
    max_length: int | None = None,
) -> EncodedTurn:
    """Lay out ``chat_template(context) + response (+ end-of-turn)`` exactly as generation would produce it.

    Args:
        tokenizer: a tokenizer with a chat template.
        context: the conversation before the scored assistant message (``[{"role", "content"}, …]``), ending
            with a user message; templated with the generation prompt (``<|im_start|>assistant\\n``).
        response: the response text (tokenised alone, no special tokens added, special-token strings kept as
            text) or its token ids (e.g. a sampled continuation).
        end_token_id: appended and scored after the response (see :func:`end_of_turn_token_id`); None: not.
        max_length: total token budget; the prompt is cut from the left first, then the response from the right.

    Returns:
        An :class:`EncodedTurn`; ``input_ids[response_start:response_end]`` are the response ids (+ end token).

    Raises:
        AlignmentError: no chat template, or an empty prompt (nothing would predict the first response token).
    """
    prompt = _prompt_ids(tokenizer, context)
    resp = _text_ids(tokenizer, response) if isinstance(response, str) else [int(i) for i in response]
    if end_token_id is not None:
        resp = resp + [int(end_token_id)]
    if not prompt:
        raise AlignmentError("the templated prompt is empty")
    truncated = False
    if max_length is not None and len(prompt) + len(resp) > max_length:
        truncated = True
        keep_prompt = max(1, max_length - len(resp))
        prompt = prompt[-keep_prompt:]
        resp = resp[: max(0, max_length - len(prompt))]
    return EncodedTurn(prompt + resp, len(prompt), len(prompt) + len(resp), truncated)


@dataclass
class Conversation:
    """A record as chat messages.

    Attributes:
        messages: ``[{"role", "content"}, …]`` including the scored assistant messages.
        assistant_indices: positions in ``messages`` of the assistant messages, in order.
        references: one reference answer (or None) per assistant message.
    """

    messages: list[dict]
    assistant_indices: list[int]
    references: list[str | None] = field(default_factory=list)


def conversation_from_record(record: Mapping[str, Any], row: int = 0) -> Conversation:
    """Turn one record into a :class:`Conversation`.

    Accepted layouts (first match wins):

    * ``messages``: ``[{"role": "system"|"user"|"assistant", "content": str}, …]``; every assistant message is
      a response that can be scored.
    * ``turns`` (FastChat ``question.jsonl``: the user turns) with ``response`` (or ``responses``) a list of
      the same length (the assistant turns; FastChat ``choices[0]["turns"]``); a single string is accepted
      for a one-turn record.
    * ``question`` and ``response`` strings.

    Optional: ``system`` (a system message put first), ``reference`` (a string for the last assistant turn, or
    a list aligned with the assistant turns, entries may be None).

    Raises:
        hf_critic.io.RecordError: missing or malformed fields (the message names the row).
    """
    from hf_critic.io import RecordError

    def bad(msg: str) -> RecordError:
        return RecordError(f"row {row}: {msg}")

    messages: list[dict]
    if record.get("messages"):
        messages = []
        for m in record["messages"]:
            if not isinstance(m, Mapping) or m.get("role") not in ("system", "user", "assistant"):
                raise bad(f"messages must be {{'role': system|user|assistant, 'content': str}} dicts, got {m!r:.80}")
            if not isinstance(m.get("content"), str):
                raise bad(f"message content must be text, got {m.get('content')!r:.80}")
            messages.append({"role": m["role"], "content": m["content"]})
    elif record.get("turns"):
        turns = record["turns"]
        responses = record.get("responses", record.get("response"))
        if isinstance(turns, str):
            turns = [turns]
        if isinstance(responses, str):
            responses = [responses]
        if not isinstance(responses, Sequence) or len(responses) != len(turns):
            n = len(responses) if isinstance(responses, Sequence) else 0
            raise bad(f"'turns' has {len(turns)} user turns but 'response' has {n} assistant turns")
        messages = []
        for q, a in zip(turns, responses, strict=True):
            if not isinstance(q, str) or not isinstance(a, str):
                raise bad("turns and responses must be strings")
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    else:
        q, a = record.get("question"), record.get("response")
        if not isinstance(q, str) or not q.strip():
            raise bad("needs a non-empty 'question' (or 'turns' / 'messages'); map yours with columns=")
        if not isinstance(a, str):
            raise bad("needs a 'response' string")
        messages = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    system = record.get("system")
    if isinstance(system, str) and system and not (messages and messages[0]["role"] == "system"):
        messages = [{"role": "system", "content": system}] + messages
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not assistant:
        raise bad("no assistant message to score")
    for i in assistant:
        if i == 0 or messages[i - 1]["role"] == "assistant":
            raise bad(f"assistant message {i} does not follow a user message")
    ref = record.get("reference")
    if ref is None or isinstance(ref, str):
        refs: list[str | None] = [None] * (len(assistant) - 1) + [ref or None]
    elif isinstance(ref, Sequence):
        if len(ref) != len(assistant):
            raise bad(f"'reference' has {len(ref)} entries for {len(assistant)} assistant turns")
        refs = [r if isinstance(r, str) and r else None for r in ref]
    else:
        raise bad(f"'reference' must be a string or a list, got {type(ref).__name__}")
    return Conversation(messages, assistant, refs)


def _with_system(messages: list[dict], system: str) -> list[dict]:
    rest = messages[1:] if messages and messages[0]["role"] == "system" else messages
    return [{"role": "system", "content": system}] + rest


def _illustrated(conv: Conversation, k: int) -> list[dict] | None:
    """Context of assistant turn ``k`` with the reference conversation as a prior demonstration (Appendix A.2).

    The demonstration repeats the user turns up to ``k`` with the references as assistant answers; None when a
    reference is missing.
    """
    upto = conv.assistant_indices[k]
    refs = conv.references[: k + 1]
    if any(r is None for r in refs):
        return None
    system = [m for m in conv.messages[:1] if m["role"] == "system"]
    body = [m for m in conv.messages[: upto + 1] if m["role"] != "system"]
    demo, j = [], 0
    for m in body:
        if m["role"] == "assistant":
            demo.append({"role": "assistant", "content": refs[j]})
            j += 1
        else:
            demo.append(dict(m))
    return system + demo + body[:-1]


def load_system_prompt_pool() -> list[str]:
    """The seven system prompts of the prompt-based ensemble (Appendix A.1, Figure 1), in the paper's order.

    Read from the package data file ``hf_critic/prompts/glassbox/system_prompts.yaml``.
    """
    text = (
        importlib.resources.files("hf_critic.prompts").joinpath("glassbox", "system_prompts.yaml").read_text("utf-8")
    )
    return list(yaml.safe_load(text)["prompts"])
