"""MCAN's layers under the Keras mixed-precision policy `mixed_bfloat16` (float32 variables, bfloat16 computation),
against the same NumPy references as their float32 tests (references_mcan.py), with the same weights.

Tolerances. bfloat16 keeps 8 significant bits (7 stored) and float32's exponent range, so rounding a value to
bfloat16 (to nearest) errs by at most U = 2^-8 (0.0039) of it, and nothing float32 holds over- or underflows. To
first order, a result reached through `n` such roundings (the inputs, the weights a layer reads in bfloat16, each
bfloat16 operation's output) errs by at most `n * U * scale`, `scale` bounding the quantities rounded: for a sum
or a polynomial that is the same expression over absolute values (the classic bound for rounded inputs); for the
attention layers, whose softmaxes, ReLUs and products are O(1)-Lipschitz at these O(1) inputs and weights, the
largest output. Each test counts its `n`.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.mcan import MultiCastAttention
from keras_match.models.mcan import get_compression

import references_mcan as ref
from helpers import BF16
from helpers import U
from helpers import as_float
from helpers import assert_bf16
from helpers import assert_within
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch



def twin(layer_factory, float32_layer, input_shape):
    """The same layer under mixed_bfloat16, with the float32 layer's weights."""
    layer = layer_factory(BF16)
    layer.build(input_shape)
    layer.set_weights(float32_layer.get_weights())
    assert all(w.dtype == "float32" for w in layer.weights)  # variables stay float32
    return layer


# eq. 10-12: the compressions -----------------------------------------------------------------------------------
# Per kind: the same expression over absolute values (the scale of the first-order bound) and the roundings:
# sm: the input, the sum's output (TensorFlow sums bfloat16 in float32: one rounding at the end) -> 2;
# nn: the input, kernel and bias read in bfloat16, the matmul's and the bias add's outputs -> 5;
# fm: the input, and the float32 result rounded once (weights are read in float32); x_i x_j doubles the input's
#     share in the pairwise term -> 3.
ROUNDINGS = {"sm": 2, "nn": 5, "fm": 3}


def absolute_scale(kind, weights, x):
    fn = ref.compression_fn(kind, [np.abs(w) for w in weights])
    return ref.apply_compression(fn, np.abs(x))


@pytest.mark.parametrize("kind", sorted(ROUNDINGS))
def test_compressions_match_numpy_reference(kind):
    rng = np.random.default_rng(1)  # as test_compression.py::test_matches_numpy_reference
    x = rng.normal(size=(2, 3, 7)).astype("float32")

    def make(dtype=None):
        return get_compression(kind, factors=4, dtype=dtype) if kind == "fm" else get_compression(kind, dtype=dtype)

    layer = make()
    layer.build(x.shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])
    expected = ref.apply_compression(ref.compression_fn(kind, layer.get_weights()), x)
    bf16 = twin(make, layer, x.shape)
    out = bf16(x)
    assert_bf16(out, call_layer(layer, x))
    assert_within(out, expected, ROUNDINGS[kind], absolute_scale(kind, layer.get_weights(), x), kind)


def dominant_feature_input(rng, n=40):
    """Inputs with one large feature (as the concat operator gives when a word has a large coordinate): Rendle's
    two sums are then ~x_1^2 |v_1|^2 (about 100 here) and their difference, the pairwise term, about 1."""
    x = rng.normal(size=(2, 6, n)) * 0.1
    x[..., 0] = 10.0 * np.sign(rng.normal(size=(2, 6)))
    return x.astype("float32")


def test_fm_pairwise_term_is_computed_in_float32():
    # The layer's own arithmetic, apart from rounding its input: against the reference on the input as the layer
    # reads it (rounded to bfloat16), the float32 computation is off by its final rounding only, U of the value.
    rng = np.random.default_rng(2)
    x = dominant_feature_input(rng)
    layer = get_compression("fm", factors=4)
    layer.build(x.shape)
    layer.set_weights([np.zeros(1, "float32"), np.zeros((40, 1), "float32"),
                       rng.normal(size=(40, 4)).astype("float32")])  # the pairwise term alone
    bf16 = twin(lambda dtype: get_compression("fm", factors=4, dtype=dtype), layer, x.shape)
    rounded = np.asarray(tf.cast(tf.cast(x, tf.bfloat16), tf.float32))
    expected = ref.apply_compression(ref.compression_fn("fm", layer.get_weights()), rounded)
    assert np.abs(expected).min() > 0.01
    # 1 rounding of each output; float32's own error (2^-24 of the ~100 sums) is far below it.
    assert_within(bf16(x), expected, 1, scale=np.abs(expected) + 1e-4, err_msg="fm, rounded input")
    # The test can fail: Rendle's identity in bfloat16 loses the difference (U of ~100 is ~0.4, the term ~1).
    xb, v = tf.cast(rounded, tf.bfloat16), tf.cast(layer.get_weights()[2], tf.bfloat16)
    in_bf16 = 0.5 * tf.reduce_sum(tf.square(tf.matmul(xb, v)) - tf.matmul(tf.square(xb), tf.square(v)), -1,
                                  keepdims=True)
    with pytest.raises(AssertionError):
        assert_within(in_bf16, expected, 1, scale=np.abs(expected) + 1e-4)
    # End to end (the float32 input rounded too): the absolute-value bound of the compressions test.
    assert_within(bf16(x), ref.apply_compression(ref.compression_fn("fm", layer.get_weights()), x), 3,
                  absolute_scale("fm", layer.get_weights(), x), "fm")


def test_compression_regularizers_stay_float32():
    x = np.random.default_rng(3).normal(size=(2, 3, 5)).astype("float32")
    for kind in ("nn", "fm"):
        layer = get_compression(kind, kernel_regularizer=keras.regularizers.L2(0.01))
        layer.build(x.shape)
        bf16 = twin(lambda dtype: get_compression(kind, kernel_regularizer=keras.regularizers.L2(0.01),
                                                  dtype=dtype), layer, x.shape)
        bf16(x)
        assert [keras.backend.standardize_dtype(loss.dtype) for loss in bf16.losses] == ["float32"] * len(
            layer.losses)
        np.testing.assert_array_equal([float(v) for v in bf16.losses], [float(v) for v in layer.losses])


# eq. 7-9: MultiCastAttention ------------------------------------------------------------------------------------
# Roundings on the longest path to a feature (the mean cast's): the words (1), the attention F's kernel and bias
# read in bfloat16 (2), F's matmul and bias add (2), the affinity (1), the mean over the partner's words (1) and
# the softmax (1), each rounded once at the end (they sum in float32), the pooling matmul (1), the operator (1),
# the compression (at most 4 more, nn's: its kernel, bias, matmul and bias add; fm rounds once): 14.
MCA_ROUNDINGS = 14


def make_pair(seed, q_lengths=(5, 3, 1), d_lengths=(4, 7, 2), dim=4):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, list(q_lengths), 5, dim)
    d, d_mask = padded_batch(rng, list(d_lengths), 7, dim)
    return rng, q, d, q_mask, d_mask


def multi_cast_reference(layer, kind, q, d, q_mask, d_mask):
    co = layer.co_attention.get_weights() if layer.shared_affinity else {
        "alignment": layer.co_attention.get_weights(), "max": layer.max_co_attention.get_weights(),
        "mean": layer.mean_co_attention.get_weights()}
    return ref.multi_cast(q, d, q_mask, d_mask, co, layer.intra_attention.get_weights(),
                          [ref.compression_fn(kind, c.get_weights()) for c in layer.compressions],
                          pooled_casts=layer.pooled_casts, scaled=layer.scaled_affinity)


def randomized_multi_cast(rng, q, d, **kwargs):
    def make(dtype=None):
        return MultiCastAttention(fm_factors=3, dtype=dtype, **kwargs)

    layer = make()
    layer.build([q.shape, d.shape])
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    return layer, twin(make, layer, [q.shape, d.shape])


@pytest.mark.parametrize("kwargs", [
    {"compression": "sm"},
    {"compression": "nn", "attention_units": 3},
    {"compression": "fm"},
    {"compression": "fm", "pooled_casts": "weighted", "scaled_affinity": True, "shared_affinity": False},
], ids=["sm", "nn", "fm", "fm-weighted-scaled-unshared"])
def test_multi_cast_attention_matches_numpy_reference(kwargs):
    rng, q, d, q_mask, d_mask = make_pair(1)
    layer, bf16 = randomized_multi_cast(rng, q, d, **kwargs)
    out = bf16([q, d], mask=[q_mask, d_mask])
    assert_bf16(out, call_layer(layer, [q, d], [q_mask, d_mask]))
    ref_q, ref_d = multi_cast_reference(layer, kwargs["compression"], q, d, q_mask, d_mask)
    zq, zd = as_float(out)
    assert_within(zq, ref_q, MCA_ROUNDINGS, err_msg="zq")
    assert_within(zd, ref_d, MCA_ROUNDINGS, err_msg="zd")
    assert not zq[~q_mask].any() and not zd[~d_mask].any()  # exact zeros at padding


def test_multi_cast_attention_padding_and_empty_texts():
    rng, q, d, q_mask, d_mask = make_pair(2, q_lengths=(5, 3, 0, 2), d_lengths=(4, 0, 2, 7))
    layer, bf16 = randomized_multi_cast(rng, q, d, compression="fm")
    zq, zd = as_float(bf16([q, d], mask=[q_mask, d_mask]))
    assert np.all(np.isfinite(zq)) and np.all(np.isfinite(zd))
    ref_q, ref_d = multi_cast_reference(layer, "fm", q, d, q_mask, d_mask)
    assert_within(zq, ref_q, MCA_ROUNDINGS, err_msg="zq")
    assert_within(zd, ref_d, MCA_ROUNDINGS, err_msg="zd")
    # More padding (garbage of magnitude 50 behind the masks) and each pair alone, unpadded: the same features
    # within the bound (another batch shape may sum in another order and round to a neighbouring bfloat16).
    q2, q_mask2 = pad_more(rng, q, q_mask, extra=2)
    d2, d_mask2 = pad_more(rng, d, d_mask, extra=1)
    zq2, zd2 = as_float(bf16([q2, d2], mask=[q_mask2, d_mask2]))
    assert not zq2[~q_mask2].any() and not zd2[~d_mask2].any()
    assert_within(zq2[:, :5], ref_q, MCA_ROUNDINGS, err_msg="zq, padded more")
    assert_within(zd2[:, :7], ref_d, MCA_ROUNDINGS, err_msg="zd, padded more")
    for b, (n_q, n_d) in [(0, (5, 4)), (3, (2, 7))]:  # the pairs without an empty text
        alone_q, alone_d = as_float(bf16([q[b:b + 1, :n_q], d[b:b + 1, :n_d]]))
        assert_within(alone_q[0], ref_q[b, :n_q], MCA_ROUNDINGS, scale=np.abs(ref_q).max(), err_msg=f"q {b}")
        assert_within(alone_d[0], ref_d[b, :n_d], MCA_ROUNDINGS, scale=np.abs(ref_d).max(), err_msg=f"d {b}")


def test_multi_cast_attention_regularizers_stay_float32():
    _, q, d, q_mask, d_mask = make_pair(3)
    layer = MultiCastAttention(compression="fm", fm_factors=3, kernel_regularizer=keras.regularizers.L2(0.01))
    layer.build([q.shape, d.shape])
    bf16 = twin(lambda dtype: MultiCastAttention(compression="fm", fm_factors=3,
                                                 kernel_regularizer=keras.regularizers.L2(0.01), dtype=dtype),
                layer, [q.shape, d.shape])
    bf16([q, d], mask=[q_mask, d_mask])
    assert len(bf16.losses) == len(layer.losses) > 0
    assert all(keras.backend.standardize_dtype(loss.dtype) == "float32" for loss in bf16.losses)
    np.testing.assert_array_equal([float(v) for v in bf16.losses], [float(v) for v in layer.losses])
