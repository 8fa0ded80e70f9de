"""The checks of a converted ONNX model (`keras_match.serving.onnx_export.to_onnx`): only standard ONNX ops,
onnxruntime loads it, the `serve_ids` inputs and outputs, and every sample's outputs within `atol` of TensorFlow's
(`verify_onnx`)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_match.serving import signatures
from keras_match.serving.metadata import ExportVerificationError

__all__ = ["verify_onnx"]


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


def verify_onnx(model_proto, loaded, ids_table, input_signature, output_names, samples, atol):
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
