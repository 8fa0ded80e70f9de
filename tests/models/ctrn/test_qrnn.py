import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.ctrn import QRNN

import references_ctrn as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 2, 4, 0]


def randomized(layer, rng, input_dim):
    """Build `layer` and give it random weights (non-zero biases), so every term of eq. 1 matters."""
    layer.build((None, None, input_dim))
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("use_bias, expected_weights", [(True, 2), (False, 1)])
def test_layer_roundtrip(tmp_path, use_bias, expected_weights):
    x, mask = padded_batch(np.random.default_rng(0), LENGTHS, 5, 3)
    run_layer_test(
        lambda: QRNN(4, kernel_size=3, use_bias=use_bias, kernel_regularizer="l2"),
        x,
        mask,
        expected_shape=(4, 5, 4),
        expected_weights=expected_weights,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("kernel_size", [1, 2, 3])
def test_matches_numpy_reference(kernel_size):
    rng = np.random.default_rng(1)
    x, mask = padded_batch(rng, LENGTHS, 6, 3)
    layer = randomized(QRNN(4, kernel_size=kernel_size), rng, 3)
    kernel, bias = layer.get_weights()
    out = call_layer(layer, x, mask)
    np.testing.assert_allclose(out, ref.qrnn(x, mask, kernel, bias), rtol=1e-4, atol=1e-5)
    # Without a mask every position is real.
    full = np.ones(mask.shape, bool)
    np.testing.assert_allclose(call_layer(layer, x), ref.qrnn(x, full, kernel, bias), rtol=1e-4, atol=1e-4)


def test_convolution_is_causal():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 6, 3)).astype("float32")
    layer = randomized(QRNN(4, kernel_size=3), rng, 3)
    changed = x.copy()
    changed[0, 3] += 1.0
    before, after = call_layer(layer, x), call_layer(layer, changed)
    np.testing.assert_array_equal(before[0, :3], after[0, :3])
    assert not np.allclose(before[0, 3:], after[0, 3:])


def test_extra_padding_changes_nothing():
    rng = np.random.default_rng(3)
    x, mask = padded_batch(rng, LENGTHS, 5, 3)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    layer = randomized(QRNN(4, kernel_size=2), rng, 3)
    out, longer = call_layer(layer, x, mask), call_layer(layer, longer_x, longer_mask)
    np.testing.assert_allclose(longer[:, :5], out, atol=1e-6)
    assert not longer[~longer_mask].any() and not out[~mask].any()


def test_gradient_is_zero_at_padded_inputs():
    rng = np.random.default_rng(4)
    x, mask = padded_batch(rng, LENGTHS, 5, 3)
    layer = randomized(QRNN(4, kernel_size=2), rng, 3)
    x_var = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x_var, mask=mask) ** 2)
    grad = tape.gradient(loss, x_var).numpy()
    assert np.all(np.isfinite(grad)) and np.abs(grad[mask]).sum() > 0
    assert not grad[~mask].any()


def test_mask_propagates_through_a_functional_model():
    tokens = keras.Input((None,), dtype="int32")
    hidden = QRNN(3)(keras.layers.Embedding(10, 4, mask_zero=True)(tokens))
    assert hidden.shape == (None, None, 3)
    model = keras.Model(tokens, keras.ops.cast(hidden._keras_mask, "int32"))
    ids = np.array([[3, 4, 0, 0], [1, 2, 3, 5]])
    np.testing.assert_array_equal(model(ids), (ids != 0).astype("int32"))


def test_parameter_count_is_3kdm_plus_biases():
    layer = QRNN(512, kernel_size=2)
    layer.build((None, None, 300))
    assert layer.count_params() == 3 * 2 * 512 * 300 + 3 * 512  # Table 2: 3kdm (biases not counted there)


@pytest.mark.parametrize("kwargs", [{"units": 0}, {"units": 2.5}, {"units": 4, "kernel_size": 0},
                                    {"units": True}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError, match="positive integer"):
        QRNN(**kwargs)


def test_input_rank_error():
    with pytest.raises(ValueError, match="rank-3"):
        QRNN(3).build((None, 4))
    with pytest.raises(ValueError, match="rank-3"):
        QRNN(3).build((None, 4, None))
