import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.layers import PositionEncoder

import references_carnn as ref
from helpers import call_layer
from helpers import lengths_mask
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 3, 1, 0]  # J = 1 and an empty text included
VARIANTS = ["paper", "memn2n_code"]


def history(seed, lengths=((4, 1, 0), (2, 3, 3)), time=4, dim=3):
    """[batch, turns, time, dim] with garbage at padded words, and its [batch, turns, time] mask."""
    rng = np.random.default_rng(seed)
    flat = [length for turns in lengths for length in turns]
    x, mask = padded_batch(rng, flat, time, dim)
    shape = (len(lengths), len(lengths[0]))
    return x.reshape(shape + (time, dim)), mask.reshape(shape + (time,))


@pytest.mark.parametrize("variant", VARIANTS)
def test_layer_roundtrip(tmp_path, variant):
    x, mask = padded_batch(np.random.default_rng(0), LENGTHS, 5, 4)
    _, out = run_layer_test(lambda: PositionEncoder(variant), x, mask, expected_shape=(4, 4), expected_weights=0,
                            tmp_path=tmp_path)
    np.testing.assert_allclose(out, ref.position_encoder(x, mask, variant), rtol=1e-5, atol=1e-5)


def test_layer_roundtrip_over_turns(tmp_path):
    x, mask = history(1)
    _, out = run_layer_test(PositionEncoder, x, mask, expected_shape=(2, 3, 3), expected_weights=0, tmp_path=tmp_path)
    np.testing.assert_allclose(out, ref.position_encoder(x, mask), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_matches_numpy_reference(variant):
    rng = np.random.default_rng(2)
    x, mask = padded_batch(rng, LENGTHS, 6, 5)
    out = call_layer(PositionEncoder(variant), x, mask)
    expected = ref.position_encoder(x, mask, variant)
    assert np.abs(expected[:3]).min() > 0 and not out[3].any()  # the empty text gives zeros
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    # Without a mask every position is a word: J = time.
    np.testing.assert_allclose(call_layer(PositionEncoder(variant), x / 50.0),
                               ref.position_encoder(x / 50.0, np.ones(mask.shape, bool), variant), rtol=1e-5,
                               atol=1e-5)
    # Over turns: each utterance by its own true length.
    x4, mask4 = history(3)
    np.testing.assert_allclose(call_layer(PositionEncoder(variant), x4, mask4),
                               ref.position_encoder(x4, mask4, variant), rtol=1e-5, atol=1e-5)


def weights_table(variant, J, time, dim):
    """l_kj for j = 1 .. J read off the layer: example j holds ones at word j and zeros elsewhere."""
    x = np.zeros((J, time, dim), "float32")
    x[np.arange(J), np.arange(J)] = 1.0
    return call_layer(PositionEncoder(variant), x, lengths_mask([J] * J, time))  # [J (j), dim (k)]


def test_weights_follow_the_printed_formula_and_its_checks():
    dim = 6
    k = np.arange(1, dim + 1)
    for J in (1, 2, 5):
        table = weights_table("paper", J, time=7, dim=dim)
        j = np.arange(1, J + 1)[:, None]
        np.testing.assert_allclose(table, (1 - j / J) - (k / dim) * (1 - 2 * j / J), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(table[-1], k / dim, rtol=1e-6)  # j = J: l_kJ = k/d (J = 1: l_k1 = k/d)
        official = weights_table("memn2n_code", J, time=7, dim=dim)
        # memn2n_code - 2 x paper = (d + J + 1 - 2j - 2k) / (dJ)   (implementer notes, section 6.4)
        np.testing.assert_allclose(official - 2 * table, (dim + J + 1 - 2 * j - 2 * k) / (dim * J), atol=1e-6)
    np.testing.assert_allclose(weights_table("memn2n_code", 1, time=3, dim=dim), np.ones((1, dim)), rtol=1e-6)
    # Near j = J/2 the printed weights are near 1/2 whatever k.
    np.testing.assert_allclose(weights_table("paper", 4, time=4, dim=dim)[1], 0.5, atol=0.13)


def test_a_single_word_is_weighted_k_over_d():
    x = np.random.default_rng(4).normal(size=(1, 4, 5)).astype("float32")
    out = call_layer(PositionEncoder(), x, lengths_mask([1], 4))
    np.testing.assert_allclose(out[0], np.arange(1, 6) / 5 * x[0, 0], rtol=1e-6)


def test_padding_never_leaks():
    rng = np.random.default_rng(5)
    x, mask = padded_batch(rng, LENGTHS, 5, 4)
    layer = PositionEncoder()
    out = call_layer(layer, x, mask)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    np.testing.assert_allclose(call_layer(layer, longer_x, longer_mask), out, rtol=1e-6, atol=1e-6)
    poisoned = np.where(mask[..., None], x, np.inf).astype("float32")
    poisoned[3, 0, 0] = np.nan
    np.testing.assert_array_equal(call_layer(layer, poisoned, mask), out)
    # A mask with a gap: j counts the real words only, so the gap is as if it were not there.
    gap_x = np.insert(x, 1, 7.0, axis=1)
    gap_mask = np.insert(mask, 1, False, axis=1)
    np.testing.assert_allclose(call_layer(layer, gap_x, gap_mask), out, rtol=1e-6, atol=1e-6)


def test_gradients_are_finite_and_zero_at_padded_words():
    x, mask = history(6)
    x_var = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(PositionEncoder()(x_var, mask=mask) ** 2)
    grad = tape.gradient(loss, x_var).numpy()
    assert np.all(np.isfinite(grad)) and np.abs(grad[mask]).min() > 0
    assert not grad[~mask].any()


def test_masks_through_a_functional_model():
    words = keras.Input((None, None), dtype="int32")  # [batch, turns, words]
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(words)
    turns = PositionEncoder()(embedded)
    assert turns.shape == (None, None, 4)
    single = PositionEncoder()(keras.layers.Embedding(10, 4, mask_zero=True)(keras.Input((None,), dtype="int32")))
    assert getattr(single, "_keras_mask", None) is None  # one vector per text: no mask
    model = keras.Model(words, [turns, keras.ops.cast(turns._keras_mask, "int32")])
    ids = np.array([[[3, 4, 0], [0, 0, 0]], [[1, 0, 0], [2, 2, 2]]])
    out, turn_mask = (np.asarray(t) for t in model(ids))
    np.testing.assert_array_equal(turn_mask, [[1, 0], [1, 1]])  # a turn without words is masked
    assert not out[0, 1].any() and out.shape == (2, 2, 4)


def test_unknown_shapes_in_a_saved_model_export(tmp_path):
    inputs = [keras.Input((None, None, 3)), keras.Input((None, None), dtype="bool")]
    model = keras.Model(inputs, PositionEncoder("memn2n_code")(inputs[0], mask=inputs[1]))
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "export"))
    for arrays in (history(7), history(8, lengths=((5,), (2,), (0,)), time=6)):
        expected = ref.position_encoder(*arrays, variant="memn2n_code")
        np.testing.assert_allclose(reloaded.serve(list(arrays)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="variant"):
        PositionEncoder("matlab")
    for shape in [(None, 4), (None, 2, 3, 4, 5), (None, 4, None)]:
        with pytest.raises(ValueError, match="inputs"):
            PositionEncoder().build(shape)
    with pytest.raises(ValueError, match="mask"):
        PositionEncoder()(np.zeros((2, 3, 4), "float32"), mask=np.ones((2, 1, 3), bool))
