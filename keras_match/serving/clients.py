"""Requests and responses of TensorFlow Serving for exported keras-match models, and its model config file.

The signatures of an export come from its preprocessor and task (`keras_match.serving.signatures`; the export metadata's
`signatures` table lists each one's inputs). `rest_body` and `grpc_request` build a request for any signature
from a dict of inputs; the pair helpers below are their shorthand for pair models. An exported pair ranking
model (`keras_match.serving.export.saved_model`) has three signatures (a classifier has the first two, with
`probabilities` and `label` outputs):

| signature | inputs | outputs |
| --- | --- | --- |
| `serving_default` | `question` tf.string [batch], `answer` tf.string [batch] | `score` float32 [batch] |
| `serve_ids` | `question` int32 [batch, lq], `answer` int32 [batch, la] | `score` float32 [batch] |
| `rank` | `question` tf.string [] (one text), `answers` tf.string [n] | `scores` float32 [n], `order` int32 [n] |

This module builds what a client sends to a TF Serving model server and reads what it gets back, for both
of its APIs:

- REST (`POST http://HOST:8501/v1/models/NAME[/versions/V]:predict`): `rest_body` (any signature),
  `rest_predict_body`, `rest_rank_body`, `rest_ids_body` (pairs) build the JSON body; `parse_rest_response`
  reads the answer.
- gRPC (`tensorflow.serving.PredictionService/Predict` on port 8500): `grpc_request` (any signature),
  `grpc_predict_request`, `grpc_rank_request`, `grpc_ids_request` (pairs) build a `PredictRequest`;
  `parse_predict_response` reads a `PredictResponse`.

The tests check these against an imitation of the server's side (its JSON conversion and request decoding),
which lives in `tests/tf_serving_emulation.py`, not in the package.

`warmup_requests` / `write_warmup_file` write `assets.extra/tf_serving_warmup_requests`, and
`write_model_config` writes the `model_config_list` file that serves several models from one server.

The gRPC and warmup helpers need the `serving` extra (`pip install keras-match[serving]`, which installs
`tensorflow-serving-api`); it is imported only when they are called. The REST helpers need only Python's
standard library and numpy.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import re

import numpy as np

__all__ = [
    "DEFAULT_SIGNATURE",
    "IDS_SIGNATURE",
    "RANK_SIGNATURE",
    "rest_body",
    "grpc_request",
    "rest_predict_body",
    "rest_rank_body",
    "rest_ids_body",
    "parse_rest_response",
    "grpc_predict_request",
    "grpc_rank_request",
    "grpc_ids_request",
    "parse_predict_response",
    "warmup_requests",
    "write_warmup_file",
    "read_warmup_file",
    "model_config_text",
    "write_model_config",
    "rank_command",
    "WARMUP_FILE",
]

from keras_match.serving.signatures import DEFAULT_SIGNATURE, IDS_SIGNATURE, RANK_SIGNATURE

WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"
"""Where TF Serving looks for warmup requests, relative to a version folder."""

_SERVING_EXTRA = "pip install keras-match[serving]"


def _serving_apis():
    """`(predict_pb2, prediction_log_pb2)` from tensorflow-serving-api, or a clear ImportError."""
    try:
        from tensorflow_serving.apis import predict_pb2, prediction_log_pb2
    except ImportError as error:
        raise ImportError(
            f"TF Serving requests need the tensorflow-serving-api package: {_SERVING_EXTRA} ({error})"
        ) from error
    return predict_pb2, prediction_log_pb2


def _texts(values, what):
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a list of texts, not a single string")
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"{what}[{i}] is {type(value).__name__}, not str")
    return values


def _json_text(value):
    """A JSON value for one text: the string itself, or `{"b64": ...}` for bytes that are not UTF-8."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _pairs(questions, answers):
    questions, answers = _texts(questions, "questions"), _texts(answers, "answers")
    if len(questions) != len(answers):
        raise ValueError(
            f"questions and answers must have the same length, got {len(questions)} and {len(answers)}"
        )
    return questions, answers


# ----------------------------------------------------------------------------------------------------- REST


def _json_value(value):
    """A JSON value for one input: texts as `_json_text` (nested lists kept), arrays as nested lists."""
    if isinstance(value, (str, bytes)):
        return _json_text(value)
    if isinstance(value, np.ndarray) and value.dtype != object:
        return value.tolist()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_value(item) for item in value]
    return value.item() if isinstance(value, np.generic) else value


def rest_body(inputs, signature_name=DEFAULT_SIGNATURE):
    """The REST `:predict` body of any signature, from its inputs by name.

    When every input holds one item per example (lists or arrays of one length), the body is in the row format
    (`"instances"`: one object per example); when an input is a single value (the `rank` signature's query),
    in the columnar format (`"inputs"`), which TF Serving needs for a scalar input.

    Args:
        inputs: `{input: value}`: texts (`str` / `bytes`, lists of them), or numbers (array-likes).
        signature_name: the signature (the export metadata's `signatures` table lists their inputs).

    Returns:
        dict ready for `json.dumps`. Bytes that are not UTF-8 are sent as `{"b64": ...}`, as TF Serving expects.

    Raises:
        ValueError: per-example inputs of different lengths.
    """
    values = {name: value if isinstance(value, (str, bytes)) else
              (np.asarray(value) if not isinstance(value, (list, tuple)) else list(value))
              for name, value in inputs.items()}
    if any(isinstance(value, (str, bytes)) or (isinstance(value, np.ndarray) and value.ndim == 0)
           for value in values.values()):  # a scalar input (no np.ndim on lists: mixed str / bytes must stay)
        return {"signature_name": signature_name, "inputs": {k: _json_value(v) for k, v in values.items()}}
    sizes = {name: len(value) for name, value in values.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"the inputs must hold one item per example each, got {sizes}")
    count = next(iter(sizes.values()), 0)
    return {"signature_name": signature_name,
            "instances": [{name: _json_value(value[i]) for name, value in values.items()} for i in range(count)]}


def rest_predict_body(questions, answers, signature_name=DEFAULT_SIGNATURE):
    """The REST `:predict` body scoring question/answer pairs (row format).

    Args:
        questions: list of `str` (or `bytes`), one per pair.
        answers: list of `str` (or `bytes`), as long as `questions`.
        signature_name: the text signature, `"serving_default"`.

    Returns:
        dict `{"signature_name": ..., "instances": [{"question": q, "answer": a}, ...]}`, ready for
        `json.dumps`. Bytes that are not UTF-8 are sent as `{"b64": ...}`, as TF Serving expects.

    Raises:
        ValueError: `questions` and `answers` differ in length.
        TypeError: an item is not a text, or a single string is given instead of a list.
    """
    questions, answers = _pairs(questions, answers)
    return rest_body({"question": questions, "answer": answers}, signature_name)


def rest_rank_body(question, answers):
    """The REST `:predict` body ranking candidate answers for one question (columnar format).

    The `rank` signature's `question` is a scalar, so the row format (which needs a batch dimension on every
    input) cannot express it; the columnar `"inputs"` format can.

    Args:
        question: one text (`str` or `bytes`).
        answers: list of candidate texts.

    Returns:
        dict `{"signature_name": "rank", "inputs": {"question": q, "answers": [...]}}`.
    """
    if not isinstance(question, (str, bytes)):
        raise TypeError(f"question must be one text, got {type(question).__name__}")
    answers = _texts(answers, "answers")
    return rest_body({"question": question, "answers": answers}, RANK_SIGNATURE)


def _check_ids(question_ids, answer_ids, features):
    q, a = np.asarray(question_ids), np.asarray(answer_ids)
    if q.ndim != 2 or a.ndim != 2 or len(q) != len(a):
        raise ValueError(f"expected id matrices [batch, length] with the same batch, got {q.shape} and {a.shape}")
    if features is not None:
        features = np.asarray(features, dtype=np.float32)
        if features.ndim != 2 or len(features) != len(q):
            raise ValueError(f"features must be a float matrix [batch, num_features] with the ids' batch {len(q)}, "
                             f"got shape {features.shape}")
    return q, a, features


def rest_ids_body(question_ids, answer_ids, features=None):
    """The REST `:predict` body of the `serve_ids` signature (row format).

    Args:
        question_ids: int array-like `[batch, lq]` (0 = padding).
        answer_ids: int array-like `[batch, la]`.
        features: float array-like `[batch, num_features]`, for models that take pair features
            (`keras_match.text.features.OverlapFeatures`); None otherwise.

    Returns:
        dict `{"signature_name": "serve_ids", "instances": [{"question": [...], "answer": [...]}, ...]}`
        (each instance also has `"features"` when given).

    Raises:
        ValueError: the arrays are not matrices of one batch size.
    """
    q, a, f = _check_ids(question_ids, answer_ids, features)
    return rest_body({"question": q, "answer": a, **({"features": f} if f is not None else {})}, IDS_SIGNATURE)


def parse_rest_response(response, output_names=None):
    """Read a REST `:predict` response into numpy arrays.

    Args:
        response: the response, a dict or its JSON text.
        output_names: the signature's output names in order; needed only to name the single output of a
            one-output signature (default `["score"]`, the text and id signatures' output).

    Returns:
        dict output name -> numpy array (`"score"` float32 [batch] for `serving_default` and `serve_ids`;
        `"scores"` float32 [n] and `"order"` int32 [n] for `rank`; a classifier's `"probabilities"` float32
        [batch, classes] and `"label"`, an object array of str [batch]).

    Raises:
        ValueError: the server returned an error (`{"error": ...}`) or an unexpected body.
    """
    if isinstance(response, (str, bytes)):
        response = json.loads(response)
    if "error" in response:
        raise ValueError(f"TF Serving error: {response['error']}")
    names = list(output_names or ["score"])
    if "predictions" in response:
        rows = response["predictions"]
        if rows and isinstance(rows[0], dict):
            values = {name: [row[name] for row in rows] for name in rows[0]}
        else:
            values = {names[0]: rows}
    elif "outputs" in response:
        outputs = response["outputs"]
        values = outputs if isinstance(outputs, dict) else {names[0]: outputs}
    else:
        raise ValueError(f"unexpected TF Serving response keys {sorted(response)}")
    dtypes = {"order": np.int32, "label": object}
    return {name: np.asarray(value, dtype=dtypes.get(name, np.float32)) for name, value in values.items()}


# ----------------------------------------------------------------------------------------------------- gRPC


def _tensor_proto(value, dtype=None):
    import tensorflow as tf

    return tf.make_tensor_proto(value, dtype=dtype)


def _text_array(texts):
    array = np.empty(len(texts), dtype=object)
    array[:] = [t.encode("utf-8") if isinstance(t, str) else t for t in texts]
    return array


def _predict_request(model_name, signature_name, version, inputs):
    predict_pb2, _ = _serving_apis()
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = int(version)
    for name, proto in inputs.items():
        request.inputs[name].CopyFrom(proto)
    return request


def grpc_request(inputs, model_name, signature_name=DEFAULT_SIGNATURE, table=None, version=None):
    """A gRPC `PredictRequest` of any signature, from its inputs by name.

    Args:
        inputs: `{input: value}`: texts (`str` / `bytes`, or lists of them) or numbers (array-likes).
        model_name: the model's name on the server (`--model_name` / `model_config_list` name).
        signature_name: the signature.
        table: the signature's inputs, `{input: (dtype name, shape)}` (the export metadata's `signatures` entry):
            numbers are sent in its dtypes; without it, ints as int32 and floats as float32.
        version: optional int, a specific version (default: the server's latest).

    Returns:
        `tensorflow_serving.apis.predict_pb2.PredictRequest`.

    Raises:
        ImportError: tensorflow-serving-api is not installed (`pip install keras-match[serving]`).
    """
    protos = {}
    for name, value in inputs.items():
        dtype = (table or {}).get(name, (None, None))[0]
        if isinstance(value, (str, bytes)):
            protos[name] = _tensor_proto(np.array(_text_array([value])[0], dtype=object), "string")
        elif dtype == "string" or (dtype is None and _all_texts(value)):
            protos[name] = _tensor_proto(_text_array_nd(value), "string")
        else:
            array = np.asarray(value)
            wanted = dtype or ("int32" if np.issubdtype(array.dtype, np.integer) else "float32")
            protos[name] = _tensor_proto(array.astype(wanted))
    return _predict_request(model_name, signature_name, version, protos)


def _all_texts(value):
    flat = np.asarray(value, dtype=object).ravel()
    return len(flat) > 0 and all(isinstance(item, (str, bytes)) for item in flat)


def _text_array_nd(texts):
    array = np.asarray(texts, dtype=object)
    encoded = np.empty(array.shape, dtype=object)
    for index in np.ndindex(*array.shape):
        item = array[index]
        encoded[index] = item.encode("utf-8") if isinstance(item, str) else item
    return encoded


def grpc_predict_request(questions, answers, model_name, signature_name=DEFAULT_SIGNATURE,
                         version=None):
    """A gRPC `PredictRequest` scoring question/answer pairs through the `serving_default` signature.

    Args:
        questions: list of texts, one per pair.
        answers: list of texts, as long as `questions`.
        model_name: the model's name on the server (`--model_name` / `model_config_list` name).
        signature_name: the text signature.
        version: optional int, a specific version (default: the server's latest).

    Returns:
        `tensorflow_serving.apis.predict_pb2.PredictRequest` with DT_STRING inputs `question` [batch] and
        `answer` [batch].

    Raises:
        ImportError: tensorflow-serving-api is not installed (`pip install keras-match[serving]`).
        ValueError: `questions` and `answers` differ in length.
    """
    questions, answers = _pairs(questions, answers)
    table = {"question": ("string", [None]), "answer": ("string", [None])}
    return grpc_request({"question": questions, "answer": answers}, model_name, signature_name, table, version)


def grpc_rank_request(question, answers, model_name, version=None):
    """A gRPC `PredictRequest` for the `rank` signature: one question, `n` candidate answers.

    Returns:
        `PredictRequest` with DT_STRING inputs `question` (a scalar) and `answers` [n].

    Raises:
        ImportError: tensorflow-serving-api is not installed.
    """
    if not isinstance(question, (str, bytes)):
        raise TypeError(f"question must be one text, got {type(question).__name__}")
    answers = _texts(answers, "answers")
    table = {"question": ("string", []), "answers": ("string", [None])}
    return grpc_request({"question": question, "answers": answers}, model_name, RANK_SIGNATURE, table, version)


def grpc_ids_request(question_ids, answer_ids, model_name, version=None, features=None):
    """A gRPC `PredictRequest` for the `serve_ids` signature (int32 id matrices, 0 = padding; `features`
    float32 `[batch, num_features]` for models that take pair features)."""
    q, a, f = _check_ids(question_ids, answer_ids, features)
    inputs = {"question": q, "answer": a, **({"features": f} if f is not None else {})}
    table = {"question": ("int32", [None, None]), "answer": ("int32", [None, None]), "features": ("float32", [None])}
    return grpc_request(inputs, model_name, IDS_SIGNATURE, table, version)


def parse_predict_response(response):
    """A `PredictResponse`'s outputs as `{name: numpy array}`."""
    import tensorflow as tf

    return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


# ------------------------------------------------------------------------------------------- client command


def rank_command(rank, description, default_port, argv=None):
    """The command line of the example clients (`export/clients/`): one question, candidate answers, printed best
    first (`rank<TAB>score<TAB>answer`).

    Args:
        rank: `rank(host, port, model, question, answers, signature, version) -> (scores, order)`, the client's
            call of the server (REST or gRPC).
        description: the command's description (`--help`).
        default_port: the server's port when `--port` is not given (8501 REST, 8500 gRPC).
        argv: the arguments (default `sys.argv[1:]`).

    Returns:
        `(scores, order)`.
    """
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=default_port, help=f"the server's port (default {default_port})")
    parser.add_argument("--model", default="mcan_fm", help="the model's name on the server")
    parser.add_argument("--version", type=int, default=None, help="a specific version (default: the latest)")
    parser.add_argument("--signature", default=RANK_SIGNATURE, choices=[RANK_SIGNATURE, DEFAULT_SIGNATURE])
    parser.add_argument("--question", required=True)
    parser.add_argument("--answer", action="append", required=True, help="a candidate answer (repeat for each)")
    args = parser.parse_args(argv)
    scores, order = rank(args.host, args.port, args.model, args.question, args.answer, args.signature,
                         args.version)
    for position, i in enumerate(order, 1):
        print(f"{position}\t{scores[i]:.4f}\t{args.answer[i]}")
    return scores, order


# --------------------------------------------------------------------------------------------------- warmup

_WARMUP_TEXTS = (["who wrote hamlet ?", "When was the Teapot Dome scandal?"],
                 ["Hamlet was written by William Shakespeare .", "The scandal broke in 1923 ."])
"""The texts of the warmup requests: the first text input of a signature gets the first list, the next the
second, and so on (in turn)."""


def _warmup_inputs(inputs, sequence_lengths, count=2):
    """Example inputs of one signature's table: `count` examples, texts from `_WARMUP_TEXTS`, token ids of a few
    unknown words (id 1) in matrices as wide as the truncation lengths, zero features."""
    values, texts = {}, 0
    for name, (dtype, shape) in inputs.items():
        if dtype == "string":
            pool = _WARMUP_TEXTS[texts % len(_WARMUP_TEXTS)]
            texts += 1
            if len(shape) == 0:
                values[name] = pool[0]
            else:
                column = [pool[i % len(pool)] for i in range(count)]
                values[name] = column if len(shape) == 1 else [[text, ""] for text in column]
        elif dtype.startswith("int"):
            length = int(sequence_lengths.get(name, 8))
            ids = np.zeros([count] + [2] * (len(shape) - 2) + [length], np.int32)
            ids[..., : min(3, length)] = 1
            values[name] = ids
        else:
            values[name] = np.zeros([count] + [int(d) for d in shape[1:]], np.float32)
    return values


def warmup_requests(model_name, signature_inputs, sequence_lengths, large_batch=None):
    """A few `PredictionLog` records, one per signature, that TF Serving replays before serving a version.

    Args:
        model_name: written into each request's `model_spec.name` (the server ignores it during warmup).
        signature_inputs: the export's signatures, `{signature: {input: (dtype name, shape)}}`
            (`keras_match.serving.signatures.signature_table`, the metadata's `signatures`).
        sequence_lengths: `{token-id input: truncation length}`: the widths of the id matrices of `serve_ids`.
        large_batch: optional int, add a `serving_default` request of this many examples (to warm the path
            that scores requests larger than one chunk, see `keras_match.serving.export.CHUNK_SIZE`).

    Returns:
        list of `tensorflow_serving.apis.prediction_log_pb2.PredictionLog`.

    Raises:
        ImportError: tensorflow-serving-api is not installed (`pip install keras-match[serving]`).
    """
    _, prediction_log_pb2 = _serving_apis()
    requests = [grpc_request(_warmup_inputs(inputs, sequence_lengths), model_name, name, inputs)
                for name, inputs in signature_inputs.items()]
    if large_batch:
        inputs = signature_inputs[DEFAULT_SIGNATURE]
        requests.append(grpc_request(_warmup_inputs(inputs, sequence_lengths, int(large_batch)), model_name,
                                     DEFAULT_SIGNATURE, inputs))
    records = []
    for request in requests:
        record = prediction_log_pb2.PredictionLog()
        record.predict_log.request.CopyFrom(request)
        records.append(record)
    return records


def write_warmup_file(version_dir, records):
    """Write `records` to `version_dir/assets.extra/tf_serving_warmup_requests` (a TFRecord file).

    Returns:
        pathlib.Path of the file.
    """
    import tensorflow as tf

    path = pathlib.Path(version_dir) / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record.SerializeToString())
    return path


def read_warmup_file(path):
    """The `PredictionLog` records of a warmup file (a version folder or the file itself)."""
    import tensorflow as tf

    _, prediction_log_pb2 = _serving_apis()
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / WARMUP_FILE
    records = []
    for raw in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        record = prediction_log_pb2.PredictionLog()
        record.ParseFromString(raw)
        records.append(record)
    return records


# ------------------------------------------------------------------------------------------- model config

_MODEL_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def model_config_text(models, versions=None):
    """The text-format `ModelServerConfig` (`model_config_list`) serving several models.

    Args:
        models: dict model name -> base path as the *server* sees it (e.g. `/models/mcan_fm` inside the
            tensorflow/serving container), the folder holding the integer version folders.
        versions: optional dict model name -> list of ints: serve exactly these versions
            (`model_version_policy { specific { versions: ... } }`); default: the latest version.

    Returns:
        str, the file's text (parse it with `google.protobuf.text_format` into
        `tensorflow_serving.config.model_server_config_pb2.ModelServerConfig`).

    Raises:
        ValueError: no model, an invalid model name, an empty or relative-looking empty base path, or
            `versions` naming an unknown model or a non-positive version.
    """
    if not models:
        raise ValueError("give at least one model")
    versions = dict(versions or {})
    unknown = sorted(set(versions) - set(models))
    if unknown:
        raise ValueError(f"versions given for unknown model(s) {unknown}")
    lines = ["model_config_list {"]
    for name, base_path in models.items():
        if not isinstance(name, str) or not _MODEL_NAME.fullmatch(name):
            raise ValueError(f"invalid model name {name!r}: use letters, digits, '_', '.', '-'")
        base_path = os.fspath(base_path)
        if not base_path:
            raise ValueError(f"model {name!r}: empty base path")
        lines += ["  config {", f"    name: {json.dumps(name)}", f"    base_path: {json.dumps(base_path)}",
                  '    model_platform: "tensorflow"']
        if name in versions:
            chosen = [int(v) for v in versions[name]]
            if not chosen or min(chosen) < 1:
                raise ValueError(f"model {name!r}: versions must be positive integers, got {versions[name]!r}")
            lines.append("    model_version_policy { specific { "
                         + " ".join(f"versions: {v}" for v in chosen) + " } }")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_model_config(models, path, versions=None):
    """Write the `model_config_list` file for `tensorflow_model_server --model_config_file=PATH`.

    Args:
        models: dict model name -> base path as the server sees it.
        path: the file to write (its folder is created).
        versions: see `model_config_text`.

    Returns:
        pathlib.Path of the written file.

    Raises:
        ValueError: see `model_config_text`.
    """
    path = pathlib.Path(path)
    text = model_config_text(models, versions)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # the server polls the file: never let it read half of one
    return path
