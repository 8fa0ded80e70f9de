"""Response selection (dialog bAbI, Tran et al. NAACL 2018 section 4.1): rank every candidate response of a dialog
turn; per-response and per-dialog accuracy."""

from __future__ import annotations

import dataclasses

import numpy as np

from keras_match import heads
from keras_match.inputs.pipeline import Examples
from keras_match.tasks.base import Task

__all__ = ["ResponseExamples", "ResponseSelectionTask", "RESPOND_SIGNATURE", "evaluate_selection", "choose"]

RESPOND_SIGNATURE = "respond"
"""The extra exported signature: one dialog turn in, its candidates' scores and the chosen response out."""

TEXT_FIELDS = ("history", "context")
"""The texts a model of this task reads (its preprocessor's `TEXT_INPUTS`): the candidates are the task's fixed set,
not a per-example input, so the examples' `candidates` column is not among them (`pipeline.encode` encodes only
the preprocessor's text inputs; `DialogPreprocessor.from_training` reads the set from it once)."""


@dataclasses.dataclass
class ResponseExamples(Examples):
    """The examples of a response-selection split (`ResponseSelectionTask.examples`): one row per dialog turn.

    Attributes:
        texts: `{"history": object [n, H], "context": object [n], "candidates": object [n, C]}`: each turn's
            earlier texts (padded at the end with `""`; `history_lengths` says how many are real), its last user
            utterance, and the candidate texts, the same `C` for every row (a read-only zero-copy broadcast of
            `candidates`, so the rows cost no memory: read `candidates` to encode them once).
        labels: int32 `[n]`, the gold response's index among the candidates.
        groups: object `[n]`, the dialog ids (per-dialog accuracy groups by them).
        ids: object `[n]`, the example ids (`"<dialog>-<turn>"`).
        candidates: object `[C]`, the candidate texts, once.
        history_lengths: int32 `[n]`, the number of real texts in each history row.
    """

    candidates: np.ndarray | None = None
    history_lengths: np.ndarray | None = None

    @property
    def num_candidates(self) -> int:
        return len(self.candidates)


def choose(scores) -> np.ndarray:
    """The chosen candidate of each row of a score matrix `[n, C]`: the highest-scored one, and among equal
    highest scores the lowest candidate index (`numpy.argmax`'s first occurrence). Returns int `[n]`."""
    return np.argmax(np.asarray(scores), axis=-1)


def evaluate_selection(scores, gold, dialogs) -> dict:
    """Per-response and per-dialog accuracy of a score per (example, candidate), vectorised.

    Args:
        scores: float `[n, C]`, higher is better; the chosen candidate of a row is its highest-scored one, the
            lowest candidate index among ties (`choose`).
        gold: int `[n]`, the gold candidate of each example.
        dialogs: `[n]`, the dialog of each example (any hashable ids; a dialog's examples need not be adjacent).

    Returns:
        `{"per_response_accuracy", "per_dialog_accuracy", "num_examples", "num_dialogs", "num_candidates"}`:
        the share of examples whose chosen candidate is the gold one, and the share of dialogs all of whose
        examples are right.

    Raises:
        ValueError: no example, arrays that do not match (`[n, C]`, `[n]`, `[n]`), a gold index outside
            `0 .. C - 1`, or a score that is not finite (NaN or inf; the message names the first examples).
    """
    scores = np.asarray(scores)
    gold = np.asarray(gold)
    dialogs = np.asarray(dialogs, dtype=object)
    if scores.ndim != 2:
        raise ValueError(f"scores must be a matrix [examples, candidates], got shape {list(scores.shape)}")
    n, c = scores.shape
    if n == 0 or c == 0:
        raise ValueError(f"nothing to evaluate: {n} examples, {c} candidates")
    if gold.shape != (n,) or dialogs.shape != (n,):
        raise ValueError(f"scores [{n}, {c}] need gold [{n}] and dialogs [{n}], got gold {list(gold.shape)} and "
                         f"dialogs {list(dialogs.shape)}")
    if gold.min() < 0 or gold.max() >= c:
        raise ValueError(f"gold indices must be in 0..{c - 1}, found {int(gold.min())}..{int(gold.max())}")
    finite = np.isfinite(scores).all(axis=1)
    if not finite.all():
        rows = np.flatnonzero(~finite)
        raise ValueError(f"non-finite scores (NaN or inf) in {len(rows)} example(s), the first at rows "
                         f"{rows[:5].tolist()}")
    correct = choose(scores) == gold
    _, dialog = np.unique(dialogs, return_inverse=True)
    wrong_per_dialog = np.bincount(dialog.reshape(-1), weights=~correct)
    return {
        "per_response_accuracy": float(correct.mean()),
        "per_dialog_accuracy": float(np.mean(wrong_per_dialog == 0)),
        "num_examples": int(n),
        "num_dialogs": int(len(wrong_per_dialog)),
        "num_candidates": int(c),
    }


class ResponseSelectionTask(Task):
    """Next-response selection in a dialog: each example is a dialog turn (its history, the last user utterance and
    a candidate set) whose gold response the model must score highest among all candidates.

    Figures (`evaluate_selection`): `per_response_accuracy` (the top-scored candidate is the gold one; equal top
    scores choose the lowest candidate index) and `per_dialog_accuracy` (every turn of the dialog right); dev
    per-response accuracy chooses the model. Examples (`ResponseExamples`): texts `history` [n, H], `context` [n]
    and `candidates` [n, C], label the gold candidate's index. The model's output is a score per candidate,
    `[n, C]`: the class-probability head over the candidate set (Tran et al. eq. 10, a softmax over the candidate
    responses), which `model_settings` asks for; `evaluate` also reads one ranking score per (example, candidate)
    row, `[n * C]` example-major, from a `"softmax"` or `"score"` head.

    Exported signatures: `serving_default` (`history` string [batch, H], `context` string [batch], `candidates`
    string [batch, C]) and `serve_ids` return `scores` float32 [batch, C] and `choice` int32 [batch], the chosen
    candidate's index (ties: the lowest index); `respond` takes one turn (`history` string [H], `context`
    string [], `candidates` string [C]) and returns `scores` [C], `choice` int32 [] and `response` string [], the
    chosen candidate's text; for a model that keeps the task's candidate set (the CARNN dialog model) it is
    exported when the model's family scores candidates given at call time (`keras_match.zoo.Family`
    `score_candidates`), and the turn's candidates replace the set.

    Args:
        num_candidates: the size of the candidate set the model selects among.
        candidates_sha256: the candidate set's digest (`CandidateSet.sha256`); a split of another set is refused.
        candidates_file: the candidate file's name, for messages.
    """

    kind = "response_selection"
    monitor = "per_response_accuracy"
    figures = ("per_response_accuracy", "per_dialog_accuracy")
    text_fields = TEXT_FIELDS
    loss_modes = ("pointwise",)
    usage = ('scores = run.predict(history=[["hello", "hello what can i help you with today"]],',
             '                     context=["i want a cheap restaurant in the north of town"])  # [1, candidates]',
             "response = run.preprocessor.candidates[int(scores[0].argmax())]")
    intended_use = ("choosing a dialog's next response among the training task's fixed candidate set, given the "
                    "dialog's turns so far and the last user utterance")

    def __init__(self, num_candidates, candidates_sha256=None, candidates_file=None):
        if isinstance(num_candidates, bool) or not isinstance(num_candidates, int) or num_candidates < 1:
            raise ValueError(f"num_candidates must be an integer >= 1, got {num_candidates!r}")
        self.num_candidates = num_candidates
        self.candidates_sha256 = candidates_sha256
        self.candidates_file = candidates_file

    @classmethod
    def for_dataset(cls, dataset):
        candidates = dataset.candidates
        return cls(len(candidates), candidates.sha256, _file_name(candidates.source))

    def config(self) -> dict:
        return {"kind": self.kind, "num_candidates": self.num_candidates,
                "candidates_sha256": self.candidates_sha256, "candidates_file": self.candidates_file}

    @classmethod
    def from_config(cls, config: dict):
        return cls(config["num_candidates"], config.get("candidates_sha256"), config.get("candidates_file"))

    # ---- data -----------------------------------------------------------------------------------------------

    def accepts(self, split):
        candidates = getattr(split, "candidates", None)
        if candidates is None or not hasattr(split, "histories"):
            return ("is not a response-selection split (dialog turns with candidate responses); this run selects "
                    "responses")
        if self.candidates_sha256 and candidates.sha256 != self.candidates_sha256:
            return (f"ranks the candidates of {_file_name(candidates.source)!r} ({len(candidates):,}); this run "
                    f"selects among the {self.num_candidates:,} of {self.candidates_file!r} (same texts, same order "
                    "needed)")
        return None

    def examples(self, split) -> ResponseExamples:
        """One row per dialog turn (`ResponseExamples`): history, context and the candidate set, the gold index."""
        candidates = np.asarray(split.candidates.texts, dtype=object)
        n = len(split)
        texts = {"history": split.histories(), "context": split.contexts(),
                 "candidates": np.broadcast_to(candidates, (n, len(candidates)))}
        return ResponseExamples(texts=texts, labels=np.asarray(split.gold, np.int32), groups=split.dialog_ids(),
                                ids=split.example_ids(), candidates=candidates,
                                history_lengths=np.asarray(split.history_length, np.int32))

    # ---- the model ------------------------------------------------------------------------------------------

    def model_settings(self, model: dict) -> dict:
        """The class-probability head over the candidate set: one unit per candidate (eq. 10)."""
        return {"head": "classification", "num_classes": self.num_candidates}

    # ---- figures --------------------------------------------------------------------------------------------

    def scores(self, head, outputs, num_examples, num_candidates) -> np.ndarray:
        """The score matrix `[n, C]` of a model's outputs: `[n, C]` as they are, or one ranking score per
        (example, candidate) row, `[n * C, units]` example-major, of a `"softmax"` or `"score"` head.

        Raises:
            ValueError: outputs of another shape.
        """
        outputs = np.asarray(outputs)
        n, c = num_examples, num_candidates
        if outputs.shape == (n, c):
            return outputs
        if outputs.ndim >= 1 and outputs.shape[0] == n * c:
            if head in ("softmax", "score") and outputs.ndim == 2:
                return np.asarray(heads.ranking_score(head, outputs)).reshape(n, c)
            if outputs.ndim == 1:
                return outputs.reshape(n, c)
        raise ValueError(f"expected a score per (example, candidate): [{n}, {c}], or [{n * c}] rows of a ranking "
                         f"head; got outputs of shape {list(outputs.shape)}")

    def evaluate(self, head, outputs, examples) -> dict:
        """Per-response and per-dialog accuracy (`evaluate_selection`) of a model's outputs on `examples`."""
        c = len(examples.candidates) if getattr(examples, "candidates", None) is not None else self.num_candidates
        scores = self.scores(head, outputs, len(examples), c)
        return evaluate_selection(scores, examples.labels, examples.groups)

    def summary(self, report) -> str:
        return (f"per-response accuracy {report['per_response_accuracy']:.4f}  per-dialog accuracy "
                f"{report['per_dialog_accuracy']:.4f}  ({report['num_examples']:,} responses in "
                f"{report['num_dialogs']:,} dialogs, {report['num_candidates']:,} candidates)")

    # ---- serving --------------------------------------------------------------------------------------------

    def serving_outputs(self, head, outputs, numeric_only=False) -> dict:
        """`scores` float32 [batch, C] and `choice` int32 [batch]: the highest-scored candidate, the lowest index
        among equal scores (computed as such: `tf.argmax` does not promise which of equal maxima it returns)."""
        import tensorflow as tf

        scores = tf.cast(outputs, tf.float32)
        return {"scores": scores, "choice": _choice(scores)}

    def signature_outputs(self, head, num_outputs) -> dict:
        from keras_match.serving import signatures

        outputs = {"scores": ("float32", [None, num_outputs]), "choice": ("int32", [None])}
        return {signatures.DEFAULT_SIGNATURE: outputs, signatures.IDS_SIGNATURE: dict(outputs),
                RESPOND_SIGNATURE: {"scores": ("float32", [None]), "choice": ("int32", []),
                                    "response": ("string", [])}}

    def extra_signatures(self, head, preprocessor, open_candidates=False) -> dict:
        """`respond`: one dialog turn (`history` [H], `context` [], `candidates` [C]) -> `scores` [C], `choice` []
        and `response` [], the chosen candidate's text. For preprocessors that read this task's texts with ranks
        history 2, context 1, candidates 2; or, for one that reads the history and context only (the candidate
        set kept in the model, `DialogPreprocessor`), when the model scores candidates given at call time
        (`open_candidates`): the turn's candidates then replace the task's set, and the scores are eq. 10's
        softmax over them."""
        text_inputs = dict(preprocessor.TEXT_INPUTS)
        given = text_inputs == {"history": 2, "context": 1, "candidates": 2}
        if not given and not (open_candidates and text_inputs == {"history": 2, "context": 1}):
            return {}
        inputs = {"history": ("string", [None]), "context": ("string", []), "candidates": ("string", [None])}

        def make(score_texts, score_with_candidates=None):
            import tensorflow as tf

            def respond(history, context, candidates):
                check = tf.debugging.assert_positive(tf.size(candidates), message="respond needs a candidate")
                with tf.control_dependencies([check]):
                    texts = {"history": history[None], "context": context[None]}
                    if given:
                        texts["candidates"] = candidates[None]
                scores = score_texts(texts) if given else score_with_candidates(texts, candidates)
                outputs = self.serving_outputs(head, scores)
                choice = outputs["choice"][0]
                return {"scores": outputs["scores"][0], "choice": choice, "response": tf.gather(candidates, choice)}

            return respond

        return {RESPOND_SIGNATURE: (inputs, make)}

    def predictions(self, head, outputs, texts, label_names=None) -> list:
        """`choice<TAB>score<TAB>chosen candidate`, one line per dialog turn."""
        candidates = np.asarray(texts["candidates"], dtype=object)
        scores = self.scores(head, outputs, candidates.shape[0], candidates.shape[1])
        chosen = choose(scores)
        return [f"{c}\t{float(row[c]):.4f}\t{options[c]}" for c, row, options in zip(chosen, scores, candidates)]


def _choice(scores):
    """int32 [batch]: per row of `scores` [batch, C], the lowest index of its maximum."""
    import tensorflow as tf

    width = tf.shape(scores)[-1]
    best = tf.reduce_max(scores, axis=-1, keepdims=True)
    positions = tf.broadcast_to(tf.range(width, dtype=tf.int32)[None, :], tf.shape(scores))
    return tf.reduce_min(tf.where(scores >= best, positions, width), axis=-1)


def _file_name(path) -> str | None:
    """A file's name without folders and without `.gz` (the data folder's copy and a download's plain file
    name the same file)."""
    if not path:
        return None
    name = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    return name[: -len(".gz")] if name.endswith(".gz") else name
