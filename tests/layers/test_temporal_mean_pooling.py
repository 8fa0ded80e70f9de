import keras
import numpy as np
import pytest

from keras_match.layers import TemporalMeanPooling

import references as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 2, 0]


def test_layer_roundtrip(tmp_path):
    x, mask = padded_batch(np.random.default_rng(0), LENGTHS, 5, 3)
    run_layer_test(TemporalMeanPooling, x, mask, expected_shape=(3, 3), expected_weights=0, tmp_path=tmp_path)


def test_matches_the_masked_mean_and_ignores_padding():
    rng = np.random.default_rng(1)
    x, mask = padded_batch(rng, LENGTHS, 6, 4)
    out = call_layer(TemporalMeanPooling(), x, mask)
    np.testing.assert_allclose(out, ref.mean_max(x, mask)[:, :4], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[2], np.zeros(4))  # empty text: zeros, not NaN
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    np.testing.assert_allclose(call_layer(TemporalMeanPooling(), longer_x, longer_mask), out, atol=1e-6)
    np.testing.assert_allclose(call_layer(TemporalMeanPooling(), x), x.mean(axis=1), rtol=1e-5, atol=1e-5)


def test_output_carries_no_mask_and_rank_is_checked():
    tokens = keras.Input((None,), dtype="int32")
    pooled = TemporalMeanPooling()(keras.layers.Embedding(10, 3, mask_zero=True)(tokens))
    assert pooled.shape == (None, 3) and getattr(pooled, "_keras_mask", None) is None
    with pytest.raises(ValueError, match="rank-3"):
        TemporalMeanPooling().build((None, 3))
