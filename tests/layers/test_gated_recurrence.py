import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.layers import GatedLinearRecurrence
from keras_match.layers import gated_linear_recurrence

import references as ref
from helpers import lengths_mask
from helpers import run_layer_test

LENGTHS = [6, 3, 1, 0]


def coefficients(seed, batch=4, time=6, dim=3):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.05, 0.95, size=(batch, time, dim)).astype("float32")
    b = rng.normal(size=(batch, time, dim)).astype("float32")
    return rng, a, b


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_numpy_loop(reverse, with_mask):
    rng, a, b = coefficients(0)
    mask = lengths_mask(LENGTHS, 6) if with_mask else None
    h0 = rng.normal(size=(4, 3)).astype("float32")
    for initial_state in (None, h0):
        out = gated_linear_recurrence(a, b, mask=mask, initial_state=initial_state, reverse=reverse).numpy()
        expected = ref.linear_recurrence(a, b, mask, initial_state, reverse)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_masked_steps_carry_the_state_through():
    _, a, b = coefficients(1)
    mask = np.ones((4, 6), bool)
    mask[0, 2:4] = False  # a gap in the middle
    mask[1, :2] = False  # padding in front
    mask[2, 3:] = False  # padding at the end
    out = gated_linear_recurrence(a, b, mask=mask).numpy()
    np.testing.assert_array_equal(out[0, 3], out[0, 1])
    np.testing.assert_array_equal(out[1, :2], np.zeros((2, 3)))
    np.testing.assert_allclose(out[1, 2], b[1, 2], rtol=1e-6)  # first real step from h_0 = 0
    np.testing.assert_array_equal(out[2, -1], out[2, 2])
    # Masked coefficients are ignored entirely: garbage there changes nothing.
    garbage_a = np.where(mask[..., None], a, 1e3).astype("float32")
    garbage_b = np.where(mask[..., None], b, -1e3).astype("float32")
    np.testing.assert_array_equal(gated_linear_recurrence(garbage_a, garbage_b, mask=mask).numpy(), out)


def test_gradients_match_finite_differences():
    _, a, b = coefficients(2, batch=2, time=4, dim=2)
    a, b = tf.constant(a, tf.float64), tf.constant(b, tf.float64)
    mask = lengths_mask([4, 2], 4)
    weights = tf.constant(np.random.default_rng(3).normal(size=(2, 4, 2)))

    def loss(a, b):
        return tf.reduce_sum(weights * gated_linear_recurrence(a, b, mask=mask))

    theoretical, numerical = tf.test.compute_gradient(loss, [a, b])
    for t, n in zip(theoretical, numerical):
        np.testing.assert_allclose(t, n, atol=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(b)
        value = loss(a, b)
    grad_b = tape.gradient(value, b).numpy()
    assert not grad_b[~mask].any()  # masked steps do not take part


def test_static_shapes_and_unknown_time_in_a_graph():
    @tf.function(input_signature=[tf.TensorSpec([4, None, 3]), tf.TensorSpec([4, None, 3])])
    def run(a, b):
        out = gated_linear_recurrence(a, b)
        assert out.shape.as_list() == [4, None, 3]
        return out

    _, a, b = coefficients(4)
    np.testing.assert_allclose(run(a, b).numpy(), ref.linear_recurrence(a, b), rtol=1e-5, atol=1e-6)
    assert run(a[:, :0], b[:, :0]).shape == (4, 0, 3)  # zero-length texts


def test_float64_is_kept():
    _, a, b = coefficients(5)
    assert gated_linear_recurrence(a.astype("float64"), b).dtype == tf.float64


def test_saved_model_with_unknown_time(tmp_path):
    module = tf.Module()
    module.run = tf.function(
        lambda a, b, m: gated_linear_recurrence(a, b, mask=m),
        input_signature=[tf.TensorSpec([None, None, 3]), tf.TensorSpec([None, None, 3]),
                         tf.TensorSpec([None, None], tf.bool)],
    )
    tf.saved_model.save(module, str(tmp_path / "recurrence"))
    restored = tf.saved_model.load(str(tmp_path / "recurrence"))
    _, a, b = coefficients(6, time=9)
    mask = lengths_mask([9, 4, 2, 0], 9)
    np.testing.assert_allclose(restored.run(a, b, mask).numpy(), ref.linear_recurrence(a, b, mask), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_converts_to_onnx(reverse):
    # reverse=True: tf2onnx 1.17 converts tf.scan(reverse=True) with its outputs in reversed time order (off by
    # up to 1.6 here), so the reverse recurrence is a forward scan of the flipped inputs.
    tf2onnx = pytest.importorskip("tf2onnx")
    ort = pytest.importorskip("onnxruntime")
    spec = [tf.TensorSpec([None, None, 3], name="a"), tf.TensorSpec([None, None, 3], name="b"),
            tf.TensorSpec([None, None], tf.bool, name="mask")]
    function = tf.function(lambda a, b, mask: gated_linear_recurrence(a, b, mask=mask, reverse=reverse),
                           input_signature=spec)
    proto, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=17)
    assert any(node.op_type == "Loop" for node in proto.graph.node)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for time in (7, 2):  # the ONNX graph keeps the time dimension free
        _, a, b = coefficients(7, time=time)
        mask = lengths_mask([time, 2, 1, 0], time)
        (out,) = session.run(None, {"a": a, "b": b, "mask": mask})
        np.testing.assert_allclose(out, function(a, b, mask).numpy(), rtol=1e-6, atol=1e-6)


def test_layer_roundtrip(tmp_path):
    _, a, b = coefficients(8)
    mask = lengths_mask(LENGTHS, 6)
    _, out = run_layer_test(
        lambda: GatedLinearRecurrence(reverse=True),
        [a, b],
        [mask, mask],
        expected_shape=(4, 6, 3),
        expected_weights=0,
        tmp_path=tmp_path,
    )
    expected = np.where(mask[..., None], ref.linear_recurrence(a, b, mask, reverse=True), 0.0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_layer_propagates_the_mask_and_rejects_bad_shapes():
    layer = GatedLinearRecurrence()
    mask = np.array([[True, False]])
    assert layer.compute_mask(None, [None, mask]) is mask
    with pytest.raises(ValueError, match="pair"):
        layer.build([(None, 4, 3), (None, 4, 2)])
    with pytest.raises(ValueError, match="pair"):
        GatedLinearRecurrence().build((None, 4, 3))
    assert keras.layers.deserialize(keras.layers.serialize(GatedLinearRecurrence(reverse=True))).reverse
