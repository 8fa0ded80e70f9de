"""TensorFlow Serving's side of a request, imitated for the tests: no model server can be installed here.

`decode_rest_body` and `encode_rest_response` follow the server's own JSON conversion (row format
`"instances"` / columnar `"inputs"`, TF Serving's `json_tensor.cc`), and `request_to_feeds` turns a gRPC
`PredictRequest` into the signature's input tensors, so the tests feed what a client built with
`keras_match.serving` to a loaded SavedModel exactly as the server would. The package itself holds only the
client side.
"""

from __future__ import annotations

import base64
import json

import numpy as np


def _dtype_name(dtype):
    name = getattr(dtype, "name", None) or str(dtype)
    return {"str": "string", "object": "string", "bytes": "string"}.get(name, name)


def _is_b64(value):
    return isinstance(value, dict) and set(value) == {"b64"}


def _shape_of(value, where):
    """The shape of a nested JSON list, checking that it is rectangular."""
    if isinstance(value, list):
        if not value:
            return (0,)
        shapes = {_shape_of(v, where) for v in value}
        if len(shapes) != 1:
            raise ValueError(f"{where}: the nested lists are not rectangular (rows of different shapes)")
        return (len(value),) + shapes.pop()
    if isinstance(value, dict) and not _is_b64(value):
        raise ValueError(f"{where}: an object where a value was expected")
    return ()


def _leaf(value, dtype, where):
    if dtype == "string":
        if _is_b64(value):
            try:
                return base64.b64decode(value["b64"], validate=True)
            except ValueError as error:
                raise ValueError(f"{where}: invalid base64 ({error})") from None
        if isinstance(value, str):
            return value.encode("utf-8")
        raise ValueError(f"{where}: expected a string for a DT_STRING input, got {type(value).__name__}")
    if _is_b64(value):
        raise ValueError(f"{where}: {{\"b64\": ...}} is only valid for DT_STRING inputs, not {dtype}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: expected a number for a {dtype} input, got {type(value).__name__}")
    if dtype.startswith("int") or dtype.startswith("uint"):
        if float(value) != int(value):
            raise ValueError(f"{where}: {value!r} is not an integer ({dtype} input)")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"{where}: {value!r} is out of range for {dtype}")
        return int(value)
    return float(value)


def _to_array(value, dtype, where):
    def convert(v):
        return [convert(x) for x in v] if isinstance(v, list) else _leaf(v, dtype, where)

    converted = convert(value)
    shape = _shape_of(value, where)
    if dtype == "string":
        array = np.empty(shape, dtype=object)
        array[...] = converted
        return array
    return np.asarray(converted, dtype=dtype).reshape(shape)


def decode_rest_body(body, inputs):
    """Decode a REST `:predict` body into the signature's input arrays, following TF Serving's rules.

    Row format: `"instances"` is a list with one entry per example; for a signature with several inputs each
    entry is an object naming every input, and the input tensor is the stack of the entries' values (shape
    `[len(instances)] + value shape`; every entry must have the same keys and value shapes). Columnar format:
    `"inputs"` is an object mapping input names to (nested lists of) values, used as they are (a JSON scalar
    gives a scalar tensor); with a single input it may be the value itself. Strings are UTF-8 encoded;
    `{"b64": "..."}` gives raw bytes (DT_STRING only); numbers must fit the input's dtype.

    Args:
        body: the request, a `dict` or its JSON text.
        inputs: the signature's inputs, `{name: dtype}` or `{name: (dtype, shape)}` (dtype: a name such as
            `"string"`/`"int32"`, a numpy or a `tf.DType`), e.g. the export metadata's
            `signatures["serving_default"]` (`keras_match.serving.export.read_metadata`).

    Returns:
        dict input name -> numpy array (`dtype=object` holding `bytes` for strings).

    Raises:
        ValueError: the body is malformed, has both or neither of `instances`/`inputs`, names unknown inputs,
            misses one, or holds values that do not fit (the message says which, like the server's 400 error).
    """
    if isinstance(body, (str, bytes)):
        body = json.loads(body)
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    specs = {name: _dtype_name(spec[0] if isinstance(spec, tuple) else spec) for name, spec in inputs.items()}
    has_rows, has_columns = "instances" in body, "inputs" in body
    if has_rows == has_columns:
        raise ValueError("the request must have exactly one of the keys 'instances' (row format) and 'inputs' "
                         "(columnar format)")
    if has_rows:
        rows = body["instances"]
        if not isinstance(rows, list):
            raise ValueError("'instances' must be a list")
        named = any(isinstance(r, dict) and not _is_b64(r) for r in rows)
        if not named:
            if len(specs) != 1:
                raise ValueError(f"the signature has {len(specs)} inputs {sorted(specs)}: each instance must be an "
                                 "object naming them")
            (name, dtype), = specs.items()
            return {name: _to_array(rows, dtype, f"instances ({name})")}
        if not rows:
            raise ValueError("'instances' is empty")
        keys = None
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or _is_b64(row):
                raise ValueError(f"instances[{i}]: expected an object naming the inputs")
            if keys is None:
                keys = set(row)
            elif set(row) != keys:
                raise ValueError(f"instances[{i}] has keys {sorted(row)}, instances[0] has {sorted(keys)}: every "
                                 "instance must name the same inputs")
        columns = {name: [row[name] for row in rows] for name in keys}
        for name, values in columns.items():
            shapes = {_shape_of(v, f"instances ({name})") for v in values}
            if len(shapes) != 1:
                raise ValueError(f"input {name!r}: the instances' values have different shapes {sorted(shapes)}")
    else:
        columns = body["inputs"]
        if not isinstance(columns, dict) or _is_b64(columns):
            if len(specs) != 1:
                raise ValueError(f"the signature has {len(specs)} inputs {sorted(specs)}: 'inputs' must be an "
                                 "object naming them")
            columns = {next(iter(specs)): columns}
    unknown = sorted(set(columns) - set(specs))
    if unknown:
        raise ValueError(f"input(s) {unknown} not in the signature, whose inputs are {sorted(specs)}")
    missing = sorted(set(specs) - set(columns))
    if missing:
        raise ValueError(f"the request misses input(s) {missing} of the signature")
    return {name: _to_array(value, specs[name], f"inputs ({name})") for name, value in columns.items()}


def _json_text(value):
    """A DT_STRING element as the server writes it: UTF-8 text as a JSON string, other bytes as `{"b64": ...}`."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _json_value(array):
    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind == "S":
        return np.vectorize(lambda b: _json_text(b), otypes=[object])(array).tolist() if array.size else []
    return array.tolist()


def encode_rest_response(outputs, row_format=True):
    """The JSON response TF Serving sends for a signature's outputs.

    Row format (request had `"instances"`): `{"predictions": [...]}`, one entry per example; with a single
    output the entries are its values, else objects naming the outputs (all outputs must share the batch size).
    Columnar format (`"inputs"`): `{"outputs": value}` for a single output, else `{"outputs": {name: value}}`.

    Args:
        outputs: dict output name -> array (numpy or `tf.Tensor`).
        row_format: whether the request used `"instances"`.

    Returns:
        A JSON-serializable dict.

    Raises:
        ValueError: row format with outputs of different batch sizes.
    """
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    if not row_format:
        values = {name: _json_value(a) for name, a in arrays.items()}
        return {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    sizes = {name: (a.shape[0] if a.ndim else None) for name, a in arrays.items()}
    if None in sizes.values() or len(set(sizes.values())) != 1:
        raise ValueError(f"row format needs outputs with one batch size, got {sizes}; use the 'inputs' format")
    if len(arrays) == 1:
        return {"predictions": _json_value(next(iter(arrays.values())))}
    columns = {name: _json_value(a) for name, a in arrays.items()}
    n = next(iter(sizes.values()))
    return {"predictions": [{name: columns[name][i] for name in columns} for i in range(n)]}



def request_to_feeds(request):
    """The signature inputs a model server feeds for a `PredictRequest`: `{name: numpy array}`.

    Call the loaded signature with them: `loaded.signatures[request.model_spec.signature_name or
    "serving_default"](**{k: tf.constant(v) for k, v in feeds.items()})`.
    """
    import tensorflow as tf

    return {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}


