"""The exported signatures, defined once: names, inputs and outputs, for the SavedModel, ONNX and warm-up writers.

Pure Python (no TensorFlow import): the REST / gRPC client helpers of `keras_match.serving` read it too. Each
spec is `(dtype name, shape)` with None for any size; `tensor_specs` turns a table into `tf.TensorSpec`s.

| signature | ranking heads (`softmax`, `score`) | classification head |
| --- | --- | --- |
| `serving_default` | `question`, `answer` string [batch] -> `score` float32 [batch] | -> `probabilities` float32 [batch, classes], `label` string [batch] |
| `serve_ids` | `question`, `answer` int32 [batch, length] (+ `features` float32 [batch, f]) -> `score` | -> `probabilities` |
| `rank` | `question` string [], `answers` string [n] -> `scores` float32 [n], `order` int32 [n] | (none) |

`serve_ids` is the signature converted to ONNX.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_SIGNATURE",
    "IDS_SIGNATURE",
    "RANK_SIGNATURE",
    "signature_inputs",
    "signature_outputs",
    "tensor_specs",
]

DEFAULT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "serve_ids"
RANK_SIGNATURE = "rank"


def signature_inputs(num_features=0, head="softmax") -> dict:
    """The inputs of each signature of an export: `{signature: {input: (dtype name, shape)}}`.

    Args:
        num_features: width of the model's `features` input (0: none); `serve_ids` then takes it.
        head: the model's head (`keras_match.heads`); a classifier has no `rank` signature.
    """
    inputs = {
        DEFAULT_SIGNATURE: {"question": ("string", [None]), "answer": ("string", [None])},
        IDS_SIGNATURE: {"question": ("int32", [None, None]), "answer": ("int32", [None, None])},
        RANK_SIGNATURE: {"question": ("string", []), "answers": ("string", [None])},
    }
    if num_features:
        inputs[IDS_SIGNATURE]["features"] = ("float32", [None, int(num_features)])
    if head == "classification":
        del inputs[RANK_SIGNATURE]
    return inputs


def signature_outputs(head="softmax", num_classes=None) -> dict:
    """The outputs of each signature: `{signature: {output: (dtype name, shape)}}`."""
    if head == "classification":
        probabilities = {"probabilities": ("float32", [None, num_classes])}
        return {DEFAULT_SIGNATURE: {**probabilities, "label": ("string", [None])}, IDS_SIGNATURE: probabilities}
    return {
        DEFAULT_SIGNATURE: {"score": ("float32", [None])},
        IDS_SIGNATURE: {"score": ("float32", [None])},
        RANK_SIGNATURE: {"scores": ("float32", [None]), "order": ("int32", [None])},
    }


def tensor_specs(inputs: dict) -> list:
    """`tf.TensorSpec`s (named) of one signature's inputs, in the table's order."""
    import tensorflow as tf

    return [tf.TensorSpec(shape, tf.as_dtype(dtype), name=name) for name, (dtype, shape) in inputs.items()]
