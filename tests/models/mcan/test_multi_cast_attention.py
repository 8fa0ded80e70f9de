import keras
import numpy as np
import pytest

from keras_match.models.mcan import MultiCastAttention

import references_mcan as ref
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

WEIGHTS = {"sm": 4, "nn": 28, "fm": 40}


def make_pair(seed, q_lengths=(5, 3, 1), d_lengths=(4, 7, 2), dim=4):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, list(q_lengths), 5, dim)
    d, d_mask = padded_batch(rng, list(d_lengths), 7, dim)
    return rng, q, d, q_mask, d_mask


def reference(layer, kind, q, d, q_mask, d_mask, activation="relu"):
    compressions = [ref.compression_fn(kind, c.get_weights()) for c in layer.compressions]
    return ref.multi_cast(
        q,
        d,
        q_mask,
        d_mask,
        layer.co_attention.get_weights() if layer.shared_affinity else {
            "alignment": layer.co_attention.get_weights(), "max": layer.max_co_attention.get_weights(),
            "mean": layer.mean_co_attention.get_weights()},
        layer.intra_attention.get_weights(),
        compressions,
        activation=activation,
        pooled_casts=layer.pooled_casts,
        scaled=layer.scaled_affinity,
    )


@pytest.mark.parametrize("kind", sorted(WEIGHTS))
def test_layer_roundtrip(tmp_path, kind):
    _, q, d, q_mask, d_mask = make_pair(0)
    run_layer_test(
        lambda: MultiCastAttention(compression=kind, fm_factors=3, kernel_regularizer="l2"),
        [q, d],
        [q_mask, d_mask],
        expected_shape=((3, 5, 12), (3, 7, 12)),
        expected_weights=WEIGHTS[kind],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("kind, attention_units", [("sm", None), ("nn", 3), ("fm", None)])
def test_matches_numpy_reference(kind, attention_units):
    rng, q, d, q_mask, d_mask = make_pair(1)
    layer = MultiCastAttention(compression=kind, attention_units=attention_units, fm_factors=3)
    layer.build([q.shape, d.shape])
    # Random full-size weights everywhere (biases included), so that every compression is distinct and matters.
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    zq, zd = call_layer(layer, [q, d], [q_mask, d_mask])
    ref_q, ref_d = reference(layer, kind, q, d, q_mask, d_mask)
    np.testing.assert_allclose(zq, ref_q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(zd, ref_d, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pooled_casts, scaled", [("weighted", False), ("weighted", True), ("broadcast", True)])
def test_weighted_casts_and_scaled_affinity_match_numpy_reference(pooled_casts, scaled):
    rng, q, d, q_mask, d_mask = make_pair(3)
    layer = MultiCastAttention(compression="fm", fm_factors=3, pooled_casts=pooled_casts, scaled_affinity=scaled)
    layer.build([q.shape, d.shape])
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    zq, zd = call_layer(layer, [q, d], [q_mask, d_mask])
    ref_q, ref_d = reference(layer, "fm", q, d, q_mask, d_mask)
    np.testing.assert_allclose(zq, ref_q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(zd, ref_d, rtol=1e-4, atol=1e-4)
    plain = MultiCastAttention(compression="fm", fm_factors=3)
    plain.build([q.shape, d.shape])
    plain.set_weights(layer.get_weights())
    assert not np.allclose(call_layer(plain, [q, d], [q_mask, d_mask])[0], zq, atol=1e-3)  # the options matter


@pytest.mark.parametrize("pooled_casts", ["broadcast", "weighted"])
def test_one_affinity_per_cast_matches_numpy_reference(pooled_casts):
    rng, q, d, q_mask, d_mask = make_pair(4)
    layer = MultiCastAttention(compression="fm", fm_factors=3, pooled_casts=pooled_casts, shared_affinity=False)
    layer.build([q.shape, d.shape])
    assert len(layer.trainable_weights) == WEIGHTS["fm"] + 4
    assert [c.name for c in (layer.co_attention, layer.max_co_attention, layer.mean_co_attention)] == [
        "alignment_co_attention", "max_co_attention", "mean_co_attention"]
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    zq, zd = call_layer(layer, [q, d], [q_mask, d_mask])
    ref_q, ref_d = reference(layer, "fm", q, d, q_mask, d_mask)
    np.testing.assert_allclose(zq, ref_q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(zd, ref_d, rtol=1e-4, atol=1e-4)
    # the max and mean casts read their own F: given the alignment cast's F, the layer is the shared one
    shared = MultiCastAttention(compression="fm", fm_factors=3, pooled_casts=pooled_casts)
    shared.build([q.shape, d.shape])
    shared.co_attention.set_weights(layer.co_attention.get_weights())
    shared.intra_attention.set_weights(layer.intra_attention.get_weights())
    for mine, theirs in zip(shared.compressions, layer.compressions):
        mine.set_weights(theirs.get_weights())
    z_shared = call_layer(shared, [q, d], [q_mask, d_mask])[0]
    assert not np.allclose(z_shared[..., 3:9], zq[..., 3:9], atol=1e-3)  # max / mean features differ
    np.testing.assert_allclose(z_shared[..., :3], zq[..., :3], rtol=1e-5, atol=1e-5)  # alignment is the same
    np.testing.assert_allclose(z_shared[..., 9:], zq[..., 9:], rtol=1e-5, atol=1e-5)  # intra too
    for other in (layer.max_co_attention, layer.mean_co_attention):
        other.set_weights(layer.co_attention.get_weights())
    np.testing.assert_allclose(call_layer(layer, [q, d], [q_mask, d_mask])[0], z_shared, rtol=1e-5, atol=1e-5)


def test_one_affinity_per_cast_round_trip(tmp_path):
    _, q, d, q_mask, d_mask = make_pair(0)
    run_layer_test(
        lambda: MultiCastAttention(compression="fm", fm_factors=3, shared_affinity=False),
        [q, d],
        [q_mask, d_mask],
        expected_shape=((3, 5, 12), (3, 7, 12)),
        expected_weights=WEIGHTS["fm"] + 4,
        tmp_path=tmp_path,
    )


def test_weighted_scaled_round_trip(tmp_path):
    _, q, d, q_mask, d_mask = make_pair(0)
    run_layer_test(
        lambda: MultiCastAttention(compression="fm", fm_factors=3, pooled_casts="weighted", scaled_affinity=True),
        [q, d],
        [q_mask, d_mask],
        expected_shape=((3, 5, 12), (3, 7, 12)),
        expected_weights=WEIGHTS["fm"],
        tmp_path=tmp_path,
    )


def test_feature_order_and_unshared_compressions():
    layer = MultiCastAttention(compression="nn")
    layer.build([(None, 5, 4), (None, 7, 4)])
    names = [c.name for c in layer.compressions]
    casts, operators = ("alignment", "max", "mean", "intra"), ("concat", "multiply", "subtract")
    assert names == [f"{c}_{o}_compression" for c in casts for o in operators]
    kernels = [c.get_weights()[0] for c in layer.compressions]
    assert [k.shape for k in kernels] == [(8, 1), (4, 1), (4, 1)] * 4
    assert len({id(c) for c in layer.compressions}) == 12


def test_padded_positions_are_zero_and_extra_padding_changes_nothing():
    rng, q, d, q_mask, d_mask = make_pair(2)
    layer = MultiCastAttention(compression="fm", fm_factors=3)
    zq, zd = call_layer(layer, [q, d], [q_mask, d_mask])
    assert not zq[~q_mask].any() and not zd[~d_mask].any()
    q2, q_mask2 = pad_more(rng, q, q_mask, extra=2)
    d2, d_mask2 = pad_more(rng, d, d_mask, extra=1)
    zq2, zd2 = call_layer(layer, [q2, d2], [q_mask2, d_mask2])
    np.testing.assert_allclose(zq2[:, :5], zq, atol=1e-6)
    np.testing.assert_allclose(zd2[:, :7], zd, atol=1e-6)
    assert not zq2[:, 5:].any() and not zd2[:, 7:].any()


def test_fully_padded_rows_are_finite():
    _, q, d, q_mask, d_mask = make_pair(3, q_lengths=(0, 3, 0), d_lengths=(4, 0, 0))
    layer = MultiCastAttention(compression="nn")
    zq, zd = call_layer(layer, [q, d], [q_mask, d_mask])
    assert_finite((zq, zd))
    ref_q, ref_d = reference(layer, "nn", q, d, q_mask, d_mask)
    np.testing.assert_allclose(zq, ref_q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(zd, ref_d, rtol=1e-4, atol=1e-4)


def test_masks_propagate_from_embedding():
    q_ids = keras.Input((None,), dtype="int32")
    d_ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(12, 4, mask_zero=True)
    zq, zd = MultiCastAttention(compression="sm")([embedding(q_ids), embedding(d_ids)])
    model = keras.Model([q_ids, d_ids], [zq, zd, zq._keras_mask, zd._keras_mask])
    q = np.array([[3, 4, 0], [5, 0, 0]])
    d = np.array([[1, 2, 7, 0], [8, 9, 0, 0]])
    out_q, out_d, mask_q, mask_d = (np.asarray(t) for t in model([q, d]))
    np.testing.assert_array_equal(mask_q, q != 0)
    np.testing.assert_array_equal(mask_d, d != 0)
    assert not out_q[q == 0].any() and not out_d[d == 0].any()
    assert out_q[q != 0].any()


@pytest.mark.parametrize("kind, weights, params", [("sm", 4, 5100), ("nn", 28, 5912), ("fm", 40, 13912)])
def test_paper_size_weight_counts(kind, weights, params):
    layer = MultiCastAttention(compression=kind)
    layer.build([(None, None, 50), (None, None, 50)])
    assert len(layer.trainable_weights) == weights
    assert layer.count_params() == params


def test_attention_units_default_to_input_dim():
    layer = MultiCastAttention(attention_units=None)
    layer.build([(None, 5, 6), (None, 7, 6)])
    assert layer.co_attention.get_weights()[0].shape == (6, 6)
    layer = MultiCastAttention(attention_units=8)
    layer.build([(None, 5, 6), (None, 7, 6)])
    assert layer.intra_attention.get_weights()[0].shape == (6, 8)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"compression": "max"}, "Valid names"), ({"attention_units": 0}, "attention_units"), ({"fm_factors": 0}, "fm_factors"),
     ({"pooled_casts": "sum"}, "pooled_casts")],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiCastAttention(**kwargs)


def test_mismatched_dims():
    with pytest.raises(ValueError, match="same, defined last dimension"):
        MultiCastAttention().build([(None, 5, 4), (None, 7, 6)])


@pytest.mark.parametrize("kind", sorted(WEIGHTS))
def test_gradients_finite_with_empty_texts(kind):
    import tensorflow as tf  # the project's backend; gradients need a backend tape

    _, q, d, q_mask, d_mask = make_pair(5, q_lengths=(0, 3, 0), d_lengths=(4, 0, 0))
    layer = MultiCastAttention(compression=kind, fm_factors=3)
    q_var = tf.Variable(q)
    with tf.GradientTape() as tape:
        zq, zd = layer([q_var, d], mask=[q_mask, d_mask])
        loss = tf.reduce_sum(zq**2) + tf.reduce_sum(zd**2)
    grads = tape.gradient(loss, layer.trainable_weights + [q_var])
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert not np.asarray(grads[-1])[~q_mask].any()  # padded words receive no gradient
