import keras
import numpy as np
import pytest

from keras_match.layers import Highway

import references as ref
from helpers import call_layer
from helpers import padded_batch
from helpers import run_layer_test


@pytest.mark.parametrize(
    "units, shape, expected_shape, expected_weights",
    [
        (None, (3, 6), (3, 6), 4),  # [batch, d], no projection
        (6, (3, 6), (3, 6), 4),  # units == d: still no projection
        (4, (3, 5, 6), (3, 5, 4), 6),  # [batch, time, d] projected down: carry projection
    ],
)
def test_layer_roundtrip(tmp_path, units, shape, expected_shape, expected_weights):
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    run_layer_test(
        lambda: Highway(units=units, kernel_regularizer="l2"),
        x,
        expected_shape=expected_shape,
        expected_weights=expected_weights,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("units, activation", [(None, "relu"), (7, "relu"), (3, "tanh")])
def test_matches_numpy_reference(units, activation):
    rng = np.random.default_rng(1)
    x, _ = padded_batch(rng, [4, 2, 1], 4, 5)
    layer = Highway(units=units, activation=activation)
    layer.build(x.shape)
    # Non-zero biases so that they are exercised too.
    layer.set_weights([w + rng.normal(size=w.shape) * 0.3 if w.ndim == 1 else w for w in layer.get_weights()])
    outputs = call_layer(layer, x)
    expected = ref.highway(x, layer.get_weights(), activation)
    np.testing.assert_allclose(outputs, expected, rtol=1e-4, atol=1e-4)


def test_kernels_initialised_independently():
    layer = Highway(units=5)
    layer.build((None, 5 + 1))
    transform, _, gate, _, carry, _ = layer.get_weights()
    assert not np.allclose(transform, gate) and not np.allclose(gate, carry)
    seeded = Highway(kernel_initializer=keras.initializers.GlorotUniform(seed=3))
    seeded.build((None, 4))
    assert not np.allclose(seeded.get_weights()[0], seeded.get_weights()[2])


def test_mask_propagates_unchanged():
    tokens = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    hidden = Highway(units=3)(embedded)
    model = keras.Model(tokens, keras.ops.cast(hidden._keras_mask, "int32"))
    ids = np.array([[3, 4, 0, 0], [1, 2, 3, 5]])
    np.testing.assert_array_equal(model(ids), (ids != 0).astype("int32"))
    mask = np.array([[True, False]])
    assert Highway().compute_mask(np.zeros((1, 2, 3)), mask) is mask


@pytest.mark.parametrize("units", [0, -2, 2.5, True])
def test_invalid_units(units):
    with pytest.raises(ValueError, match="units"):
        Highway(units=units)


def test_undefined_input_dim():
    with pytest.raises(ValueError, match="last input dimension"):
        Highway().build((None, None))
