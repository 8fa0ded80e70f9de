"""The exported signatures, defined once: names, inputs and outputs, for the SavedModel, ONNX and warm-up writers.

Pure Python (no TensorFlow import): the REST / gRPC client helpers of `keras_match.serving` read it too. Each
spec is `(dtype name, shape)` with None for any size; `tensor_specs` turns a table into `tf.TensorSpec`s.

Every export has `serving_default` (the preprocessor's raw-text inputs) and `serve_ids` (its model inputs: token
ids and features), and whatever its task adds (`keras_match.tasks.Task.extra_signatures`). For a pair model:

| signature | ranking heads (`softmax`, `score`) | classification head |
| --- | --- | --- |
| `serving_default` | `question`, `answer` string [batch] -> `score` float32 [batch] | -> `probabilities` float32 [batch, classes], `label` string [batch] |
| `serve_ids` | `question`, `answer` int32 [batch, length] (+ `features` float32 [batch, f]) -> `score` | -> `probabilities` |
| `rank` | `question` string [], `answers` string [n] -> `scores` float32 [n], `order` int32 [n] | (none) |

`serve_ids` is the signature converted to ONNX. The export metadata (`keras_match.serving.export.read_metadata`) holds
the tables of the written model under `signatures` (inputs) and `outputs`.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_SIGNATURE",
    "IDS_SIGNATURE",
    "RANK_SIGNATURE",
    "signature_table",
    "tensor_specs",
]

DEFAULT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "serve_ids"
RANK_SIGNATURE = "rank"


def signature_table(text_inputs: dict, model_inputs: dict, extras: dict | None = None) -> dict:
    """The inputs of each signature of an export: `{signature: {input: (dtype name, shape)}}`.

    Args:
        text_inputs: the preprocessor's raw-text inputs, `{name: rank}` (`Preprocessor.TEXT_INPUTS`).
        model_inputs: the model's inputs, `{name: (dtype name, shape)}` (`Preprocessor.model_input_specs`).
        extras: the task's further signatures, `{signature: {input: (dtype name, shape)}}`.
    """
    table = {
        DEFAULT_SIGNATURE: {name: ("string", [None] * int(rank)) for name, rank in text_inputs.items()},
        IDS_SIGNATURE: {name: (dtype, list(shape)) for name, (dtype, shape) in model_inputs.items()},
    }
    for name, inputs in (extras or {}).items():
        table[name] = {key: (dtype, list(shape)) for key, (dtype, shape) in inputs.items()}
    return table


def tensor_specs(inputs: dict) -> list:
    """`tf.TensorSpec`s (named) of one signature's inputs, in the table's order."""
    import tensorflow as tf

    return [tf.TensorSpec(shape, tf.as_dtype(dtype), name=name) for name, (dtype, shape) in inputs.items()]
