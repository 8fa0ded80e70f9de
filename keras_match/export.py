"""Export trained models as SavedModels that TensorFlow Serving loads, taking raw text in.

Layout written (the one TF Serving watches): `BASE/<integer version>/saved_model.pb`, `variables/`, `assets/`
(the vocabulary file). Each version is written to a temporary folder inside BASE and renamed into place, so a
server watching BASE never sees a half-written version; an existing version is never overwritten.

Signatures:

- `serving_default`: `question` tf.string [batch], `answer` tf.string [batch] -> `score` float32 [batch], the
  probability that the answer is relevant. Text is tokenized in the graph with the training tokenizer
  (tensorflow-text) and truncated to the training lengths.
- `serve_ids`: `question` int32 [batch, lq], `answer` int32 [batch, la] token ids (0 = padding) -> `score`.

The graph uses tensorflow-text ops: a Python process must `import tensorflow_text` before
`tf.saved_model.load`. The stock TensorFlow Serving model server links those ops.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import tempfile

import keras
import tensorflow as tf

from keras_match import text
from keras_match.training import Run, load_run


def _next_version(base: pathlib.Path):
    versions = [int(p.name) for p in base.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name)]
    return max(versions, default=0) + 1


def _as_run(model_or_run, encoder, max_question_length, max_answer_length):
    if isinstance(model_or_run, (str, os.PathLike)):
        return load_run(model_or_run)
    if isinstance(model_or_run, Run):
        return model_or_run
    if isinstance(model_or_run, keras.Model):
        if encoder is None or max_question_length is None or max_answer_length is None:
            raise ValueError(
                "exporting a bare keras.Model needs encoder=, max_question_length= and max_answer_length="
            )
        if isinstance(encoder, (str, os.PathLike)):
            encoder = text.TextEncoder.from_file(encoder)
        config = {"max_question_length": max_question_length, "max_answer_length": max_answer_length}
        return Run(model=model_or_run, encoder=encoder, config=config)
    raise TypeError(f"expected a run directory, a Run or a keras.Model, got {type(model_or_run).__name__}")


def build_archive(run: Run):
    """A `keras.export.ExportArchive` holding the model, the vocabulary table and the signatures."""
    model, encoder = run.model, run.encoder
    lq, la = run.max_question_length, run.max_answer_length
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encoder.table)

    def score_ids(question_ids, answer_ids):
        probabilities = model({"question": question_ids, "answer": answer_ids}, training=False)
        return {"score": tf.cast(probabilities[:, 1], tf.float32)}

    def score_text(question, answer):
        with tf.control_dependencies(
            [
                tf.debugging.assert_equal(
                    tf.shape(question)[0],
                    tf.shape(answer)[0],
                    message="question and answer must hold the same number of texts",
                )
            ]
        ):
            question_ids = encoder.encode(question, lq)
            answer_ids = encoder.encode(answer, la)
        return score_ids(question_ids, answer_ids)

    archive.add_endpoint(
        "serving_default",
        score_text,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="question"),
            tf.TensorSpec([None], tf.string, name="answer"),
        ],
    )
    archive.add_endpoint(
        "serve_ids",
        score_ids,
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="question"),
            tf.TensorSpec([None, None], tf.int32, name="answer"),
        ],
    )
    return archive


def saved_model(
    model_or_run,
    base_dir,
    *,
    version=None,
    encoder=None,
    max_question_length=None,
    max_answer_length=None,
):
    """Write a SavedModel version for TensorFlow Serving.

    Args:
        model_or_run: a run directory written by `keras_match.train`, a loaded `Run`, or a `keras.Model`
            (then `encoder`, `max_question_length` and `max_answer_length` are required).
        base_dir: the model's base path (`BASE`); versions go to `BASE/<version>/`.
        version: positive int; default the next integer after the highest version present.
        encoder: a `keras_match.text.TextEncoder` or a vocabulary file (bare models only).
        max_question_length, max_answer_length: truncation lengths used in training (bare models only).

    Returns:
        pathlib.Path of the written version folder.

    Raises:
        FileExistsError: `BASE/<version>` exists already.
        ValueError: `version` is not a positive integer; a bare model without its encoder or lengths.
    """
    run = _as_run(model_or_run, encoder, max_question_length, max_answer_length)
    base = pathlib.Path(base_dir)
    base.mkdir(parents=True, exist_ok=True)
    if version is None:
        version = _next_version(base)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}")
    target = base / str(version)
    if target.exists():
        raise FileExistsError(f"{target} exists: TF Serving versions are never overwritten; pick another version")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=base))
    try:
        build_archive(run).write_out(str(tmp / "model"), verbose=False)
        os.rename(tmp / "model", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
