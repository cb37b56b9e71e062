"""Where each one-line error of the command line sends its reader: a section of ``docs/troubleshooting.md``.

An error's section is found from what it is and where it was raised, so that a new error needs no entry of its own:
its class first (:data:`SECTIONS_BY_ERROR`: a missing package, a server, a model, an output file), else the innermost
frame of hf_critic that raised it, as ``module.qualname`` (``hf_critic.backends.cache.GenerationCache.__init__``), matched against
:data:`SECTIONS_BY_PLACE` by the longest dotted prefix (a function's own entry wins over its module's, a module's over
its package's). ``tests/commands/test_troubleshooting.py`` reads every raise site the command line can reach and checks that
each one has a section here and that the page has each section's anchor (``## Title {#anchor}``).
"""

from __future__ import annotations

from types import TracebackType

#: The troubleshooting page, as the one-line errors name it.
TROUBLESHOOTING = "docs/troubleshooting.md"

#: Section anchor by exception class name (the class or one of its bases).
SECTIONS_BY_ERROR: dict[str, str] = {
    "ModuleNotFoundError": "missing-extra",
    "MissingExtraError": "missing-extra",
    "ServerError": "servers",
    "EndpointError": "servers",
    "FatalAPIError": "servers",
    "RequestsFailedError": "servers",
    "ModelNotFoundError": "models",
    "GGUFError": "models",
    "NonFiniteRewardError": "models",
    "ContextLengthError": "bad-input",
    "RecordError": "bad-input",
    "OutputError": "output-files",
}

#: Section anchor by where the error was raised: a package, module or ``module.qualname`` prefix of hf_critic.
SECTIONS_BY_PLACE: dict[str, str] = {
    # the data read and the files written
    "hf_critic.io": "bad-input",
    "hf_critic.io.outputs": "output-files",
    "hf_critic.loaders": "bad-input",
    "hf_critic.core.labels": "bad-input",
    "hf_critic.core.schema": "bad-input",
    "hf_critic.core.control_tokens": "bad-input",
    "hf_critic.critic.inputs": "bad-input",
    # options, and the settings around them
    "hf_critic.commands": "options",
    "hf_critic.core.keys": "options",
    "hf_critic.critic": "options",
    "hf_critic.critics.computed": "options",
    "hf_critic.critics.options": "cascade-files",  # a critic spec's options (the command line parses its own)
    "hf_critic.backends.load_backend": "options",
    "hf_critic.commands.options.require_extra": "missing-extra",
    "hf_critic.backends.threads": "threads",
    "hf_critic.backends.cache": "cache",
    "hf_critic.backends.models.check_cache_dir": "cache",
    # models, engines, servers
    "hf_critic.backends.models": "models",
    "hf_critic.core.identity": "models",
    "hf_critic.critics.reward": "models",
    "hf_critic.critic.rewards": "models",
    "hf_critic.critic.rewards.refuse_for_reward": "options",
    "hf_critic.critic.rewards.refuse_for_generator": "options",
    "hf_critic.backends": "servers",
    "hf_critic.backends.transformers": "models",
    "hf_critic.backends.gguf_files": "models",
    "hf_critic.backends.llamacpp": "models",
    # templates, critic families and verdict formats
    "hf_critic.prompts": "templates",
    "hf_critic.formats": "templates",
    "hf_critic.parsing": "templates",
    "hf_critic.critic.verdicts": "templates",
    "hf_critic.critic.grammars": "templates",
    # cascades, their calibration, juries
    "hf_critic.selective.cascade": "cascade-files",
    "hf_critic.commands.cascades": "cascade-files",
    "hf_critic.critics": "cascade-files",
    "hf_critic.critics.specs": "cascade-files",
    "hf_critic.selective.cascade.delta_shares": "delta-share",
    "hf_critic.critics.specs._delta_share": "delta-share",
    "hf_critic.critics.jury": "juries",
    "hf_critic.critics.baselines": "juries",  # longer-wins and label-prior: documented with the juries
    "hf_critic.selective.jury": "juries",
    "hf_critic.critics.specs._fit_share": "fit-share",
    "hf_critic.selective.jury.fit_rows": "fit-share",
    "hf_critic.selective": "calibration",
    "hf_critic.selective.cascade.check_calibration": "calibration",
    "hf_critic.commands.calibrate": "calibration",
    "hf_critic.commands.calibrate_report": "calibration",
    # the other commands
    "hf_critic.meta_eval": "meta-eval",
    "hf_critic.commands.meta_eval": "meta-eval",
    "hf_critic.loaders.parse_benchmark": "meta-eval",  # a [NAME=]FORMAT:PATH benchmark (meta-eval's, a recorded critic's)
    "hf_critic.criticbench": "meta-eval",
    "hf_critic.judgments": "meta-eval",
    "hf_critic.criticbench.sandbox": "meta-eval",  # CriticBench's code answers run in it
    "hf_critic.eval_instruct": "eval-instruct",
    "hf_critic.prompts.teacher": "eval-instruct",
    "hf_critic.commands.eval_instruct": "eval-instruct",
    "hf_critic.glassbox": "self-eval",
    "hf_critic.commands.self_eval": "self-eval",
    "hf_critic.refine": "refine",
    "hf_critic.commands.refine": "refine",
    "hf_critic.reports": "view",
    "hf_critic.commands.view": "view",
    "hf_critic.backends.serving": "export",
    "hf_critic.commands.export": "export",
}


def section_for(error_classes: list[str], place: str) -> str | None:
    """The section of an error of the classes ``error_classes`` (the class's name and its bases', most specific first)
    raised at ``place`` (``module.qualname``); None when nothing matches.

    Example:
        >>> section_for(["ValueError"], "hf_critic.selective.cascade.delta_shares")
        'delta-share'
    """
    for name in error_classes:
        if name in SECTIONS_BY_ERROR:
            return SECTIONS_BY_ERROR[name]
    parts = place.split(".")
    for end in range(len(parts), 0, -1):
        section = SECTIONS_BY_PLACE.get(".".join(parts[:end]))
        if section is not None:
            return section
    return None


def raise_place(traceback: TracebackType | None) -> str:
    """``module.qualname`` of the innermost hf_critic frame of ``traceback`` (where hf_critic raised the error, or
    called the library that did); "" when no frame is hf_critic's."""
    place = ""
    while traceback is not None:
        frame = traceback.tb_frame
        module = frame.f_globals.get("__name__", "")
        if module == "hf_critic" or module.startswith("hf_critic."):
            place = f"{module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"  # co_qualname: 3.11+
        traceback = traceback.tb_next
    return place


def pointer(error: BaseException) -> str:
    """Where a one-line error sends its reader: ``docs/troubleshooting.md#SECTION``, or the page itself when no
    section matches."""
    classes = [cls.__name__ for cls in type(error).__mro__]
    section = section_for(classes, raise_place(error.__traceback__))
    return f"{TROUBLESHOOTING}#{section}" if section else TROUBLESHOOTING
