import numpy as np
import pytest

from keras_match.layers import IntraAttention

import references as ref
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 2, 4]


def test_layer_roundtrip(tmp_path):
    x, mask = padded_batch(np.random.default_rng(0), LENGTHS, 5, 4)
    run_layer_test(
        lambda: IntraAttention(units=3),
        x,
        mask,
        expected_shape=(3, 5, 4),
        expected_weights=2,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_matches_numpy_reference(activation):
    rng = np.random.default_rng(1)
    x, mask = padded_batch(rng, LENGTHS + [0], 6, 4)  # includes a fully padded row
    layer = IntraAttention(units=5, activation=activation)
    layer.build(x.shape)
    layer.set_weights([w + rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    out = call_layer(layer, x, mask)
    assert_finite(out)
    expected = ref.intra_attention(x, mask, *layer.get_weights(), activation=activation)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_scaled_affinity_matches_numpy_reference_and_round_trips(tmp_path):
    rng = np.random.default_rng(3)
    x, mask = padded_batch(rng, LENGTHS, 5, 4)
    layer = IntraAttention(units=5, scaled_affinity=True)
    layer.build(x.shape)
    layer.set_weights([w + rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])
    expected = ref.intra_attention(x, mask, *layer.get_weights(), scaled=True)
    np.testing.assert_allclose(call_layer(layer, x, mask), expected, rtol=1e-4, atol=1e-5)
    unscaled = ref.intra_attention(x, mask, *layer.get_weights())
    assert not np.allclose(expected, unscaled, atol=1e-3)
    run_layer_test(lambda: IntraAttention(units=3, scaled_affinity=True), x, mask, expected_shape=(3, 5, 4),
                   expected_weights=2, tmp_path=tmp_path)


def test_extra_padding_changes_nothing():
    rng = np.random.default_rng(2)
    x, mask = padded_batch(rng, LENGTHS, 5, 4)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=2)
    layer = IntraAttention(units=3)
    short, long = call_layer(layer, x, mask), call_layer(layer, longer_x, longer_mask)
    np.testing.assert_allclose(long[:, :5], short, atol=1e-6)
    assert not long[:, 5:].any()


def test_errors():
    with pytest.raises(ValueError, match="units"):
        IntraAttention(units=-1)
    with pytest.raises(ValueError, match="rank-3"):
        IntraAttention(units=2).build((None, 4))
