"""A computed critic built from its options: the one builder the command line
(:func:`hf_critic.commands.options.critic_from_args`) and a critic spec of a cascade file
(:mod:`hf_critic.critics.specs`) both call, so the same options build the same critic: a local model
(:meth:`~hf_critic.critic.Critic.from_pretrained`: a :class:`~hf_critic.critic.Critic`, or a
:class:`~hf_critic.critic.RewardCritic` for a reward model), a model behind an OpenAI-compatible server, or a reward
model served as a vLLM pooling model (a :class:`~hf_critic.critic.RewardCritic`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..core.errors import BadInputError
from .options import CriticOptions

__all__ = ["build_computed", "check_template", "resolve_template"]


def build_computed(options: CriticOptions, inputs: int | None = None):
    """The computed critic configured by ``options``: a :class:`~hf_critic.critic.Critic` on the server at
    ``endpoint.base_url`` when given, a :class:`~hf_critic.critic.RewardCritic` scored through its ``/pooling`` with
    ``endpoint.pooling``, else one on a local model (``model.engine``; a reward model's folder is a reward critic). The command line
    (:func:`hf_critic.commands.options.critic_from_args`) and a critic spec both build critics here.

    Args:
        options: every option of the critic (``options.model.model``: None for the embedded default critic).
        inputs: the number of prompts the run will generate for, when known: caps the batch size, so ``dtype`` /
            ``engine`` ``auto`` decide for the batches that will really run (one record: batch 1).

    Raises:
        ModelNotFoundError, ValueError: as :meth:`~hf_critic.critic.Critic.from_pretrained`; a server option with a
            local-engine option; ``tie_margin`` for a chat model behind ``base_url``.
        hf_critic.backends.retry.EndpointError: the server is down or does not serve the model.
    """
    from ..critic import Critic, RewardCritic
    from ..critic.rewards import refuse_for_generator

    model, local = options.model.model, options.model
    template, language = resolve_template(options.critic.template, options.critic.language, model)
    config = replace(options.critic, template=template, language=language)
    cache = options.cache.path()
    kwargs = {**config.critic_kwargs(), "template": template, "decoding": options.decoding, "cache_path": cache}
    if options.endpoint.pooling:
        return RewardCritic(_pooling_scorer(options), **kwargs)
    if options.endpoint.base_url:
        backend = _endpoint_backend(options)
        refuse_for_generator(kwargs.pop("tie_margin"), False, backend.name, backend.supports_grammar)
        return Critic(backend, **kwargs)
    return Critic.from_pretrained(
        model,
        engine=local.engine,
        trust_remote_code=local.trust_remote_code,
        batch_size=max(1, min(local.batch_size, inputs)) if inputs else local.batch_size,
        num_threads=local.threads,
        dtype=local.dtype,
        progress=local.progress,
        gguf_recode=local.gguf_recode,
        tensor_parallel_size=local.tensor_parallel_size,
        data_parallel_size=local.data_parallel_size,
        rows=inputs,
        **kwargs,
    )


def resolve_template(template: str | None, language: str, model: str | None) -> tuple[str, str]:
    """The template spec and critique language a critic runs with: ``template`` checked, or for ``auto`` the family
    of a known published critic picked from ``model`` (:func:`hf_critic.formats.pick_family`), else the default
    family, saying which on stderr. A family written in one language only (critiquellm_6b: zh) switches ``language``
    to it, saying so.

    Returns:
        ``(template spec, language)``.

    Raises:
        ValueError: a template that is no family, built-in name or readable YAML file (see :func:`check_template`).
    """
    import sys

    from ..formats import AUTO, DEFAULT_FAMILY, pick_family

    template = template or DEFAULT_FAMILY
    if template != AUTO:
        check_template(template)
        return template, language
    pick = pick_family(model, language)
    print(pick.message, file=sys.stderr)
    return pick.family, pick.language


def check_template(spec: str, option: str = "--template") -> None:
    """A template option (``--template``, ``--verdict-parser``) checked before any work: a template family, a built-in
    template name, or a YAML template file that exists and parses.

    Raises:
        ValueError: one line naming ``option`` and the value (a template file's own errors name the file and key).
    """
    from ..prompts import list_families, list_templates, load_template

    if spec in list_families() or spec in list_templates():
        return
    if Path(spec).suffix not in (".yaml", ".yml"):
        raise BadInputError(
            f"{option} {spec!r}: no template family ({', '.join(list_families())}), built-in template name or "
            "YAML file (.yaml)"
        )
    if not Path(spec).is_file():
        raise BadInputError(f"{option} {spec}: no such file")
    load_template(spec)


def _pooling_scorer(options: CriticOptions):
    """The :class:`~hf_critic.critic.rewards.ServedRewardModel` of ``base_url`` + ``pooling`` (checked first).

    Raises:
        ValueError: ``pooling`` without ``base_url``, or a local-engine option given with it.
        hf_critic.backends.retry.EndpointError: see :meth:`~hf_critic.backends.pooling.PoolingRewardClient.check`.
    """
    from ..backends.pooling import PoolingRewardClient
    from ..backends.retry import RetryPolicy
    from ..critic.rewards import ServedRewardModel

    served = options.endpoint
    if not served.base_url:
        raise BadInputError("pooling=True needs base_url=: the vLLM server serving the reward model")
    _refuse_local_engine_options(options)
    client = PoolingRewardClient(
        served.base_url,
        options.model.model,
        api_key_env=served.api_key_env,
        timeout=served.request_timeout,
        batch_size=served.concurrency,
        policy=RetryPolicy(max_retries=served.max_retries),
        cache_path=options.cache.path(),
    )
    client.check()
    return ServedRewardModel.for_client(client)


def _refuse_local_engine_options(options: CriticOptions) -> None:
    """Refuse ``engine``, ``dtype`` and ``gguf_recode`` (how a local model runs) beside ``base_url``.

    Raises:
        ValueError: one of them is not ``auto``.
    """
    given = [f"{name}=" for name in ("engine", "dtype", "gguf_recode") if getattr(options.model, name) != "auto"]
    if given:
        raise BadInputError(
            f"{' and '.join(given)} choose how a local model runs; the server at base_url= decides that"
        )


def _endpoint_backend(options: CriticOptions):
    """The :class:`~hf_critic.backends.openai.OpenAIBackend` of ``base_url`` serving the model, checked first
    (:meth:`~hf_critic.backends.openai.OpenAIBackend.connect`).

    Raises:
        ValueError: no model, or a local-engine option given with ``base_url``.
        hf_critic.backends.retry.EndpointError: see :meth:`~hf_critic.backends.openai_client.OpenAIClient.check`.
    """
    from ..backends.openai import OpenAIBackend

    served, model = options.endpoint, options.model.model
    if not model:
        raise BadInputError("base_url= needs model=: the name of the model the server serves")
    _refuse_local_engine_options(options)
    return OpenAIBackend.connect(
        served.base_url,
        model,
        api_key_env=served.api_key_env,
        concurrency=served.concurrency,
        timeout=served.request_timeout,
        max_retries=served.max_retries,
        cache_path=options.cache.path(),
        progress=options.model.progress,
    )
