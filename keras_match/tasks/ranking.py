"""Ranking (answer selection, community QA): MAP / MRR / P@1 per question."""

from __future__ import annotations

import numpy as np

from keras_match import heads, metrics
from keras_match.inputs.pipeline import Examples
from keras_match.tasks.base import Task

__all__ = ["RankingTask"]


class RankingTask(Task):
    """Ranking of candidates per question (MAP / MRR / P@1 with trec_eval's tie rule,
    `keras_match.metrics.evaluate_ranking`), under the benchmark's rule for questions without a relevant
    candidate; dev MAP chooses the model. Any ranking head (`"softmax"`, `"score"`) and any loss mode.

    Exported signatures: `serving_default` and `serve_ids` return `score` float32 [batch] (the head's ranking
    score, `keras_match.heads.ranking_score`); `rank` takes one query and `n` candidates (the preprocessor's
    `ranking_inputs`: `question` tf.string [] and `answers` tf.string [n] for pairs) and returns `scores`
    float32 [n] and `order` int32 [n], the candidate indices by descending score (equal scores keep their input
    order).

    Args:
        no_positive: the benchmark's rule for questions without a relevant candidate, `"skip"` or `"zero"`
            (see `keras_match.metrics.evaluate_ranking`).
    """

    kind = "ranking"
    monitor = "map"
    figures = ("map", "mrr", "p@1")
    usage = ('scores, order = run.rank("who wrote hamlet ?", ["Shakespeare wrote Hamlet .", '
             '"Teapots are made of clay ."])  # best first',)
    intended_use = "ranking candidate answers (or any candidate texts) for a question"
    text_fields = ("question", "answer")  # a question and one candidate answer
    loss_modes = ("pointwise", "pairwise", "listwise")

    def __init__(self, no_positive="skip"):
        self.no_positive = no_positive

    @classmethod
    def for_dataset(cls, dataset):
        return cls(dataset.metadata.get("no_positive_rule", "skip"))

    def config(self) -> dict:
        return {"kind": self.kind, "no_positive_rule": self.no_positive}

    @classmethod
    def from_config(cls, config: dict):
        return cls(config.get("no_positive_rule") or "skip")

    def accepts(self, split):
        if getattr(split, "label_names", None) is not None:
            return f"is a classification split (labels {list(split.label_names)}); this run is a ranker"
        if not hasattr(split, "pairs"):
            return "is not a ranking split (no questions with candidates); this run is a ranker"
        return None

    def examples(self, split) -> Examples:
        """The split's (question, candidate) pairs, question by question, grouped by question id."""
        pairs = split.pairs()
        return Examples(texts={"question": pairs.questions, "answer": pairs.answers}, labels=pairs.labels,
                        groups=pairs.qids, ids=pairs.aids)

    def model_settings(self, model: dict) -> dict:
        """A ranking head (the preset's own, `"softmax"` by default).

        Raises:
            ValueError: the preset asks for a classification head.
        """
        head = model.get("head", "softmax")
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

    # ---- serving --------------------------------------------------------------------------------------------

    def serving_outputs(self, head, outputs, numeric_only=False) -> dict:
        import tensorflow as tf

        return {"score": tf.cast(heads.ranking_score(head, outputs), tf.float32)}

    def signature_outputs(self, head, num_outputs) -> dict:
        from keras_match.serving import signatures

        score = {"score": ("float32", [None])}
        return {signatures.DEFAULT_SIGNATURE: score, signatures.IDS_SIGNATURE: dict(score),
                signatures.RANK_SIGNATURE: {"scores": ("float32", [None]), "order": ("int32", [None])}}

    def extra_signatures(self, head, preprocessor, open_candidates=False) -> dict:
        """`rank`: one query, `n` candidates -> `scores` [n] and `order` [n] (for preprocessors that declare
        their `ranking_inputs`)."""
        from keras_match.serving import signatures

        if not preprocessor.ranking_inputs:
            return {}
        query, candidate = preprocessor.ranking_inputs
        inputs = {query: ("string", []), f"{candidate}s": ("string", [None])}

        def make(score_texts, score_with_candidates=None):
            import tensorflow as tf

            def rank(query_text, candidates):
                texts = {query: tf.fill(tf.shape(candidates), query_text), candidate: candidates}
                scores = self.serving_outputs(head, score_texts(texts))["score"]
                # argsort with stable=True: equal scores keep their input order (lower index first).
                order = tf.argsort(scores, direction="DESCENDING", stable=True)
                return {"scores": scores, "order": tf.cast(order, tf.int32)}

            return rank

        return {signatures.RANK_SIGNATURE: (inputs, make)}

    def predictions(self, head, outputs, texts, label_names=None) -> list:
        """`rank<TAB>score<TAB>candidate`, best first."""
        scores = np.asarray(heads.ranking_score(head, outputs))
        candidates = texts[self.text_fields[1]]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [f"{rank}\t{scores[i]:.4f}\t{candidates[i]}" for rank, i in enumerate(order, 1)]
