"""PandaLM (Wang et al., ICLR 2024, arXiv:2306.05087): pairwise comparison, ``1`` / ``2`` / ``Tie`` on the first line,
reference-free, English. Its verdict is read by :func:`parse_pandalm`; its input is the raw prompt after BOS.
"""

from __future__ import annotations

from hf_critic.parsing import ParsedCritique

from ..core.schema import ParseStatus
from ._common import RAW_PROMPT_WRAPPER, first_line
from .family import CriticFamily, VerdictFormat

__all__ = ["FAMILY", "PANDALM_FIRST_LINE", "parse_pandalm"]


def parse_pandalm(text: str, output) -> ParsedCritique:
    """PandaLM's verdict: a first line that is exactly ``1``, ``2`` or ``Tie``, then ``### Reason: ...``.

    Implements PandaLM's output format (WeOpenML/PandaLM ``pandalm_inference.py``: ``"{result}\\n\\n### Reason:
    {explain}\\n\\n### Reference: {ref}"``; ``parse_pandalm_response`` reads the first line, ``tie`` in any case). A
    first line with anything else (``Response 1``, ``1.``, ``1 2``, ``Tied``) is unparsed; PandaLM's own code makes it
    a tie.

    Args:
        text: the critique as generated.
        output: the template's output spec (``labels``: ``("1", "2", "Tie")``).

    Returns:
        :class:`ParsedCritique`; the explanation is the text after the first line.
    """
    first, rest = first_line(text)
    words = [label.lower() for label in output.labels]
    verdict = first.strip(" \t").lower()
    if verdict not in words:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    return ParsedCritique(ParseStatus.OK, label=words.index(verdict), explanation=rest)


#: PandaLM's first line ``1`` / ``2`` / ``Tie``, then ``### Reason: ...``.
PANDALM_FIRST_LINE = VerdictFormat("pandalm_first_line", ("label",), parse_pandalm, example="1")

FAMILY = CriticFamily(
    name="pandalm",
    title="PandaLM (Wang et al., ICLR 2024)",
    source="arXiv:2306.05087; WeOpenML/PandaLM @ 6823887 pandalm/utils/pandalm_inference.py",
    templates={"pairwise_reference_free": ("en",)},
    formats=(PANDALM_FIRST_LINE,),
    model_names=("pandalm",),
    chat_template=RAW_PROMPT_WRAPPER,
    chat_template_source=(
        'WeOpenML/PandaLM @ 6823887 pandalm/utils/pandalm_inference.py: the raw prompt (ending "### Evaluation:\\n") '
        "after BOS, no chat roles."
    ),
)
