import keras
import numpy as np
import pytest

from keras_match.layers import CoAttention
from keras_match.layers import co_attention

import references as ref
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

Q_LENGTHS, D_LENGTHS = [5, 3, 1], [4, 7, 2]


def make_pair(seed, q_lengths=Q_LENGTHS, d_lengths=D_LENGTHS, len_q=5, len_d=7, dim=4):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, q_lengths, len_q, dim)
    d, d_mask = padded_batch(rng, d_lengths, len_d, dim)
    return rng, q, d, q_mask, d_mask


def expected_shapes(batch, len_q, len_d, dim):
    pair = ((batch, len_q, dim), (batch, len_d, dim))
    return {"affinity": (batch, len_q, len_d), "max": pair, "mean": pair, "alignment": pair}


def assert_matches_reference(layer, q, d, q_mask, d_mask, activation="relu"):
    outputs = call_layer(layer, [q, d], [q_mask, d_mask])
    expected = ref.co_attention(q, d, q_mask, d_mask, *layer.get_weights(), activation=activation,
                                pooled_casts=layer.pooled_casts, scaled=layer.scaled_affinity)
    for key in expected:
        for got, want in zip(keras.tree.flatten(outputs[key]), keras.tree.flatten(expected[key])):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=key)
    return outputs


@pytest.mark.parametrize("options", [{}, {"pooled_casts": "weighted", "scaled_affinity": True}])
def test_layer_roundtrip(tmp_path, options):
    _, q, d, q_mask, d_mask = make_pair(0)
    run_layer_test(
        lambda: CoAttention(units=3, **options),
        [q, d],
        [q_mask, d_mask],
        expected_shape=expected_shapes(3, 5, 7, 4),
        expected_weights=2,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_matches_numpy_reference(activation):
    _, q, d, q_mask, d_mask = make_pair(1)
    layer = CoAttention(units=6, activation=activation)
    layer.build([q.shape, d.shape])
    rng = np.random.default_rng(7)
    layer.set_weights([w + rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    assert_matches_reference(layer, q, d, q_mask, d_mask, activation)


@pytest.mark.parametrize("pooled_casts, scaled", [("weighted", False), ("broadcast", True), ("weighted", True)])
def test_weighted_casts_and_scaled_affinity_match_numpy_reference(pooled_casts, scaled):
    _, q, d, q_mask, d_mask = make_pair(2)
    layer = CoAttention(units=6, pooled_casts=pooled_casts, scaled_affinity=scaled)
    layer.build([q.shape, d.shape])
    rng = np.random.default_rng(8)
    layer.set_weights([w + rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    outputs = assert_matches_reference(layer, q, d, q_mask, d_mask)
    if pooled_casts == "weighted":  # per word: the words of one text differ (a broadcast vector would not)
        q_max = np.asarray(outputs["max"][0])
        assert not np.allclose(q_max[0, 0], q_max[0, 1])
        # the weights sum to one over the real words, so the per-word casts sum to the broadcast vector
        broadcast = CoAttention(units=6, scaled_affinity=scaled)
        broadcast.build([q.shape, d.shape])
        broadcast.set_weights(layer.get_weights())
        pooled = np.asarray(call_layer(broadcast, [q, d], [q_mask, d_mask])["mean"][1])
        np.testing.assert_allclose(np.asarray(outputs["mean"][1]).sum(axis=1), pooled[:, 0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pooled_casts", ["broadcast", "weighted"])
def test_extra_padding_changes_nothing(pooled_casts):
    rng, q, d, q_mask, d_mask = make_pair(2)
    layer = CoAttention(units=3, pooled_casts=pooled_casts, scaled_affinity=pooled_casts == "weighted")
    short = call_layer(layer, [q, d], [q_mask, d_mask])
    q2, q_mask2 = pad_more(rng, q, q_mask, extra=2)
    d2, d_mask2 = pad_more(rng, d, d_mask, extra=3)
    long = call_layer(layer, [q2, d2], [q_mask2, d_mask2])
    np.testing.assert_allclose(long["affinity"][:, :5, :7], short["affinity"], atol=1e-6)
    assert not long["affinity"][:, 5:].any() and not long["affinity"][:, :, 7:].any()
    for key in ("max", "mean", "alignment"):
        for got, want, length in zip(long[key], short[key], (5, 7)):
            np.testing.assert_allclose(got[:, :length], want, atol=1e-6, err_msg=key)
            assert not got[:, length:].any(), key


def test_fully_padded_rows_are_finite():
    # Row 0: empty q; row 1: empty d; row 2: both empty.
    _, q, d, q_mask, d_mask = make_pair(3, q_lengths=[0, 3, 0], d_lengths=[4, 0, 0])
    layer = CoAttention(units=3)
    outputs = assert_matches_reference(layer, q, d, q_mask, d_mask)
    assert_finite(outputs)
    assert not outputs["alignment"][1][1].any()  # nothing of an empty q to align to d


def test_implicit_masks_from_embedding():
    q_ids = keras.Input((None,), dtype="int32")
    d_ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(12, 4, mask_zero=True)
    outputs = CoAttention(units=3)([embedding(q_ids), embedding(d_ids)])
    assert getattr(outputs["affinity"], "_keras_mask", None) is None
    model = keras.Model([q_ids, d_ids], {"align_q": outputs["alignment"][0], "q_mask": outputs["alignment"][0]._keras_mask})
    q = np.array([[3, 4, 0], [5, 0, 0]])
    d = np.array([[1, 2, 7, 0], [8, 9, 0, 0]])
    result = model([q, d])
    np.testing.assert_array_equal(result["q_mask"], q != 0)
    assert not np.asarray(result["align_q"])[q == 0].any()


def test_functions_without_masks_are_plain_softmax_attention():
    rng = np.random.default_rng(4)
    s = rng.normal(size=(2, 3, 4)).astype("float32")
    q = rng.normal(size=(2, 3, 5)).astype("float32")
    d = rng.normal(size=(2, 4, 5)).astype("float32")

    def softmax(x, axis):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    q_al, d_al = co_attention.alignment_pooling(s, q, d)
    np.testing.assert_allclose(q_al, softmax(s, 2) @ d, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_al, softmax(s, 1).transpose(0, 2, 1) @ q, rtol=1e-5, atol=1e-6)
    q_max, d_max = co_attention.max_pooling(s, q, d)
    np.testing.assert_allclose(q_max, np.einsum("bi,bid->bd", softmax(s.max(2), 1), q), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_max, np.einsum("bj,bjd->bd", softmax(s.max(1), 1), d), rtol=1e-5, atol=1e-6)
    q_mean, _ = co_attention.mean_pooling(s, q, d)
    np.testing.assert_allclose(q_mean, np.einsum("bi,bid->bd", softmax(s.mean(2), 1), q), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shapes, message",
    [
        ([(None, 5, 4), (None, 7, 3)], "same, defined last dimension"),
        ([(None, 5, 4), (None, 4)], "rank 3"),
        ([(None, 5, 4)], "pair of inputs"),
    ],
)
def test_shape_errors(shapes, message):
    with pytest.raises(ValueError, match=message):
        CoAttention(units=3).build(shapes)


def test_invalid_pooled_casts():
    with pytest.raises(ValueError, match="pooled_casts"):
        CoAttention(units=2, pooled_casts="summed")


def test_invalid_units():
    with pytest.raises(ValueError, match="units"):
        CoAttention(units=0)
