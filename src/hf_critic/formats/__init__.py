"""One home per critic format: each critic family declared once, in a module of its own, and the registry of them.

A family (:class:`CriticFamily`) holds everything hf-critic knows about a published critic or prompt set: the settings
and critique languages of its prompt templates (YAML files ``<family>_<setting>_<language>.yaml``, built-in ones in
``hf_critic/prompts/templates/``), the verdict formats it introduced (:class:`VerdictFormat`: the parser, the closing
and default opening of the verdict grammar), its published input wrapper (a Jinja chat template) and the names of its
models (for ``--template auto``). The built-in families:

- :mod:`.critiquellm_v2`: CritiqueLLM v2 (Ke et al., ACL 2024), the default; dict verdicts (Tables 11-14).
- :mod:`.critiquellm_v1`: CritiqueLLM v1 (Ke et al., 2023), pointwise only, Appendix C Table 7.
- :mod:`.critiquellm_6b`: the released CritiqueLLM-6B's Chinese input format.
- :mod:`.mtbench`: FastChat's MT-Bench judge prompts (Zheng et al., 2023); ``[[8]]`` / ``[[A]]`` verdicts.
- :mod:`.prometheus2`: Prometheus 2 (Kim et al., 2024), ``[RESULT] 4``.
- :mod:`.autoj`: Auto-J (Li et al., 2024), ``Rating: [[5]]`` and ``So, the final decision is Response 1``.
- :mod:`.judgelm`: JudgeLM (Zhu et al., 2025), the scores on the first line.
- :mod:`.pandalm`: PandaLM (Wang et al., 2024), ``1`` / ``2`` / ``Tie`` on the first line.
- :mod:`.reward_model`: sequence-classification reward models (no prompt, no explanation, order-free).

A new family is one declaration plus its template files::

    from hf_critic.formats import CriticFamily, VerdictFormat, register_family

    register_family(CriticFamily("mine", "My critic", "my paper", templates={"pointwise_reference_free": ("en",)},
                                 formats=(VerdictFormat("mine_verdict", ("score",), my_parser, closing=""),),
                                 model_names=("mycritic",), template_dir=Path("my_templates")))

after which ``Critic(..., template="mine")``, ``--template mine`` and ``--template auto`` on a model named
``MyCritic-7B`` use it. Modules: :mod:`.family` (the declarations), :mod:`.registry` (the registry and what reads it).
"""

from .autoj import parse_autoj_decision, parse_autoj_rating
from .family import GENERATIVE, REWARD, CriticFamily, VerdictFormat, read_general
from .judgelm import parse_judgelm
from .pandalm import parse_pandalm
from .prometheus2 import parse_prometheus
from .registry import (
    AUTO,
    BUILTIN_FAMILIES,
    DEFAULT_FAMILY,
    FamilyPick,
    builtin_template_families,
    families,
    family_for_model,
    get_family,
    known_critics,
    output_formats,
    parse_output,
    pick_family,
    published_chat_format,
    register_family,
    unregister_family,
    verdict_format,
)

__all__ = [
    "AUTO",
    "BUILTIN_FAMILIES",
    "DEFAULT_FAMILY",
    "GENERATIVE",
    "REWARD",
    "CriticFamily",
    "FamilyPick",
    "VerdictFormat",
    "builtin_template_families",
    "families",
    "family_for_model",
    "get_family",
    "known_critics",
    "output_formats",
    "parse_autoj_decision",
    "parse_autoj_rating",
    "parse_judgelm",
    "parse_output",
    "parse_pandalm",
    "parse_prometheus",
    "pick_family",
    "published_chat_format",
    "read_general",
    "register_family",
    "unregister_family",
    "verdict_format",
]
