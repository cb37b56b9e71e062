"""The output of Eval-Instruct (CritiqueLLM v2 §3.3): the four configs' columns and SFT-ready ``messages``."""

from __future__ import annotations

import datasets

from ...core.labels import LABEL_NAMES
from ...core.schema import (
    SETTINGS,
    Setting,
    Task,
)
from ...prompts import get_template


# ------------------------------------------------------------------------------------------------ 11. output
def _features() -> dict[str, datasets.Features]:
    string, int32, float32 = datasets.Value("string"), datasets.Value("int32"), datasets.Value("float32")
    message = {"role": string, "content": string}
    messages = datasets.List(message) if hasattr(datasets, "List") else [message]
    common = {
        "id": string,
        "query_id": string,
        "category": string,
        "difficulty": int32,
        "language": string,
        "question": string,
    }
    tail = {
        "critique": string,
        "explanation": string,
        "path": string,
        "swapped": datasets.Value("bool"),
        "teacher": string,
        "teacher_prompt": string,
        "messages": messages,
    }
    out = {}
    for setting in SETTINGS:
        cols = dict(common)
        if setting.referenced:
            cols["reference"] = string
        if setting.task is Task.POINTWISE:
            cols.update(generator=string, response=string, score=float32, dimension_scores=string)
        else:
            cols.update(
                generator_1=string,
                generator_2=string,
                response_1=string,
                response_2=string,
                label=int32,
                score_1=float32,
                score_2=float32,
            )
        out[setting.name] = datasets.Features({**cols, **tail})
    return out


# Columns and types of the four output configs (pointwise / pairwise x referenced / reference-free).
OUTPUT_FEATURES: dict[str, datasets.Features] = _features()


def to_sft_dataset(
    rows: datasets.Dataset,
    setting: Setting | str,
    *,
    family: str = "critiquellm_v2",
    language: str = "en",
    teacher: str = "",
) -> datasets.Dataset:
    """The output rows of one setting, with an SFT-ready ``messages`` column (CritiqueLLM v2 §3.3).

    ``messages`` is the critic's inference prompt for that setting, ``get_template(family, setting,
    language).render(row)`` (exactly what :class:`hf_critic.critic.Critic` sends), followed by
    ``{"role": "assistant", "content": critique}``. Columns are those of :data:`OUTPUT_FEATURES`; absent ones are
    None.

    Args:
        rows: critiques of ``setting`` from the stages above.
        setting: the setting (or its name).
        family: the critic template family (``critiquellm_v2``, or ``critiquellm_v1`` for v1 data).
        language: ``"en"`` / ``"zh"``.
        teacher: the teacher model's name, stored per row.

    Returns:
        A Dataset with exactly :data:`OUTPUT_FEATURES` ``[setting.name]``.
    """
    setting = Setting.from_name(setting) if isinstance(setting, str) else setting
    features = OUTPUT_FEATURES[setting.name]
    template = get_template(family, setting, language) if len(rows) else None  # v1 has no pairwise templates
    out = []
    for row in rows:
        record = {name: row.get(name) for name in features}
        record.update(language=language, teacher=teacher, swapped=bool(row.get("swapped", False)))
        record["path"] = row.get("path") or "direct"
        record["messages"] = [*template.render(row), {"role": "assistant", "content": row["critique"]}]
        out.append(record)
    if not out:
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    return datasets.Dataset.from_list(out, features=features)


def label_name(label: int | None) -> str | None:
    """``"response_1"`` / ``"response_2"`` / ``"tie"`` for 0 / 1 / 2 (None for None)."""
    return None if label is None else LABEL_NAMES[label]
