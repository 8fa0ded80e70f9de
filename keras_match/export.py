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

Signatures of the SavedModel (names, inputs and outputs are tabled in `keras_match.signatures` and written to
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
from keras_match import precision as precision_lib
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
    "sample_inputs",
    "signature_table",
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

    def score_chunk(texts):
        # the preprocessor's inputs, ids cut to the chunk's longest text as training batches are
        inputs = preprocessor.trim_padding(preprocessor(texts))
        return run_model(*[inputs[name] for name in id_names])

    def score_texts(texts):
        # Scores chunk after chunk: the memory a request of thousands of examples needs is that of one chunk.
        # An empty batch never reaches the model.
        texts = {name: tf.identity(texts[name]) for name in text_names}
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

    table = signature_table(run)
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
        keras_match.storage.WriteError: the version could not be written (full disk, read-only folder); nothing
            is left in `BASE`.
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


_SAMPLE_LENGTHS = (lambda n: [n, 0, 3, 1, n // 2, n, 2], lambda n: [n, 5, 0, n, 1, n // 3, 2])
"""The token counts of the rows of the mixed batch, for the first, second, third ... token-id input in turn."""


def sample_inputs(metadata, seed=0) -> list:
    """Model-input batches that exercise an exported model's `serve_ids`: a list of `{input: array}`.

    Made from the export metadata's `serve_ids` table, vocabulary size and truncation lengths: one batch of one
    full-length example, a batch of seven with mixed lengths (all-padding rows, an all-unknown row, rows of
    different lengths; each token-id input has its own length pattern), and a batch of three single-token
    examples. Token-id inputs are int32 `[b, ..., length]` (ids from 1 below the vocabulary size); float inputs
    (pair features) are float32 in [0, 1), zero for rows 1-2 of the mixed batch (a pair with an empty side has
    no overlap).
    """
    rng = np.random.default_rng(seed)
    high = max(int(metadata["vocab_size"]), 2)
    table = metadata["signatures"][signatures.IDS_SIGNATURE]
    lengths = metadata.get("sequence_lengths") or {  # exports written before the metadata had it: pair models
        key: metadata[f"max_{key}_length"] for key in table if f"max_{key}_length" in metadata}
    id_inputs = [name for name, (dtype, _) in table.items() if dtype.startswith("int")]

    def ids(name, n, counts):
        dtype, shape = table[name]
        length = int(lengths.get(name, 8))
        array = rng.integers(1, high, size=[n] + [2] * (len(shape) - 2) + [length], dtype=np.int64)
        array = array.astype(dtype)
        for row, keep in enumerate(counts):
            array[row, ..., keep:] = 0
        return array

    def other(name, n):
        dtype, shape = table[name]
        return rng.uniform(size=[n] + [int(d) for d in shape[1:]]).astype(dtype)

    samples = []
    for n, pattern in ((1, lambda k, length: [length]), (7, lambda k, length: _SAMPLE_LENGTHS[k % 2](length)),
                       (3, lambda k, length: [1, 1, 1])):
        batch = {}
        for name in table:
            if name in id_inputs:
                k = id_inputs.index(name)
                batch[name] = ids(name, n, pattern(k, int(lengths.get(name, 8))))
                if n == 7:  # unknown words: a whole row of the first input, two words of the second
                    if k == 0:
                        batch[name][5, ...] = text.OOV_ID
                    elif k == 1:
                        batch[name][6, ..., :2] = text.OOV_ID
            else:
                batch[name] = other(name, n)
                if n == 7:
                    batch[name][1:3] = 0.0
        samples.append(batch)
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


ONNX_BFLOAT16 = ("ONNX export takes a float32 SavedModel: tf2onnx 1.17 converts a mixed_bfloat16 graph into one "
                 "whose nodes mix float16 and bfloat16 tensors, which onnxruntime refuses to load; export with "
                 "--precision float32 (the default) for ONNX")


def check_onnx_precision(precision):
    """Raises ValueError (`ONNX_BFLOAT16`) for a precision the ONNX export cannot convert (`mixed_bfloat16`)."""
    if precision != "float32":
        raise ValueError(ONNX_BFLOAT16)


def to_onnx(saved_model_dir, output_dir=None, *, opset=MAX_ONNX_OPSET, atol=1e-4, samples=None):
    """Convert the `serve_ids` signature of an exported SavedModel to ONNX and verify it in onnxruntime.

    The SavedModel is loaded back (`tf.saved_model.load`), its `serve_ids` function converted with tf2onnx,
    and the ONNX model run in onnxruntime on `samples` next to the loaded TensorFlow function. tf2onnx reports
    success even when it leaves ops it cannot convert in the graph, so success here means: every node is a
    standard ONNX op, onnxruntime loads the model, and every score is within `atol` of TensorFlow's.

    The ONNX model has the inputs of `serve_ids` (for a pair model `question` int32 [batch, lq] and `answer` int32
    [batch, la], token ids, 0 = padding, any batch size and lengths, plus `features` float32 [batch, f] for models
    with pair features) and its numeric output (`score` float32 [batch] for a ranker). The output folder also
    gets the export's assets (the vocabulary and, with pair features, `document_frequencies.tsv`) and the export
    metadata (`keras_match.json`: truncation lengths, lowercase, ids), which a client needs to make the inputs
    with `keras_match.text.TextEncoder.from_file(...).encode` and `keras_match.features.OverlapFeatures.from_file`.

    Args:
        saved_model_dir: a version folder written by `saved_model` (`BASE/<version>`).
        output_dir: the folder to create; default `BASE/onnx/<version>` (see `onnx_dir_for`). It must not exist.
        opset: ONNX opset, at most 18 (`MAX_ONNX_OPSET`).
        atol: the largest accepted |onnxruntime - TensorFlow| score difference.
        samples: list of `{input: array}` batches of the `serve_ids` inputs (or tuples in its order); default
            `sample_inputs(metadata)`.

    Returns:
        `OnnxExport` (path of `model.onnx`, opset, max_abs_diff, num_samples).

    Raises:
        ExportVerificationError: the conversion failed, left non-ONNX ops, onnxruntime cannot run the model,
            or a score differs from TensorFlow's by more than `atol`. Nothing is written then.
        FileExistsError: `output_dir` exists.
        FileNotFoundError: `saved_model_dir` is not a keras-match export.
        keras_match.storage.WriteError: the folder could not be written (full disk, read-only); nothing is left.
        ValueError: `opset` above 18 or below 1; an export in mixed_bfloat16 (`ONNX_BFLOAT16`: tf2onnx cannot
            convert it into a model onnxruntime loads).
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
    check_onnx_precision(metadata.get("precision", "float32"))
    target = pathlib.Path(output_dir) if output_dir is not None else onnx_dir_for(saved_model_dir)
    if target.exists():
        raise FileExistsError(f"{target} exists: ONNX exports are never overwritten")
    if samples is None:
        samples = sample_inputs(metadata)

    loaded = tf.saved_model.load(str(saved_model_dir))
    function = getattr(loaded, signatures.IDS_SIGNATURE)
    ids_table = {name: (dtype, shape) for name, (dtype, shape) in
                 metadata["signatures"][signatures.IDS_SIGNATURE].items()}
    input_signature = tuple(signatures.tensor_specs(ids_table))
    # the first output is the scores; others (response selection's `choice`) are checked against TensorFlow's too
    output_names = list(metadata["outputs"][signatures.IDS_SIGNATURE])
    # tf2onnx's progress messages and TensorFlow's harmless "Issue encountered when serializing
    # table_initializer" warnings (the graph freezing meets the vocabulary table) are not for the user.
    loggers = [logging.getLogger(name) for name in ("tf2onnx", "tensorflow")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    stood_in = []
    try:
        try:
            model_proto, stood_in = _convert_with_stand_ins(tf2onnx, function, input_signature, opset)
        except Exception:  # noqa: BLE001  (tf2onnx raises many kinds of errors) the usual conversion says why
            model_proto, stood_in = None, []
        if model_proto is not None:
            try:
                worst, count = _verify_onnx(model_proto, loaded, ids_table, input_signature, output_names, samples,
                                            atol)
            except ExportVerificationError:  # converted differently around a stand-in: convert the usual way
                model_proto, stood_in = None, []
        if model_proto is None:
            try:
                model_proto, _ = tf2onnx.convert.from_function(function, input_signature=input_signature,
                                                               opset=opset)
            except Exception as error:  # tf2onnx raises many kinds of errors
                raise ExportVerificationError(f"tf2onnx could not convert {saved_model_dir}/serve_ids: "
                                              f"{error}") from error
            worst, count = _verify_onnx(model_proto, loaded, ids_table, input_signature, output_names, samples, atol)
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    output_name, *other_outputs = output_names

    with storage.writing(target):  # a full disk or a read-only folder: one line naming the folder
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=target.parent))
        try:
            staged = tmp / "onnx"
            staged.mkdir()
            (staged / ONNX_FILE).write_bytes(model_proto.SerializeToString())
            # the assets a client needs to make the inputs (vocabulary, document frequencies), under their names
            for asset in sorted((saved_model_dir / "assets").iterdir()):
                if asset.is_file():
                    shutil.copyfile(asset, staged / asset.name)
            onnx_metadata = dict(metadata, onnx={
                "opset": opset, "stood_in": stood_in, "signature": signatures.IDS_SIGNATURE, "max_abs_diff": worst,
                "num_samples": count,
                "saved_model": str(saved_model_dir),
                "inputs": {name: _describe_spec(spec) for name, spec in ids_table.items()},
                "outputs": {name: _describe_spec(metadata["outputs"][signatures.IDS_SIGNATURE][name])
                            for name in (output_name, *other_outputs)}})
            (staged / "keras_match.json").write_text(json.dumps(onnx_metadata, indent=2) + "\n", encoding="utf-8")
            if target.exists():
                raise FileExistsError(f"{target} appeared while exporting")
            os.rename(staged, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return OnnxExport(path=target / ONNX_FILE, opset=opset, max_abs_diff=worst, num_samples=count)


ONNX_STAND_IN_BYTES = 1 << 20
"""A constant of at least this many bytes that only embedding lookups (`GatherV2`, axis 0) read is converted to
ONNX as a one-row stand-in and put back after the conversion (`_convert_with_stand_ins`)."""


def _convert_with_stand_ins(tf2onnx, function, input_signature, opset):
    """Convert `function` with tf2onnx with each large embedding matrix replaced by a one-row stand-in, then put
    the matrices back into the ONNX initializers of the stand-ins.

    tf2onnx copies the whole graph, constants included, for each of its optimizer passes: a 400,000-word GloVe
    matrix (80 MB) made the conversion of a trained preset take 55-81 s and 4.2-9.6 GB of memory, and 13-35 s and
    about 3.1 GB with the stand-ins (this project's 2-core machine, `benchmarks/onnx_conversion.py`, file
    `benchmarks/results/export/onnx_conversion.json`). The frozen graph is tf2onnx's own
    (`tf2onnx.tf_loader.from_function`, as `tf2onnx.convert.from_function` makes it) and it is converted by
    `tf2onnx.convert.from_graph_def`; a matrix is stood in for only when every reader of it is a `GatherV2` on
    axis 0 that takes it as its params, and each distinct matrix gets a stand-in of its own value, so that
    tf2onnx merges the stand-ins of one matrix read twice (a question and an answer encoder) as it merges the
    matrix itself, and never two different matrices.

    Returns:
        `(model_proto, names)`: the converted model with the matrices back and the names of the constants stood
        in for; `(None, [])` when the graph has no such constant, when a stand-in's initializer is not found in
        the converted model (tf2onnx folded it into another constant), or when a stand-in is left under another
        name. The caller verifies the model and converts the usual way when it is refused.
    """
    from onnx import numpy_helper

    concrete = function.get_concrete_function(*input_signature)
    inputs = [t.name for t in concrete.inputs if t.dtype != tf.resource]
    outputs = [t.name for t in concrete.outputs if t.dtype != tf.resource]
    graph_def = tf2onnx.tf_loader.from_function(concrete, inputs, outputs)
    readers = {}
    for node in graph_def.node:
        for position, source in enumerate(node.input):
            readers.setdefault(source.split(":")[0].lstrip("^"), []).append((node, position))
    constants = {node.name: node for node in graph_def.node}

    def embedding_only(name):
        found = readers.get(name, [])
        return bool(found) and all(
            node.op == "GatherV2" and position == 0 and not ("batch_dims" in node.attr and node.attr["batch_dims"].i)
            and _constant_value(constants.get(node.input[2].split(":")[0])) == 0 for node, position in found)

    values, stand_ins = {}, {}
    for node in graph_def.node:
        if node.op != "Const" or len(node.attr["value"].tensor.tensor_content) < ONNX_STAND_IN_BYTES:
            continue
        value = tf.make_ndarray(node.attr["value"].tensor)
        if value.ndim != 2 or value.dtype.kind != "f" or not embedding_only(node.name):
            continue
        digest = (value.dtype.str, value.shape, node.attr["value"].tensor.tensor_content)
        marker = stand_ins.setdefault(digest, np.full((1, value.shape[1]), 0.5 + len(stand_ins), value.dtype))
        values[node.name] = (value, marker)
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(marker))
    if not values:
        return None, []
    renames = tf2onnx.convert.tensor_names_from_structed(concrete, inputs, outputs)
    proto, _ = tf2onnx.convert.from_graph_def(graph_def, input_names=inputs, output_names=outputs, opset=opset,
                                              tensors_to_rename=renames)
    restored = set()
    for index, initializer in enumerate(proto.graph.initializer):
        name = initializer.name[:-2] if initializer.name.endswith(":0") else initializer.name
        if name in values:
            value, marker = values[name]
            if not np.array_equal(numpy_helper.to_array(initializer), marker):
                return None, []
            proto.graph.initializer[index].CopyFrom(numpy_helper.from_array(value, initializer.name))
            restored.add(name)
    # a matrix read twice is one initializer after tf2onnx merged the equal stand-ins: each matrix is back once,
    # and no stand-in is left under another name
    markers = {values[name][1].tobytes() for name in values}
    if {values[name][1].tobytes() for name in restored} != markers or any(
            numpy_helper.to_array(initializer).tobytes() in markers for initializer in proto.graph.initializer
            if list(initializer.dims)[:1] == [1]):
        return None, []
    return proto, sorted(restored)


def _constant_value(node):
    """The scalar value of a `Const` node, else None."""
    if node is None or node.op != "Const":
        return None
    value = tf.make_ndarray(node.attr["value"].tensor)
    return value.item() if value.size == 1 else None


def _verify_onnx(model_proto, loaded, ids_table, input_signature, output_names, samples, atol):
    """Check a converted model: only ONNX ops, loadable by onnxruntime, the `serve_ids` inputs and outputs, and
    every sample's scores within `atol` of the SavedModel's. Returns `(max_abs_diff, num_samples)`.

    Raises:
        ExportVerificationError: a check failed (the message says which).
        ValueError: a sample lacks an input of the table.
    """
    import onnx
    import onnxruntime

    output_name, *other_outputs = output_names
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
    if names != sorted(spec.name for spec in input_signature) or \
            sorted(o.name for o in session.get_outputs()) != sorted(output_names):
        raise ExportVerificationError(f"unexpected ONNX inputs {names} / outputs "
                                      f"{[o.name for o in session.get_outputs()]}")
    worst, count = 0.0, 0
    signature = loaded.signatures[signatures.IDS_SIGNATURE]
    for sample in samples:
        if not isinstance(sample, dict):  # a tuple in the table's order
            sample = dict(zip(ids_table, sample)) if len(sample) == len(ids_table) else {}
        if sorted(sample) != sorted(ids_table):
            raise ValueError(f"each sample must hold the arrays {list(ids_table)}, got {sorted(sample)}")
        feeds = {spec.name: np.asarray(sample[spec.name], dtype=spec.dtype.as_numpy_dtype)
                 for spec in input_signature}
        reference = signature(**{k: tf.constant(v) for k, v in feeds.items()})
        expected = reference[output_name].numpy()
        try:
            (got,) = _run_onnx(session, feeds, output_name)
        except Exception as error:
            shapes = ", ".join(f"{k} {v.shape}" for k, v in feeds.items())
            raise ExportVerificationError(f"onnxruntime failed on inputs of shape {shapes}: {error}") from error
        got = np.asarray(got)
        if got.shape != expected.shape or not np.isfinite(got).all():
            raise ExportVerificationError(f"onnxruntime returned {got!r} where TensorFlow returned {expected!r}")
        worst = max(worst, float(np.max(np.abs(got - expected), initial=0.0)))
        count += len(expected)
        for name in other_outputs:
            _check_other_output(session, feeds, name, reference[name].numpy(), expected, atol)
    if not worst <= atol:
        raise ExportVerificationError(
            f"the ONNX model's scores differ from TensorFlow's by up to {worst:.3g} (> {atol:g}) on {count} sample "
            "pairs; an op is converted with different semantics"
        )
    return worst, count


def _describe_spec(spec):
    """`"int32 [batch, n]"` for the table entry `("int32", [None, None])` (the first dimension is the batch)."""
    dtype, shape = spec
    dims = ["batch"] + ["n" if d is None else str(d) for d in list(shape)[1:]]
    return f"{dtype} [{', '.join(dims)}]"


def _check_other_output(session, feeds, name, wanted, scores, atol):
    """An ONNX output beside the scores equals TensorFlow's: floats to `atol`; an index into the scores' last axis
    (response selection's `choice`) exactly, or at a score equal to the chosen one's within `atol` (a near tie).

    Raises:
        ExportVerificationError: it differs.
    """
    (got,) = _run_onnx(session, feeds, name)
    got = np.asarray(got)
    if got.shape != wanted.shape:
        raise ExportVerificationError(f"onnxruntime returned {name} of shape {got.shape}, TensorFlow {wanted.shape}")
    if np.issubdtype(wanted.dtype, np.floating):
        same = np.abs(got - wanted) <= atol
    else:
        rows = np.arange(len(wanted))
        picked = np.clip(got.astype(np.int64), 0, scores.shape[-1] - 1)
        same = (got == wanted) | (np.abs(scores[rows, picked] - scores[rows, wanted]) <= atol)
    if not np.all(same):
        raise ExportVerificationError(f"onnxruntime's {name} {got!r} differs from TensorFlow's {wanted!r}")


def _run_onnx(session, feeds, output_name="score"):
    """One onnxruntime call (a separate function so tests can check that a wrong result is caught)."""
    return session.run([output_name], feeds)
