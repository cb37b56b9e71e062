"""Writing outputs safely: checked before any model loads, written atomically.

:func:`check_output` / :func:`check_output_dir` run before any model loads (the target is writable, is not an input,
is a file where a file is meant, and exists only with ``overwrite``), and :func:`atomic_path` writes to a temporary
file in the same folder that is renamed into place, so a killed run never leaves half a file; the temporary files of
a killed write are removed by the next write of the same target. :func:`write_text` and :func:`save_records` write
through it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

import datasets

from .errors import OutputError

#: Suffixes :func:`save_records` writes.
OUTPUT_SUFFIXES = (".jsonl", ".json", ".parquet")


def _writable_folder(path: Path, what: str) -> None:
    """Raise OutputError unless ``path``'s nearest existing ancestor is a folder this process may write in."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"{what} {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path}: no permission to write in {ancestor}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_output(
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike | None] = (),
    overwrite: bool = False,
    suffixes: Iterable[str] = OUTPUT_SUFFIXES,
    what: str = "--output",
) -> Path:
    """Check an output file before any work is done (before a model loads).

    Args:
        path: the file to be written.
        inputs: files the command reads (None entries are skipped); the output must be none of them.
        overwrite: allow replacing an existing file (``--overwrite``).
        suffixes: accepted file suffixes (lower case).
        what: the option's name for messages.

    Returns:
        ``path`` as a Path.

    Raises:
        OutputError: a suffix not in ``suffixes``, a directory at ``path``, an output equal to an input, an existing
            file without ``overwrite``, or a parent that is a file or not writable.
    """
    path = Path(path).expanduser()
    suffixes = tuple(suffixes)
    if path.suffix.lower() not in suffixes:
        raise OutputError(f"{what} {path}: must end in one of {', '.join(suffixes)}")
    if path.is_dir():
        raise OutputError(f"{what} {path}: is a directory; give a file name")
    for source in inputs:
        if source is not None and _same_file(path, Path(source).expanduser()):
            raise OutputError(f"{what} {path}: is also the input; write to another file")
    if path.exists() and not overwrite:
        raise OutputError(f"{what} {path}: already exists; pass overwrite=True to replace it")
    _writable_folder(path, what)
    return path


def check_output_dir(
    path: str | os.PathLike,
    *,
    outputs: Iterable[str] = (),
    overwrite: bool = False,
    what: str = "--output-dir",
    inputs: Iterable[str | os.PathLike | None] = (),
) -> Path:
    """Check an output folder before any work is done.

    Args:
        path: the folder to be written (it may exist: runs resume there).
        outputs: names inside it that a run writes (``report.json``, ``dataset``); one that exists needs
            ``overwrite``.
        overwrite: allow replacing them (``--overwrite``).
        what: the option's name for messages.
        inputs: files or folders the command reads (None entries are skipped); the output folder must be none of
            them, nor inside one (writing there would change the input).

    Raises:
        OutputError: ``path`` is a file, is an input or inside one, a parent is a file or not writable, or an output
            exists without ``overwrite``.
    """
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {path}: is a file, not a folder")
    for source in inputs:
        within = (path.resolve(), *path.resolve().parents)
        if source is not None and any(_same_file(folder, Path(source).expanduser()) for folder in within):
            raise OutputError(f"{what} {path}: is the input {source} or inside it; write to another folder")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path}: no permission to write in it")
        existing = [name for name in outputs if (path / name).exists()]
        if existing and not overwrite:
            raise OutputError(f"{what} {path}: already holds {', '.join(existing)}; pass overwrite=True to replace")
    else:
        _writable_folder(path, what)
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write to; renamed onto ``path`` when the block ends without error.

    A killed write leaves only a hidden ``.<name>.*.tmp`` file, which the next write of ``path`` removes; an error
    removes it at once. The folder is created.

    Example:
        >>> with atomic_path(out) as tmp:  # doctest: +SKIP
        ...     tmp.write_text("done")
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)
    tmp = _new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _new_file(folder: Path, prefix: str, suffix: str) -> Path:
    """A new empty file ``<folder>/<prefix><random><suffix>``, made as ``open`` makes one: mode 0666 less the umask
    (``tempfile.mkstemp`` makes it 0600, and the file renamed into place kept that whatever the umask)."""
    while True:
        path = folder / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` through :func:`atomic_path`; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def save_records(dataset: datasets.Dataset, path: str | os.PathLike) -> Path:
    """Write records as JSONL (UTF-8, one object per line) or parquet, chosen by the extension, atomically
    (:func:`atomic_path`). Commands check the target first with :func:`check_output`.

    Returns:
        The written path.

    Raises:
        OutputError: an extension other than .jsonl / .json / .parquet.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise OutputError(f"{path}: output must end in .jsonl or .parquet")
    with atomic_path(path) as tmp:  # a killed run leaves the previous file (or none), never half of one
        if suffix == ".parquet":
            dataset.to_parquet(str(tmp))
        else:
            dataset.to_json(str(tmp), lines=True, force_ascii=False)
    return path
