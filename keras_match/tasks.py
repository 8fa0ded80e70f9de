"""Tasks: what a dataset asks of a model, and how its figures are computed.

A task turns a dataset's split into the flat `keras_match.pipeline.Examples` the input pipeline batches, says
which figure chooses the model on dev (`monitor`), which head the model needs, and evaluates a model's outputs:

- `RankingTask` (answer selection, community QA): MAP / MRR / P@1 per question with trec_eval's tie rule
  (`keras_match.metrics.evaluate_ranking`), under the benchmark's rule for questions without a relevant
  candidate; dev MAP chooses the model. Any ranking head (`"softmax"`, `"score"`) and any loss mode.
- `ClassificationTask` (entailment, paraphrase): accuracy, macro-F1 and per-class F1
  (`keras_match.metrics.evaluate_classification`); dev accuracy chooses the model. The head is
  `"classification"` with one unit per label, trained pointwise.

`task_for(dataset)` picks the task from the dataset's `task` attribute; a new kind of data (multi-turn dialog)
adds a task here and nothing in training, tuning or export.
"""

from __future__ import annotations

import numpy as np

from keras_match import heads, metrics
from keras_match.pipeline import Examples

__all__ = ["RankingTask", "ClassificationTask", "task_for"]


class RankingTask:
    """Ranking of candidates per question (MAP / MRR / P@1).

    Args:
        no_positive: the benchmark's rule for questions without a relevant candidate, `"skip"` or `"zero"`
            (see `keras_match.metrics.evaluate_ranking`).
    """

    kind = "ranking"
    monitor = "map"
    figures = ("map", "mrr", "p@1")

    def __init__(self, no_positive="skip"):
        self.no_positive = no_positive

    def examples(self, split) -> Examples:
        """The split's (question, candidate) pairs, question by question, grouped by question id."""
        pairs = split.pairs()
        return Examples(texts={"question": pairs.questions, "answer": pairs.answers}, labels=pairs.labels,
                        groups=pairs.qids, ids=pairs.aids)

    def model_settings(self, preset_model: dict) -> dict:
        """The head settings the task needs: a ranking head (the preset's own, `"softmax"` by default).

        Raises:
            ValueError: the preset asks for a classification head.
        """
        head = preset_model.get("head", "softmax")
        if head == "classification":
            raise ValueError("a ranking dataset needs a ranking head ('softmax' or 'score'), not 'classification'")
        return {"head": head}

    def evaluate(self, head, outputs, examples: Examples) -> dict:
        """MAP / MRR / P@1 (`num_questions`, `num_skipped`) of a model's outputs on `examples`."""
        scores = np.asarray(heads.ranking_score(head, outputs))
        return metrics.evaluate_ranking(examples.groups, examples.ids, scores, examples.labels,
                                        metrics=self.figures, no_positive=self.no_positive)

    def summary(self, report) -> str:
        line = "  ".join(f"{metrics.figure_name(key)} {report[key]:.4f}" for key in self.figures)
        skipped = (f", {report['num_skipped']} without a positive answer skipped" if report.get("num_skipped")
                   else "")
        return f"{line}  ({report['num_questions']} questions{skipped})"


class ClassificationTask:
    """Sentence-pair classification (accuracy, macro-F1, per-class F1).

    Args:
        label_names: the dataset's class names, in index order.
    """

    kind = "classification"
    monitor = "accuracy"
    figures = ("accuracy", "macro_f1")

    def __init__(self, label_names):
        self.label_names = tuple(label_names)

    def examples(self, split) -> Examples:
        """The split's text pairs (first sentence as `question`, second as `answer`) and class indices."""
        texts = split.texts()
        return Examples(texts=dict(texts), labels=np.asarray(split.labels, np.int32), groups=None,
                        ids=getattr(split, "ids", None))

    def model_settings(self, preset_model: dict) -> dict:
        """A classification head with one unit per label."""
        return {"head": "classification", "num_classes": len(self.label_names)}

    def evaluate(self, head, outputs, examples: Examples) -> dict:
        """Accuracy, macro-F1 and per-class precision / recall / F1 of a model's class probabilities."""
        predictions = np.argmax(np.asarray(outputs), axis=-1)
        return metrics.evaluate_classification(examples.labels, predictions, self.label_names)

    def summary(self, report) -> str:
        per_class = ", ".join(f"{name} {c['f1']:.3f}" for name, c in report["per_class"].items())
        return (f"accuracy {report['accuracy']:.4f}  macro-F1 {report['macro_f1']:.4f}  (F1: {per_class}; "
                f"{report['num_pairs']} pairs)")


def task_for(dataset):
    """The task of a loaded dataset: `ClassificationTask` for datasets whose `task` is `"classification"`,
    else `RankingTask` with the benchmark's no-positive rule (`dataset.metadata["no_positive_rule"]`)."""
    if getattr(dataset, "task", "ranking") == "classification":
        return ClassificationTask(dataset.label_names)
    return RankingTask(dataset.metadata.get("no_positive_rule", "skip"))


def task_from_config(config: dict):
    """The task a run was trained for, from its `config.json` (`task`, `label_names`, `no_positive_rule`)."""
    if config.get("task") == "classification":
        return ClassificationTask(config["label_names"])
    return RankingTask(config.get("no_positive_rule", "skip"))
