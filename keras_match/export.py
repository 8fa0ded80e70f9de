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

Signatures of the SavedModel:

Signatures, inputs and outputs are defined once in `keras_match.signatures`; every text signature calls the
run's `keras_match.preprocessing.PairPreprocessor` in the graph and every score comes from
`keras_match.heads.ranking_score`. For a ranking model (heads `softmax`, `score`):

- `serving_default`: `question` tf.string [batch], `answer` tf.string [batch] -> `score` float32 [batch], the
  probability that the answer is relevant (a softmax head; a score head gives its raw score). Text is tokenized in the graph with the training tokenizer
  (`keras_match.text`, tensorflow-text ops), truncated to the training lengths (the first
  `max_question_length` / `max_answer_length` tokens). The model runs on at most `CHUNK_SIZE` (256) pairs at a
  time, each chunk's ids cut to its longest text, as `Run.score` batches them (padding never changes a score),
  so a request of thousands of pairs needs the memory of one chunk. Batches whose question and answer counts
  differ fail with `InvalidArgumentError` ("question and answer must hold the same number of texts"). An empty
  batch gives an empty `score` without calling the model.
- `serve_ids`: `question` int32 [batch, lq], `answer` int32 [batch, la] token ids (0 = padding, 1 = unknown,
  ids below the vocabulary size) -> `score` float32 [batch]. Models that take the word-overlap features
  (`ctrn`, `qrnn` on TrecQA) have a third input `features` float32 [batch, 4]
  (`keras_match.features.OverlapFeatures` of the truncated texts; the text signatures compute them in the
  graph from the run's document frequencies, saved as the asset `document_frequencies.tsv`). Different batch
  sizes fail the same way; the inputs go to the model as given (no empty-batch guard, so that the ONNX graph
  stays the model's graph). This is the signature converted to ONNX.
- `rank`: `question` tf.string [] (one text), `answers` tf.string [n] -> `scores` float32 [n] (the scores of
  `serving_default` for each pair) and `order` int32 [n], the candidate indices by descending score; equal
  scores keep their input order (the lower index first). `n = 0` gives empty outputs.

A classifier (head `classification`, e.g. `mcan_fm` trained on SICK) has `serving_default` -> `probabilities`
float32 [batch, classes] and `label` tf.string [batch] (the most probable label's name), `serve_ids` ->
`probabilities`, and no `rank`; the metadata's `label_names` lists the classes in column order.

The graph uses tensorflow-text ops: a Python process must `import tensorflow_text` before
`tf.saved_model.load`. The stock TensorFlow Serving model server links those ops.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pathlib
import re
import shutil
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_match import heads, serving, signatures, storage, text
from keras_match.preprocessing import PairPreprocessor, trim_padding
from keras_match.runs import Run, load_run

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
    "sample_ids",
]

MAX_ONNX_OPSET = 18
"""The highest ONNX opset tf2onnx 1.17 writes."""

METADATA_FILE = "assets.extra/keras_match.json"
"""Export metadata, relative to a version folder (TF Serving ignores it)."""

ONNX_FILE = "model.onnx"

CHUNK_SIZE = 256
"""The text signatures score large requests this many pairs at a time (the batch size `Run.score` uses)."""


class ExportVerificationError(RuntimeError):
    """An exported model does not run, or does not give the scores of the model it was exported from."""


def _next_version(base: pathlib.Path):
    versions = [int(p.name) for p in base.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name)]
    return max(versions, default=0) + 1


def _as_run(model_or_run, encoder=None, max_question_length=None, max_answer_length=None, preprocessor=None):
    if isinstance(model_or_run, (str, os.PathLike)):
        return load_run(model_or_run)
    if isinstance(model_or_run, Run):
        return model_or_run
    if isinstance(model_or_run, keras.Model):
        if preprocessor is None:
            if encoder is None or max_question_length is None or max_answer_length is None:
                raise ValueError("exporting a bare keras.Model needs preprocessor= (a PairPreprocessor), or "
                                 "encoder=, max_question_length= and max_answer_length=")
            preprocessor = PairPreprocessor(encoder, max_question_length=max_question_length,
                                            max_answer_length=max_answer_length)
        return Run(model=model_or_run, preprocessor=preprocessor, config={})
    raise TypeError(f"expected a run directory, a Run or a keras.Model, got {type(model_or_run).__name__}")


def _same_batch(question, answer, what):
    return tf.debugging.assert_equal(
        tf.shape(question)[0],
        tf.shape(answer)[0],
        message=f"question and answer must hold the same number of {what} (the question batch size comes "
        "first, the answer batch size second)",
    )


def _check_inputs(run: Run):
    """The width of the model's `features` input (0 without one), checked against what the preprocessor makes.

    Raises:
        ValueError: the model takes inputs the preprocessor does not make (the message names them).
    """
    model, preprocessor = run.model, run.preprocessor
    names = sorted(getattr(t, "name", "?") for t in model.inputs)
    width = next((t.shape[-1] for t in model.inputs if t.name == "features"), 0)
    made = sorted(preprocessor.model_input_specs())
    if names == made and width == preprocessor.num_features:
        return width
    if names == ["answer", "features", "question"]:
        if not preprocessor.num_features:
            raise ValueError(
                f"model {model.name!r} takes the pair 'features' (width {width}) but its preprocessor makes none; "
                "exporting it needs the run's PairPreprocessor with overlap_features=True (load_run reads it)"
            )
        raise ValueError(
            f"model {model.name!r} takes a 'features' input of width {width}; its preprocessor makes the "
            f"{preprocessor.num_features} pair features {preprocessor.feature_names} of keras_match.features"
        )
    raise ValueError(f"model {model.name!r} takes inputs {names}; its preprocessor makes {made} from text")


def build_archive(run: Run, chunk_size=CHUNK_SIZE):
    """A `keras.export.ExportArchive` holding the model, the preprocessor's lookup tables and the signatures.

    Every text signature calls the run's `PairPreprocessor` in the graph (the object training mapped over its
    data), and turns the model's output into the score of its head with `keras_match.heads.ranking_score`.

    Args:
        run: the model, its `PairPreprocessor` (`Run.preprocessor`) and, for a classifier, its label names
            (`Run.config["label_names"]`).
        chunk_size: the text signatures run the model on at most this many pairs at a time.

    Returns:
        `keras.export.ExportArchive` with the endpoints of `keras_match.signatures` for the model's head; write
        it with `archive.write_out(path)`.

    Raises:
        ValueError: the model takes inputs its preprocessor does not make, a classifier without label names,
            or `chunk_size` is not a positive integer.
    """
    model, preprocessor = run.model, run.preprocessor
    head = heads.head_of(model)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    num_features = _check_inputs(run)
    label_names = run.label_names if head == "classification" else None
    if head == "classification" and not label_names:
        raise ValueError("a classifier's export needs its label names (Run.config['label_names'])")
    inputs_table = signatures.signature_inputs(num_features, head)
    archive = keras.export.ExportArchive()
    # Not `archive.track(model)`: the endpoints capture the model's variables and the archive saves those;
    # tracking the model as well stores every weight a second time (Keras 3.15 saves the Keras variables next
    # to the tf.Variables they wrap), doubling the SavedModel's size.
    for table in preprocessor.lookup_tables():
        archive.track(table)
    if preprocessor.overlap is not None:
        archive.track(preprocessor.overlap)  # its document-frequency file becomes an asset
    output_key = "probabilities" if head == "classification" else "score"
    width = [len(label_names)] if label_names else []

    def run_model(inputs):
        outputs = model(inputs, training=False)
        if head == "classification":
            return {output_key: tf.cast(outputs, tf.float32)}
        return {output_key: tf.cast(heads.ranking_score(head, outputs), tf.float32)}

    def checked(question, answer, features=None):
        checks = [_same_batch(question, answer, "rows")]
        inputs = {"question": question, "answer": answer}
        if features is not None:
            checks.append(tf.debugging.assert_equal(
                tf.shape(features)[0], tf.shape(question)[0],
                message="features must hold one row per question/answer pair"))
            inputs["features"] = features
        with tf.control_dependencies(checks):
            return run_model(inputs)

    # One tf.function for the model, called by every endpoint: the model is traced once, not once per endpoint.
    ids_signature = signatures.tensor_specs(inputs_table[signatures.IDS_SIGNATURE])
    if num_features:

        @tf.function(input_signature=ids_signature, autograph=False)
        def score_ids(question, answer, features):
            return checked(question, answer, features)

    else:

        @tf.function(input_signature=ids_signature, autograph=False)
        def score_ids(question, answer):
            return checked(question, answer)

    def score_chunk(questions, answers):
        # the preprocessor's inputs, ids cut to the chunk's longest text as training batches are
        inputs = trim_padding(preprocessor({"question": questions, "answer": answers}))
        ordered = [inputs["question"], inputs["answer"]] + ([inputs["features"]] if num_features else [])
        return score_ids(*ordered)[output_key]

    def score_in_chunks(questions, answers):
        # Scores chunk after chunk: the memory a request of thousands of pairs needs is that of one chunk.
        # An empty batch never reaches the model.
        count = tf.shape(questions)[0]
        chunks = (count + chunk_size - 1) // chunk_size

        def body(i, results):
            start = i * chunk_size
            chunk = score_chunk(questions[start : start + chunk_size], answers[start : start + chunk_size])
            return i + 1, results.write(i, chunk)

        def loop():
            results = tf.TensorArray(tf.float32, size=chunks, element_shape=tf.TensorShape([None] + width),
                                     infer_shape=False)
            _, results = tf.while_loop(lambda i, _: i < chunks, body, [tf.constant(0), results],
                                       parallel_iterations=1)
            return tf.reshape(results.concat(), [count] + width)

        return tf.cond(
            count == 0,
            lambda: tf.zeros([0] + width, tf.float32),
            # the common case, one chunk: no loop, the graph of plain unchunked scoring
            lambda: tf.cond(count <= chunk_size, lambda: score_chunk(questions, answers), loop),
        )

    def score_text(question, answer):
        with tf.control_dependencies([_same_batch(question, answer, "texts")]):
            result = score_in_chunks(tf.identity(question), tf.identity(answer))
        if head != "classification":
            return {"score": result}
        names = tf.constant(list(label_names), tf.string)
        return {"probabilities": result,
                "label": tf.gather(names, tf.argmax(result, axis=-1, output_type=tf.int32))}

    def rank(question, answers):
        questions = tf.fill(tf.shape(answers), question)
        scores = score_in_chunks(questions, answers)
        # argsort with stable=True: equal scores keep their input order (lower index first).
        order = tf.argsort(scores, direction="DESCENDING", stable=True)
        return {"scores": scores, "order": tf.cast(order, tf.int32)}

    endpoints = {signatures.DEFAULT_SIGNATURE: score_text, signatures.IDS_SIGNATURE: score_ids,
                 signatures.RANK_SIGNATURE: rank}
    for name, inputs in inputs_table.items():
        archive.add_endpoint(name, endpoints[name], input_signature=signatures.tensor_specs(inputs))
    return archive


def _metadata(run: Run):
    from keras_match import __version__

    num_features = _check_inputs(run)
    head = heads.head_of(run.model)
    label_names = list(run.label_names) if head == "classification" else None
    preprocessor = run.preprocessor
    metadata = {
        "format": "keras-match SavedModel",
        "keras_match_version": __version__,
        "zoo": run.config.get("zoo"),
        "model_name": run.model.name,
        "head": head,
        "label_names": label_names,
        "max_question_length": int(preprocessor.max_question_length),
        "max_answer_length": int(preprocessor.max_answer_length),
        "vocab_size": int(preprocessor.vocab_size),
        "lowercase": bool(preprocessor.lowercase),
        "vocabulary_file": os.path.basename(preprocessor.encoder.vocabulary_path),
        "ids": {"padding": text.PAD_ID, "unknown": text.OOV_ID, "first_word": 2},
        "num_features": num_features,
        "signatures": {name: {k: [d, s] for k, (d, s) in inputs.items()}
                       for name, inputs in signatures.signature_inputs(num_features, head).items()},
        "outputs": {name: {k: [d, s] for k, (d, s) in outputs.items()} for name, outputs in
                    signatures.signature_outputs(head, len(label_names) if label_names else None).items()},
    }
    if num_features:
        from keras_match.features import BM25_B, BM25_K1

        metadata["overlap_features"] = {  # the pair features (the name predates BM25)
            "names": preprocessor.feature_names,
            "document_frequencies_file": os.path.basename(preprocessor.overlap.path),
            "num_documents": int(preprocessor.overlap.num_documents),
            "lowercase": bool(preprocessor.overlap.lowercase),
        }
        if preprocessor.bm25_feature:
            metadata["overlap_features"]["bm25"] = {"k1": BM25_K1, "b": BM25_B,
                                                    "average_length": preprocessor.overlap.average_length}
    return metadata


def saved_model(
    model_or_run,
    base_dir,
    *,
    version=None,
    warmup=True,
    preprocessor=None,
    encoder=None,
    max_question_length=None,
    max_answer_length=None,
):
    """Write a SavedModel version for TensorFlow Serving.

    Args:
        model_or_run: a run directory written by `keras_match.train`, a loaded `Run`, or a ranking
            `keras.Model` (then `preprocessor`, or `encoder` with `max_question_length` and
            `max_answer_length`, is required).
        base_dir: the model's base path (`BASE`); versions go to `BASE/<version>/`.
        version: positive int; default the next integer after the highest version present.
        warmup: write `assets.extra/tf_serving_warmup_requests` (needs tensorflow-serving-api).
        preprocessor: the model's `keras_match.preprocessing.PairPreprocessor` (bare models only).
        encoder: a `keras_match.text.TextEncoder` or a vocabulary file (bare models only, without
            `preprocessor`).
        max_question_length, max_answer_length: truncation lengths used in training (bare models only).

    Returns:
        pathlib.Path of the written version folder `BASE/<version>`.

    Raises:
        FileExistsError: `BASE/<version>` exists already.
        ValueError: `version` is not a positive integer; a bare model without its preprocessor; a model
            whose inputs the preprocessor does not make.
        ImportError: `warmup=True` without tensorflow-serving-api (`pip install keras-match[serving]`).
        keras_match.storage.WriteError: the version could not be written (full disk, read-only folder); nothing
            is left in `BASE`.
    """
    run = _as_run(model_or_run, encoder, max_question_length, max_answer_length, preprocessor)
    base = pathlib.Path(base_dir)
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 1):
        raise ValueError(f"version must be a positive integer, got {version!r}")
    if version is not None and (base / str(version)).exists():
        raise FileExistsError(f"{base / str(version)} exists: TF Serving versions are never overwritten; pick "
                              "another version")
    archive = build_archive(run)  # fails before anything is written
    records = serving.warmup_requests(base.name or "model", run.max_question_length, run.max_answer_length,
                                      large_batch=CHUNK_SIZE + 1,
                                      num_features=_check_inputs(run),
                                      head=heads.head_of(run.model)) if warmup else None
    with storage.writing(base, also=(tf.errors.OpError,)):
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


def read_metadata(version_dir):
    """The export metadata (`assets.extra/keras_match.json`) of a version folder, as a dict.

    Raises:
        FileNotFoundError: the folder is not a keras-match SavedModel export.
    """
    path = pathlib.Path(version_dir) / METADATA_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {version_dir} is not a SavedModel written by "
                                "keras_match.export.saved_model")
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------------- ONNX


@dataclasses.dataclass
class OnnxExport:
    """The result of `to_onnx`.

    Attributes:
        path: the written `model.onnx`.
        opset: the ONNX opset it was converted with.
        max_abs_diff: the largest |onnxruntime - TensorFlow| score difference over the verification samples.
        num_samples: number of pairs compared.
    """

    path: pathlib.Path
    opset: int
    max_abs_diff: float
    num_samples: int


def onnx_dir_for(version_dir):
    """Where `to_onnx` writes by default: `BASE/onnx/<version>/` for the version folder `BASE/<version>`."""
    version_dir = pathlib.Path(version_dir)
    return version_dir.parent / "onnx" / version_dir.name


def sample_ids(vocab_size, max_question_length, max_answer_length, seed=0, num_features=0):
    """Token-id batches that exercise a matching model: a list of `(question [b, lq], answer [b, la])` int32.

    Includes one full-length pair (batch of one), a batch of seven with mixed lengths (an all-padding row, an
    all-unknown row, rows of different lengths), and a batch of three single-token rows. With
    `num_features > 0` each tuple has a third item, float32 `features [b, num_features]` in [0, 1) (zeros for
    the all-padding rows).
    """
    rng = np.random.default_rng(seed)
    high = max(int(vocab_size), 2)

    def batch(n, length, lengths):
        ids = rng.integers(1, high, size=(n, length), dtype=np.int64).astype(np.int32)
        for row, keep in enumerate(lengths):
            ids[row, keep:] = 0
        return ids

    lq, la = int(max_question_length), int(max_answer_length)
    q7 = batch(7, lq, [lq, 0, 3, 1, lq // 2, lq, 2])
    a7 = batch(7, la, [la, 5, 0, la, 1, la // 3, 2])
    q7[5, :] = text.OOV_ID
    a7[6, :2] = text.OOV_ID
    samples = [
        (batch(1, lq, [lq]), batch(1, la, [la])),
        (q7, a7),
        (batch(3, 1, [1, 1, 1]), batch(3, 1, [1, 1, 1])),
    ]
    if num_features:
        samples = [(q, a, rng.uniform(size=(len(q), int(num_features))).astype(np.float32)) for q, a in samples]
        samples[1][2][1:3] = 0.0  # a pair with an empty side has no overlap
    return samples


def _onnx_problems(model_proto):
    """Nodes that are not standard ONNX ops (tf2onnx leaves unsupported TF ops in the graph)."""
    import onnx

    problems = set()

    def visit(graph):
        for node in graph.node:
            domain = node.domain or ""
            if domain not in ("", "ai.onnx") or not onnx.defs.has(node.op_type):
                problems.add(f"{domain + '.' if domain else ''}{node.op_type}")
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g)
                for subgraph in attribute.graphs:
                    visit(subgraph)

    visit(model_proto.graph)
    return sorted(problems)


def to_onnx(saved_model_dir, output_dir=None, *, opset=MAX_ONNX_OPSET, atol=1e-4, samples=None):
    """Convert the `serve_ids` signature of an exported SavedModel to ONNX and verify it in onnxruntime.

    The SavedModel is loaded back (`tf.saved_model.load`), its `serve_ids` function converted with tf2onnx,
    and the ONNX model run in onnxruntime on `samples` next to the loaded TensorFlow function. tf2onnx reports
    success even when it leaves ops it cannot convert in the graph, so success here means: every node is a
    standard ONNX op, onnxruntime loads the model, and every score is within `atol` of TensorFlow's.

    The ONNX model has inputs `question` int32 [batch, lq] and `answer` int32 [batch, la] (token ids, 0 =
    padding; any batch size and lengths), plus `features` float32 [batch, 4] for models that take the
    word-overlap features, and output `score` float32 [batch]. The output folder also gets the vocabulary, the
    document frequencies of the overlap features (`document_frequencies.tsv`, when used) and the export metadata
    (`keras_match.json`: truncation lengths, lowercase, ids), which a client needs to make the inputs with
    `keras_match.text.TextEncoder.from_file(...).encode` and `keras_match.features.OverlapFeatures.from_file`.

    Args:
        saved_model_dir: a version folder written by `saved_model` (`BASE/<version>`).
        output_dir: the folder to create; default `BASE/onnx/<version>` (see `onnx_dir_for`). It must not exist.
        opset: ONNX opset, at most 18 (`MAX_ONNX_OPSET`).
        atol: the largest accepted |onnxruntime - TensorFlow| score difference.
        samples: list of `(question_ids, answer_ids)` int32 batches (plus float32 `features` for models that
            take them); default `sample_ids(...)` from the export metadata.

    Returns:
        `OnnxExport` (path of `model.onnx`, opset, max_abs_diff, num_samples).

    Raises:
        ExportVerificationError: the conversion failed, left non-ONNX ops, onnxruntime cannot run the model,
            or a score differs from TensorFlow's by more than `atol`. Nothing is written then.
        FileExistsError: `output_dir` exists.
        FileNotFoundError: `saved_model_dir` is not a keras-match export.
        keras_match.storage.WriteError: the folder could not be written (full disk, read-only); nothing is left.
        ValueError: `opset` above 18 or below 1.
        ImportError: tf2onnx / onnxruntime missing (`pip install keras-match[onnx]`).
    """
    if isinstance(opset, bool) or not isinstance(opset, int) or not 1 <= opset <= MAX_ONNX_OPSET:
        raise ValueError(f"opset must be an integer from 1 to {MAX_ONNX_OPSET} (tf2onnx 1.17), got {opset!r}")
    try:
        import onnx
        import onnxruntime
        import tf2onnx
    except ImportError as error:
        raise ImportError(f"ONNX export needs tf2onnx, onnx and onnxruntime: pip install keras-match[onnx] "
                          f"({error})") from error
    saved_model_dir = pathlib.Path(saved_model_dir)
    metadata = read_metadata(saved_model_dir)
    target = pathlib.Path(output_dir) if output_dir is not None else onnx_dir_for(saved_model_dir)
    if target.exists():
        raise FileExistsError(f"{target} exists: ONNX exports are never overwritten")
    num_features = int(metadata.get("num_features", 0))
    if samples is None:
        samples = sample_ids(metadata["vocab_size"], metadata["max_question_length"],
                             metadata["max_answer_length"], num_features=num_features)

    loaded = tf.saved_model.load(str(saved_model_dir))
    function = getattr(loaded, signatures.IDS_SIGNATURE)
    head = metadata.get("head", "softmax")
    input_signature = tuple(signatures.tensor_specs(
        signatures.signature_inputs(num_features, head)[signatures.IDS_SIGNATURE]))
    (output_name,) = signatures.signature_outputs(head)[signatures.IDS_SIGNATURE]
    expected_names = sorted(spec.name for spec in input_signature)
    # tf2onnx's progress messages and TensorFlow's harmless "Issue encountered when serializing
    # table_initializer" warnings (the graph freezing meets the vocabulary table) are not for the user.
    loggers = [logging.getLogger(name) for name in ("tf2onnx", "tensorflow")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        model_proto, _ = tf2onnx.convert.from_function(function, input_signature=input_signature, opset=opset)
    except Exception as error:  # tf2onnx raises many kinds of errors
        raise ExportVerificationError(f"tf2onnx could not convert {saved_model_dir}/serve_ids: {error}") from error
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    problems = _onnx_problems(model_proto)
    if problems:
        raise ExportVerificationError(
            f"tf2onnx left ops that are not ONNX ops in the graph: {problems}; change the layer that uses them"
        )
    try:
        onnx.checker.check_model(model_proto)
        session = onnxruntime.InferenceSession(model_proto.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
    except Exception as error:
        raise ExportVerificationError(f"onnxruntime cannot load the converted model: {error}") from error
    names = sorted(i.name for i in session.get_inputs())
    if names != expected_names or [o.name for o in session.get_outputs()] != [output_name]:
        raise ExportVerificationError(f"unexpected ONNX inputs {names} / outputs "
                                      f"{[o.name for o in session.get_outputs()]}")
    worst, count = 0.0, 0
    signature = loaded.signatures[signatures.IDS_SIGNATURE]
    for sample in samples:
        if len(sample) != len(input_signature):
            raise ValueError(f"each sample must hold {len(input_signature)} arrays "
                             f"({', '.join(spec.name for spec in input_signature)}), got {len(sample)}")
        feeds = {spec.name: np.asarray(value, dtype=spec.dtype.as_numpy_dtype)
                 for spec, value in zip(input_signature, sample)}
        question_ids, answer_ids = feeds["question"], feeds["answer"]
        expected = signature(**{k: tf.constant(v) for k, v in feeds.items()})[output_name].numpy()
        try:
            (got,) = _run_onnx(session, feeds, output_name)
        except Exception as error:
            raise ExportVerificationError(f"onnxruntime failed on ids of shape {question_ids.shape} / "
                                          f"{answer_ids.shape}: {error}") from error
        got = np.asarray(got)
        if got.shape != expected.shape or not np.isfinite(got).all():
            raise ExportVerificationError(f"onnxruntime returned {got!r} where TensorFlow returned {expected!r}")
        worst = max(worst, float(np.max(np.abs(got - expected), initial=0.0)))
        count += len(expected)
    if not worst <= atol:
        raise ExportVerificationError(
            f"the ONNX model's scores differ from TensorFlow's by up to {worst:.3g} (> {atol:g}) on {count} sample "
            "pairs; an op is converted with different semantics"
        )

    with storage.writing(target):  # a full disk or a read-only folder: one line naming the folder
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=target.parent))
        try:
            staged = tmp / "onnx"
            staged.mkdir()
            (staged / ONNX_FILE).write_bytes(model_proto.SerializeToString())
            vocabulary = _asset(saved_model_dir, metadata["vocabulary_file"])
            shutil.copyfile(vocabulary, staged / "vocabulary.txt")
            onnx_inputs = {"question": "int32 [batch, lq]", "answer": "int32 [batch, la]"}
            extra = {}
            if num_features:
                onnx_inputs["features"] = f"float32 [batch, {num_features}]"
                frequencies = dict(metadata["overlap_features"], document_frequencies_file="document_frequencies.tsv")
                shutil.copyfile(_asset(saved_model_dir, metadata["overlap_features"]["document_frequencies_file"]),
                                staged / "document_frequencies.tsv")
                extra["overlap_features"] = frequencies
            onnx_metadata = dict(metadata, vocabulary_file="vocabulary.txt", **extra, onnx={
                "opset": opset, "signature": serving.IDS_SIGNATURE, "max_abs_diff": worst, "num_samples": count,
                "saved_model": str(saved_model_dir), "inputs": onnx_inputs,
                "outputs": {output_name: "float32 [batch]" if output_name == "score" else "float32 [batch, classes]"}})
            (staged / "keras_match.json").write_text(json.dumps(onnx_metadata, indent=2) + "\n", encoding="utf-8")
            if target.exists():
                raise FileExistsError(f"{target} appeared while exporting")
            os.rename(staged, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return OnnxExport(path=target / ONNX_FILE, opset=opset, max_abs_diff=worst, num_samples=count)


def _asset(saved_model_dir, name):
    """The asset file `name` of an exported version (found by name: the exporter keeps asset file names)."""
    path = pathlib.Path(saved_model_dir) / "assets" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: the export's assets lack {name}")
    return path


def _run_onnx(session, feeds, output_name="score"):
    """One onnxruntime call (a separate function so tests can check that a wrong result is caught)."""
    return session.run([output_name], feeds)
