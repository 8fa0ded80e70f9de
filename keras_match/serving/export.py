"""Export trained models as SavedModels that TensorFlow Serving loads (raw text in), and as ONNX.

Layout written (the one TF Serving watches)::

    BASE/
      <version>/                      one integer folder per version (TF Serving serves the highest)
        saved_model.pb
        variables/
        assets/vocabulary.txt         the vocabulary the in-graph tokenizer looks words up in
        assets/document_frequencies.tsv   the overlap features' IDF counts (models with a `features` input)
        assets.extra/
          tf_serving_warmup_requests  PredictionLog records the server replays before taking traffic
          keras_match.json            export metadata: truncation lengths, vocabulary size, signatures
      onnx/<version>/                 written by `to_onnx` (`keras-match export --onnx`), next to the versions
        model.onnx                    the `serve_ids` signature (token ids in, score out)
        vocabulary.txt, keras_match.json   what a client needs to make the ids

TF Serving only loads children of BASE whose name is an integer, so `onnx/` and the temporary `.tmp-*`
folders are ignored by it. Each version (and each ONNX folder) is written to a temporary folder inside its
parent and renamed into place, so a server watching BASE never sees a half-written version; an existing
version is never overwritten.

Signatures of the SavedModel (names, inputs and outputs are tabled in `keras_match.serving.signatures` and written to
the export metadata; the preprocessor declares the inputs, the task the outputs):

- `serving_default`: the preprocessor's raw-text inputs (`question` tf.string [batch], `answer` tf.string
  [batch] for a pair model) -> the task's outputs: `score` float32 [batch] for a ranker, the probability that
  the answer is relevant (a softmax head; a score head gives its raw score); `probabilities` float32
  [batch, classes] and `label` tf.string [batch] for a classifier (the metadata's `label_names` lists the classes
  in column order). Text is tokenized in the graph with the training tokenizer (`keras_match.text`,
  tensorflow-text ops) and truncated to the training lengths. The model runs on at most `CHUNK_SIZE` (256)
  examples at a time, each chunk's ids cut to its longest text, as `Run.score` batches them (padding never
  changes a score), so a request of thousands of pairs needs the memory of one chunk. Batches whose text
  inputs hold different numbers of texts fail with `InvalidArgumentError` ("question and answer must hold the
  same number of texts"). An empty batch gives empty outputs without calling the model.
- `serve_ids`: the model's inputs (`question` int32 [batch, lq], `answer` int32 [batch, la] token ids: 0 =
  padding, 1 = unknown, ids below the vocabulary size; plus `features` float32 [batch, f] for models with pair
  features, which the text signatures compute in the graph from the run's document frequencies, saved as the
  asset `document_frequencies.tsv`) -> the task's numeric outputs. Inputs with different batch sizes fail the
  same way; the inputs go to the model as given (no empty-batch guard, so that the ONNX graph stays the model's
  graph). This is the signature converted to ONNX.
- the task's further signatures: a ranker's `rank`: `question` tf.string [] (one text), `answers` tf.string [n]
  -> `scores` float32 [n] (the scores of `serving_default` for each pair) and `order` int32 [n], the candidate
  indices by descending score; equal scores keep their input order (the lower index first). `n = 0` gives empty
  outputs.

The graph uses tensorflow-text ops: a Python process must `import tensorflow_text` before
`tf.saved_model.load`. The stock TensorFlow Serving model server links those ops.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shutil
import tempfile

import keras
import tensorflow as tf

from keras_match import heads, serving
from keras_match.artifacts import storage
from keras_match.serving import signatures
from keras_match import precision as precision_lib
from keras_match.artifacts.runs import Run, load_run
from keras_match.serving.metadata import METADATA_FILE, ExportVerificationError, read_metadata
from keras_match.serving.onnx_export import (  # noqa: F401  (export.to_onnx reads as before)
    MAX_ONNX_OPSET, ONNX_BFLOAT16, ONNX_FILE, OnnxExport, check_onnx_precision, onnx_dir_for, sample_inputs,
    to_onnx,
)

__all__ = [
    "MAX_ONNX_OPSET",
    "METADATA_FILE",
    "CHUNK_SIZE",
    "ExportVerificationError",
    "OnnxExport",
    "build_archive",
    "saved_model",
    "read_metadata",
    "onnx_dir_for",
    "to_onnx",
    "sample_inputs",
    "signature_table",
]


CHUNK_SIZE = 256
"""The text signatures score large requests this many pairs at a time (the batch size `Run.score` uses)."""


def _next_version(base: pathlib.Path):
    versions = [int(p.name) for p in base.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name)]
    return max(versions, default=0) + 1


def _as_run(model_or_run, preprocessor=None, label_names=None, precision=precision_lib.SERVING_DEFAULT):
    if isinstance(model_or_run, (str, os.PathLike)):
        return load_run(model_or_run, precision=precision)
    if isinstance(model_or_run, Run):
        return dataclasses.replace(model_or_run, model=precision_lib.convert(model_or_run.model, precision))
    if isinstance(model_or_run, keras.Model):
        if preprocessor is None:
            raise ValueError("exporting a bare keras.Model needs preprocessor= (a keras_match.preprocessors "
                             "Preprocessor, such as the run's PairPreprocessor)")
        config = {"task": {"kind": "classification", "label_names": list(label_names)}} if label_names else {}
        return Run(model=precision_lib.convert(model_or_run, precision), preprocessor=preprocessor, config=config)
    raise TypeError(f"expected a run directory, a Run or a keras.Model, got {type(model_or_run).__name__}")


def _same_batch(tensors, names, what):
    """Asserts that every tensor has the batch size of the first (the message names them all)."""
    first = tensors[0]
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return [tf.debugging.assert_equal(
        tf.shape(first)[0], tf.shape(tensor)[0],
        message=f"{listed} must hold the same number of {what} (the batch sizes come in that order)")
        for tensor in tensors[1:]]


def _check_inputs(run: Run):
    """The model's inputs, checked against what the preprocessor makes.

    Returns:
        The preprocessor's model input specs, `{name: tf.TensorSpec}`.

    Raises:
        ValueError: the model takes inputs the preprocessor does not make, or of another width (the message
            names them).
    """
    model, preprocessor = run.model, run.preprocessor
    taken = {t.name: t for t in model.inputs}
    made = preprocessor.model_input_specs()
    if sorted(taken) != sorted(made):
        raise ValueError(f"model {model.name!r} takes inputs {sorted(taken)}; its preprocessor makes {sorted(made)} "
                         "from text (export a run, whose preprocessor load_run reads, or pass the run's own)")
    for name, spec in made.items():
        width, wanted = taken[name].shape[-1], spec.shape[-1]
        if wanted is not None and width != wanted:
            raise ValueError(f"model {model.name!r} takes a {name!r} input of width {width}; its preprocessor makes "
                             f"width {wanted}")
    return made


def _check_task(run: Run):
    """The run's task, checked against the model's head (a classifier needs its label names)."""
    head = heads.head_of(run.model)
    task = run.task
    if head == "classification" and task.kind == "response_selection":
        return head, task  # a softmax over the task's fixed candidate set (its outputs are `scores`, no labels)
    if (head == "classification") != (task.kind == "classification"):
        if head == "classification":
            raise ValueError("a classifier's export needs its label names (the run's config.json, or "
                             "label_names= for a bare model)")
        raise ValueError(f"the model has a {head!r} head but the run's task is {task.kind}")
    return head, task


def build_archive(run: Run, chunk_size=CHUNK_SIZE):
    """A `keras.export.ExportArchive` holding the model, the preprocessor's lookup tables and the signatures.

    Every text signature calls the run's preprocessor in the graph (the object training mapped over its data),
    and the run's task turns the model's outputs into the signature's outputs (`Task.serving_outputs`: a
    ranker's score from `keras_match.heads.ranking_score`, a classifier's probabilities and label).

    Args:
        run: the model, its preprocessor (`Run.preprocessor`) and its task (`Run.task`, from its config).
        chunk_size: the text signatures run the model on at most this many examples at a time.

    Returns:
        `keras.export.ExportArchive` with `serving_default`, `serve_ids` and the task's signatures (see the module
        docstring); write it with `archive.write_out(path)`.

    Raises:
        ValueError: the model takes inputs its preprocessor does not make, a classifier without label names,
            or `chunk_size` is not a positive integer.
    """
    model, preprocessor = run.model, run.preprocessor
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    id_specs = _check_inputs(run)
    head, task = _check_task(run)
    archive = keras.export.ExportArchive()
    # Not `archive.track(model)`: the endpoints capture the model's variables and the archive saves those;
    # tracking the model as well stores every weight a second time (Keras 3.15 saves the Keras variables next
    # to the tf.Variables they wrap), doubling the SavedModel's size.
    for trackable in preprocessor.trackables():
        archive.track(trackable)  # lookup tables, and objects whose files become assets
    id_names, text_names = list(id_specs), list(preprocessor.TEXT_INPUTS)
    width = model.outputs[0].shape[-1]

    forward = _serving_forward(run)

    # One tf.function for the model, called by every endpoint: the model is traced once, not once per endpoint.
    @tf.function(input_signature=list(id_specs.values()), autograph=False)
    def run_model(*ids):
        with tf.control_dependencies(_same_batch(ids, id_names, "rows")):
            return tf.cast(forward(dict(zip(id_names, ids))), tf.float32)

    def serve_ids(*ids):
        return task.serving_outputs(head, run_model(*ids), numeric_only=True)

    # The text functions are traced once each and called by every endpoint that scores texts (serving_default
    # and the task's signatures), and by both the one-chunk branch and the loop: tracing them inline for each use
    # made writing a small zoo entry's SavedModel take 1.4-2 times as long.
    table = signature_table(run)
    text_specs = signatures.tensor_specs(table[signatures.DEFAULT_SIGNATURE])

    @tf.function(input_signature=text_specs, autograph=False)
    def score_chunk_tensors(*texts):
        # the preprocessor's inputs, ids cut to the chunk's longest text as training batches are
        inputs = preprocessor.trim_padding(preprocessor(dict(zip(text_names, texts))))
        return run_model(*[inputs[name] for name in id_names])

    def score_chunk(texts):
        return score_chunk_tensors(*[texts[name] for name in text_names])

    def score_texts(texts):
        return score_text_tensors(*[texts[name] for name in text_names])

    @tf.function(input_signature=text_specs, autograph=False)
    def score_text_tensors(*texts):
        # Scores chunk after chunk: the memory a request of thousands of examples needs is that of one chunk.
        # An empty batch never reaches the model.
        texts = {name: tf.identity(value) for name, value in zip(text_names, texts)}
        with tf.control_dependencies(_same_batch([texts[n] for n in text_names], text_names, "texts")):
            count = tf.shape(texts[text_names[0]])[0]
        chunks = (count + chunk_size - 1) // chunk_size

        def body(i, results):
            start = i * chunk_size
            chunk = score_chunk({name: value[start : start + chunk_size] for name, value in texts.items()})
            return i + 1, results.write(i, chunk)

        def loop():
            results = tf.TensorArray(tf.float32, size=chunks, element_shape=tf.TensorShape([None, width]),
                                     infer_shape=False)
            _, results = tf.while_loop(lambda i, _: i < chunks, body, [tf.constant(0), results],
                                       parallel_iterations=1)
            return tf.reshape(results.concat(), [count, width])

        return tf.cond(
            count == 0,
            lambda: tf.zeros([0, width], tf.float32),
            # the common case, one chunk: no loop, the graph of plain unchunked scoring
            lambda: tf.cond(count <= chunk_size, lambda: score_chunk(texts), loop),
        )

    def serving_default(*texts):
        return task.serving_outputs(head, score_texts(dict(zip(text_names, texts))))

    scorer = _candidate_scorer(run)
    score_with_candidates = None
    if scorer is not None:
        def score_with_candidates(texts, candidates):
            # the turn's candidate texts, cut as the preprocessor cuts the task's set; ids of the chunk's texts
            inputs = preprocessor.trim_padding(preprocessor(texts))
            candidate_ids = preprocessor.encoder.encode(candidates, preprocessor.max_candidate_length)
            return tf.cast(scorer(inputs, candidate_ids), tf.float32)

    endpoints = {signatures.DEFAULT_SIGNATURE: serving_default, signatures.IDS_SIGNATURE: serve_ids}
    for name, (_, make) in task.extra_signatures(head, preprocessor, open_candidates=scorer is not None).items():
        endpoints[name] = make(score_texts, score_with_candidates)
    for name, inputs in table.items():
        archive.add_endpoint(name, endpoints[name], input_signature=signatures.tensor_specs(inputs))
    return archive


def _family(run: Run):
    """The run's zoo family (`keras_match.zoo.Family`), or None for a model outside the zoo."""
    from keras_match import zoo

    name = run.config.get("family")
    family = zoo.families().get(name) if name else None
    if family is None and run.config.get("zoo") in zoo.names():
        family = zoo.family_of(run.config["zoo"])
    return family


def _candidate_scorer(run: Run):
    """The run's model scoring candidates given at call time (its family's `score_candidates`), or None: no such
    family, or a model outside the zoo."""
    family = _family(run)
    if family is None or family.score_candidates is None:
        return None
    return family.score_candidates(run.model)


def _serving_forward(run: Run):
    """What the export serves for the run's model: its family's `serving_forward`, else the model itself."""
    family = _family(run)
    if family is None or family.serving_forward is None:
        return lambda inputs: run.model(inputs, training=False)
    return family.serving_forward(run.model)


def signature_table(run: Run) -> dict:
    """`{signature: {input: (dtype name, shape)}}` of the run's export."""
    head, task = _check_task(run)
    preprocessor = run.preprocessor
    model_inputs = {name: (spec.dtype.name, spec.shape.as_list())
                    for name, spec in preprocessor.model_input_specs().items()}
    extras = {name: inputs for name, (inputs, _) in
              task.extra_signatures(head, preprocessor, open_candidates=_candidate_scorer(run) is not None).items()}
    return signatures.signature_table(preprocessor.TEXT_INPUTS, model_inputs, extras)


def _metadata(run: Run):
    from keras_match import __version__

    _check_inputs(run)
    head, task = _check_task(run)
    width = run.model.outputs[0].shape[-1]
    metadata = {
        "format": "keras-match SavedModel",
        "keras_match_version": __version__,
        "zoo": run.config.get("zoo"),
        "model_name": run.model.name,
        "precision": precision_lib.of_model(run.model),
        "trained_precision": ((run.config.get("settings") or {}).get("training") or {}).get("precision", "float32"),
        "head": head,
        "task": task.config(),
        "label_names": list(task.label_names) if task.kind == "classification" else None,
        **run.preprocessor.describe(),
        "text_inputs": dict(run.preprocessor.TEXT_INPUTS),
        "sequence_lengths": run.preprocessor.sequence_lengths(),
        "signatures": {name: {k: [d, s] for k, (d, s) in inputs.items()} for name, inputs in
                       signature_table(run).items()},
        "outputs": {name: {k: [d, s] for k, (d, s) in outputs.items()} for name, outputs in
                    task.signature_outputs(head, width).items()},
    }
    return metadata


def saved_model(model_or_run, base_dir, *, version=None, warmup=True, preprocessor=None, label_names=None,
                precision=precision_lib.SERVING_DEFAULT):
    """Write a SavedModel version for TensorFlow Serving.

    Args:
        model_or_run: a run directory written by `keras_match.train`, a loaded `Run`, or a `keras.Model` (then
            `preprocessor` is required, and `label_names` for a classifier).
        base_dir: the model's base path (`BASE`); versions go to `BASE/<version>/`.
        version: positive int; default the next integer after the highest version present.
        warmup: write `assets.extra/tf_serving_warmup_requests` (needs tensorflow-serving-api).
        preprocessor: the model's `keras_match.preprocessors.Preprocessor` (bare models only).
        label_names: a bare classifier's class names, in column order.
        precision: what the exported graph computes in (`keras_match.precision`): `"float32"` (the default,
            whatever the model trained in) or `"mixed_bfloat16"` (the same float32 weights, bfloat16 arithmetic;
            the scores stay float32). Recorded in `assets.extra/keras_match.json` beside the trained precision.

    Returns:
        pathlib.Path of the written version folder `BASE/<version>`.

    Raises:
        FileExistsError: `BASE/<version>` exists already.
        ValueError: `version` is not a positive integer; a bare model without its preprocessor; a model
            whose inputs the preprocessor does not make.
        ImportError: `warmup=True` without tensorflow-serving-api (`pip install keras-match[serving]`).
        keras_match.artifacts.storage.WriteError: the version could not be written (full disk, read-only folder);
            nothing is left in `BASE`.
    """
    precision_lib.check_resolved(precision)
    run = _as_run(model_or_run, preprocessor, label_names, precision)
    base = pathlib.Path(base_dir)
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 1):
        raise ValueError(f"version must be a positive integer, got {version!r}")
    if version is not None and (base / str(version)).exists():
        raise FileExistsError(f"{base / str(version)} exists: TF Serving versions are never overwritten; pick "
                              "another version")
    archive = build_archive(run)  # fails before anything is written
    records = serving.warmup_requests(base.name or "model", signature_table(run),
                                      run.preprocessor.sequence_lengths(),
                                      large_batch=CHUNK_SIZE + 1) if warmup else None
    with storage.folders_made_for(base), storage.writing(base, also=(tf.errors.OpError,)):
        base.mkdir(parents=True, exist_ok=True)
        if version is None:
            version = _next_version(base)
        target = base / str(version)
        if target.exists():
            raise FileExistsError(f"{target} exists: TF Serving versions are never overwritten; pick another "
                                  "version")
        return _write_version(archive, run, records, target, version, base)


def _write_version(archive, run, records, target, version, base):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=base))
    try:
        staged = tmp / "model"
        archive.write_out(str(staged), verbose=False)
        (staged / METADATA_FILE).parent.mkdir(parents=True, exist_ok=True)
        (staged / METADATA_FILE).write_text(json.dumps(_metadata(run), indent=2) + "\n", encoding="utf-8")
        if records is not None:
            serving.write_warmup_file(staged, records)
        if target.exists():  # another writer took this version meanwhile
            raise FileExistsError(f"{target} appeared while exporting; pick another version")
        os.rename(staged, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
