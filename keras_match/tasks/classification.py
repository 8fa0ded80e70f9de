"""Sentence-pair classification (entailment, paraphrase): accuracy, macro-F1, per-class F1."""

from __future__ import annotations

import numpy as np

from keras_match import metrics
from keras_match.inputs.pipeline import Examples
from keras_match.tasks.base import Task

__all__ = ["ClassificationTask"]


class ClassificationTask(Task):
    """Sentence-pair classification (`keras_match.metrics.evaluate_classification`); dev accuracy chooses the
    model. The head is `"classification"` with one unit per label, trained pointwise.

    Exported signatures: `serving_default` returns `probabilities` float32 [batch, classes] and `label`
    tf.string [batch] (the most probable label's name); `serve_ids` returns `probabilities`; no `rank`.

    Args:
        label_names: the dataset's class names, in index order.
    """

    kind = "classification"
    monitor = "accuracy"
    figures = ("accuracy", "macro_f1")
    text_fields = ("question", "answer")  # the first sentence (premise) and the second (hypothesis)
    usage = ('probabilities = run.probabilities(["A man is playing a guitar ."], ["A person plays music ."])',
             "# one {label name: probability} per pair")
    intended_use = "classifying a sentence pair (first sentence, second sentence) into the training set's labels"

    def __init__(self, label_names):
        self.label_names = tuple(label_names)

    @classmethod
    def for_dataset(cls, dataset):
        return cls(dataset.label_names)

    def config(self) -> dict:
        return {"kind": self.kind, "label_names": list(self.label_names)}

    @classmethod
    def from_config(cls, config: dict):
        return cls(config["label_names"])

    def accepts(self, split):
        labels = getattr(split, "label_names", None)
        if labels is None:
            return f"is a ranking split; this run is a classification model over {list(self.label_names)}"
        if tuple(labels) != self.label_names:
            return (f"has the labels {list(labels)}; this run classifies into {list(self.label_names)} (same "
                    "names, same order needed)")
        return None

    def examples(self, split) -> Examples:
        """The split's text pairs (first sentence as `question`, second as `answer`) and class indices."""
        texts = split.texts()
        return Examples(texts=dict(texts), labels=np.asarray(split.labels, np.int32), groups=None,
                        ids=getattr(split, "ids", None))

    def model_settings(self, model: dict) -> dict:
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

    # ---- serving --------------------------------------------------------------------------------------------

    def serving_outputs(self, head, outputs, numeric_only=False) -> dict:
        import tensorflow as tf

        probabilities = tf.cast(outputs, tf.float32)
        if numeric_only:
            return {"probabilities": probabilities}
        names = tf.constant(list(self.label_names), tf.string)
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1, output_type=tf.int32))}

    def signature_outputs(self, head, num_outputs) -> dict:
        from keras_match.serving import signatures

        probabilities = {"probabilities": ("float32", [None, num_outputs])}
        return {signatures.DEFAULT_SIGNATURE: {**probabilities, "label": ("string", [None])},
                signatures.IDS_SIGNATURE: probabilities}

    def predictions(self, head, outputs, texts, label_names=None) -> list:
        """`label<TAB>probability<TAB>second text`, one line per pair."""
        outputs = np.asarray(outputs)
        names = np.asarray(self.label_names, dtype=object)
        second = texts[self.text_fields[1]]
        return [f"{names[int(np.argmax(row))]}\t{float(row.max()):.4f}\t{text}" for row, text in zip(outputs, second)]
