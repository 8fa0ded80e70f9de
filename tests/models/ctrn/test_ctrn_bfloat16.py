"""QRNN and CTRN under the Keras mixed-precision policy `mixed_bfloat16` (float32 variables, bfloat16 computation),
against the same NumPy references as their float32 tests (references_ctrn.py), with the same weights.

Tolerances. bfloat16 keeps 8 significant bits (7 stored) and float32's exponent range, so rounding a value to
bfloat16 (to nearest) errs by at most U = 2^-8 (0.0039) of it, and nothing float32 holds over- or underflows. To
first order, an output reached through `n` such roundings errs by at most `n * U * scale`, `scale` the largest
output: the gates' tanh and sigmoid are 1-Lipschitz, and the fo-pooling state is a running weighted average of the
`z_t`, so neither amplifies an error. The layers round the inputs, the kernel and the bias (read in bfloat16), the
convolution's matmul and its bias add: 5 roundings before the gates, which are then float32, and 1 when the output
is cast back: 6 for QRNN (`h = o c`). CTRN's output is the product of two such states (`h * h-dagger`), whose
relative errors add: 2 * 5 + 1 = 11.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.ctrn import CTRN
from keras_match.models.ctrn import QRNN
from keras_match.models.ctrn.qrnn import gate
from keras_match.models.ctrn.qrnn import gate_of_padding

import references_ctrn as ref
from helpers import BF16
from helpers import U
from helpers import as_float
from helpers import assert_bf16
from helpers import assert_within
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch

QRNN_ROUNDINGS = 6
CTRN_ROUNDINGS = 11


def randomized(make, rng, input_shape, scale):
    """A float32 layer with random weights (non-zero biases) and its mixed_bfloat16 twin with the same weights."""
    layer = make(None)
    layer.build(input_shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])
    twin = make(BF16)
    twin.build(input_shape)
    twin.set_weights(layer.get_weights())
    assert all(w.dtype == "float32" for w in twin.weights)  # variables stay float32
    return layer, twin


# With F's pre-activation v about 7, the bias add's output (about 7) rounds once at that size: 1 - f = sigmoid(-v)
# moves by up to 7U of itself (d log sigmoid(-v) / dv = -f, about -1), and so does the state c, which is 1 - f times
# a weighted sum of z; the other roundings are the ordinary ones, of O(1) quantities.
NEAR_ONE_ROUNDINGS = 7 + QRNN_ROUNDINGS


def long_memory(layer, twin):
    """Biases of Z, F, O set to 1, 7, 2 in both layers (with small kernels): forget gates about sigmoid(7) =
    1 - 9e-4 (a long memory), and z, o far enough from 0 that the outputs are not vanishingly small."""
    kernel, bias = layer.get_weights()
    bias = np.repeat(np.array([1.0, 7.0, 2.0], "float32"), bias.shape[0] // 3)
    layer.set_weights([kernel, bias])
    twin.set_weights([kernel, bias])


# QRNN ------------------------------------------------------------------------------------------------------------
LENGTHS = [5, 2, 4, 0]


@pytest.mark.parametrize("kernel_size", [1, 3])
def test_qrnn_matches_numpy_reference(kernel_size):
    rng = np.random.default_rng(1)
    x, mask = padded_batch(rng, LENGTHS, 6, 3)
    layer, bf16 = randomized(lambda dtype: QRNN(4, kernel_size=kernel_size, dtype=dtype), rng, (None, None, 3), 0.5)
    out = bf16(x, mask=mask)
    assert_bf16(out, call_layer(layer, x, mask))
    assert_within(out, ref.qrnn(x, mask, *layer.get_weights()), QRNN_ROUNDINGS, err_msg="masked")
    assert not as_float(out)[~mask].any()  # exact zeros at padding
    full = np.ones(mask.shape, bool)
    assert_within(bf16(x / 50.0), ref.qrnn(x / 50.0, full, *layer.get_weights()), QRNN_ROUNDINGS, err_msg="no mask")


def test_qrnn_forget_gates_near_one_still_read_their_input():
    # F's pre-activations about 7: f = sigmoid(7) = 1 - 9e-4, which bfloat16 rounds to exactly 1 (its largest
    # value below 1 is 1 - 2^-8): a bfloat16 cell would keep c = 0 and output 0. The layer takes the sigmoid in
    # float32, so 1 - f keeps float32's precision and only the pre-activation's roundings count.
    rng = np.random.default_rng(2)
    x, mask = padded_batch(rng, LENGTHS, 6, 3)
    layer, bf16 = randomized(lambda dtype: QRNN(4, kernel_size=2, dtype=dtype), rng, (None, None, 3), 0.1)
    long_memory(layer, bf16)
    assert float(tf.sigmoid(tf.constant(7.0, tf.bfloat16))) == 1.0  # the test can fail
    expected = ref.qrnn(x, mask, *layer.get_weights())
    assert np.abs(expected).max() > 1e-3  # a frozen cell would give 0: an error of the whole scale
    assert_within(bf16(x, mask=mask), expected, NEAR_ONE_ROUNDINGS)


def test_qrnn_padding_changes_nothing():
    rng = np.random.default_rng(3)
    x, mask = padded_batch(rng, LENGTHS, 5, 3)
    layer, bf16 = randomized(lambda dtype: QRNN(4, kernel_size=2, dtype=dtype), rng, (None, None, 3), 0.5)
    expected = ref.qrnn(x, mask, *layer.get_weights())
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    longer = as_float(bf16(longer_x, mask=longer_mask))
    assert not longer[~longer_mask].any()
    # another batch shape may sum in another order and round to a neighbouring bfloat16: the same bound
    assert_within(longer[:, :5], expected, QRNN_ROUNDINGS, err_msg="padded more")
    for b, n in enumerate(LENGTHS[:3]):
        assert_within(bf16(x[b : b + 1, :n])[0], expected[b, :n], QRNN_ROUNDINGS, np.abs(expected).max(), f"{b}")


def test_qrnn_regularizers_stay_float32():
    x = np.random.default_rng(4).normal(size=(2, 4, 3)).astype("float32")
    make = lambda dtype: QRNN(4, kernel_regularizer=keras.regularizers.L2(0.01),  # noqa: E731
                              bias_regularizer=keras.regularizers.L2(0.02), dtype=dtype)
    layer, bf16 = randomized(make, np.random.default_rng(4), (None, None, 3), 0.5)
    bf16(x)
    assert len(bf16.losses) == len(layer.losses) == 2
    assert all(keras.backend.standardize_dtype(loss.dtype) == "float32" for loss in bf16.losses)
    np.testing.assert_array_equal([float(v) for v in bf16.losses], [float(v) for v in layer.losses])


def test_padding_gates_equal_the_gates_of_an_all_padding_window():
    # CTRN's index alignment continues a text's gates with `gate_of_padding`; under bfloat16 it must still equal
    # the computed gate of a window of zeros, to float32's precision (TensorFlow's vectorised sigmoid may differ
    # from its scalar path by a float32 ulp, in float32 too), not bfloat16's, or more padding would change the
    # outputs by up to U.
    rng = np.random.default_rng(5)
    kernel = tf.constant(rng.normal(size=(2, 3, 12)), tf.bfloat16)
    bias = tf.constant(rng.normal(size=(12,)), tf.bfloat16)
    windows = tf.zeros([2 * 3, 2 * 3], tf.bfloat16)
    for index in range(3):
        gates = gate(windows, kernel, bias, index, 2)
        padding = gate_of_padding(kernel, bias, index)
        assert gates.dtype == padding.dtype == tf.float32
        np.testing.assert_allclose(gates.numpy(), np.broadcast_to(padding.numpy(), gates.shape), rtol=1e-6)
    assert gate_of_padding(kernel, None, 1).dtype == tf.float32


# CTRN ------------------------------------------------------------------------------------------------------------
def make_pair(seed, q_lengths=(5, 2, 3, 1), a_lengths=(7, 6, 3, 0), dim=3):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, list(q_lengths), 5, dim)
    a, a_mask = padded_batch(rng, list(a_lengths), 7, dim)
    return rng, q, a, q_mask, a_mask


@pytest.mark.parametrize("alignment", ["index", "stretch"])
def test_ctrn_matches_numpy_reference(alignment):
    rng, q, a, q_mask, a_mask = make_pair(1)
    layer, bf16 = randomized(lambda dtype: CTRN(4, kernel_size=3, alignment=alignment, dtype=dtype), rng,
                             [(None, None, 3), (None, None, 3)], 0.7)
    out = bf16([q, a], mask=[q_mask, a_mask])
    assert_bf16(out, call_layer(layer, [q, a], [q_mask, a_mask]))
    hq, ha = as_float(out)
    ref_q, ref_a = ref.ctrn(q, a, q_mask, a_mask, *layer.get_weights(), alignment)
    assert_within(hq, ref_q, CTRN_ROUNDINGS, err_msg="hq")
    assert_within(ha, ref_a, CTRN_ROUNDINGS, err_msg="ha")
    assert not hq[~q_mask].any() and not ha[~a_mask].any()  # exact zeros at padding


@pytest.mark.parametrize("alignment", ["index", "stretch"])
def test_ctrn_partner_forget_gates_near_one(alignment):
    # As for QRNN: every forget gate (own and partner's) about sigmoid(7), 1 in bfloat16 (see the QRNN test).
    rng, q, a, q_mask, a_mask = make_pair(2)
    layer, bf16 = randomized(lambda dtype: CTRN(4, alignment=alignment, dtype=dtype), rng,
                             [(None, None, 3), (None, None, 3)], 0.1)
    long_memory(layer, bf16)
    hq, ha = as_float(bf16([q, a], mask=[q_mask, a_mask]))
    ref_q, ref_a = ref.ctrn(q, a, q_mask, a_mask, *layer.get_weights(), alignment)
    assert np.abs(ref_q).max() > 1e-6 and np.abs(ref_a).max() > 1e-6  # not 0, what frozen cells give
    # Both states' 1 - f move by up to 7U of themselves (see NEAR_ONE_ROUNDINGS), their product by the sum.
    assert_within(hq, ref_q, 2 * 7 + CTRN_ROUNDINGS, err_msg="hq")
    assert_within(ha, ref_a, 2 * 7 + CTRN_ROUNDINGS, err_msg="ha")


@pytest.mark.parametrize("alignment", ["index", "stretch"])
def test_ctrn_padding_changes_nothing(alignment):
    rng, q, a, q_mask, a_mask = make_pair(3)
    layer, bf16 = randomized(lambda dtype: CTRN(4, alignment=alignment, dtype=dtype), rng,
                             [(None, None, 3), (None, None, 3)], 0.7)
    ref_q, ref_a = ref.ctrn(q, a, q_mask, a_mask, *layer.get_weights(), alignment)
    for extra_q, extra_a in ((4, 0), (0, 3)):
        long_q, long_q_mask = pad_more(rng, q, q_mask, extra_q)
        long_a, long_a_mask = pad_more(rng, a, a_mask, extra_a)
        lhq, lha = as_float(bf16([long_q, long_a], mask=[long_q_mask, long_a_mask]))
        assert not lhq[~long_q_mask].any() and not lha[~long_a_mask].any()
        # another batch shape may sum in another order and round to a neighbouring bfloat16: the same bound
        assert_within(lhq[:, :5], ref_q, CTRN_ROUNDINGS, err_msg=f"hq, {extra_q} more")
        assert_within(lha[:, :7], ref_a, CTRN_ROUNDINGS, err_msg=f"ha, {extra_a} more")
    for b, (n_q, n_a) in enumerate([(5, 7), (2, 6), (3, 3)]):  # each pair alone, unpadded
        hq, ha = bf16([q[b : b + 1, :n_q], a[b : b + 1, :n_a]])
        assert_within(hq[0], ref_q[b, :n_q], CTRN_ROUNDINGS, np.abs(ref_q).max(), f"hq {b}")
        assert_within(ha[0], ref_a[b, :n_a], CTRN_ROUNDINGS, np.abs(ref_a).max(), f"ha {b}")
