"""A critic's identity: everything that changes its verdicts, by content, and nothing else; the one module that
computes it.

A calibration (:mod:`hf_critic.selective.calibration`), a jury's entry and a cache hold for the critic they were made
with. Its identity must change with every option and file that changes a verdict, or a cascade would apply thresholds
to a critic they were not chosen for, and must not change with what changes nothing (a path, a batch size), or a
harmless rerun is refused. Each kind of critic names its parts
(:meth:`~hf_critic.critics.protocol.CriticKind.identity_parts`) with the functions here, and :func:`identity_digest`
turns them into the identity:

* the model, by content and never by path (:func:`weights_digest`, :func:`file_digest`; :func:`model_identity` adds
  the chat template in use, the context inputs are cut to, a reward critic's calibration; a served model is its base
  URL, model name and what the server reports of it);
* a generative critic's verdict options (:func:`verdict_options`): the template (name and version), the verdict source
  and explanation mode, decoding (only the fields the strategy reads, :func:`decoding_identity`), ``min_verdict_mass``,
  ``truncate``, ``constrain_verdict``, the rubric and score range; a reward critic's (:func:`reward_options`): its
  model, ``truncate`` and tie band;
* recorded verdicts (:func:`recorded_identity`): their files' bytes and how they were read;
* a jury (:func:`jury_identity`): its aggregate and its members' names and identities, in order.

A local model's files: :func:`weights_digest` hashes every weight, configuration, tokenizer and chat-template file
of a folder (SHA-256 of the bytes, under their names relative to the folder), so a folder retrained in place gets a new
identity and a byte-identical copy at another path keeps it. Each file's digest is kept by its path, size, inode,
modification time and status-change time (``st_ctime``, which every write or ``utime`` moves and no user can set
back), in memory and, given a ``store``, in a small JSON file, so a file is read once, not on every run, and a digest
never outlives a change of the file's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "WEIGHT_SUFFIXES",
    "decoding_identity",
    "file_digest",
    "files_digest",
    "identity_digest",
    "jury_identity",
    "model_identity",
    "recorded_identity",
    "reward_options",
    "text_digest",
    "value_digest",
    "verdict_options",
    "weights_digest",
]

#: The files whose bytes decide a model's outputs: weights (full models and adapters), ...
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5")
#: ... their configuration, the tokenizer and its chat template (what the model reads), and a reward critic's
#: calibration file (its pointwise map, tie band and ``max_length`` context).
_CONFIGS = (
    "config.json",
    "adapter_config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "hf_critic_reward.json",
)

_MEMORY: dict[str, str] = {}
_LOCK = threading.Lock()


def _file_key(path: Path) -> str:
    # st_ctime_ns moves on every write and utime: an edit that restores size and mtime still misses the cache
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_ino}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"


def _read_store(store: Path | None) -> dict[str, str]:
    if store is None or not store.is_file():
        return {}
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # a damaged store is recomputed, never trusted
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_store(store: Path, known: dict[str, str]) -> None:
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
        tmp.replace(store)
    except OSError:  # a read-only cache folder: the digest is still right, only computed again next run
        pass


def _file_digest(path: Path, known: dict[str, str]) -> tuple[str, bool]:
    key = _file_key(path)
    if key in _MEMORY:
        return _MEMORY[key], False
    if key in known:
        _MEMORY[key] = known[key]
        return known[key], False
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    _MEMORY[key] = known[key] = digest
    return digest, True


def file_digest(path: str | os.PathLike, store: str | os.PathLike | None = None) -> str:
    """16 hex digits of SHA-256 over one file's bytes (a GGUF file, say), kept as :func:`weights_digest` keeps them.

    Args:
        path: the file.
        store: as in :func:`weights_digest`.

    Returns:
        The digest: equal only for equal bytes, whatever the file's name or folder.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    return _digests([Path(path)], store)[0][:16]


def _digests(files: list[Path], store: str | os.PathLike | None) -> list[str]:
    store = Path(store) if store is not None else None
    with _LOCK:
        known = _read_store(store)
        digests, fresh = [], False
        for path in files:
            digest, new = _file_digest(path, known)
            digests.append(digest)
            fresh |= new
        if fresh and store is not None:
            _write_store(store, known)
    return digests


def _model_files(root: Path) -> list[Path]:
    decides = (p for p in root.iterdir() if p.name.endswith(WEIGHT_SUFFIXES) or p.name in _CONFIGS)
    return sorted(p for p in decides if p.is_file())


def weights_digest(folder: str | os.PathLike, store: str | os.PathLike | None = None) -> str:
    """16 hex digits of SHA-256 over the files of a model folder that decide its outputs (or over one weight file).

    Args:
        folder: a model folder (its files ending in :data:`WEIGHT_SUFFIXES`, its configuration, tokenizer and chat
            template files, and ``hf_critic_reward.json``, one level deep), or a single file such as a GGUF.
        store: a JSON file keeping each file's digest by path, size, inode, modification and status-change time
            (created when missing); None: kept in memory only, for this process.

    Returns:
        The digest: equal only when every such file has equal bytes under the same name relative to the folder, so a
        byte-identical copy at another path has the same digest. A folder with none of these files gives the digest of
        an empty list (the folder is then known by its name alone).

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such model folder or file")
    if root.is_file():
        return file_digest(root, store)
    files = _model_files(root)
    parts = [[path.name, digest] for path, digest in zip(files, _digests(files, store), strict=True)]
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:16]


def value_digest(value) -> str:
    """16 hex digits of SHA-256 over ``value`` as sorted JSON (a chat template, a calibration's fields): the part of an
    identity that lives in memory rather than in a file.

    Args:
        value: anything JSON can write (objects that it cannot are written as ``str``); None digests as ``null``.

    Returns:
        The digest: equal only for equal values.
    """
    blob = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def text_digest(text: str) -> str:
    """16 hex digits of SHA-256 over ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def files_digest(paths: Sequence[str | os.PathLike]) -> str:
    """16 hex digits of SHA-256 over the bytes of ``paths``, in order, read now (never kept: recorded verdicts are
    small files a user edits in place).

    Raises:
        FileNotFoundError: a path that does not exist.
    """
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def identity_digest(setting, parts: Sequence) -> str:
    """A critic's identity in ``setting`` (a :class:`~hf_critic.core.schema.Setting`): 16 hex digits of SHA-256 over
    the setting's name and ``parts`` (what changes its verdicts,
    :meth:`~hf_critic.critics.protocol.CriticKind.identity_parts`), joined by ``|``."""
    return text_digest("|".join([setting.name, *map(str, parts)]))


#: The parts of a model's identity that are digested rather than written out (a chat template, a calibration).
_DIGESTED = ("chat_template", "calibration")


def model_identity(base: str, **parts) -> str:
    """A model's identity in cache keys and fingerprints: ``base`` (what the model is by content: a weights digest, or a
    served model's URL, name and what its server reports) and ``parts`` in order, as ``base|name:value|...``.

    Args:
        base: the model by content, never by path alone.
        **parts: what else decides its outputs: ``chat_template`` (the template its inputs are written with) and
            ``calibration`` (a reward critic's fields, a mapping) are digested (:func:`value_digest`); any other part
            (``context``: the tokens inputs are cut to) is written as it is.

    Returns:
        The identity string.
    """
    values = [f"{name}:{value_digest(v) if name in _DIGESTED else v}" for name, v in parts.items()]
    return "|".join([base, *values])


#: The decoding fields each strategy reads (besides ``strategy`` and ``max_new_tokens``).
_STRATEGY_FIELDS = {
    "greedy": (),
    "beam": ("num_beams",),
    "sampling": ("temperature", "top_p", "seed"),
    "self_consistency": ("temperature", "top_p", "seed", "num_samples"),
}


def decoding_identity(decoding, generates: bool = True) -> dict:
    """The decoding fields that change a verdict under ``decoding``'s strategy.

    Args:
        decoding: a :class:`~hf_critic.critic.decoding.DecodingConfig`.
        generates: the critic generates text (False: a read-out right after the prompt, which decodes nothing).

    Returns:
        ``{"strategy", "max_new_tokens", ...the strategy's own fields}``; ``{}`` when nothing is generated.
    """
    if not generates:
        return {}
    fields = ("strategy", "max_new_tokens", *_STRATEGY_FIELDS.get(decoding.strategy, ()))
    return {name: getattr(decoding, name) for name in fields}


def _rubric_digest(rubric) -> str | None:
    return None if rubric is None else value_digest(getattr(rubric, "__dict__", repr(rubric)))


def verdict_options(critic, setting) -> list[str]:
    """The options of a generative critic that change its verdicts in ``setting``, as strings (identity parts).

    Args:
        critic: a :class:`~hf_critic.critic.Critic` (its backend's ``identity`` is the model's).
        setting: the :class:`~hf_critic.core.schema.Setting` judged.

    Returns:
        ``["model=...", "template=...", ...]``: one ``key=value`` per option, in a fixed order.
    """
    template = critic.template_for(setting)
    plan = critic.plan
    parts = {
        "model": critic.backend.identity,
        "template": f"{template.name}@{template.version}",
        "verdict": critic.verdict,
        "explanation": critic.explanation,
        "decoding": json.dumps(decoding_identity(critic.decoding, plan.generates), sort_keys=True),
        "truncate": critic.truncate,
        "constrain_verdict": critic.constrain_verdict and plan.generates,
        "min_verdict_mass": critic.min_verdict_mass if plan.reads_probabilities else None,
        "rubric": _rubric_digest(critic.rubric),
        "score_range": critic.score_range,
    }
    return [f"{key}={value}" for key, value in parts.items()]


def reward_options(scorer, truncate: str) -> list[str]:
    """The options of a reward critic that change its verdicts, as strings (identity parts): its model (``scorer``'s
    ``identity``: weights, context, chat template, calibration), the verdict source, ``truncate`` and its tie band (the
    calibration's ``tie_margin``)."""
    tie = getattr(scorer.calibration, "tie_margin", None)
    return [f"model={scorer.identity}", "verdict=reward", f"truncate={truncate}", f"tie_margin={tie}"]


def recorded_identity(files: Sequence[str | os.PathLike], *, published: bool, reading: str) -> str:
    """Recorded verdicts' identity part: the bytes of the ``files`` they were read from (:func:`files_digest`) and
    how they were read (``reading``: field, label map, the benchmark rows in order); ``published``: a published
    judge's labels rather than an earlier run's critiques."""
    return f"recorded|{'published' if published else 'critiques'}|{files_digest(files)}|{reading}"


def jury_identity(how: str, members: Sequence[tuple[str, str]]) -> str:
    """A jury's identity part: its aggregate ``how`` and its members' ``(name, identity)`` pairs, in order."""
    return f"jury|{how}|{','.join(f'{name}={identity}' for name, identity in members)}"
