import keras
import numpy as np
import pytest

from keras_match.layers import MeanMaxPooling

import references as ref
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 2, 4]


def test_layer_roundtrip(tmp_path):
    x, mask = padded_batch(np.random.default_rng(0), LENGTHS, 5, 3)
    run_layer_test(MeanMaxPooling, x, mask, expected_shape=(3, 6), expected_weights=0, tmp_path=tmp_path)


def test_matches_numpy_reference():
    x, mask = padded_batch(np.random.default_rng(1), LENGTHS, 6, 4)
    np.testing.assert_allclose(call_layer(MeanMaxPooling(), x, mask), ref.mean_max(x, mask), rtol=1e-5, atol=1e-6)


def test_without_mask_every_position_counts():
    x = np.random.default_rng(2).normal(size=(2, 4, 3)).astype("float32")
    expected = np.concatenate([x.mean(axis=1), x.max(axis=1)], axis=-1)
    np.testing.assert_allclose(call_layer(MeanMaxPooling(), x), expected, rtol=1e-6, atol=1e-6)


def test_extra_padding_changes_nothing():
    rng = np.random.default_rng(3)
    x, mask = padded_batch(rng, LENGTHS, 5, 3)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=2)
    layer = MeanMaxPooling()
    np.testing.assert_allclose(call_layer(layer, longer_x, longer_mask), call_layer(layer, x, mask), atol=1e-6)


def test_fully_padded_row_gives_zeros():
    x, mask = padded_batch(np.random.default_rng(4), [0, 3], 4, 3)
    out = call_layer(MeanMaxPooling(), x, mask)
    assert_finite(out)
    np.testing.assert_array_equal(out[0], np.zeros(6))
    np.testing.assert_allclose(out[1], ref.mean_max(x, mask)[1], rtol=1e-5, atol=1e-6)


def test_rank_error():
    with pytest.raises(ValueError, match="rank-3"):
        MeanMaxPooling().build((None, 3))


def test_output_carries_no_mask():
    tokens = keras.Input((None,), dtype="int32")
    pooled = MeanMaxPooling()(keras.layers.Embedding(10, 3, mask_zero=True)(tokens))
    assert pooled.shape == (None, 6)
    assert getattr(pooled, "_keras_mask", None) is None


def test_gradient_finite_and_zero_at_padding():
    import tensorflow as tf  # the project's backend; gradients need a backend tape

    x, mask = padded_batch(np.random.default_rng(5), [0, 3], 4, 3)
    x_var = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(MeanMaxPooling()(x_var, mask=mask))
    grad = np.asarray(tape.gradient(loss, x_var))
    assert np.all(np.isfinite(grad))
    assert not grad[~mask].any()
