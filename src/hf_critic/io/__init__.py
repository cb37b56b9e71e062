"""Records in, critiques out: reading records (files, folders, Hub ids) and writing critiques through `datasets`;
errors name file, line, field.

The package's parts, one idea each:

- :mod:`~hf_critic.io.records`: reading (:func:`load_records`, the one loader; :func:`read_json_rows`,
  :func:`read_json`, :func:`json_line`, :func:`iter_rows`, :func:`load_saved`);
- :mod:`~hf_critic.io.columns`: the record's columns (``--columns`` and ``--label-map`` parsed, renames and joins,
  :func:`check_fields`);
- :mod:`~hf_critic.io.outputs`: writing safely (:func:`check_output` / :func:`check_output_dir` before any model
  loads, :func:`atomic_path`, :func:`write_text`, :func:`save_records`);
- :mod:`~hf_critic.io.errors`: :class:`RecordError` and :class:`OutputError`.

Import the names from ``hf_critic.io``, as before the split.
"""

from __future__ import annotations

from .columns import TEXT_FIELDS, check_fields, join_fields, parse_columns, parse_label_map, rename_columns
from .errors import OutputError, RecordError
from .outputs import OUTPUT_SUFFIXES, atomic_path, check_output, check_output_dir, save_records, write_text
from .records import BOM, DATA_FILE_BUILDERS, iter_rows, json_line, load_records, load_saved, read_json, read_json_rows

__all__ = [
    "BOM",
    "DATA_FILE_BUILDERS",
    "OUTPUT_SUFFIXES",
    "TEXT_FIELDS",
    "OutputError",
    "RecordError",
    "atomic_path",
    "check_fields",
    "check_output",
    "check_output_dir",
    "iter_rows",
    "join_fields",
    "json_line",
    "load_records",
    "load_saved",
    "parse_columns",
    "parse_label_map",
    "read_json",
    "read_json_rows",
    "rename_columns",
    "save_records",
    "write_text",
]
