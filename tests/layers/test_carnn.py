import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.layers import CARNN
from keras_match.layers import CARNNCell

import references_carnn as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

LENGTHS = [5, 2, 1, 0]
TIME, DIM, CONTEXT_DIM, UNITS = 5, 3, 2, 4
VARIANTS = ["n", "i", "s"]
SOME_SETTINGS = [("n", True), ("i", False), ("s", True)]  # (variant, go_backwards) of the slow export tests
WEIGHT_COUNTS = {"n": 6, "i": 5, "s": 3}
WEIGHT_NAMES = ["input_kernel", "context_kernel", "recurrent_kernel", "gate_bias", "projection_kernel",
                "projection_bias"]


@keras.saving.register_keras_serializable(package="keras_match_tests")
class CellRNN(keras.layers.RNN):
    """`keras.layers.RNN` whose `from_config` leaves its argument alone (Keras's pops "cell" from it, which
    `run_layer_test`'s config comparison would see)."""

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return super().from_config(dict(config), custom_objects)


def units_of(variant):
    return DIM if variant == "s" else UNITS


def make_batch(seed, lengths=LENGTHS, time=TIME):
    """A padded batch (garbage at padded positions), its mask and a context [batch, dc]."""
    rng = np.random.default_rng(seed)
    x, mask = padded_batch(rng, lengths, time, DIM)
    context = rng.normal(size=(len(lengths), CONTEXT_DIM)).astype("float32")
    return rng, x, mask, context


def randomized(layer, rng, scale=0.5):
    """Build `layer` and give it random weights (non-zero biases), so every term of eq. 3 / 5 / 6 matters."""
    layer.build([(None, None, DIM), (None, CONTEXT_DIM)])
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])
    return layer


def weights_of(layer):
    """The cell's weights by name (None where the variant has none), for the NumPy reference."""
    cell = layer.cell if isinstance(layer, CARNN) else layer
    return {name: None if getattr(cell, name) is None else np.asarray(getattr(cell, name)) for name in WEIGHT_NAMES}


def with_context(x, context):
    """The input of a bare `CARNNCell` at every step: [e_m; c]."""
    return np.concatenate([x, np.repeat(context[:, None, :], x.shape[1], axis=1)], axis=-1)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cell_roundtrip_inside_keras_rnn(tmp_path, variant):
    _, x, mask, context = make_batch(0)
    run_layer_test(
        lambda: CellRNN(
            CARNNCell(units_of(variant), variant, context_dim=CONTEXT_DIM, kernel_regularizer="l2"),
            return_sequences=True,
        ),
        with_context(x, context),
        mask,
        expected_shape=(4, TIME, units_of(variant)),
        expected_weights=WEIGHT_COUNTS[variant],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("go_backwards, return_sequences", [(False, True), (True, False)])
def test_layer_roundtrip(tmp_path, variant, go_backwards, return_sequences):
    _, x, mask, context = make_batch(1)
    units = None if variant == "s" else UNITS
    layer, out = run_layer_test(
        lambda: CARNN(units, variant, go_backwards=go_backwards, return_sequences=return_sequences,
                      bias_initializer="random_normal", kernel_regularizer="l2", recurrent_regularizer="l1",
                      bias_regularizer="l2"),
        [x, context],
        mask,
        expected_shape=(4, TIME, units_of(variant)) if return_sequences else (4, units_of(variant)),
        expected_weights=WEIGHT_COUNTS[variant],
        tmp_path=tmp_path,
    )
    outputs, last = ref.carnn(x, context, mask, weights_of(layer), variant, go_backwards)
    np.testing.assert_allclose(out, outputs if return_sequences else last, rtol=1e-4, atol=1e-5)
    assert len(layer.losses) == WEIGHT_COUNTS[variant]  # every weight is regularised


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_matches_numpy_reference(variant, go_backwards):
    rng, x, mask, context = make_batch(2)
    units = units_of(variant)
    layer = randomized(CARNN(units, variant, go_backwards=go_backwards), rng)
    last_layer = randomized(CARNN(units, variant, go_backwards=go_backwards, return_sequences=False), rng)
    last_layer.set_weights(layer.get_weights())
    outputs, last = ref.carnn(x, context, mask, weights_of(layer), variant, go_backwards)
    assert np.abs(outputs).max() > 0.1  # not trivially zero
    np.testing.assert_allclose(call_layer(layer, [x, context], [mask, None]), outputs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(call_layer(last_layer, [x, context], [mask, None]), last, rtol=1e-4, atol=1e-5)
    # Without a mask every position is real (the garbage included).
    full = np.ones(mask.shape, bool)
    scaled = x / 50.0
    expected, _ = ref.carnn(scaled, context, full, weights_of(layer), variant, go_backwards)
    np.testing.assert_allclose(call_layer(layer, [scaled, context]), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", ["i", "s"])
def test_last_state_is_the_unrolled_sum_of_eq_4_and_7(variant):
    rng, x, mask, context = make_batch(3)
    layer = randomized(CARNN(units_of(variant), variant, return_sequences=False), rng)
    expected = ref.carnn_unrolled_last(x, context, mask, weights_of(layer), variant)
    np.testing.assert_allclose(call_layer(layer, [x, context], mask), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", ["i", "s"])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_parallel_path_equals_the_cell_stepped_by_keras_rnn(variant, go_backwards):
    rng, x, mask, context = make_batch(4, lengths=[6, 4, 1, 0], time=6)
    units = units_of(variant)
    layer = randomized(CARNN(units, variant, go_backwards=go_backwards), rng)
    last_layer = CARNN(units, variant, go_backwards=go_backwards, return_sequences=False)
    last_layer.build([(None, None, DIM), (None, CONTEXT_DIM)])
    last_layer.set_weights(layer.get_weights())
    rnn = keras.layers.RNN(CARNNCell(units, variant, context_dim=CONTEXT_DIM), return_sequences=True,
                           return_state=True, go_backwards=go_backwards)
    rnn.build((None, None, DIM + CONTEXT_DIM))
    rnn.set_weights(layer.get_weights())
    stepped, stepped_last = call_layer(rnn, with_context(x, context), mask)
    if go_backwards:
        stepped = stepped[:, ::-1]  # keras.layers.RNN returns the steps in processing order
    parallel = call_layer(layer, [x, context], mask)
    np.testing.assert_allclose(parallel[mask], stepped[mask], rtol=0, atol=1e-5)
    np.testing.assert_allclose(call_layer(last_layer, [x, context], mask), stepped_last, rtol=0, atol=1e-5)


def test_the_cell_alone_follows_eq_3():
    rng = np.random.default_rng(5)
    cell = CARNNCell(UNITS, context_dim=CONTEXT_DIM)
    cell.build((None, DIM + CONTEXT_DIM))
    cell.set_weights([rng.normal(size=w.shape).astype("float32") for w in cell.get_weights()])
    e, c = rng.normal(size=(2, DIM)), rng.normal(size=(2, CONTEXT_DIM))
    h = rng.normal(size=(2, UNITS)).astype("float32")
    output, states = cell(np.concatenate([e, c], -1).astype("float32"), [h])
    assert cell.state_size == cell.output_size == UNITS and len(states) == 1
    _, named = ref._split(weights_of(cell))
    expected = np.stack([ref.carnn_step(e[b], c[b], h[b], named, "n") for b in range(2)])
    np.testing.assert_allclose(np.asarray(output), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(states[0]), np.asarray(output))
    (h0,) = cell.get_initial_state(batch_size=3)
    assert h0.shape == (3, UNITS) and not np.asarray(h0).any()  # h_0 = 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_extra_padding_changes_nothing(variant):
    rng, x, mask, context = make_batch(6)
    longer_x, longer_mask = pad_more(rng, x, mask, extra=3)
    for go_backwards in (False, True):
        layer = randomized(CARNN(units_of(variant), variant, go_backwards=go_backwards), rng)
        out, longer = call_layer(layer, [x, context], mask), call_layer(layer, [longer_x, context], longer_mask)
        np.testing.assert_allclose(longer[:, :TIME], out, atol=1e-6)
        assert not longer[~longer_mask].any() and not out[~mask].any()  # zero at padded positions
        assert not out[3].any()  # an example without a real token gives zeros


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0, 0)], ids=["no steps", "no examples", "neither"])
def test_a_batch_without_steps_or_examples_gives_zeros_of_its_shape(variant, shape):
    # h_0 = 0 is the last state of a sequence of no steps (eq. 3, 4, 7 start from it)
    rng = np.random.default_rng(14)
    x = rng.normal(size=(*shape, DIM)).astype("float32")
    context = rng.normal(size=(shape[0], CONTEXT_DIM)).astype("float32")
    for go_backwards in (False, True):
        for return_sequences in (True, False):
            layer = randomized(CARNN(units_of(variant), variant, go_backwards=go_backwards,
                                     return_sequences=return_sequences), rng)
            for mask in (None, np.ones(shape, bool)):
                out = call_layer(layer, [x, context], mask)
                expected = (*shape, units_of(variant)) if return_sequences else (shape[0], units_of(variant))
                assert out.shape == expected and not out.any(), (go_backwards, return_sequences, mask is None)


def test_directions():
    """Forward: position m depends on e_1 .. e_m; backward: on e_m .. e_M (within the true length)."""
    rng, x, mask, context = make_batch(7, lengths=[5], time=7)
    changed = x.copy()
    changed[0, 2] += 1.0
    for variant in VARIANTS:
        for go_backwards in (False, True):
            layer = randomized(CARNN(units_of(variant), variant, go_backwards=go_backwards), rng)
            before, after = call_layer(layer, [x, context], mask), call_layer(layer, [changed, context], mask)
            same, moved = (slice(3, 5), slice(0, 3)) if go_backwards else (slice(0, 2), slice(2, 5))
            np.testing.assert_array_equal(before[0, same], after[0, same])
            assert np.all(np.abs(before[0, moved] - after[0, moved]).max(axis=-1) > 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_gradients_are_finite_reach_every_weight_and_no_padded_input(variant):
    rng, x, mask, context = make_batch(8)
    layer = randomized(CARNN(units_of(variant), variant), rng)
    x_var, c_var = tf.Variable(x), tf.Variable(context)
    probe = rng.normal(size=(4, TIME, units_of(variant))).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer([x_var, c_var], mask=mask) * probe)
    grads = tape.gradient(loss, layer.trainable_weights + [x_var, c_var])
    for weight, grad in zip(layer.trainable_weights + [x_var, c_var], grads):
        grad = np.asarray(grad)
        assert np.all(np.isfinite(grad)) and np.abs(grad).sum() > 0, weight.name
    grad_x, grad_c = np.asarray(grads[-2]), np.asarray(grads[-1])
    assert not grad_x[~mask].any()  # padded steps take no part
    assert not grad_c[3].any()  # nor does the context of an example without a real token


def test_implicit_mask_from_an_embedding():
    tokens = keras.Input((None,), dtype="int32")
    context = keras.Input((CONTEXT_DIM,))
    embedded = keras.layers.Embedding(10, DIM, mask_zero=True)(tokens)
    sequences = CARNN(UNITS, "i")([embedded, context])
    last = CARNN(UNITS, "n", go_backwards=True, return_sequences=False)([embedded, context])
    assert sequences.shape == (None, None, UNITS) and last.shape == (None, UNITS)
    assert getattr(last, "_keras_mask", None) is None
    model = keras.Model([tokens, context], [sequences, keras.ops.cast(sequences._keras_mask, "int32"), last])
    ids = np.array([[3, 4, 0, 0], [1, 2, 3, 5], [0, 0, 0, 0]])
    c = np.random.default_rng(9).normal(size=(3, CONTEXT_DIM)).astype("float32")
    out, mask, h = (np.asarray(t) for t in model([ids, c]))
    np.testing.assert_array_equal(mask, (ids != 0).astype("int32"))
    assert not out[ids == 0].any() and np.abs(out[ids != 0]).min() > 0
    assert not h[2].any()  # no real token: h_0 = 0


def test_unknown_batch_and_time_in_a_saved_model_export(tmp_path):
    rng, x, mask, context = make_batch(10)
    inputs = [keras.Input((None, DIM)), keras.Input((CONTEXT_DIM,)), keras.Input((None,), dtype="bool")]
    layers = [randomized(CARNN(units_of(v), v, go_backwards=back), rng) for v, back in SOME_SETTINGS]
    outputs = [layer(inputs[:2], mask=inputs[2]) for layer in layers]
    assert [tuple(o.shape) for o in outputs] == [(None, None, units_of(v)) for v, _ in SOME_SETTINGS]
    model = keras.Model(inputs, keras.layers.Concatenate()(outputs))
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "export"))
    _, x2, mask2, context2 = make_batch(11, lengths=[7, 3], time=7)  # another batch size and length
    for arrays in ([x, context, mask], [x2, context2, mask2]):
        expected = np.asarray(model(arrays))
        assert np.abs(expected).max() > 0.1
        np.testing.assert_allclose(reloaded.serve(arrays).numpy(), expected, atol=1e-6)


def test_parallel_variants_convert_to_onnx():
    """tf2onnx exits 0 even when it leaves TF ops behind: run the ONNX graph in onnxruntime on two shapes."""
    tf2onnx = pytest.importorskip("tf2onnx")
    ort = pytest.importorskip("onnxruntime")
    rng, x, mask, context = make_batch(12)
    layers = [randomized(CARNN(units_of(v), v, go_backwards=back, return_sequences=sequences), rng)
              for v, back, sequences in (("i", False, True), ("i", True, False), ("s", True, True))]
    spec = [tf.TensorSpec([None, None, DIM], name="x"), tf.TensorSpec([None, CONTEXT_DIM], name="context"),
            tf.TensorSpec([None, None], tf.bool, name="mask")]

    @tf.function(input_signature=spec)
    def run(x, context, mask):
        return [layer([x, context], mask=mask) for layer in layers]

    proto, _ = tf2onnx.convert.from_function(run, input_signature=spec, opset=13)
    assert any(node.op_type == "Loop" for node in proto.graph.node)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    _, x2, mask2, context2 = make_batch(13, lengths=[2, 7], time=7)
    for arrays in ([x, context, mask], [x2, context2, mask2]):
        got = session.run(None, dict(zip(["x", "context", "mask"], arrays)))
        expected = [t.numpy() for t in run(*arrays)]
        assert len(got) == len(expected) == 3
        for g, e in zip(got, expected):
            assert np.abs(e).max() > 1e-3
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_parameter_counts():
    d, dc, u = 300, 300, 1024  # the paper's dialog hidden size
    expected = {"n": d * 2 * u + dc * 2 * u + u * 2 * u + 2 * u + d * u + u,
                "i": d * 2 * u + dc * 2 * u + 2 * u + d * u + u,
                "s": d * 2 * d + dc * 2 * d + 2 * d}
    for variant in VARIANTS:
        layer = CARNN(None if variant == "s" else u, variant, recurrent_initializer="zeros")  # no slow QR
        layer.build([(None, None, d), (None, dc)])
        assert layer.count_params() == expected[variant], variant


def test_kernels_of_one_shape_start_different():
    layer = CARNN(DIM, "n")  # input, context and recurrent kernels all [3, 6]
    layer.build([(None, None, DIM), (None, DIM)])
    kernels = [np.asarray(k) for k in (layer.cell.input_kernel, layer.cell.context_kernel,
                                      layer.cell.recurrent_kernel)]
    assert all(k.shape == (DIM, 2 * DIM) for k in kernels)
    assert not np.allclose(kernels[0], kernels[1]) and not np.allclose(kernels[0][:, :DIM], kernels[0][:, DIM:])


def test_invalid_arguments():
    with pytest.raises(ValueError, match="variant"):
        CARNN(4, variant="x")
    with pytest.raises(ValueError, match="variant"):
        CARNNCell(4, "N", context_dim=2)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="units"):
            CARNN(bad)
    with pytest.raises(ValueError, match="units"):
        CARNNCell(None, context_dim=2)
    with pytest.raises(ValueError, match="context_dim"):
        CARNNCell(4, context_dim=0)
    with pytest.raises(TypeError, match="context_dim"):
        CARNNCell(4)  # context_dim is required
    with pytest.raises(ValueError, match="context_dim"):
        CARNNCell(4, context_dim=3).build((None, 3))  # no room for e_m
    # sCARNN keeps the input width.
    with pytest.raises(ValueError, match="units"):
        CARNN(4, "s").build([(None, None, 3), (None, 2)])
    with pytest.raises(ValueError, match="units"):
        CARNNCell(4, "s", context_dim=2).build((None, 5))
    CARNN(3, "s").build([(None, None, 3), (None, 2)])  # units == d is fine
    # Ranks and pairs.
    with pytest.raises(ValueError, match="pair"):
        CARNN(4).build((None, 5, 3))
    with pytest.raises(ValueError, match="sequence"):
        CARNN(4).build([(None, 3), (None, 2)])
    with pytest.raises(ValueError, match="sequence"):
        CARNN(4).build([(None, 5, None), (None, 2)])
    with pytest.raises(ValueError, match="context"):
        CARNN(4).build([(None, 5, 3), (None, 5, 2)])
    with pytest.raises(ValueError, match="context"):
        CARNN(4)([np.zeros((2, 5, 3), "float32"), np.zeros((2, 5, 2), "float32")])
