"""The one factory of tiny models for tests and benchmarks (no download).

:func:`chatml_tokenizer` is a byte-level BPE trained on the spot, with a ChatML template carrying the
``{% generation %}`` markers TRL's assistant-only loss needs; :func:`tiny_llama` is a randomly initialised Llama
built from a config; :func:`build_tiny_model` saves both to a folder that ``from_pretrained`` loads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["CHATML_TEMPLATE", "build_tiny_model", "chatml_tokenizer", "tiny_llama"]

#: ChatML with the ``{% generation %}`` markers of the assistant turns (TRL: "training-compatible" template).
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{% else %}{{ message['content'] + '<|im_end|>' }}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Words of the critic prompts and verdicts in English and Chinese, so that prompts come out in few tokens.
_CORPUS = [
    "Please act as an impartial judge and evaluate the quality of the response. Rating: [[5]]",
    "The capital of France is Paris. Assistant 1 Assistant 2 Tie [[A]] [[B]] [[C]]",
    "评分：[[6]] 综合得分 助手1 助手2 质量相当 {'Overall Score': 7}",
]


def chatml_tokenizer(
    corpus: Iterable[str] = (),
    *,
    vocab_size: int = 400,
    bos_token: str | None = None,
    bos_post_processor: bool = False,
    added_tokens: Sequence[str] = (),
):
    """A byte-level BPE tokenizer trained here on ``corpus``, with :data:`CHATML_TEMPLATE` (no download).

    Args:
        corpus: training texts (default: critic-prompt words in English and Chinese, repeated 20 times).
        vocab_size: BPE vocabulary size before ``added_tokens`` (the three special tokens included).
        bos_token: ``None`` or a special token to declare as BOS (e.g. ``"<|endoftext|>"``).
        bos_post_processor: prepend BOS (``<|endoftext|>``) to every encoded text, as some tokenizers do.
        added_tokens: ordinary (non-special, not normalised) tokens added after training, in order.

    Returns:
        A ``transformers.PreTrainedTokenizerFast``: special tokens ``<|endoftext|>`` (pad), ``<|im_start|>``,
        ``<|im_end|>`` (eos).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus) or _CORPUS * 20, trainer)
    if bos_post_processor:
        bos_id = tok.token_to_id("<|endoftext|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos_id)]
        )
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in added_tokens])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=bos_token, unk_token=None
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def tiny_llama(tokenizer, *, seed: int = 0, **config):
    """A randomly initialised ``LlamaForCausalLM`` for ``tokenizer``'s vocabulary, built from a config.

    Args:
        tokenizer: gives ``vocab_size`` (``len(tokenizer)``), ``eos_token_id`` and ``pad_token_id``.
        seed: ``torch.manual_seed`` before the weights are drawn.
        **config: ``LlamaConfig`` fields overriding the defaults (hidden 32, intermediate 64, 2 layers, 4 heads,
            2 key-value heads, 2,048 positions, no BOS).

    Returns:
        The model in eval mode, float32 on the CPU.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    defaults = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
    }
    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(**(defaults | config))).eval()


def build_tiny_model(path: str | Path, tokenizer=None, *, seed: int = 0, **config) -> Path:
    """Save a :func:`tiny_llama` and its tokenizer to ``path``, loadable by ``from_pretrained``.

    Args:
        path: folder to write (created).
        tokenizer: default :func:`chatml_tokenizer` ``()``.
        seed, **config: passed to :func:`tiny_llama`.

    Returns:
        ``path`` as a ``Path``.
    """
    path = Path(path)
    tokenizer = tokenizer if tokenizer is not None else chatml_tokenizer()
    tiny_llama(tokenizer, seed=seed, **config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_reward_model(path: str | Path, tokenizer=None, *, seed: int = 0, **config) -> Path:
    """Save a randomly initialised one-label ``LlamaForSequenceClassification`` (a reward model's layout, as TRL's
    ``RewardTrainer`` writes it) and its tokenizer to ``path``.

    Args:
        path: folder to write (created).
        tokenizer: default :func:`chatml_tokenizer` ``()``.
        seed, **config: as :func:`tiny_llama`.

    Returns:
        ``path`` as a ``Path``.
    """
    import torch
    from transformers import LlamaConfig, LlamaForSequenceClassification

    path = Path(path)
    tokenizer = tokenizer if tokenizer is not None else chatml_tokenizer()
    causal = tiny_llama(tokenizer, seed=seed, **config)
    config = LlamaConfig(**{**causal.config.to_dict(), "num_labels": 1})
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config).eval()
    with torch.no_grad():
        model.score.weight.normal_(0, 1.0)  # rewards spread enough for labels to differ between responses
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
