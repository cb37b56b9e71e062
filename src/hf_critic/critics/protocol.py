"""The one protocol every kind of critic implements: what a cascade, ``calibrate`` and the reports ask a critic,
instead of testing its type.

A kind (a generative critic and its read-out, a reward model, a served or pooling critic, recorded verdicts, the
``longer-wins`` and ``label-prior`` baselines, a jury, or a kind of one's own) subclasses :class:`CriticKind`: it judges rows with
:meth:`CriticKind.judge` into :class:`Critiques` (the verdict columns, each row's status, the confidence and its kind,
the calls made, the rows a recorded critic had no verdict for, the critic's identity and a computed critic's run
statistics) and names what changes its verdicts with :meth:`CriticKind.identity_parts`. The commands that judge rows
(``grade``, ``compare``, ``meta-eval``, ``refine``) ask every critic through :meth:`CriticKind.judge` too. The attributes with defaults here (:attr:`CriticKind.recorded`,
:attr:`CriticKind.members`, :attr:`CriticKind.fitted` ...) are the questions selective judging asks (Jung, Brahman,
Choi, "Trust or Escalate", ICLR 2025, §3.3: a critic's confidence, a jury's members and fitted aggregate); a kind
answers those that apply to it. Kinds are named in :mod:`hf_critic.critics.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import datasets

from ..core import schema
from ..core.errors import BadInputError
from ..core.identity import identity_digest
from ..selective import keepable_confidences

__all__ = ["CriticKind", "Critiques", "setting_of"]


def setting_of(records: datasets.Dataset, referenced: bool | None = None) -> schema.Setting:
    """The setting of ``records``: pairwise when they have ``response_1``, referenced when they have ``reference``
    (``referenced``: forced instead)."""
    task = schema.Task.PAIRWISE if schema.RESPONSE_1 in records.column_names else schema.Task.POINTWISE
    has_reference = schema.REFERENCE in records.column_names if referenced is None else referenced
    return schema.Setting(task, has_reference)


@dataclass
class Critiques:
    """What one critic's :meth:`~CriticKind.judge` returns for the rows it was given.

    Attributes:
        columns: ``{critique column: one value per row}``: ``critique_label`` (pairwise, 0 / 1 / 2 or None) or
            ``critique_score`` (pointwise), ``critique_status`` (a :class:`~hf_critic.core.schema.ParseStatus` value: a row
            without a verdict says why, never a default verdict), ``critique_confidence`` (in [0, 1] or None), and
            what the kind adds (explanations, distributions, rewards, ``jury_members``).
        confidence_kind: the kind of its confidences (:data:`hf_critic.selective.CONFIDENCE_KINDS`, ``length``,
            ``AGGREGATE aggregate``); None where the verdicts carry none.
        calls: requests made (rows x orders for a computed critic; 0 for verdicts read from files or computed
            without a model).
        identity: the critic's identity for these rows' setting (:meth:`CriticKind.identity`).
        unmatched: rows a recorded critic had no verdict for (positions in the rows judged).
        conflicting: rows a recorded critic matched by order among copies of one pair with different verdicts.
        stats: the run's counts (a computed critic's :class:`~hf_critic.critic.output.RunStats`, whose ``summary()``
            the commands print); None for a kind without them.
    """

    columns: dict[str, list]
    confidence_kind: str | None
    calls: int = 0
    identity: str = ""
    unmatched: list[int] = field(default_factory=list)
    conflicting: list[int] = field(default_factory=list)
    stats: Any = None

    @property
    def statuses(self) -> list:
        """Each row's ``critique_status``."""
        return self.columns[schema.CRITIQUE_STATUS]

    def keepable(self) -> dict[str, list]:
        """The columns with ``critique_confidence`` made keepable (:func:`~hf_critic.selective.keepable_confidences`:
        None where there is no label or no usable confidence): what a threshold may keep."""
        columns = dict(self.columns)
        columns[schema.CRITIQUE_CONFIDENCE] = keepable_confidences(
            columns[schema.CRITIQUE_LABEL], columns[schema.CRITIQUE_CONFIDENCE]
        )[0]
        return columns


class CriticKind(ABC):
    """A kind of critic (module docstring): one :meth:`judge`, one identity, and the answers selective judging asks.

    A subclass sets :attr:`kind` (its name in :mod:`hf_critic.critics.registry`), implements :meth:`judge` and
    :meth:`identity_parts`, and overrides the attributes below that apply to it. A kind a cascade file builds from its
    ``options:`` mapping also defines ``from_spec(options: dict, where: str)`` (a classmethod).
    """

    #: The kind's name in the registry and in cascade files (``kind: NAME``).
    kind: ClassVar[str] = ""
    #: True when its verdicts are read from files, not computed (a cascade reports it so, and counts no call).
    recorded: ClassVar[bool] = False
    #: The confidence kinds its :class:`Critiques` carry beyond :data:`hf_critic.selective.CONFIDENCE_KINDS` (a kind
    #: registered from outside names its own here; :func:`~hf_critic.critics.registry.register` adds them).
    confidence_kinds: ClassVar[tuple[str, ...]] = ()
    #: True when its critiques hold written text (an explanation) a generator can revise from (the generative kinds;
    #: a reward model writes none): what ``refine`` asks of its critics.
    writes_explanation: ClassVar[bool] = False
    #: True for a baseline that needs no model (``longer-wins``, ``label-prior``): a jury's report lists it as a
    #: baseline.
    baseline: ClassVar[bool] = False
    #: A critic of several members (a jury): the members as cascade stages (a name, a critic, swap), else empty.
    members: Sequence = ()
    #: A jury's aggregate (``vote``, ``mean``, ``fitted``); None for a single critic.
    how: str | None = None
    #: The last run's columns of every member, ``{member: columns}`` (empty without members).
    member_columns: dict = {}  # never mutated here: a jury sets its own
    #: A fitted aggregate's share of calibration questions to fit on, and the rows it was fitted on (None: no fit).
    fit_share: float | None = None
    fit_rows = None
    #: The last run's counts of undecided rows and missing member verdicts (a jury), else None.
    counts = None

    @classmethod
    def from_spec(cls, options: dict, where: str) -> CriticKind:
        """The critic a cascade file declares as ``kind: NAME`` with ``options:`` (a mapping of plain values).

        Raises:
            ValueError: always here: a kind that cannot be built from ``options:`` alone (the built-in computed,
                recorded and jury kinds have their own keys in a cascade file); a kind that can overrides it.
        """
        raise BadInputError(
            f"{where}: critic kind {cls.kind or cls.__name__!r} is not declared with kind: and options: (a computed "
            "critic takes options: alone, recorded verdicts recorded:, a jury jury:)"
        )

    @abstractmethod
    def judge(
        self, records: datasets.Dataset, *, swap: bool = False, source: str = "data", referenced: bool | None = None
    ) -> Critiques:
        """Judge every row of ``records``.

        Args:
            records: the rows (pairwise: ``question``, ``response_1``, ``response_2``; pointwise: ``response``;
                ``reference`` in the referenced settings).
            swap: judge both orders where the kind can (a computed generative critic); order-free kinds ignore it.
            source: the data's name, for messages.
            referenced: force the referenced (True) or reference-free (False) setting; None: referenced exactly when
                the rows have ``reference`` (:func:`setting_of`). Kinds that read no reference ignore it.

        Returns:
            :class:`Critiques`, one value per row in every column.

        Raises:
            ValueError: rows the kind cannot judge (one line naming ``source`` and what is missing).
        """

    @abstractmethod
    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """Everything that changes its verdicts in ``setting`` (model by content, template, options, files), as
        strings; nothing that does not (a path, a batch size)."""

    def identity(self, setting: schema.Setting, *, swap: bool = False) -> str:
        """Its identity in ``setting`` (:func:`~hf_critic.core.identity.identity_digest` of :meth:`identity_parts`): what a calibration file
        and a jury's entry record, and what refuses a critic that changed."""
        return identity_digest(setting, self.identity_parts(setting, swap=swap))

    @property
    def fitted(self) -> bool:
        """True when its aggregate is fitted on calibration rows (a ``fitted`` jury)."""
        return False

    @property
    def served_client(self):
        """The client of the server it is judged on (a chat or pooling model behind ``--base-url``), whose
        calibration rows ``compare --cascade`` judges again; None for a critic judged here."""
        return None

    def calibrate_on(self, human, questions=None, share: float | None = None) -> None:
        """Fit what it fits on calibration rows (a fitted jury's aggregate, a label prior) on the rows of the next
        :meth:`judge`: their human label codes ``human``, their questions ``questions`` (None: one a row), on the
        rows of ``share`` of the questions (None: its own default; 1: every row); ``hf-critic calibrate`` calls it
        on every stage before judging. Nothing for a kind that fits nothing."""
        return None

    def check_calibration(self, entry: dict | None, setting: schema.Setting, path: str) -> None:
        """Check its part of a calibration file's entry (a jury's members and fit, a label prior) and take what it
        needs from it; nothing for a kind without one.

        Raises:
            ValueError: one line naming ``path`` and what changed since calibration.
        """
        return None

    def calibration_entry(self, setting: schema.Setting) -> dict | None:
        """Its own part of a calibration file's entry (a jury's aggregate, members' identities and fit, a label
        prior), kept in the entry's ``jury`` field; None."""
        return None
