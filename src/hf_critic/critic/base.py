"""What the two computed kinds share: the generative :class:`~hf_critic.critic.core.Critic` and the order-free
:class:`~hf_critic.critic.reward_critic.RewardCritic` grade and compare records the same way from the outside.

:class:`ComputedCritic` holds that shared half once: the Python API (:meth:`~ComputedCritic.grade` and
:meth:`~ComputedCritic.compare`, prometheus-eval style: rows in, the rows with critique columns out), the protocol's
:meth:`~ComputedCritic.judge` (:class:`~hf_critic.critics.protocol.CriticKind`), the template of a setting, and the
end of every run: each verdict's confidence, the inputs holding control-token strings, the run's
:class:`~hf_critic.critic.output.RunStats`. A kind supplies the critique columns of one setting
(``_grade_columns`` / ``_compare_columns``, CritiqueLLM v2 §3.1's two tasks).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

import datasets

from ..core import schema
from ..core.errors import BadInputError
from ..critics.protocol import CriticKind, Critiques, setting_of
from ..formats import AUTO, pick_family
from ..prompts import PromptTemplate, resolve_template
from ..selective import confidence_of
from .output import CritiqueRun, RunStats, add_columns, as_dataset, count_control_tokens

__all__ = ["ComputedCritic", "pick_template"]

logger = logging.getLogger(__name__)


def pick_template(model: str | None, kwargs: dict) -> dict:
    """``kwargs`` of a ``from_pretrained`` with ``template="auto"`` resolved: the family of a known published critic
    picked from ``model``'s name (:func:`hf_critic.formats.pick_family`, logged) and its language; else unchanged."""
    if kwargs.get("template") == AUTO:
        pick = pick_family(model, kwargs.get("language", "en"))
        logger.info(pick.message)
        kwargs = {**kwargs, "template": pick.family, "language": pick.language}
    return kwargs


class ComputedCritic(CriticKind):
    """A critic whose verdicts are computed here, on a model (module docstring): grading, comparison and judging,
    implemented once for every computed kind.

    A subclass sets ``template``, ``language``, ``rubric``, ``score_range``, ``truncate``, ``cache`` and
    ``last_stats`` (a :class:`~hf_critic.critic.output.RunStats`), names what judges in :attr:`engine` and
    implements ``_grade_columns(dataset, referenced, source)`` and ``_compare_columns(dataset, referenced, swap,
    source)``, each returning ``(columns, stats, votes)``: the critique columns (one list per column, one value per
    row), the run's counts, and the text verdicts' votes per row (None: none).
    """

    #: Its two names in :mod:`hf_critic.critics.registry`: judged here, and behind a server.
    kind_names: ClassVar[tuple[str, str]] = ("", "")
    #: Order-free: both orders of a pair give the same verdict, so ``swap`` makes no second pass (a reward critic).
    order_free: ClassVar[bool] = False

    @property
    @abstractmethod
    def engine(self):
        """What judges: the backend or the reward scorer (its ``keeps_text`` and ``control_tokens`` are asked)."""

    @property
    def kind(self) -> str:
        """Its kind in :mod:`hf_critic.critics.registry`: the second of :attr:`kind_names` when it judges on a server
        (:attr:`served_client`), else the first."""
        return self.kind_names[self.served_client is not None]

    @property
    def served_client(self):
        """The client of the server it judges on (a chat model behind ``base_url=``, a reward model behind a vLLM
        pooling server), whose calibration rows ``compare --cascade`` judges again; else None."""
        client = getattr(self.engine, "client", None)
        return client if hasattr(client, "identity") else None

    # ----------------------------------------------------------------------------------- templates
    def template_for(self, setting: schema.Setting) -> PromptTemplate:
        """The template used for ``setting``.

        The scale of pointwise grading is ``score_range``, else the rubric's scores (see
        :class:`~hf_critic.critic.core.Critic`).

        Raises:
            ValueError: a fixed template (name or file) written for another setting, an unknown family, a rubric
                given to a template that takes none, or a scale the template cannot grade on.
        """
        template = resolve_template(self.template, setting, self.language)
        if self.rubric is not None and "rubric" not in template.fields:
            raise BadInputError(f"template {template.name!r} takes no rubric (prometheus2 does)")
        scale = self.score_range or (self.rubric.score_range if self.rubric is not None else None)
        if scale is not None and template.output.kind == "score":
            template = template.with_scale(*scale)
        return template

    # ----------------------------------------------------------------------------------- public API
    def grade(
        self,
        records: datasets.Dataset | Sequence[Mapping],
        *,
        referenced: bool | None = None,
        source: str = "data",
        return_stats: bool = False,
    ) -> datasets.Dataset | CritiqueRun:
        """Pointwise grading: a score (float in the template's range, e.g. [1, 10]) and explanation per response.

        Args:
            records: rows with ``question``, ``response`` and, for the referenced setting, ``reference``.
            referenced: force the referenced (True) or reference-free (False) setting; None = referenced
                exactly when a ``reference`` column is present (a reward critic reads no reference: True is refused).
            source: name of the data used in error messages.
            return_stats: also return the run's counts (parsed, unparsed, truncated, cached, ...).

        Returns:
            With ``return_stats``, a :class:`~hf_critic.critic.output.CritiqueRun` ``(critiques, stats)``; else the
            critiques alone (the same counts are then in ``critic.last_stats`` until the next call). The critiques are
            the input rows plus ``critique_score``, ``critique_explanation``, ``critique_generation``,
            ``critique_status``, ``critique_truncated``, ``critique_confidence`` and, for a generative critic,
            ``critique_dimensions`` (JSON or None) and, under self-consistency, ``critique_samples``; for a reward
            critic ``critique_reward`` (the raw reward; no explanation). Unparsed rows have score None and status
            ``unparsed`` / ``out_of_range``; they are never given a default score.

        Raises:
            RecordError: a missing column or empty field (names the row and field).
            ContextLengthError: an input too long for the model with ``truncate="error"``.
        """
        dataset = as_dataset(records)
        columns, stats = self._graded(dataset, referenced, source)
        return self._result(dataset, columns, stats, return_stats)

    def compare(
        self,
        records: datasets.Dataset | Sequence[Mapping],
        *,
        referenced: bool | None = None,
        swap: bool = False,
        source: str = "data",
        return_stats: bool = False,
    ) -> datasets.Dataset | CritiqueRun:
        """Pairwise comparison: a label (0 = response 1 better, 1 = response 2 better, 2 = tie) and explanation.

        Args:
            records: rows with ``question``, ``response_1``, ``response_2`` and optionally ``reference``.
            referenced: as in :meth:`grade`.
            swap: also judge every pair with the responses in swapped order (position bias, CritiqueLLM v2
                §4.4.2); the swapped verdict is mapped back to the original order. An order-free critic (a reward
                critic) makes no second pass and says so.
            source: name of the data used in error messages.
            return_stats: as in :meth:`grade`.

        Returns:
            As in :meth:`grade` (:class:`~hf_critic.critic.output.CritiqueRun` with ``return_stats``); the critiques
            are the input rows plus ``critique_label`` (int or None), ``critique_explanation``,
            ``critique_generation``, ``critique_status``, ``critique_truncated``, ``critique_confidence`` and, with
            ``swap`` on a generative critic, ``critique_label_swapped`` (mapped back), ``critique_generation_swapped``,
            ``critique_status_swapped`` and ``critique_consistent`` (None when either order is unparsed); a reward
            critic adds ``critique_reward`` and ``critique_reward_2`` and the Rao-Kupper ``critique_distribution``.

        Raises:
            RecordError, ContextLengthError: as in :meth:`grade`.
        """
        dataset = as_dataset(records)
        columns, stats = self._compared(dataset, referenced, swap, source)
        return self._result(dataset, columns, stats, return_stats)

    # ------------------------------------------------------------------ the critic protocol
    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """The protocol's judging (:class:`~hf_critic.critics.protocol.CriticKind`): :meth:`compare` on pairs (both
        orders with ``swap``, unless order-free), else :meth:`grade` (``referenced`` as there); the critique columns
        those add, their confidence kind (:func:`~hf_critic.selective.confidence_of`), the calls made (rows x orders)
        and the run's :class:`~hf_critic.critic.output.RunStats`.

        Raises:
            ValueError: as :meth:`compare` / :meth:`grade`.
        """
        data = as_dataset(records)
        setting = setting_of(data, referenced)
        pairwise = setting.task is schema.Task.PAIRWISE
        if pairwise:
            columns, stats = self._compared(data, referenced, swap, source)
        else:
            columns, stats = self._graded(data, referenced, source)
        orders = 2 if swap and pairwise and not self.order_free else 1
        return Critiques(
            columns,
            confidence_of(columns)[1],
            calls=len(data) * orders,
            identity=self.identity(setting, swap=swap),
            stats=stats,
        )

    # ----------------------------------------------------------------------------------- internals
    @abstractmethod
    def _grade_columns(self, dataset: datasets.Dataset, referenced: bool | None, source: str):
        """``(columns, stats, votes)`` of pointwise grading (class docstring)."""

    @abstractmethod
    def _compare_columns(self, dataset: datasets.Dataset, referenced: bool | None, swap: bool, source: str):
        """``(columns, stats, votes)`` of pairwise comparison (class docstring)."""

    def _graded(self, dataset, referenced, source) -> tuple[dict, RunStats]:
        return self._finish(dataset, *self._grade_columns(dataset, referenced, source))

    def _compared(self, dataset, referenced, swap, source) -> tuple[dict, RunStats]:
        return self._finish(dataset, *self._compare_columns(dataset, referenced, swap, source))

    def _finish(self, dataset: datasets.Dataset, columns: dict, stats: RunStats, votes=None) -> tuple[dict, RunStats]:
        """``columns`` plus every verdict's ``critique_confidence`` (:func:`hf_critic.selective.confidence_of`;
        ``votes``: the text verdicts' samples per row), and ``stats`` with the count of inputs holding control-token
        strings; kept as :attr:`last_stats`."""
        columns[schema.CRITIQUE_CONFIDENCE] = confidence_of(columns, votes=votes)[0]
        stats.keeps_text = bool(getattr(self.engine, "keeps_text", False))
        stats.control_tokens = count_control_tokens(dataset, getattr(self.engine, "control_tokens", ()))
        if stats.control_tokens and not stats.keeps_text:
            logger.warning(
                "%d input(s) hold chat control-token strings (e.g. <|im_end|>); the server tokenises the prompt itself "
                "and may read them as control tokens, so the judged text could end its turn (see hf_critic.core.control_tokens)",
                stats.control_tokens,
            )
        self.last_stats = stats
        return columns, stats

    @staticmethod
    def _result(dataset: datasets.Dataset, columns: dict, stats: RunStats, return_stats: bool):
        critiques = add_columns(dataset, columns)
        return CritiqueRun(critiques, stats) if return_stats else critiques
