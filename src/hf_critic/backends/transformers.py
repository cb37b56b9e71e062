"""Local, batched, offline generation with a `transformers` causal LM."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm
from transformers import GenerationConfig

from ..decoding import DecodingConfig
from ..models import default_num_threads, load_model
from .base import Backend, Messages


class TransformersBackend(Backend):
    """Generate critiques with a local model: chat template, length-sorted left-padded batches, progress bar.

    Args:
        model: a loaded causal LM in eval mode.
        tokenizer: its tokenizer, with a chat template (left padding is enforced here).
        name: identity for cache keys (use the model path or Hub id).
        batch_size: conversations per ``generate`` call (>= 1). Under self-consistency each carries
            ``num_samples`` sequences.
        progress: show a tqdm bar with critiques/s and generated tokens/s.

    Raises:
        ValueError: the tokenizer has no chat template.
    """

    def __init__(self, model, tokenizer, *, name: str, batch_size: int = 8, progress: bool = True):
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(f"{name}: the tokenizer has no chat template; critic prompts are chat messages")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.batch_size, self.progress = batch_size, progress
        self.context_length = getattr(model.config, "max_position_embeddings", None)

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
            dtype: ``"auto"`` (bfloat16 on CPUs that have it natively, see :func:`hf_critic.models.inference_dtype`)
                or a torch dtype name; part of the backend's name, so cached generations never mix dtypes.
            **kwargs: ``batch_size``, ``progress``.

        Raises:
            hf_critic.models.ModelNotFoundError: the model cannot be found offline.
        """
        lm, tokenizer = load_model(model, trust_remote_code=trust_remote_code, dtype=dtype)
        if lm.device.type == "cpu":
            torch.set_num_threads(num_threads or default_num_threads())
        name = f"{model or 'default:smollm2-135m-instruct'}|{str(lm.dtype).removeprefix('torch.')}"
        return cls(lm, tokenizer, name=name, **kwargs)

    def _prompt_text(self, conversation: Messages) -> str:
        return self.tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_tokens(self, conversation: Messages) -> int:
        """Tokens of the chat-templated prompt, generation prompt included."""
        return self.count_tokens(self._prompt_text(conversation))

    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Remove ``num_tokens`` tokens from the middle of ``text`` and mark the cut with " ... "."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        keep = max(len(ids) - num_tokens, 0)
        head, tail = keep - keep // 2, keep // 2
        return self.tokenizer.decode(ids[:head]) + " ... " + (self.tokenizer.decode(ids[-tail:]) if tail else "")

    @torch.inference_mode()
    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """Generate in length-sorted batches (similar lengths waste less padding); results in input order.

        Each batch is seeded from ``config.seed`` and the batch's own prompts, so sampling is reproducible
        for the same inputs and batch size, including after a resumed run.

        Returns:
            ``config.num_return_sequences`` completions per conversation, special tokens stripped.
        """
        texts = [self._prompt_text(c) for c in conversations]
        encoded = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        n = config.num_return_sequences
        gen_config = GenerationConfig(
            **config.generate_kwargs(),
            eos_token_id=self.model.generation_config.eos_token_id,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        results: list[list[str]] = [[] for _ in texts]
        new_tokens, started = 0, time.perf_counter()
        bar = tqdm(
            total=len(texts), unit="critique", disable=not self.progress, desc=f"generating ({config.strategy})"
        )
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            inputs = self.tokenizer.pad({"input_ids": [encoded[i] for i in batch]}, return_tensors="pt")
            inputs = {k: v.to(self.model.device) for k, v in inputs.items()}
            digest = hashlib.sha256("\x00".join(texts[i] for i in batch).encode()).digest()
            torch.manual_seed(config.seed + int.from_bytes(digest[:4], "little"))
            output = self.model.generate(**inputs, generation_config=gen_config)
            generated = output[:, inputs["input_ids"].shape[1] :]
            new_tokens += int((generated != self.tokenizer.pad_token_id).sum())
            decoded = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for j, i in enumerate(batch):
                results[i] = [s.strip() for s in decoded[j * n : (j + 1) * n]]
            bar.update(len(batch))
            bar.set_postfix(tok_s=f"{new_tokens / (time.perf_counter() - started):.1f}")
        bar.close()
        return results
