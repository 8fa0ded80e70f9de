"""The shared layers under Keras's `mixed_bfloat16` policy (float32 variables, bfloat16 computation).

Each layer is checked against the same float64 NumPy reference as its float32 tests (`references.py`,
`references_carnn.py`), with the float32 layer's weights copied into a `mixed_bfloat16` twin (`set_weights`),
within a tolerance counted in bfloat16 roundings:

    U = 2^-8: bfloat16 keeps 8 significant bits (7 stored and the implicit one), so rounding a value to bfloat16
    moves it by at most U of its magnitude (float32's 2^-24 is negligible next to it).

A tolerance `k * U * scale` says "k roundings along the path, each of at most U of a quantity no larger than
`scale`"; each test says which roundings it counts. The float32 tests stay as they are; these add the output
dtype (the compute dtype, bfloat16), exact zeros at padding, padding that changes nothing (within the
tolerance), and long texts (200 to 300 steps) where a bfloat16 state, count or normaliser would drift.

bfloat16 is emulated on CPUs without bfloat16 units (several times slower than float32), so the shapes are small.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.layers import CARNN
from keras_match.layers import CARNNCell
from keras_match.layers import CoAttention
from keras_match.layers import GatedLinearRecurrence
from keras_match.layers import Highway
from keras_match.layers import IntraAttention
from keras_match.layers import MeanMaxPooling
from keras_match.layers import PositionEncoder
from keras_match.layers import TemporalMeanPooling
from keras_match.layers import gated_linear_recurrence
from keras_match.layers import masked_ops

import references as ref
import references_carnn as ref_carnn
from helpers import lengths_mask
from helpers import pad_more
from helpers import padded_batch

POLICY = "mixed_bfloat16"
U = 2.0**-8  # bfloat16's unit roundoff (see the module docstring)
F32_STEP = 2.0**-24  # float32's unit roundoff: what each float32 step of a state adds


def bf16_values(array):
    """`array` rounded to the nearest bfloat16 values, as float32 (what a bfloat16 computation reads)."""
    return tf.cast(tf.cast(np.asarray(array, "float32"), tf.bfloat16), tf.float32).numpy()


def call_bf16(layer, inputs, masks=None):
    """Eager call: `(outputs, dtypes)`, the outputs as float64 NumPy arrays in the layer's output structure."""
    outputs = layer(inputs) if masks is None else layer(inputs, mask=masks)
    dtypes = keras.tree.map_structure(lambda t: keras.backend.standardize_dtype(t.dtype), outputs)
    arrays = keras.tree.map_structure(lambda t: tf.cast(t, tf.float64).numpy(), outputs)
    return arrays, dtypes


def twin(layer, make, input_shape):
    """A `mixed_bfloat16` layer made by `make(dtype=...)` with the (float32) weights of `layer`."""
    mixed = make(dtype=POLICY)
    mixed.build(input_shape)
    mixed.set_weights(layer.get_weights())
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in mixed.weights)
    return mixed


def assert_all_bfloat16(dtypes):
    assert set(keras.tree.flatten(dtypes)) == {"bfloat16"}, dtypes


def assert_within(actual, expected, tolerance, what=""):
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance, err_msg=what)


# masked_ops -----------------------------------------------------------------------------------------------------
def test_masked_ops_compute_in_float32_and_return_the_input_dtype():
    # Rows of 600, 300 and 0 real positions (counts above 256 are not bfloat16 numbers); inputs that are bfloat16
    # values already, so the exact answer is known: each result may only be rounded once, at the end (U of itself).
    rng = np.random.default_rng(0)
    mask = lengths_mask([600, 300, 0], 600)
    logits = tf.constant(bf16_values(rng.normal(size=(3, 600)) * 4.0), tf.bfloat16)
    weights = masked_ops.masked_softmax(logits, mask)
    assert keras.backend.standardize_dtype(weights.dtype) == "bfloat16"
    weights = tf.cast(weights, tf.float64).numpy()
    for row in range(2):
        expected = ref.softmax(tf.cast(logits[row], tf.float64).numpy()[mask[row]])
        np.testing.assert_allclose(weights[row][mask[row]], expected, rtol=U, atol=0)
        assert abs(weights[row].sum() - 1.0) <= U  # sum_i w_i (1 + d_i), |d_i| <= U
    assert not weights[~mask].any()  # padded positions and the empty row: exactly 0

    values = tf.constant(bf16_values(rng.normal(size=(3, 600, 2)) + 0.5), tf.bfloat16)
    mean = masked_ops.masked_mean(values, mask[..., None], axis=1)
    maximum = masked_ops.masked_max(values, mask[..., None], axis=1)
    assert {keras.backend.standardize_dtype(t.dtype) for t in (mean, maximum)} == {"bfloat16"}
    expected = ref.mean_max(tf.cast(values, tf.float64).numpy(), mask)
    # the mean: one final rounding (U) on a float32 sum of 600 terms (600 * 2^-24 relative, negligible)
    np.testing.assert_allclose(tf.cast(mean, tf.float64), expected[:, :2], rtol=U + 600 * F32_STEP, atol=0)
    np.testing.assert_array_equal(tf.cast(maximum, tf.float64), expected[:, 2:])  # a maximum rounds nothing
    # float32 stays float32
    assert masked_ops.masked_mean(np.ones((2, 3), "float32"), np.ones((2, 3), bool)).dtype == tf.float32


# the gated linear recurrence ------------------------------------------------------------------------------------
def long_coefficients(seed, batch=3, time=200, dim=4):
    """Long-memory coefficients that are bfloat16 values already: a in [0.98, 1), b ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    a = bf16_values(rng.uniform(0.98, 1.0, size=(batch, time, dim)))
    b = bf16_values(rng.normal(size=(batch, time, dim)))
    return rng, a, b


@pytest.mark.parametrize("reverse", [False, True])
def test_the_recurrence_keeps_a_float32_state_over_200_steps(reverse):
    # a and b are bfloat16 values, so the reference is exact for what the function reads. With the state in
    # float32, each h_t is rounded to bfloat16 once (U of |h_t|), after 2 float32 roundings per step (2 * 200 *
    # 2^-24 of the largest |h|). A bfloat16 state rounds at every step instead: with a near 1, |h| reaches 8 to 17,
    # where bfloat16's spacing is 1/16 to 1/8, a good part of each b_t ~ N(0, 1) is lost and the errors add up
    # (that code misses this tolerance at 40 to 54% of the states, by up to 0.38).
    rng, a, b = long_coefficients(0)
    mask = lengths_mask([200, 140, 0], 200)
    h0 = bf16_values(rng.normal(size=(3, 4)))
    out = gated_linear_recurrence(tf.constant(a, tf.bfloat16), tf.constant(b, tf.bfloat16), mask=mask,
                                  initial_state=h0, reverse=reverse)
    assert out.dtype == tf.bfloat16
    expected = ref.linear_recurrence(a, b, mask, h0, reverse)
    scale = np.abs(expected).max()
    assert scale > 8.0  # a state large enough for bfloat16's spacing to matter
    np.testing.assert_allclose(tf.cast(out, tf.float64), expected, rtol=U, atol=2 * 200 * F32_STEP * scale)


def test_gated_linear_recurrence_layer_in_bfloat16():
    # Inputs that are bfloat16 values (the layer's inputs are cast to its compute dtype): one rounding of each
    # state (U of |h|) and float32's per-step roundings (2 * 200 * 2^-24 of the largest |h|).
    rng, a, b = long_coefficients(1, time=200)
    mask = lengths_mask([200, 90, 0], 200)
    layer = GatedLinearRecurrence(reverse=True, dtype=POLICY)
    out, dtype = call_bf16(layer, [a, b], [mask, mask])
    assert dtype == "bfloat16"
    expected = np.where(mask[..., None], ref.linear_recurrence(a, b, mask, reverse=True), 0.0)
    tolerance = 2 * 200 * F32_STEP * np.abs(expected).max()
    np.testing.assert_allclose(out, expected, rtol=U, atol=tolerance)
    assert not out[~mask].any()  # exact zeros at padding
    longer_a, longer_mask = pad_more(rng, a, mask, extra=5)
    longer_b, _ = pad_more(rng, b, mask, extra=5)
    longer, _ = call_bf16(layer, [longer_a, longer_b], [longer_mask, longer_mask])
    np.testing.assert_allclose(longer[:, :200], out, rtol=U, atol=tolerance)
    assert not longer[:, 200:].any()


# Highway ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("units, activation, shape", [(None, "relu", (3, 5)), (3, "tanh", (3, 4, 5))])
def test_highway_in_bfloat16(units, activation, shape):
    # Along the path: x and the kernels rounded (2), each matmul output (1; TensorFlow sums its products in
    # float32), the bias and its addition (2), the activation / sigmoid output (1), H * T, 1 - T, (1 - T) * C and
    # the final sum (4): ~10 roundings of at most the output's scale, counted as 10 * U * max|y|.
    rng = np.random.default_rng(2)
    x = rng.normal(size=shape).astype("float32")
    layer = Highway(units=units, activation=activation)
    layer.build(x.shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * (0.3 if w.ndim == 1 else 0.5)
                       for w in layer.get_weights()])  # seeded weights (the float32 tests keep glorot kernels)
    mixed = twin(layer, lambda dtype: Highway(units=units, activation=activation, dtype=dtype), x.shape)
    out, dtype = call_bf16(mixed, x)
    assert dtype == "bfloat16"
    expected = ref.highway(x, layer.get_weights(), activation)
    assert_within(out, expected, 10 * U * np.abs(expected).max())


# CoAttention, IntraAttention ------------------------------------------------------------------------------------
# The attention outputs are softmax-weighted averages of the inputs (|v| <= V). Along the path: q, d and the
# projection's kernel rounded (3), its matmul output, bias and addition (3), the affinity's matmul output (1), the
# float32 softmax's weights (1), the weighted sum's matmul output (1): ~10 roundings, counted as 10 * U * V. (The
# logits' own error moves a weighted average by its weights' spread over the values, which is small where the
# logits are of order one or the softmax saturates, as here; measured: at most 3 * U * V.) The affinity: its 7
# roundings (its inputs, the projection, its own matmul output), counted as 8 * U * max|s|.
ATTENTION_ROUNDINGS, AFFINITY_ROUNDINGS = 10, 8


@pytest.mark.parametrize("options", [{}, {"pooled_casts": "weighted", "scaled_affinity": True, "activation": "tanh"}])
def test_co_attention_in_bfloat16(options):
    rng = np.random.default_rng(3)
    q, q_mask = padded_batch(rng, [5, 3, 0], 5, 4)  # row 2: an empty q
    d, d_mask = padded_batch(rng, [4, 7, 2], 7, 4)
    layer = CoAttention(units=6, **options)
    layer.build([q.shape, d.shape])
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    mixed = twin(layer, lambda dtype: CoAttention(units=6, dtype=dtype, **options), [q.shape, d.shape])
    out, dtypes = call_bf16(mixed, [q, d], [q_mask, d_mask])
    assert_all_bfloat16(dtypes)
    expected = ref.co_attention(q, d, q_mask, d_mask, *layer.get_weights(), activation=options.get("activation",
                                "relu"), pooled_casts=layer.pooled_casts, scaled=layer.scaled_affinity)
    values_scale = max(np.abs(q[q_mask]).max(), np.abs(d[d_mask]).max())
    tolerance = {key: ATTENTION_ROUNDINGS * U * values_scale for key in ("max", "mean", "alignment")}
    tolerance["affinity"] = AFFINITY_ROUNDINGS * U * np.abs(expected["affinity"]).max()
    for key in expected:
        for got, want in zip(keras.tree.flatten(out[key]), keras.tree.flatten(expected[key])):
            assert_within(got, want, tolerance[key], key)
    # exact zeros at padding
    assert not out["affinity"][~q_mask].any() and not out["affinity"].transpose(0, 2, 1)[~d_mask].any()
    for key in ("max", "mean", "alignment"):
        assert not out[key][0][~q_mask].any() and not out[key][1][~d_mask].any(), key
    # more padding: the same outputs at the real positions
    longer_q, longer_q_mask = pad_more(rng, q, q_mask, extra=2)
    longer_d, longer_d_mask = pad_more(rng, d, d_mask, extra=3)
    longer, _ = call_bf16(mixed, [longer_q, longer_d], [longer_q_mask, longer_d_mask])
    assert_within(longer["affinity"][:, :5, :7], out["affinity"], tolerance["affinity"])
    assert not longer["affinity"][:, 5:].any() and not longer["affinity"][:, :, 7:].any()
    for key in ("max", "mean", "alignment"):
        for got, want, length in zip(longer[key], out[key], (5, 7)):
            assert_within(got[:, :length], want, tolerance[key], key)
            assert not got[:, length:].any(), key


def test_intra_attention_in_bfloat16():
    rng = np.random.default_rng(4)
    x, mask = padded_batch(rng, [6, 2, 4, 0], 6, 4)  # a fully padded row included
    layer = IntraAttention(units=5, activation="linear")
    layer.build(x.shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()])
    mixed = twin(layer, lambda dtype: IntraAttention(units=5, activation="linear", dtype=dtype), x.shape)
    out, dtype = call_bf16(mixed, x, mask)
    assert dtype == "bfloat16"
    tolerance = ATTENTION_ROUNDINGS * U * np.abs(x[mask]).max()
    assert_within(out, ref.intra_attention(x, mask, *layer.get_weights(), activation="linear"), tolerance)
    assert not out[~mask].any()
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    longer, _ = call_bf16(mixed, longer_x, longer_mask)
    assert_within(longer[:, :6], out, tolerance)
    assert not longer[:, 6:].any()


# pooling over time ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer_class", [TemporalMeanPooling, MeanMaxPooling])
def test_poolings_in_bfloat16(layer_class):
    # Texts of 300, 7 and 0 words. The mean: the inputs rounded (U of each |x| <= V) and the float32 mean rounded
    # once (U of |mean| <= V): 2 * U * V. The max: only the inputs' rounding (U * V).
    rng = np.random.default_rng(5)
    x, mask = padded_batch(rng, [300, 7, 0], 300, 3)
    out, dtype = call_bf16(layer_class(dtype=POLICY), x, mask)
    assert dtype == "bfloat16"
    expected = ref.mean_max(x, mask)
    scale = np.abs(x[mask]).max()
    assert_within(out[:, :3], expected[:, :3], 2 * U * scale, "mean")
    if layer_class is MeanMaxPooling:
        assert_within(out[:, 3:], expected[:, 3:], U * scale, "max")
    assert not out[2].any()  # an empty text: zeros
    longer_x, longer_mask = pad_more(rng, x, mask, extra=4)
    assert_within(call_bf16(layer_class(dtype=POLICY), longer_x, longer_mask)[0], out, 2 * U * scale)


# PositionEncoder ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["paper", "memn2n_code"])
def test_position_encoder_in_bfloat16(variant):
    # Texts of 300, 260, 5 and 0 words: in bfloat16 the positions j > 256 and the lengths J would not be exact.
    # Each term l_kj x_j reads x_j rounded (U of |x_j|) and the float32 sum is rounded once (U of |m|), so the
    # error of m_k is at most 2 * U * sum_j |l_kj x_j|; l_kj >= 0 in both variants (in [0, 1] and [0, 2]), so
    # that sum is the reference at |x|.
    rng = np.random.default_rng(6)
    x, mask = padded_batch(rng, [300, 260, 5, 0], 300, 3)
    out, dtype = call_bf16(PositionEncoder(variant, dtype=POLICY), x, mask)
    assert dtype == "bfloat16"
    bound = 2 * U * ref_carnn.position_encoder(np.abs(x), mask, variant)
    expected = ref_carnn.position_encoder(x, mask, variant)
    assert np.all(np.abs(out - expected) <= bound + 1e-6), np.abs(out - expected).max()
    assert not out[3].any()
    longer_x, longer_mask = pad_more(rng, x, mask, extra=4)
    longer, _ = call_bf16(PositionEncoder(variant, dtype=POLICY), longer_x, longer_mask)
    assert np.all(np.abs(longer - expected) <= bound + 1e-6)
    # The weights l_kj themselves, read off one-hot texts of J = 300 words: each is rounded once (U of itself),
    # also past j = 256, where bfloat16 positions would stop at 256 (l off by up to 0.15 of 1).
    positions = np.array([0, 99, 255, 256, 280, 299])  # j - 1
    one_hot = np.zeros((len(positions), 300, 3), "float32")
    one_hot[np.arange(len(positions)), positions] = 1.0
    full = np.ones((len(positions), 300), bool)
    weights, _ = call_bf16(PositionEncoder(variant, dtype=POLICY), one_hot, full)
    np.testing.assert_allclose(weights, ref_carnn.position_encoder(one_hot, full, variant), rtol=U, atol=1e-6)


# CARNN ------------------------------------------------------------------------------------------------------------
DIM, CONTEXT_DIM, UNITS = 3, 2, 4
# Along the path to the gates and e_bar: x, c and the kernels rounded (2), the matmul outputs (1), the bias and the
# additions (2); then float32 (gates, a, b, the state) and one final rounding of h (1). h is a convex combination
# of the e_bar (weights from the gates), so their errors pass without growing: ~5 roundings of the output's scale.
CARNN_ROUNDINGS = 5


def carnn_pair(rng, variant, go_backwards=False, return_sequences=True, update_logits=None):
    """A float32 CARNN with random weights and its bfloat16 twin.

    `update_logits`: `[units]` constant logits of the update gate g_u (its kernel columns 0, its bias these).
    """
    units = DIM if variant == "s" else UNITS
    shape = [(None, None, DIM), (None, CONTEXT_DIM)]

    def make(dtype=None):
        return CARNN(units, variant, go_backwards=go_backwards, return_sequences=return_sequences, dtype=dtype)

    layer = make()
    layer.build(shape)
    weights = [rng.normal(size=w.shape).astype("float32") * 0.5 for w in layer.get_weights()]
    if update_logits is not None:
        names = [v.path.split("/")[-1] for v in layer.weights]
        for name in ("input_kernel", "context_kernel", "recurrent_kernel"):
            if name in names:
                weights[names.index(name)][:, :units] = 0.0  # the update-gate columns come first
        weights[names.index("gate_bias")][:units] = update_logits
    layer.set_weights(weights)
    return layer, twin(layer, make, shape)


def weights_of(layer):
    cell = layer.cell
    names = ["input_kernel", "context_kernel", "recurrent_kernel", "gate_bias", "projection_kernel", "projection_bias"]
    return {name: None if getattr(cell, name) is None else np.asarray(getattr(cell, name)) for name in names}


@pytest.mark.parametrize("variant, go_backwards", [("n", True), ("i", False), ("s", True)])
def test_carnn_in_bfloat16(variant, go_backwards):
    rng = np.random.default_rng(7)
    x, mask = padded_batch(rng, [5, 2, 1, 0], 5, DIM)
    context = rng.normal(size=(4, CONTEXT_DIM)).astype("float32")
    layer, mixed = carnn_pair(rng, variant, go_backwards)
    out, dtype = call_bf16(mixed, [x, context], [mask, None])
    assert dtype == "bfloat16"
    outputs, last = ref_carnn.carnn(x, context, mask, weights_of(layer), variant, go_backwards)
    tolerance = CARNN_ROUNDINGS * U * np.abs(outputs).max()
    assert_within(out, outputs, tolerance)
    assert not out[~mask].any()  # exact zeros at padding (and for the empty row)
    last_layer = CARNN(mixed.output_units, variant, go_backwards=go_backwards, return_sequences=False, dtype=POLICY)
    last_layer.build([(None, None, DIM), (None, CONTEXT_DIM)])
    last_layer.set_weights(layer.get_weights())
    got_last, last_dtype = call_bf16(last_layer, [x, context], [mask, None])
    assert last_dtype == "bfloat16"
    assert_within(got_last, last, tolerance)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    longer, _ = call_bf16(mixed, [longer_x, context], [longer_mask, None])
    assert_within(longer[:, :5], out, tolerance)
    assert not longer[:, 5:].any()


def test_carnn_keeps_its_state_over_200_steps_in_bfloat16():
    # Nearly closed update gates, g_u = sigmoid(-4.5 .. -6) = 0.011 .. 0.0025: memories of 90 to 400 steps. Their
    # logits are bfloat16 numbers with kernel columns of 0, so bfloat16 computes them exactly and the error
    # budget is that of the short texts (CARNN_ROUNDINGS; measured: at most 1.3). Computed in bfloat16, a = 1 - g_u
    # is rounded to a multiple of 2^-8 (g_u off by 15% to 50%, or a = 1 exactly) and the state (relative 2^-8) at
    # every step: that code errs by 19 to 27 roundings of the output's scale here (measured; the state's rounding
    # alone, 3 to 8: `test_the_recurrence_keeps_a_float32_state_over_200_steps` isolates it).
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 200, DIM)).astype("float32")
    mask = lengths_mask([200, 150], 200)
    context = rng.normal(size=(2, CONTEXT_DIM)).astype("float32")
    for variant in ("n", "i", "s"):
        layer, mixed = carnn_pair(rng, variant, update_logits=[-4.5, -5.0, -5.5, -6.0][: 3 if variant == "s" else 4])
        run = tf.function(lambda inputs, mask, mixed=mixed: mixed(inputs, mask=mask))  # a graph: 200 steps of "n"
        out = tf.cast(run([x, context], [mask, None]), tf.float64).numpy()
        outputs, _ = ref_carnn.carnn(x, context, mask, weights_of(layer), variant)
        assert_within(out, outputs, CARNN_ROUNDINGS * U * np.abs(outputs).max(), variant)


def test_carnn_cell_in_keras_rnn_carries_a_split_float32_state():
    # nCARNN stepped by keras.layers.RNN, which keeps states in the compute dtype: the cell's state is the pair
    # [h_hi, h_lo] = [bfloat16(h), bfloat16(h - h_hi)]. Tolerance as for CARNN.
    rng = np.random.default_rng(9)
    x, mask = padded_batch(rng, [6, 3, 0], 6, DIM)
    context = rng.normal(size=(3, CONTEXT_DIM)).astype("float32")
    steps = np.concatenate([x, np.repeat(context[:, None], 6, axis=1)], axis=-1)
    layer, _ = carnn_pair(rng, "n")
    cell = CARNNCell(UNITS, "n", context_dim=CONTEXT_DIM, dtype=POLICY)
    assert cell.state_size == [UNITS, UNITS] and cell.output_size == UNITS
    assert CARNNCell(UNITS, "n", context_dim=CONTEXT_DIM).state_size == UNITS  # float32: h itself
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True, dtype=POLICY)
    rnn.build((None, None, DIM + CONTEXT_DIM))
    rnn.set_weights(layer.get_weights())
    (out, high, low), dtypes = call_bf16(rnn, steps, mask)
    assert_all_bfloat16(dtypes)
    outputs, last = ref_carnn.carnn(x, context, mask, weights_of(layer), "n")
    tolerance = CARNN_ROUNDINGS * U * np.abs(outputs).max()
    assert_within(out[mask], outputs[mask], tolerance)
    assert_within(high, last, tolerance)
    np.testing.assert_array_equal(high, out[:, -1])  # h_hi is the output, h rounded once
    assert np.all(np.abs(low) <= U * np.abs(high)) and np.abs(low).max() > 0  # the rounding h_hi left out


def test_carnn_gradients_in_bfloat16_follow_float32():
    # Training in mixed_bfloat16: the gradients reach every float32 weight, through the split state of "n" too,
    # and follow the float32 ones within bfloat16's precision: the backward pass goes through the same operations
    # again, with as many roundings (2 * CARNN_ROUNDINGS of the largest gradient; measured: at most 3.2).
    rng = np.random.default_rng(10)
    x, mask = padded_batch(rng, [5, 3], 5, DIM)
    context = rng.normal(size=(2, CONTEXT_DIM)).astype("float32")
    for variant in ("n", "i"):
        layer, mixed = carnn_pair(rng, variant)
        grads = []
        for model in (layer, mixed):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.cast(model([x, context], mask=[mask, None]), tf.float32) ** 2)
            grads.append([tf.cast(g, tf.float64).numpy() for g in tape.gradient(loss, model.trainable_weights)])
        for want, got in zip(*grads):
            assert got.dtype == np.float64 and np.all(np.isfinite(got))
            assert_within(got, want, 2 * CARNN_ROUNDINGS * U * np.abs(want).max(), variant)


def test_carnn_saves_and_reloads_in_bfloat16(tmp_path):
    rng = np.random.default_rng(11)
    x, mask = padded_batch(rng, [4, 2], 4, DIM)
    context = rng.normal(size=(2, CONTEXT_DIM)).astype("float32")
    _, mixed = carnn_pair(rng, "n", go_backwards=True)
    inputs = [keras.Input((None, DIM)), keras.Input((CONTEXT_DIM,)), keras.Input((None,), dtype="bool")]
    model = keras.Model(inputs, mixed(inputs[:2], mask=[inputs[2], None]))
    model.save(tmp_path / "carnn.keras")
    reloaded = keras.models.load_model(tmp_path / "carnn.keras")
    assert reloaded.layers[-1].dtype_policy.name == POLICY
    expected = model([x, context, mask])
    assert expected.dtype == tf.bfloat16
    np.testing.assert_array_equal(tf.cast(reloaded([x, context, mask]), tf.float32), tf.cast(expected, tf.float32))
