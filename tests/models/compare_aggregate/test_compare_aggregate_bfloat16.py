"""Compare-Aggregate's layers under the Keras mixed-precision policy `mixed_bfloat16` (float32 variables, bfloat16
computation), against the same NumPy references as their float32 tests (compare_aggregate_reference.py), with the
same weights.

Tolerances. bfloat16 keeps 8 significant bits (7 stored) and float32's exponent range, so rounding a value to
bfloat16 (to nearest) errs by at most U = 2^-8 (0.0039) of it, and nothing float32 holds over- or underflows (the
-1e9 fill of the masked softmax and max included). To first order, an output reached through `n` such roundings
(the inputs, the weights read in bfloat16, each bfloat16 operation's output) errs by at most `n * U * scale`, with
`scale` the largest quantity rounded on the way: the largest output unless a test says otherwise (the sigmoid,
tanh, ReLU, softmax and max here are 1-Lipschitz at these O(1) inputs and weights, and TensorFlow accumulates
bfloat16 sums and matrix products in float32, one rounding at the end). Each test counts its `n`: a Dense layer
reads its kernel and bias (2) and rounds its matmul and its bias add (2), 4 in all, its activation 1 more.
"""

import keras
import numpy as np
import pytest

from keras_match.models.compare_aggregate import CNNAggregation
from keras_match.models.compare_aggregate import CompareAggregate
from keras_match.models.compare_aggregate import CompareAttention
from keras_match.models.compare_aggregate import GatedPreprocessing
from keras_match.models.compare_aggregate import get_comparison

import compare_aggregate_reference as ref
from helpers import GARBAGE
from helpers import BF16
from helpers import U
from helpers import as_float
from helpers import assert_bf16
from helpers import assert_within
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch

Q_LENGTHS, A_LENGTHS, LEN_Q, LEN_A = [5, 3, 1], [4, 7, 2], 5, 7
WINDOWS = [1, 2, 4]
DIM, UNITS, FILTERS = 4, 3, 2

# Roundings from a layer's (float32) input to its output:
PREPROCESSING = 1 + 4 + 1 + 1  # the input, the Dense layers (4), their sigmoid / tanh, the product (eq. 1)
ATTENTION = 1 + 4 + 1 + 1 + 1  # the inputs, W^g (4), the affinity, the softmax's output, the weighted sum (eq. 2)
COMPARISON = {  # eq. 3-8
    "nn": 1 + 4,  # the inputs, the Dense layer
    "ntn": 1 + 1 + 1 + 1 + 1 + 1,  # the inputs, T, a^T T, the product with h, the sum, the bias add
    "euccos": 1 + 1,  # the inputs; computed in float32, rounded once
    "sub": 1 + 1 + 1,  # the inputs, the difference, the square
    "mult": 1 + 1,  # the inputs, the product
    "submult_nn": 1 + 2 + 4,  # the inputs, the features (difference and square), the Dense layer
}
CNN = 1 + 4  # the input, each convolution as a Dense layer (the max and the ReLU are exact) (eq. 9)


def randomized(make, rng, input_shape, scale=0.5):
    """A float32 layer with random weights (biases included) and its mixed_bfloat16 twin with the same weights."""
    layer = make(None)
    layer.build(input_shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])
    twin = make(BF16)
    twin.build(input_shape)
    twin.set_weights(layer.get_weights())
    assert all(w.dtype == "float32" for w in twin.weights)  # variables stay float32
    return layer, twin


def make_pair(seed, dim=DIM, q_lengths=Q_LENGTHS, a_lengths=A_LENGTHS):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, q_lengths, LEN_Q, dim)
    a, a_mask = padded_batch(rng, a_lengths, LEN_A, dim)
    return rng, q, a, q_mask, a_mask


def new_garbage(rng, x, mask):
    garbage = rng.uniform(-GARBAGE, GARBAGE, size=x.shape).astype(x.dtype)
    return np.where(mask[..., None], x, garbage)


# eq. 1 -----------------------------------------------------------------------------------------------------------
def test_preprocessing_matches_reference():
    rng, q, _, _, _ = make_pair(1)
    layer, bf16 = randomized(lambda dtype: GatedPreprocessing(5, dtype=dtype), rng, q.shape, scale=1.0)
    out = bf16(q)
    assert_bf16(out, call_layer(layer, q))
    # The pre-activations (up to ~5 here) are rounded, not only the outputs in (-1, 1): they set the scale.
    kernel_i, bias_i, kernel_u, bias_u = layer.get_weights()
    scale = max(np.abs(q @ kernel_i + bias_i).max(), np.abs(q @ kernel_u + bias_u).max(), 1.0)
    assert_within(out, ref.gated_preprocessing(q, layer.get_weights()), PREPROCESSING, scale)


# eq. 2 -----------------------------------------------------------------------------------------------------------
def test_attention_matches_reference_and_masks_exactly():
    rng, q_bar, a_bar, q_mask, a_mask = make_pair(1, dim=UNITS)
    layer, bf16 = randomized(lambda dtype: CompareAttention(return_attention=True, dtype=dtype), rng,
                             [q_bar.shape, a_bar.shape])
    out = bf16([q_bar, a_bar], mask=[q_mask, a_mask])
    assert_bf16(out, call_layer(layer, [q_bar, a_bar], [q_mask, a_mask]))
    h, weights = as_float(out)
    ref_h, ref_weights = ref.compare_attention(q_bar, a_bar, q_mask, a_mask, *layer.get_weights())
    assert_within(h, ref_h, ATTENTION, err_msg="h")
    assert_within(weights, ref_weights, ATTENTION - 1, err_msg="weights")  # no weighted sum
    # Exact zeros at padded question words (the -1e9 fill is a bfloat16 number) and padded answer words; each
    # real row sums to 1 up to the rounding of its weights (at most U of each, so U of their sum).
    assert not weights[~np.broadcast_to(q_mask[:, None, :], weights.shape)].any()
    assert not weights[~a_mask].any() and not h[~a_mask].any()
    np.testing.assert_allclose(weights.sum(-1)[a_mask], 1.0, rtol=0, atol=U)


def test_attention_padding_changes_nothing():
    rng, q_bar, a_bar, q_mask, a_mask = make_pair(2, dim=UNITS)
    layer, bf16 = randomized(lambda dtype: CompareAttention(dtype=dtype), rng, [q_bar.shape, a_bar.shape])
    ref_h, _ = ref.compare_attention(q_bar, a_bar, q_mask, a_mask, *layer.get_weights())
    q2, q_mask2 = pad_more(rng, new_garbage(rng, q_bar, q_mask), q_mask, extra=2)
    a2, a_mask2 = pad_more(rng, new_garbage(rng, a_bar, a_mask), a_mask, extra=3)
    h2 = as_float(bf16([q2, a2], mask=[q_mask2, a_mask2]))
    assert not h2[~a_mask2].any()
    # another batch shape may sum in another order and round to a neighbouring bfloat16: the same bound
    assert_within(h2[:, :LEN_A], ref_h, ATTENTION, err_msg="padded more, garbage behind the masks")


# eq. 3-8 ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(COMPARISON))
def test_comparison_matches_reference(name):
    rng = np.random.default_rng(1)
    a, a_mask = padded_batch(rng, A_LENGTHS, LEN_A, UNITS)
    h = np.where(a_mask[..., None], rng.normal(size=a.shape), rng.uniform(-GARBAGE, GARBAGE, a.shape))
    h = h.astype("float32")
    layer, bf16 = randomized(lambda dtype: get_comparison(name, dtype=dtype), rng, [a.shape, h.shape])
    out = bf16([a, h], mask=[a_mask, a_mask])
    assert_bf16(out, call_layer(layer, [a, h], [a_mask, a_mask]))
    t = as_float(out)
    assert_within(t, ref.compare(ref.comparison(name, layer.get_weights()), a, h, a_mask), COMPARISON[name])
    assert not t[~a_mask].any()  # exact zeros at padding, garbage behind them


def test_euccos_works_in_float32():
    # The norms' floor eps = 1e-6 and eps^2 = 1e-12 are bfloat16 numbers too (float32's exponent range), but the
    # layer computes in float32 anyway: from the inputs as read, its output is the float32 value rounded once.
    a = np.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [3.0, -1.0, 0.5]]], "float32")
    h = np.array([[[1.0, 2.0, 3.0], [1.0, 2.0, 2.0], [1.0, 1.0, 1.01], [-6.0, 2.0, -1.0]]], "float32")
    rounded_h = np.asarray(keras.ops.cast(keras.ops.cast(h, "bfloat16"), "float32"))  # 1.01 -> 1.0078125
    out = as_float(get_comparison("euccos", dtype=BF16)([a, h]))
    expected = ref.compare(ref.comparison("euccos", []), a, rounded_h, np.ones((1, 4), bool))
    expected[0, 0, 0] = 1e-6  # a = h: the floor of the distance
    np.testing.assert_allclose(out, expected, rtol=U, atol=0)
    assert out[0, 2, 0] > 0  # the difference 2^-7 of the last coordinate survives


# eq. 9 -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("conv_padding", ["valid", "same"])
def test_cnn_matches_reference_and_padding_never_wins(conv_padding):
    rng = np.random.default_rng(1)
    t, mask = padded_batch(rng, [4, 7, 0], LEN_A, UNITS)  # an empty answer: r = 0
    make = lambda dtype: CNNAggregation(FILTERS, WINDOWS, conv_padding=conv_padding,  # noqa: E731
                                        return_word_features=True, dtype=dtype)
    layer, bf16 = randomized(make, rng, t.shape)
    out = bf16(t, mask=mask)
    assert_bf16(out, call_layer(layer, t, mask))
    out = as_float(out)
    weights = layer.get_weights()
    r, word_features = ref.cnn(t, mask, [(weights[i], weights[i + 1]) for i in range(0, len(weights), 2)],
                               conv_padding)
    assert r.max() > 0.1
    assert_within(out["aggregate"], r, CNN, err_msg="r")
    assert_within(out["word_features"], word_features, CNN, err_msg="word features")
    assert not out["aggregate"][2].any()
    # The max is exact in bfloat16: r is the largest word feature, bit for bit.
    np.testing.assert_array_equal(out["word_features"].max(axis=1), out["aggregate"])
    # Garbage (magnitude 50) behind the masks and more padding never win the max and give exact zeros.
    t2, mask2 = pad_more(rng, new_garbage(rng, t, mask), mask, extra=4)
    out2 = as_float(bf16(t2, mask=mask2))
    assert not out2["word_features"][:, LEN_A:].any()
    assert_within(out2["aggregate"], r, CNN, err_msg="r, padded more")


# eq. 1-9 ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["euccos", "ntn", "submult_nn"])
def test_compare_aggregate_matches_reference(name):
    rng, q, a, q_mask, a_mask = make_pair(2)
    make = lambda dtype: CompareAggregate(units=UNITS, comparison=name, windows=WINDOWS,  # noqa: E731
                                          filters=FILTERS, return_word_features=True, dtype=dtype)
    layer, bf16 = randomized(make, rng, [q.shape, a.shape], scale=0.8)
    out = bf16([q, a], mask=[q_mask, a_mask])
    assert_bf16(out, call_layer(layer, [q, a], [q_mask, a_mask]))
    out = as_float(out)
    expected = ref.compare_aggregate(q, a, q_mask, a_mask, layer.get_weights(), name, len(WINDOWS))
    assert expected["aggregate"].max() > 0.05
    # The chain of the four layers; each starts from the previous one's (already rounded) output, so one input
    # rounding less each.
    chain = PREPROCESSING + (ATTENTION - 1) + (COMPARISON[name] - 1) + (CNN - 1)
    assert_within(out["aggregate"], expected["aggregate"], chain, err_msg="aggregate")
    assert_within(out["word_features"], expected["word_features"], chain, err_msg="word_features")
    assert_within(out["attention"], expected["attention"], PREPROCESSING + ATTENTION - 2, err_msg="attention")
    assert not out["word_features"][~a_mask].any()


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # the one-word question alone
@pytest.mark.parametrize("name", ["euccos", "submult_nn"])
def test_compare_aggregate_padding_changes_nothing(name):
    rng, q, a, q_mask, a_mask = make_pair(4)
    make = lambda dtype: CompareAggregate(units=UNITS, comparison=name, windows=WINDOWS,  # noqa: E731
                                          filters=FILTERS, dtype=dtype)
    layer, bf16 = randomized(make, rng, [q.shape, a.shape], scale=0.8)
    expected = ref.compare_aggregate(q, a, q_mask, a_mask, layer.get_weights(), name, len(WINDOWS))["aggregate"]
    chain = PREPROCESSING + (ATTENTION - 1) + (COMPARISON[name] - 1) + (CNN - 1)
    q2, q_mask2 = pad_more(rng, new_garbage(rng, q, q_mask), q_mask, extra=3)
    a2, a_mask2 = pad_more(rng, new_garbage(rng, a, a_mask), a_mask, extra=2)
    # another batch shape may sum in another order and round to a neighbouring bfloat16: the same bound
    assert_within(bf16([q2, a2], mask=[q_mask2, a_mask2]), expected, chain, err_msg="padded more")
    for b in range(3):  # each pair alone, unpadded
        alone = bf16([q[b : b + 1, : Q_LENGTHS[b]], a[b : b + 1, : A_LENGTHS[b]]])
        assert_within(as_float(alone)[0], expected[b], chain, np.abs(expected).max(), f"pair {b} alone")
