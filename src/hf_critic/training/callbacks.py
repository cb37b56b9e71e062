"""Best checkpoint by validation Pearson (CritiqueLLM v1 §4.3): a Trainer callback that grades a held-out set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import datasets
from transformers import TrainerCallback
from trl import SFTTrainer

from ..core import schema
from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY

__all__ = ["CriticSFTTrainer", "CritiquePearsonCallback", "logged_eval_metrics", "validation_callback"]


class CritiquePearsonCallback(TrainerCallback):
    """At each evaluation, grade a held-out pointwise set with the model being trained and report Pearson.

    CritiqueLLM v1 §4.3 selects the best checkpoint by Pearson correlation on the validation set. This callback
    generates critiques with :class:`~hf_critic.critic.Critic` on a
    :class:`~hf_critic.backends.transformers.TransformersBackend` wrapping the in-training model (greedy decoding
    by default; rows are split across processes and gathered), computes the correlation with the teacher / human
    scores using the ``critique_correlation`` ``evaluate`` module, logs ``eval_<metric_name>`` (Pearson) plus
    Spearman, Kendall, the within-question pairwise accuracy (``eval_<metric_name>_within_question_accuracy``: the
    share of pairs of one query's responses with different gold scores that the critic's scores order the same way,
    a critic tie counting half; :func:`hf_critic.meta_eval.within_question.within_question_accuracy`), its number of
    pairs and the parse rate; :class:`CriticSFTTrainer`'s ``evaluate()`` returns them with the loss, so
    ``metric_for_best_model: <metric_name>`` with ``load_best_model_at_end: true`` keeps the best checkpoint.

    All rows form one group (sample-level correlation) unless ``query_column`` is given, in which case the
    correlation is text-level (mean over queries of the per-query correlation, CritiqueLLM v2 §4.4.1) and the
    within-question accuracy pairs only responses to one query (without it, every pair of rows with different gold
    scores).
    Unparsed critiques are excluded and counted (``eval_<metric_name>_parse_rate``), never given a score; a
    correlation that is undefined (fewer than two parsed rows, constant scores) is NaN, which never counts as a
    new best. With ``verdict="probability"`` the score is the expected score of the model's verdict distribution
    (:mod:`hf_critic.critic.verdicts`), so the metric is defined from the first evaluation on, before the model writes
    parseable verdicts; the parse rate is then the share of rows with a verdict (``low_mass`` rows excluded).

    Args:
        records: pointwise rows (``question``, ``response``, [``reference``]) with the score column.
        trainer: the Trainer (for its accelerator, wrapped model and ``log``); set later with ``callback.trainer =``
            if not known at construction.
        template: template family / name / path, as for :class:`~hf_critic.critic.Critic`.
        language: critique language for family resolution.
        score_column: the gold score column (in any scale: Pearson is scale-free).
        query_column: optional query id column for the text-level correlation.
        referenced: force the setting; None = referenced when ``records`` has a ``reference`` column.
        max_new_tokens: generation budget per critique.
        batch_size: conversations per ``generate`` call per process.
        metric_name: the metric key without the ``eval_`` prefix.
        verdict: ``"text"`` (parse the generated critique) or ``"probability"`` (read-out, see above).
        explanation: for ``verdict="probability"``: ``"none"`` (prefill only) or ``"first"``.

    Raises:
        ValueError: ``records`` lacks the score column or has no rows, or an unknown verdict / explanation mode.
    """

    def __init__(
        self,
        records: datasets.Dataset,
        *,
        trainer=None,
        template: str = DEFAULT_FAMILY,
        language: str = "en",
        score_column: str = "score",
        query_column: str | None = None,
        referenced: bool | None = None,
        max_new_tokens: int = 256,
        batch_size: int = 8,
        metric_name: str = "critique_pearson",
        verdict: str = "text",
        explanation: str = "none",
    ):
        from ..critic.verdicts import resolve_verdict

        if verdict not in ("text", "probability"):
            raise BadInputError(f"validation verdict must be 'text' or 'probability', got {verdict!r}")
        self.plan = resolve_verdict(verdict, explanation, embedded=False)
        if score_column not in records.column_names:
            raise BadInputError(
                f"validation records have no {score_column!r} column; they have {records.column_names}"
            )
        if len(records) == 0:
            raise BadInputError("validation records are empty")
        from ..critic.decoding import DecodingConfig

        self.records, self.trainer = records, trainer
        self.template, self.language, self.referenced = template, language, referenced
        self.score_column, self.query_column = score_column, query_column
        self.decoding = DecodingConfig(strategy="greedy", max_new_tokens=max_new_tokens)
        self.batch_size, self.metric_name = batch_size, metric_name
        self.history: list[dict] = []
        # Import the critic code and load the metric now, not at the first evaluation: a long run must not depend on
        # the source tree staying importable (or the metric module loadable) hours after it started.
        from ..backends.transformers import TransformersBackend
        from ..critic import Critic

        self._critic_classes = (Critic, TransformersBackend)
        self._metric = None
        self._correlation_metric()

    def _correlation_metric(self):
        if self._metric is None:
            import evaluate
            from accelerate import PartialState

            from ..meta_eval.modules import metric_path

            with PartialState().main_process_first():  # the first load copies the module into evaluate's cache
                self._metric = evaluate.load(metric_path("critique_correlation"), keep_in_memory=True)
        return self._metric

    def _grade(self, model, tokenizer, indices: list[int]) -> list[float | None]:
        Critic, TransformersBackend = self._critic_classes
        if not indices:
            return []
        padding_side = tokenizer.padding_side  # the backend switches to left padding for generation
        backend = TransformersBackend(model, tokenizer, name="in-training", batch_size=self.batch_size, progress=False)
        critic = Critic(
            backend,
            template=self.template,
            language=self.language,
            decoding=self.decoding,
            verdict=self.plan.mode.value,
            explanation=self.plan.explanation if self.plan.reads_probabilities else None,
        )
        try:
            graded = critic.grade(self.records.select(indices), referenced=self.referenced, source="validation")
        finally:
            tokenizer.padding_side = padding_side
        return list(graded[schema.CRITIQUE_SCORE])

    def evaluate_model(self, model, tokenizer, accelerator=None) -> dict[str, float]:
        """Grade the validation rows with ``model`` and return the metrics (keys without the ``eval_`` prefix).

        Args:
            model: the (unwrapped) causal LM.
            tokenizer: its tokenizer, with a chat template.
            accelerator: shards rows across processes and gathers the scores when given.

        Returns:
            ``{name: pearson, name_spearman, name_kendall, name_within_question_accuracy (in [0, 1]),
            name_within_question_pairs, name_parse_rate, name_n}`` (floats; NaN when undefined).
        """
        indices = list(range(len(self.records)))
        was_training = model.training
        model.eval()
        try:
            if accelerator is not None and accelerator.num_processes > 1:
                from accelerate.utils import gather_object

                with accelerator.split_between_processes(indices) as shard:
                    scores = list(zip(shard, self._grade(model, tokenizer, list(shard)), strict=True))
                pairs = sorted(gather_object(scores))
                scores = [s for _, s in pairs]
            else:
                scores = self._grade(model, tokenizer, indices)
        finally:
            model.train(was_training)
        predictions = [float("nan") if s is None else float(s) for s in scores]
        query_ids = self.records[self.query_column] if self.query_column else None
        result = self._correlation_metric().compute(
            predictions=predictions,
            references=[float(x) for x in self.records[self.score_column]],
            query_ids=query_ids,
        )
        n, parsed = result["n_rows"], result["n_rows"] - result["n_unparsed"]
        name = self.metric_name
        return {
            name: float(result["text_pearson"]),
            f"{name}_spearman": float(result["text_spearman"]),
            f"{name}_kendall": float(result["text_kendall"]),
            f"{name}_within_question_accuracy": float(result["within_question_accuracy"]),
            f"{name}_within_question_pairs": float(result["within_question_pairs"]),
            f"{name}_parse_rate": parsed / n if n else float("nan"),
            f"{name}_n": float(n),
        }

    def on_train_begin(self, args, state, control, **kwargs):
        """Refuse a trainer whose ``evaluate()`` would not return the Pearson (the best model would be picked by
        the loss alone, silently)."""
        if self.trainer is not None and not isinstance(self.trainer, CriticSFTTrainer):
            raise TypeError(
                f"{type(self).__name__} needs hf_critic.training.CriticSFTTrainer, whose evaluate() returns the "
                f"validation Pearson; got {type(self.trainer).__name__}"
            )
        return control

    def validate(self, state, metric_key_prefix: str = "eval") -> dict[str, float]:
        """Grade with the trainer's model, record :attr:`history`, log, and return ``{<prefix>_<metric>: value}``
        (called by :meth:`CriticSFTTrainer.evaluate`)."""
        trainer = self.trainer
        tokenizer = getattr(trainer, "processing_class", None)
        from trl.models.utils import unwrap_model_for_generation

        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as unwrapped:
            values = self.evaluate_model(unwrapped, tokenizer, trainer.accelerator)
        name = self.metric_name
        self.history.append(
            {
                "step": state.global_step,
                "epoch": state.epoch,
                "pearson": values[name],
                "spearman": values[f"{name}_spearman"],
                "kendall": values[f"{name}_kendall"],
                "within_question_accuracy": values[f"{name}_within_question_accuracy"],
                "parse_rate": values[f"{name}_parse_rate"],
                "n": int(values[f"{name}_n"]),
            }
        )
        values = {f"{metric_key_prefix}_{k}": v for k, v in values.items()}
        trainer.log(values)
        return values


class CriticSFTTrainer(SFTTrainer):
    """TRL's ``SFTTrainer`` whose ``evaluate()`` returns the validation Pearson of its
    :class:`CritiquePearsonCallback` with the loss, so ``metric_for_best_model: critique_pearson`` reads it from the
    metrics the Trainer's own evaluation returns (no callback writing into the Trainer's metrics dict)."""

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        metrics = super().evaluate(eval_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
        for callback in self.callback_handler.callbacks:
            if isinstance(callback, CritiquePearsonCallback):
                metrics.update(callback.validate(self.state, metric_key_prefix))
        return metrics


def logged_eval_metrics(log_history: Sequence[Mapping[str, Any]], step: int) -> dict[str, float]:
    """All ``eval_*`` values the Trainer logged at ``step`` (eval loss and validation Pearson), merged.

    Args:
        log_history: ``trainer.state.log_history``.
        step: the global step (e.g. ``state.best_global_step``).

    Returns:
        ``{key: value}`` for every ``eval_`` key logged at that step, plus ``epoch``; empty when nothing was logged.
    """
    merged: dict[str, float] = {}
    for entry in log_history:
        if entry.get("step") == step and any(k.startswith("eval_") for k in entry):
            merged.update({k: v for k, v in entry.items() if k.startswith("eval_") or k == "epoch"})
    return merged


def validation_callback(validation_args, trainer, *, template: str, language: str, metric_for_best_model=None):
    """The :class:`CritiquePearsonCallback` a recipe's :class:`~hf_critic.training.config.ValidationArguments` ask for.

    Args:
        validation_args: the parsed ``ValidationArguments``.
        trainer: the ``SFTTrainer`` (the callback generates with its model).
        template, language: the recipe's critic template and language (``validation_template`` overrides the
            template).
        metric_for_best_model: ``SFTConfig.metric_for_best_model``, checked against ``validation_metric_name``.

    Returns:
        The callback (not yet added to the trainer), or None when no ``validation_dataset`` is set.

    Raises:
        ValueError: ``metric_for_best_model`` names the validation Pearson but no ``validation_dataset`` is set.
        hf_critic.io.RecordError: the validation data cannot be loaded.
    """
    from ..io import load_records

    v = validation_args
    if not v.validation_dataset:
        if (metric_for_best_model or "").endswith(v.validation_metric_name):
            raise BadInputError(f"metric_for_best_model is {metric_for_best_model!r}: set validation_dataset")
        return None
    records = load_records(
        v.validation_dataset, limit=v.validation_max_examples, split=v.validation_split, config=v.validation_config
    )
    return CritiquePearsonCallback(
        records,
        trainer=trainer,
        template=v.validation_template or template,
        language=language,
        score_column=v.validation_score_column,
        query_column=v.validation_query_column,
        max_new_tokens=v.validation_max_new_tokens,
        batch_size=v.validation_batch_size,
        metric_name=v.validation_metric_name,
        verdict=v.validation_verdict,
        explanation=v.validation_explanation,
    )
