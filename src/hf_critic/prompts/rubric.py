"""Score rubrics for critics that grade against one (Prometheus 2): criteria plus a description per score.

A rubric file is YAML in the Prometheus style (prometheus-eval ``SCORE_RUBRIC_TEMPLATE``; Kim et al., 2024, §3)::

    criteria: Does the model provide relevant and useful responses to the user's needs or questions?
    score_descriptions:
      1: The model's responses are irrelevant or unhelpful to the user's needs or queries.
      ...
      5: The model consistently offers highly relevant and useful responses ...

The scores must be consecutive integers; they set the scale (``1``-``5`` above) of templates whose scale is
configurable (``--score-range``). :meth:`Rubric.text` writes the rubric as the prompt shows it: for pointwise grading
``[criteria]`` and one ``Score k: description`` line per score, for pairwise comparison the criteria alone (the
relative-grading prompt of Prometheus 2 takes only the criteria, as prometheus-eval's ``load_rubric(..., "relative")``).
A ``rubric`` column in the data is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.errors import BadInputError
from ..core.keys import check_keys
from ..core.schema import Task
from .template import read_yaml

__all__ = ["Rubric", "load_rubric"]


@dataclass(frozen=True)
class Rubric:
    """Criteria and one description per integer score.

    Attributes:
        criteria: the question the critic grades by (one line, no surrounding brackets).
        descriptions: score -> what a response with that score is like, for consecutive integer scores.
    """

    criteria: str
    descriptions: Mapping[int, str]

    @property
    def score_range(self) -> tuple[int, int]:
        """The lowest and highest score described (inclusive)."""
        return min(self.descriptions), max(self.descriptions)

    def text(self, task: Task) -> str:
        """The rubric as the prompt shows it.

        Returns:
            Pointwise: ``"[criteria]\\nScore 1: ...\\n...\\nScore 5: ..."`` (prometheus-eval's
            ``SCORE_RUBRIC_TEMPLATE``); pairwise: the criteria.
        """
        if task is Task.PAIRWISE:
            return self.criteria
        lines = [f"Score {score}: {self.descriptions[score]}" for score in sorted(self.descriptions)]
        return "\n".join([f"[{self.criteria}]", *lines])

    @classmethod
    def from_mapping(cls, data: Any, where: str) -> Rubric:
        """Validate a parsed rubric file.

        Raises:
            ValueError: naming ``where`` and the key at fault: not a mapping, unknown keys, empty or multi-line
                criteria, fewer than two scores, scores that are not consecutive integers, or empty descriptions.
        """
        if not isinstance(data, Mapping):
            raise BadInputError(f"{where}: a rubric file must be a mapping with 'criteria' and 'score_descriptions'")
        check_keys(data, ("criteria", "score_descriptions"), where, "a rubric")
        criteria = data.get("criteria")
        if not isinstance(criteria, str) or not criteria.strip() or "\n" in criteria.strip():
            raise BadInputError(f"{where}: 'criteria' must be a non-empty one-line string")
        scores = data.get("score_descriptions")
        if not isinstance(scores, Mapping) or len(scores) < 2:
            raise BadInputError(f"{where}: 'score_descriptions' must map at least two integer scores to descriptions")
        keys = []
        for key, value in scores.items():
            if isinstance(key, bool) or not isinstance(key, int):
                raise BadInputError(f"{where}: 'score_descriptions': score {key!r} is not an integer")
            if not isinstance(value, str) or not value.strip():
                raise BadInputError(f"{where}: 'score_descriptions': score {key} has no description")
            keys.append(key)
        if sorted(keys) != list(range(min(keys), max(keys) + 1)):
            raise BadInputError(f"{where}: 'score_descriptions' must describe consecutive scores, got {sorted(keys)}")
        descriptions = {k: " ".join(v.split()) for k, v in sorted(scores.items())}
        return cls(criteria.strip().strip("[]").strip(), MappingProxyType(descriptions))


def load_rubric(path: str | Path) -> Rubric:
    """Read a rubric YAML file (see the module docstring).

    Raises:
        FileNotFoundError: no such file.
        ValueError: invalid YAML or an invalid rubric, naming the file and the key at fault.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"rubric file {str(path)!r} not found")
    return Rubric.from_mapping(read_yaml(path.read_text(encoding="utf-8"), str(path)), str(path))
