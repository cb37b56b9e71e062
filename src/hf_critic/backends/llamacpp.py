"""GGUF critics in-process through llama.cpp, and llama.cpp's OpenAI-compatible server on 127.0.0.1.

Published critics often ship as GGUF quantisations; the transformers engine can only de-quantise them to float32.
:class:`LlamaCppBackend` runs the GGUF file itself with llama.cpp: the chat template comes from the file's metadata,
requests are decoded in parallel slots (continuous batching), a GBNF grammar can force the verdict line into the
template's syntax (:mod:`hf_critic.critic.grammars`), and per-token log-probabilities are returned on request.

**Binding: xllamacpp, not llama-cpp-python.** Compared on what a critic user meets at ``pip install`` time:

==================  ==========================================  ===========================================
                    xllamacpp (xorbitsai)                       llama-cpp-python (abetlen)
==================  ==========================================  ===========================================
install             prebuilt abi3 wheels on PyPI: Linux x86-64  sdist on PyPI: compiles llama.cpp with CMake
                    and aarch64, macOS arm64; ~4 s here, no     at install (12 min on this project's 2-core
                    compiler                                    machine); wheels only from a side index
API                 llama.cpp's own server (slots, continuous   its own Python API over the C API; the
                    batching, grammars, ``n_probs``,            server is a separate FastAPI app; parallel
                    OpenAI-shaped JSON) called in-process       sequences are not exposed
maintenance         follows llama.cpp's releases closely        slower to follow upstream
stability           the request/response JSON is llama.cpp's    stable Python API
                    server protocol, which is versioned by
                    the OpenAI API shape it mimics
==================  ==========================================  ===========================================

xllamacpp's ``Server`` is llama.cpp's server: the same requests work in-process (``handle_chat_completions``) and
over HTTP (it listens on ``127.0.0.1``; port 0 picks a free one), so one request builder serves both, and this
module's ``__main__`` is a local OpenAI-compatible server that needs no compiled ``llama-server``.

Speed (``benchmarks/bench_generate.py``, 16 demo critiques, 64 new tokens, default critic Q4_1, 2 threads): on an
AMD EPYC (AVX-512 BF16, no AMX) 0.63 critiques/s with one slot and 0.94 with 4-8 slots, faster than transformers at
batch 1 in float32 (0.29/s), slower than transformers bfloat16 at batch 8 (1.45/s). Figures of the AMX Xeon this
project runs on are in :data:`hf_critic.backends.models.MEASUREMENTS`. llama.cpp's threads spin while waiting (OpenMP);
with more threads than free cores it collapses, so ``OMP_WAIT_POLICY=PASSIVE`` is set here unless the user set it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

from ..core.control_tokens import mark, split_marked
from ..core.errors import BadInputError, MissingExtraError
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictReadout, walk_top_logprobs
from .base import Backend, Messages
from .gguf_files import GGUFError, check_gguf, control_tokens, file_type, fingerprint, recoded_gguf

__all__ = [
    "GGUFError",
    "LlamaCppBackend",
    "check_gguf",
    "llamacpp_request",
    "prefill_tail",
    "start_server",
]


def _binding():
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP threads starve a shared CPU
    try:
        import xllamacpp
    except ImportError as err:
        raise MissingExtraError("the llama.cpp engine needs the xllamacpp package", extra="llamacpp") from err
    return xllamacpp


def start_server(
    gguf: str | os.PathLike,
    *,
    parallel: int = 4,
    threads: int | None = None,
    context_length: int = 8192,
    port: int = 0,
    alias: str | None = None,
    verbose: bool = False,
):
    """Load ``gguf`` into llama.cpp's server (in this process) listening on ``127.0.0.1:port``.

    Args:
        gguf: the model file (checked with :func:`check_gguf`).
        parallel: decoding slots (>= 1): requests decoded together, continuous batching.
        threads: CPU threads >= 1 (default :func:`hf_critic.backends.threads.default_num_threads`: ``OMP_NUM_THREADS`` when
            set, else one per core); never more than free cores.
        context_length: total KV-cache tokens, shared evenly by the slots (each slot gets
            ``context_length // parallel``).
        port: TCP port; 0 picks a free one.
        alias: the model name the server reports in ``/v1/models`` (default: the file's stem).
        verbose: llama.cpp's own log on stderr.

    Returns:
        ``xllamacpp.Server``; its ``listening_address`` is the base URL (without ``/v1``).

    Raises:
        GGUFError: see :func:`check_gguf`.
        MissingExtraError: xllamacpp is not installed (an ImportError).
        ValueError: ``parallel`` or ``threads`` below 1.
    """
    from .threads import num_threads_or_default

    file = check_gguf(gguf)
    if parallel < 1:
        raise BadInputError("parallel must be >= 1")
    xllamacpp = _binding()
    params = xllamacpp.CommonParams()
    params.model.path = str(file)
    params.model_alias = {alias or file.stem}
    params.n_parallel = parallel
    params.n_ctx = context_length
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = num_threads_or_default(threads, "threads")
    params.hostnames = ["127.0.0.1"]
    params.port = port
    if not verbose:
        params.verbosity = -1
    return xllamacpp.Server(params)


def llamacpp_request(
    messages: Messages,
    config: DecodingConfig,
    *,
    sample: int = 0,
    grammar: str | None = None,
    top_logprobs: int = 0,
) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body that decodes ``messages`` with ``config`` on llama.cpp.

    Greedy is ``temperature 0`` (llama.cpp then takes the arg-max token); sampling sends ``temperature``, ``top_p``
    and ``seed + sample``, and turns off llama.cpp's own default top-k 40 and min-p 0.05 so the distribution is the
    one transformers samples from (:meth:`DecodingConfig.generate_kwargs`: ``top_k=0``).

    Args:
        messages: the conversation.
        config: the decoding configuration (beam search is refused by the caller).
        sample: index of the sample under self-consistency (0 otherwise).
        grammar: a GBNF grammar the completion must match, or None.
        top_logprobs: alternatives per generated token to report with their log-probabilities (0 = none).

    Returns:
        A JSON-able dict.
    """
    body: dict[str, Any] = {"messages": list(messages), "max_tokens": config.max_new_tokens}
    if config.strategy == "greedy":
        body["temperature"] = 0.0
    else:
        body.update(temperature=config.temperature, top_p=config.top_p, top_k=0, min_p=0.0, seed=config.seed + sample)
    if grammar:
        body["grammar"] = grammar
    if top_logprobs:
        body.update(logprobs=True, top_logprobs=top_logprobs)
    return body


def prefill_tail(content: str, prefix: str) -> str:
    """The continuation in a prefilled answer: llama.cpp returns prefix + continuation, other servers only the latter."""
    return content[len(prefix) :] if content.startswith(prefix) else content


#: Rows per slot whose verdicts are walked together (:meth:`LlamaCppBackend.verdict_probabilities`).
READOUT_CHUNK_PER_SLOT = 4


class LlamaCppBackend(Backend):
    """Generate critiques from a GGUF file with llama.cpp in this process (parallel slots, optional grammar).

    Args:
        gguf: path of the ``.gguf`` file.
        parallel: decoding slots, i.e. requests in flight at once (>= 1). The CLI's ``--batch-size``.
        threads: CPU threads >= 1 (default :func:`hf_critic.backends.threads.default_num_threads`: ``OMP_NUM_THREADS`` when set,
            else never more than this process may use).
        context_length: tokens per slot (prompt + generation); the KV cache holds ``parallel`` times this.
        grammar: GBNF grammar every generation must match (see :func:`hf_critic.critic.grammars.verdict_grammar`), or None.
        top_logprobs: next tokens whose log-probabilities :meth:`verdict_probabilities` reads per position.
        progress: show a tqdm bar.
        recode: ``"auto"``, ``"off"``, ``"Q8_0"`` or ``"F32"``: run a re-encoding of the file that llama.cpp's CPU
            kernels multiply faster (``auto``: Q4_1 -> Q8_0 for models up to 1B parameters, 1.5-2.1x the read-out
            speed), written once next to hf-critic's cache (:func:`hf_critic.backends.gguf_files.recoded_gguf`).

    Attributes:
        name: ``"llamacpp|<file name>|<quantisation>|<sha-256 prefix of the whole file>"``, plus
            ``"|as <type>"`` when re-encoded: engine, quantisation and weights are part of every cache key, so GGUF
            generations never mix with another engine's, another file's or another encoding's.
        batch_size: equals ``parallel`` (the critic commits its cache every few batches).
        quantization: the GGUF's file type (e.g. ``"Q4_1"``, or ``"Q4_1->Q8_0"`` re-encoded), when known.
        source, path: the file given, and the file llama.cpp runs (the same unless re-encoded).

    Raises:
        GGUFError: the path is missing or not a GGUF file.
        MissingExtraError: xllamacpp is not installed (an ImportError).
    """

    supports_grammar = True
    keeps_text = True

    def __init__(
        self,
        gguf: str | os.PathLike,
        *,
        parallel: int = 4,
        threads: int | None = None,
        context_length: int = 4096,
        grammar: str | None = None,
        top_logprobs: int = 20,
        progress: bool = True,
        recode: str = "auto",
    ):
        self.source = check_gguf(gguf)
        self.path = recoded_gguf(self.source, recode)
        self.server = start_server(
            self.path, parallel=parallel, threads=threads, context_length=context_length * parallel
        )
        self.base_url = self.server.listening_address
        self.batch_size = self.parallel = parallel
        self.context_length, self.grammar, self.progress = context_length, grammar, progress
        self.quantization = file_type(self.source)
        self.top_logprobs = top_logprobs
        self.name = f"llamacpp|{self.source.name}|{self.quantization or 'unknown'}|{fingerprint(self.source)}"
        if self.path != self.source:  # re-encoded weights give other outputs: their own cache keys
            recoded = file_type(self.path)
            self.quantization = f"{self.quantization}->{recoded}"
            self.name += f"|as {recoded}"
        self._identity = self.name.replace(f"|{self.source.name}|", "|", 1)  # by content: a renamed copy is the same

    # ------------------------------------------------------------------------------------ tokenizer (the server's)
    def _post(self, route: str, body: dict) -> dict:
        request = urllib.request.Request(
            self.base_url + route, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def _tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """``text``'s ids; control-token strings in it parsed as control tokens only with ``special``."""
        body = {"content": text, "add_special": False, "parse_special": special}
        return self._post("/tokenize", body)["tokens"] if text else []

    @cached_property
    def control_tokens(self) -> tuple[str, ...]:
        """The strings llama.cpp's server would read as control tokens inside a message (from the GGUF's vocabulary)."""
        return control_tokens(self.path)

    def _prompt_ids(self, messages: Messages) -> list[int]:
        """The chat-templated prompt's ids with the messages' control-token strings kept as text.

        llama.cpp's chat endpoint tokenises the whole templated prompt with ``parse_special`` and has no switch for
        the messages alone, so the messages are marked (:func:`hf_critic.core.control_tokens.mark`), templated by the
        server (``/apply-template``, which also prefills a final assistant message), and the pieces tokenised apart:
        the template's text with ``parse_special`` (its own control tokens and BOS), the marked strings without.
        """
        prompt = self._post("/apply-template", {"messages": mark(list(messages), self.control_tokens)})["prompt"]
        (first, _, _), *rest = split_marked(prompt, self.control_tokens)
        ids = self._post("/tokenize", {"content": first, "add_special": True, "parse_special": True})["tokens"]
        newline = self._tokenize("\n")
        for piece, _, data in rest:
            if piece:  # after a newline that is removed again, so SentencePiece adds no prefix space mid-prompt
                piece_ids = self._tokenize("\n" + piece, special=not data)
                fits = piece_ids[: len(newline)] == newline
                ids += piece_ids[len(newline) :] if fits else self._tokenize(piece, special=not data)
        return ids

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one chat-completion body; a body whose messages hold control-token strings is sent as the prompt's
        token ids (:meth:`_prompt_ids`) to the completion endpoint and answered in the chat shape."""
        messages = body["messages"]
        if mark(list(messages), self.control_tokens) == list(messages):
            return self.server.handle_chat_completions(body)
        request = {k: v for k, v in body.items() if k not in ("messages", "logprobs", "top_logprobs")}
        request.update(prompt=self._prompt_ids(messages), n_probs=body.get("top_logprobs", 0))
        out = self.server.handle_completions(request)
        for choice in out.get("choices", []):
            choice["message"] = {"role": "assistant", "content": choice.pop("text", "")}
        return out

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the GGUF's own tokenizer, no special tokens."""
        return len(self._tokenize(text))

    def prompt_tokens(self, conversation: Messages) -> int:
        """Tokens of the prompt after the GGUF's chat template (generation prompt included)."""
        return len(self._prompt_ids(conversation))

    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Remove ``num_tokens`` tokens from the middle of ``text`` and mark the cut with " ... "."""
        ids = self._tokenize(text)
        keep = max(len(ids) - num_tokens, 0)
        head, tail = keep - keep // 2, keep // 2
        detok = lambda part: self._post("/detokenize", {"tokens": part})["content"] if part else ""  # noqa: E731
        return detok(ids[:head]) + " ... " + detok(ids[len(ids) - tail :] if tail else [])

    # ------------------------------------------------------------------------------------ generation
    def chat(self, bodies: Sequence[dict[str, Any]], desc: str = "generating", bar=None) -> list[dict[str, Any]]:
        """Send chat-completion bodies to the in-process server, ``parallel`` at a time; responses in input order.

        Args:
            bodies: request bodies (:func:`llamacpp_request`).
            desc: the progress bar's label.
            bar: a tqdm bar of the caller's to advance (its total grows by ``len(bodies)``) instead of a new one.

        Raises:
            RuntimeError: llama.cpp answered an error (e.g. a grammar it cannot parse, a prompt over the context).
        """
        from tqdm.auto import tqdm

        own = bar is None
        if own:
            bar = tqdm(total=len(bodies), unit="critique", disable=not self.progress, desc=desc)
        else:
            bar.total += len(bodies)
        lock = threading.Lock()

        def one(body):
            out = self.complete(body)
            with lock:
                bar.update(1)
            return out

        with ThreadPoolExecutor(self.parallel) as pool:
            responses = list(pool.map(one, bodies))
        if own:
            bar.close()
        for response in responses:
            if "error" in response:
                error = response["error"]
                raise RuntimeError(f"llama.cpp ({self.path.name}): {error.get('message', error)}")
        return responses

    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """``config.num_return_sequences`` completions per conversation, through the parallel slots.

        Greedy, sampling and self-consistency (``num_samples`` requests seeded ``seed, seed+1, ...``) map onto
        llama.cpp's sampler (:func:`llamacpp_request`); with :attr:`grammar` set every completion matches it.

        Raises:
            ValueError: beam search (llama.cpp's server has none).
            RuntimeError: an error answered by llama.cpp.
        """
        if config.strategy == "beam":
            raise BadInputError(
                "beam search is not available in the llama.cpp engine; use greedy, sampling or "
                "self_consistency, or engine=transformers"
            )
        n = config.num_return_sequences
        bodies = [llamacpp_request(c, config, sample=j, grammar=self.grammar) for c in conversations for j in range(n)]
        texts = [
            r["choices"][0]["message"]["content"].strip() for r in self.chat(bodies, f"generating ({config.strategy})")
        ]
        return [texts[i * n : (i + 1) * n] for i in range(len(conversations))]

    def continue_under_grammar(
        self, conversations: Sequence[Messages], prefixes: Sequence[str], grammar: str, max_new_tokens: int = 32
    ) -> list[str]:
        """Greedy continuations of the assistant ``prefixes`` under ``grammar`` (llama.cpp's assistant prefill)."""
        config = DecodingConfig(max_new_tokens=max_new_tokens)
        bodies = [
            llamacpp_request([*c, {"role": "assistant", "content": p}], config, grammar=grammar)
            for c, p in zip(conversations, prefixes, strict=True)
        ]
        texts = [r["choices"][0]["message"]["content"] for r in self.chat(bodies, "forcing verdicts")]
        return [prefill_tail(t, p) for t, p in zip(texts, prefixes, strict=True)]

    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Verdict probabilities from llama.cpp's per-token log-probabilities (``top_logprobs``, its ``n_probs``).

        Each read-out position is the prompt with the assistant turn prefilled by ``continuations[i]``; one
        single-token request per position returns the :attr:`top_logprobs` most likely next tokens (raw model
        probabilities, before sampling), and :func:`hf_critic.critic.verdicts.walk_top_logprobs` extends multi-token
        verdicts (``"10"``) with further requests. Verdicts outside the top-k are reported unseen (probability 0).

        Raises:
            ValueError: not one continuation per conversation.
            RuntimeError: an error answered by llama.cpp.
        """
        if len(continuations) != len(conversations):
            raise BadInputError("verdict_probabilities needs one continuation per conversation")
        from tqdm.auto import tqdm

        config = DecodingConfig(max_new_tokens=1)
        bar = tqdm(total=0, unit="position", disable=not self.progress, desc="reading verdicts")

        def next_tokens(rows: Sequence[int], positions: Sequence[tuple[int, str]]) -> list[list[dict[str, Any]]]:
            bodies = [
                llamacpp_request(
                    [*conversations[rows[i]], {"role": "assistant", "content": continuations[rows[i]] + text}],
                    config,
                    top_logprobs=self.top_logprobs,
                )
                for i, text in positions
            ]
            answers = self.chat(bodies, "reading verdicts", bar=bar)
            # the entries as llama.cpp sends them (token, logprob, bytes, id): several tokens share one string (a
            # partial character is written without its bytes), so only the walk's top_k_table can tell them apart
            return [a["choices"][0]["logprobs"]["content"][0]["top_logprobs"] for a in answers]

        # A multi-token verdict ("10") is walked with a second request on the same prompt, which llama.cpp answers
        # from its prompt cache only while the prompt is recent (its RAM cache keeps about n_ctx tokens). Measured:
        # 160 MT-Bench rows walked at once computed 86,957 prompt tokens in 182 s, in chunks of 4 per slot 57,219 in
        # 130 s (4 slots, Q4_1 as Q8_0), and the cost per row no longer grows with the run
        chunk = READOUT_CHUNK_PER_SLOT * self.parallel
        out: list[VerdictReadout] = []
        for start in range(0, len(conversations), chunk):
            rows = range(start, min(start + chunk, len(conversations)))
            out += walk_top_logprobs(lambda p, rows=rows: next_tokens(rows, p), len(rows), verdicts)
        bar.close()
        return out

    def close(self) -> None:
        """Stop llama.cpp's server and free the model (idempotent)."""
        self.server = None


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m hf_critic.backends.llamacpp``: llama.cpp's OpenAI-compatible server on 127.0.0.1 until SIGTERM."""
    from .models import default_gguf_file

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--model", help="GGUF file (default: the embedded SmolLM2-135M-Instruct Q4_1)")
    parser.add_argument("--port", type=int, default=8080, help="TCP port on 127.0.0.1 (default: 8080)")
    parser.add_argument("--parallel", type=int, default=4, help="decoding slots (default: 4)")
    parser.add_argument(
        "--threads", type=int, help="CPU threads (default: one per physical core this process may use)"
    )
    parser.add_argument("--ctx-size", type=int, default=16384, help="KV-cache tokens shared by the slots")
    parser.add_argument("--alias", help="model name reported by /v1/models (default: the file's stem)")
    args = parser.parse_args(argv)
    try:
        server = start_server(
            args.model or default_gguf_file(),
            parallel=args.parallel,
            threads=args.threads,
            context_length=args.ctx_size,
            port=args.port,
            alias=args.alias,
        )
    except (GGUFError, OSError) as err:
        raise SystemExit(f"error: {err}") from None
    print(f"serving on {server.listening_address}/v1", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
