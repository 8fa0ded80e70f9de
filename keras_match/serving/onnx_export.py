"""ONNX export: the `serve_ids` signature of a SavedModel export converted with tf2onnx and checked in
onnxruntime against TensorFlow (`to_onnx`; `keras-match export --onnx`). The layout it writes is described in
`keras_match.serving.export`."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pathlib
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from keras_match import text
from keras_match.artifacts import storage
from keras_match.serving import signatures

from keras_match.serving.metadata import ExportVerificationError, read_metadata
from keras_match.serving.onnx_verify import verify_onnx as _verify_onnx

__all__ = [
    "MAX_ONNX_OPSET",
    "ONNX_FILE",
    "ONNX_BFLOAT16",
    "OnnxExport",
    "onnx_dir_for",
    "sample_inputs",
    "check_onnx_precision",
    "to_onnx",
]

MAX_ONNX_OPSET = 18
"""The highest ONNX opset tf2onnx 1.17 writes."""


ONNX_FILE = "model.onnx"


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
    with `keras_match.text.TextEncoder.from_file(...).encode` and `keras_match.text.features.OverlapFeatures.from_file`.

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
        keras_match.artifacts.storage.WriteError: the folder could not be written (full disk, read-only); nothing is
            left.
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
                model_proto, _ = _converting(lambda: tf2onnx.convert.from_function(
                    function, input_signature=input_signature, opset=opset))
            except Exception as error:  # tf2onnx raises many kinds of errors
                raise ExportVerificationError(f"tf2onnx could not convert {saved_model_dir}/serve_ids: "
                                              f"{error}") from error
            worst, count = _verify_onnx(model_proto, loaded, ids_table, input_signature, output_names, samples, atol)
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    output_name, *other_outputs = output_names

    # a full disk or a read-only folder: one line naming the folder, and no empty folder left
    with storage.folders_made_for(target.parent), storage.writing(target):
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
    matrix (80 MB) made the conversion of a GloVe preset take 32-92 s and 4.7-6.5 GB of memory, and 6-22 s and
    1.7-3.0 GB with the stand-ins (this project's 2-core machine, `benchmarks/onnx_conversion.py`, file
    `benchmarks/results/export/onnx_conversion.json`). TensorFlow's graph optimizer (grappler), which tf2onnx runs
    on the frozen graph first, copies the constants too, so the matrices are stood in for in the frozen graph before
    it runs (`_frozen_with_early_stand_ins`), and only if those stand-ins are not accepted in the optimized graph
    that tf2onnx makes itself (`tf2onnx.tf_loader.from_function`, as `tf2onnx.convert.from_function` makes it).
    The optimized graph is converted by `tf2onnx.convert.from_graph_def`; a matrix is stood in for only when every
    reader of it there is a `GatherV2` on axis 0 that takes it as its params, and each distinct matrix gets a
    stand-in of its own value, so that tf2onnx merges the stand-ins of one matrix read twice (a question and an
    answer encoder) as it merges the matrix itself, and never two different matrices.

    Returns:
        `(model_proto, names)`: the converted model with the matrices back and the names of the constants stood
        in for; `(None, [])` when the graph has no such constant, when a stand-in's initializer is not found in
        the converted model (tf2onnx folded it into another constant), or when a stand-in is left under another
        name. The caller verifies the model and converts the usual way when it is refused.
    """
    concrete = function.get_concrete_function(*input_signature)
    if not any(_large_matrix(variable) for variable in concrete.variables):
        return None, []  # nothing to stand in for: not worth freezing the graph twice
    inputs = [t.name for t in concrete.inputs if t.dtype != tf.resource]
    outputs = [t.name for t in concrete.outputs if t.dtype != tf.resource]
    if ONNX_EARLY_STAND_INS:
        try:
            graph_def, values, lifted = _frozen_with_early_stand_ins(tf2onnx, concrete, inputs, outputs)
        except Exception:  # noqa: BLE001  (freezing or grappler failed on the stand-ins) stand in after grappler
            graph_def, values, lifted = None, {}, {}
        if values:
            try:
                made = _convert_stood_in(tf2onnx, concrete, graph_def, values, inputs, outputs, opset, lifted)
            except Exception:  # noqa: BLE001  (tf2onnx failed on a lifted weight) stand in after grappler
                made = (None, [])
            if made[0] is not None:
                return made
    graph_def = tf2onnx.tf_loader.from_function(concrete, inputs, outputs)
    values = _stand_in_embeddings(graph_def)
    if not values:
        return None, []
    return _convert_stood_in(tf2onnx, concrete, graph_def, values, inputs, outputs, opset)


def _lookup_only(graph_def):
    """A predicate on constant names of `graph_def`: whether every reader of it is a `GatherV2` on axis 0 taking it
    as its params (an embedding lookup)."""
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

    return embedding_only


def _float_constants(graph_def, min_bytes):
    """`(node, value)` for each top-level floating-point `Const` of `graph_def` of at least `min_bytes`."""
    for node in graph_def.node:
        if node.op == "Const" and len(node.attr["value"].tensor.tensor_content) >= min_bytes:
            value = tf.make_ndarray(node.attr["value"].tensor)
            if value.dtype.kind == "f":
                yield node, value


def _stand_in(graph_def, accept):
    """Replace each large floating-point matrix constant of `graph_def` (at least `ONNX_STAND_IN_BYTES`, in its
    top-level nodes) for which `accept(name, matrix)` holds by a one-row stand-in, one distinct value per distinct
    matrix: `{name: (matrix, stand-in)}`."""
    values, stand_ins = {}, {}
    for node, value in _float_constants(graph_def, ONNX_STAND_IN_BYTES):
        if value.ndim != 2 or not accept(node.name, value):
            continue
        digest = (value.dtype.str, value.shape, node.attr["value"].tensor.tensor_content)
        marker = stand_ins.setdefault(digest, np.full((1, value.shape[1]), 0.5 + len(stand_ins), value.dtype))
        values[node.name] = (value, marker)
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(marker))
    # the shapes a frozen graph records (`add_shapes`) of the matrices and what passes them on must agree
    shapes = {tuple(value.shape): marker.shape for value, marker in values.values()}
    for node in graph_def.node if shapes else []:
        for shape in node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else []:
            if tuple(d.size for d in shape.dim) in shapes:
                shape.CopyFrom(tf.TensorShape(shapes[tuple(d.size for d in shape.dim)]).as_proto())
    return values


def _stand_in_embeddings(graph_def):
    """`_stand_in` for the matrices of tf2onnx's optimized graph that only embedding lookups read."""
    lookup_only = _lookup_only(graph_def)
    return _stand_in(graph_def, lambda name, value: lookup_only(name))


ONNX_EARLY_STAND_INS = True
"""Whether `_convert_with_stand_ins` stands in for the matrices before TensorFlow's graph optimizer (grappler) runs
on the frozen graph (`_frozen_with_early_stand_ins`), and not only after it, where grappler still handles them."""


VOCABULARY_ROWS_PER_COLUMN = 16
"""Before grappler, only a matrix with at least this many times as many rows as columns is stood in for: a
vocabulary's embedding (GloVe's 400,000 x 50, MiniLM's 30,522 x 384), not a dense layer's kernel (MiniLM's
1,536 x 384), which would change the shapes grappler infers. Whether it is only looked up is checked after."""


def _frozen_with_early_stand_ins(tf2onnx, concrete, inputs, outputs):
    """Freeze `concrete` as `tf2onnx.tf_loader.from_function` does (with its way round a graph that assigns a
    variable, as a Keras LSTM with dropout does), but stand in for every large matrix constant
    (`VOCABULARY_ROWS_PER_COLUMN`) before grappler optimizes the frozen graph, then find the stand-ins in the
    optimized graph by their values.

    Grappler copies the graph, constants included, for its passes: on a preset with 400,000 GloVe words (80 MB)
    it was about two fifths of the conversion's time with the stand-ins put in after it. Before grappler has
    inlined the model's functions a constant's readers cannot be told, so every vocabulary-shaped matrix is stood
    in for, and the stand-ins are accepted only if each is found in the optimized graph and read only by embedding
    lookups there (`_lookup_only`).

    Returns:
        `(graph_def, {name: (matrix, stand-in)})` with names of the optimized graph; `(None, {})` when a stand-in
        is not accepted (the caller then stands in after grappler, as before).
    """
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    loader = tf2onnx.tf_loader
    try:
        graph_def = convert_variables_to_constants_v2(concrete, lower_control_flow=False,
                                                      aggressive_inlining=True).graph.as_graph_def(add_shapes=True)
    except ValueError as error:  # a variable assigned in the graph (a Keras LSTM's dropout seed): as tf2onnx does
        if "incompatible with expected resource" not in str(error):
            raise
        graph_def = loader.fix_freezing_errors(loader.convert_variables_to_constants_large_model(concrete))
    graph_def = loader.fix_freezing_errors_part2(graph_def)
    stood_in = _stand_in(graph_def, lambda name, value: value.shape[0] >= VOCABULARY_ROWS_PER_COLUMN * value.shape[1])
    if not stood_in:
        return None, {}, {}
    lifted = _lift_weights(graph_def) if ONNX_LIFT_BYTES is not None else {}
    with tf.Graph().as_default() as graph, tf2onnx.tf_loader.tf_session(graph=graph) as session:
        tf.import_graph_def(graph_def, name="")
        inputs = tf2onnx.tf_loader.inputs_without_resource(session, inputs)
        graph_def = tf2onnx.tf_loader.tf_optimize(inputs + [f"{name}:0" for name in lifted], outputs, graph_def)
    kept = {node.name for node in graph_def.node if node.op == "Placeholder"}
    lifted = {name: value for name, value in lifted.items() if name in kept}  # grappler drops an unread one
    markers = {marker.tobytes(): (value, marker) for value, marker in stood_in.values()}
    values = {}
    for node in graph_def.node:
        if node.op == "Const" and node.attr["value"].tensor.tensor_shape.dim[:1] and \
                node.attr["value"].tensor.tensor_shape.dim[0].size == 1:
            found = markers.get(tf.make_ndarray(node.attr["value"].tensor).tobytes())
            if found is not None:
                values[node.name] = found
    if {marker.tobytes() for _, marker in values.values()} != set(markers) or \
            not all(map(_lookup_only(graph_def), values)):
        return None, {}, {}
    return graph_def, values, lifted


ONNX_LIFT_BYTES = 1 << 18
"""Before grappler, every other floating-point constant of at least this many bytes and two or more dimensions (a
dense layer's kernel: MiniLM's 384 x 384 and 384 x 1,536, 0.6 and 2.4 MB) becomes a graph input of its own shape
for the conversion, and an ONNX initializer after it (`_lift_weights`); None turns it off."""


def _lift_weights(graph_def):
    """Turn each floating-point `Const` of `graph_def` with two or more dimensions and at least `ONNX_LIFT_BYTES`
    into a `Placeholder` of its dtype and shape, in place: `{name: value}`.

    Grappler and tf2onnx copy every constant for each of their passes (tf2onnx serializes every node again after
    each optimizer): over MiniLM's 21 M weights outside the embedding that was 20 of the 56 s of a conversion. A
    placeholder has no value to copy, and its full shape is what shape inference reads; the ops that read a weight
    are converted as they read an input (a transpose tf2onnx would have folded into the constant stays an op,
    which onnxruntime folds when it loads the model, its initializers being constants)."""
    lifted = {}
    for node, value in _float_constants(graph_def, ONNX_LIFT_BYTES):
        if value.ndim < 2:
            continue
        lifted[node.name] = value
        shapes = node.attr["_output_shapes"] if "_output_shapes" in node.attr else None
        dtype = node.attr["dtype"].type
        node.op = "Placeholder"
        del node.input[:]
        node.attr.clear()
        node.attr["dtype"].type = dtype
        node.attr["shape"].shape.CopyFrom(tf.TensorShape(value.shape).as_proto())
        if shapes is not None:
            node.attr["_output_shapes"].CopyFrom(shapes)
    return lifted


def _convert_stood_in(tf2onnx, concrete, graph_def, values, inputs, outputs, opset, lifted=None):
    """Convert the optimized `graph_def` whose matrices `values` are stood in for, and put the matrices back into
    the ONNX initializers (see `_convert_with_stand_ins`); the weights `lifted` into placeholders
    (`_lift_weights`) are graph inputs for the conversion and initializers after it."""
    from onnx import numpy_helper

    renames = tf2onnx.convert.tensor_names_from_structed(concrete, inputs, outputs)
    weights = {f"{name}:0": value for name, value in (lifted or {}).items()}
    proto, _ = _converting(lambda: tf2onnx.convert.from_graph_def(
        graph_def, input_names=inputs + list(weights), output_names=outputs, opset=opset, tensors_to_rename=renames))
    if weights:
        found = [graph_input for graph_input in proto.graph.input if graph_input.name in weights]
        if len(found) != len(weights):
            return None, []
        for graph_input in found:
            proto.graph.input.remove(graph_input)
        proto.graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in weights.items())
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


def _large_matrix(variable):
    """Whether a variable is a floating-point matrix of at least `ONNX_STAND_IN_BYTES` (an embedding matrix)."""
    shape, dtype = variable.shape, variable.dtype
    return (shape.rank == 2 and dtype.is_floating and shape.is_fully_defined()
            and shape.num_elements() * dtype.size >= ONNX_STAND_IN_BYTES)


CATCH_ERRORS = "TF2ONNX_CATCH_ERRORS"
"""tf2onnx's environment variable: with "FALSE" its graph optimizers raise instead of being skipped, and it no
longer copies the whole graph before each optimizer pass to have something to go back to."""


def _converting(convert):
    """`convert()` (a tf2onnx conversion) with tf2onnx's optimizers raising (`CATCH_ERRORS`), then, if that
    fails, again as tf2onnx converts by default (an optimizer that fails is skipped).

    The copies tf2onnx makes to skip a failing optimizer took a third to a half of converting a zoo entry (tf2onnx
    1.17, 4-25 s an entry); no optimizer fails on the zoo's models. A user who set the variable gets their
    setting, once. The variable is set for the whole process while the conversion runs (tf2onnx reads it from
    `os.environ`), so two conversions in threads of one process may see each other's setting.
    """
    if CATCH_ERRORS in os.environ:
        return convert()
    os.environ[CATCH_ERRORS] = "FALSE"
    try:
        return convert()
    except Exception:  # noqa: BLE001  (tf2onnx raises many kinds of errors) an optimizer failed: skip it instead
        pass
    finally:
        os.environ.pop(CATCH_ERRORS, None)
    return convert()


def _constant_value(node):
    """The scalar value of a `Const` node, else None."""
    if node is None or node.op != "Const":
        return None
    value = tf.make_ndarray(node.attr["value"].tensor)
    return value.item() if value.size == 1 else None


def _describe_spec(spec):
    """`"int32 [batch, n]"` for the table entry `("int32", [None, None])` (the first dimension is the batch)."""
    dtype, shape = spec
    dims = ["batch"] + ["n" if d is None else str(d) for d in list(shape)[1:]]
    return f"{dtype} [{', '.join(dims)}]"
