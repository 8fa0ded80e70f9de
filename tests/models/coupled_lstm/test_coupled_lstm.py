import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm import DynamicPooling2D
from keras_match.models.coupled_lstm import coupled_lstm as module

import references_coupled_lstm as ref
from helpers import GARBAGE
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

COUPLINGS = ["tight", "loose"]
VARIANTS = [(c, d) for c in COUPLINGS for d in (1, 4)]


def make_pair(seed, x_lengths=(4, 2, 3), y_lengths=(6, 1, 4), n=4, m=6, dx=3, dy=2):
    """x [3, n, dx], y [3, m, dy] (dx != dy), per-example true lengths, garbage at padded positions."""
    rng = np.random.default_rng(seed)
    x, x_mask = padded_batch(rng, list(x_lengths), n, dx)
    y, y_mask = padded_batch(rng, list(y_lengths), m, dy)
    return rng, x, y, x_mask, y_mask


def make_grid(seed, x_lengths=(3, 1, 4), y_lengths=(5, 2, 3), n=4, m=5, channels=4):
    """A grid [3, n, m, channels] with its rectangle mask, garbage at padded cells."""
    rng = np.random.default_rng(seed)
    x_mask = np.arange(n)[None, :] < np.asarray(x_lengths)[:, None]
    y_mask = np.arange(m)[None, :] < np.asarray(y_lengths)[:, None]
    mask = x_mask[:, :, None] & y_mask[:, None, :]
    grid = np.where(mask[..., None], rng.normal(size=(3, n, m, channels)),
                    rng.uniform(-GARBAGE, GARBAGE, size=(3, n, m, channels)))
    return rng, grid.astype("float32"), mask


def randomized(layer, rng, input_shape, scale=0.7):
    """Build `layer` and give it N(0, scale^2) weights (larger than the paper's init, so every term matters)."""
    layer.build(input_shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])
    return layer


def weights_of(layer):
    return {w.name: np.asarray(w.numpy()) for w in layer.weights}


def pair_shapes(x, y):
    return [(None, None, x.shape[-1]), (None, None, y.shape[-1])]


@pytest.mark.parametrize("coupling,directions", VARIANTS)
def test_matches_numpy_reference(coupling, directions):
    rng, x, y, x_mask, y_mask = make_pair(0)
    layer = randomized(CoupledLSTM2D(3, coupling=coupling, directions=directions), rng, pair_shapes(x, y))
    out = call_layer(layer, [x, y], [x_mask, y_mask])
    assert out.shape == (3, 4, 6, 3 if coupling == "tight" else 6)
    expected = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(layer), coupling, directions)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling,directions", VARIANTS)
def test_matches_reference_with_the_longer_text_first(coupling, directions):
    rng, x, y, x_mask, y_mask = make_pair(1, x_lengths=(5, 3, 1), y_lengths=(2, 3, 3), n=5, m=3)
    layer = randomized(CoupledLSTM2D(2, coupling=coupling, directions=directions), rng, pair_shapes(x, y))
    out = call_layer(layer, [x, y], [x_mask, y_mask])
    expected = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(layer), coupling, directions)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_without_masks_every_position_is_real(coupling):
    rng, x, y, _, _ = make_pair(2)
    x, y = x / GARBAGE, y / GARBAGE
    layer = randomized(CoupledLSTM2D(3, coupling=coupling), rng, pair_shapes(x, y))
    out = call_layer(layer, [x, y])
    full = np.ones((3, 4), bool), np.ones((3, 6), bool)
    np.testing.assert_allclose(out, ref.coupled_lstm(x, y, *full, weights_of(layer), coupling, 4), rtol=1e-5, atol=1e-5)
    assert layer.compute_mask([x, y], None) is None


@pytest.mark.parametrize("coupling,directions", VARIANTS)
def test_grid_input_matches_reference(coupling, directions):
    rng, grid, mask = make_grid(3)
    layer = randomized(CoupledLSTM2D(3, coupling=coupling, directions=directions), rng, (None, None, None, 4))
    out = call_layer(layer, grid, mask)
    assert out.shape == (3, 4, 5, 3 if coupling == "tight" else 6)
    expected = ref.coupled_lstm_grid(grid, mask, weights_of(layer), coupling, directions)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_stacked_blocks_pass_the_grid_mask(coupling):
    """Two blocks in a functional model: the grid mask reaches the upper block (and the pooling) by itself."""
    rng, x, y, x_mask, y_mask = make_pair(4)
    first = randomized(CoupledLSTM2D(2, coupling=coupling), rng, pair_shapes(x, y), scale=0.5)
    out_dim = first.output_units
    second = randomized(CoupledLSTM2D(2, coupling=coupling), rng, (None, None, None, out_dim), scale=0.5)
    inputs = [keras.Input((None, 3)), keras.Input((None, 2)), keras.Input((None,), dtype="bool"),
              keras.Input((None,), dtype="bool")]
    grid = first(inputs[:2], mask=inputs[2:])
    upper = second(grid)
    model = keras.Model(inputs, [upper, DynamicPooling2D(2, 2)(upper)])
    out, pooled = (np.asarray(t) for t in model([x, y, x_mask, y_mask]))

    grid_mask = x_mask[:, :, None] & y_mask[:, None, :]
    lower = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(first), coupling, 4)
    expected = ref.coupled_lstm_grid(lower, grid_mask, weights_of(second), coupling, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pooled, ref.dynamic_pooling(expected, grid_mask, 2, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_extra_padding_changes_nothing_and_padded_cells_are_zero(coupling):
    rng, x, y, x_mask, y_mask = make_pair(5, y_lengths=(6, 1, 0))  # an empty text too
    layer = randomized(CoupledLSTM2D(3, coupling=coupling), rng, pair_shapes(x, y))
    out = call_layer(layer, [x, y], [x_mask, y_mask])
    grid_mask = x_mask[:, :, None] & y_mask[:, None, :]
    assert np.all(out[~grid_mask] == 0.0) and np.all(out[2] == 0.0)
    assert np.all(np.abs(out[grid_mask]) > 0)
    for extra_x, extra_y in ((3, 0), (0, 4), (2, 5)):
        long_x, long_x_mask = pad_more(rng, x, x_mask, extra_x)
        long_y, long_y_mask = pad_more(rng, y, y_mask, extra_y)
        long_out = call_layer(layer, [long_x, long_y], [long_x_mask, long_y_mask])
        np.testing.assert_allclose(long_out[:, :4, :6], out, atol=1e-6)
        long_grid_mask = long_x_mask[:, :, None] & long_y_mask[:, None, :]
        assert np.all(long_out[~long_grid_mask] == 0.0)
        np.testing.assert_array_equal(
            np.asarray(layer.compute_mask([long_x, long_y], [long_x_mask, long_y_mask])), long_grid_mask)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_grid_input_extra_padding_changes_nothing(coupling):
    rng, grid, mask = make_grid(6)
    layer = randomized(CoupledLSTM2D(2, coupling=coupling), rng, (None, None, None, 4))
    out = call_layer(layer, grid, mask)
    longer = np.pad(grid, [(0, 0), (0, 2), (0, 3), (0, 0)], constant_values=-GARBAGE)
    longer_mask = np.pad(mask, [(0, 0), (0, 2), (0, 3)])
    long_out = call_layer(layer, longer, longer_mask)
    np.testing.assert_allclose(long_out[:, :4, :5], out, atol=1e-6)
    assert np.all(long_out[~longer_mask] == 0.0)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_layer_roundtrip(tmp_path, coupling):
    _, x, y, x_mask, y_mask = make_pair(7)
    layer, _ = run_layer_test(
        lambda: CoupledLSTM2D(3, coupling=coupling, kernel_regularizer="l2", name=f"clstm_{coupling}"),
        [x, y],
        [x_mask, y_mask],
        expected_shape=(3, 4, 6, 3 if coupling == "tight" else 6),
        expected_weights=3 if coupling == "tight" else 6,
        tmp_path=tmp_path,
    )
    config = layer.get_config()
    assert config["units"] == 3 and config["coupling"] == coupling and config["directions"] == 4
    assert config["kernel_initializer"]["config"]["minval"] == -0.1
    assert config["bias_initializer"]["config"]["maxval"] == 0.1


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_grid_layer_roundtrip(tmp_path, coupling):
    _, grid, mask = make_grid(8)
    run_layer_test(
        lambda: CoupledLSTM2D(2, coupling=coupling, directions=1, name=f"grid_{coupling}"),
        grid,
        mask,
        expected_shape=(3, 4, 5, 2 if coupling == "tight" else 4),
        expected_weights=3 if coupling == "tight" else 6,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("n,m", [(0, 4), (3, 0), (0, 0)])
def test_zero_length_batches_give_empty_grids(coupling, n, m):
    layer = CoupledLSTM2D(2, coupling=coupling)
    out = call_layer(layer, [np.zeros((2, n, 3), "float32"), np.zeros((2, m, 3), "float32")])
    assert out.shape == (2, n, m, layer.output_units)
    grid_layer = CoupledLSTM2D(2, coupling=coupling)
    assert call_layer(grid_layer, np.zeros((2, n, m, 4), "float32")).shape == (2, n, m, grid_layer.output_units)


def test_default_initialization_is_the_papers_uniform():
    layer = CoupledLSTM2D(20, coupling="loose")
    layer.build([(None, None, 30), (None, None, 30)])
    values = np.concatenate([w.ravel() for w in layer.get_weights()])
    assert values.min() >= -0.1 and values.max() <= 0.1 and values.std() > 0.05


def _count_steps(monkeypatch, coupling):
    calls = []
    original = getattr(module, f"{coupling}_cell")

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(module, f"{coupling}_cell", counted)
    return calls


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("n,m", [(4, 6), (5, 2), (1, 1)])
def test_the_wavefront_takes_n_plus_m_minus_1_steps(monkeypatch, coupling, n, m):
    """Eagerly, tf.while_loop runs its body once per iteration: the cell is called once per anti-diagonal for
    all cells, examples and directions (a cell-by-cell loop would call it n * m times, or 4 n m)."""
    rng, x, y, x_mask, y_mask = make_pair(9, x_lengths=(n, 1, n), y_lengths=(m, m, 1), n=n, m=m)
    layer = randomized(CoupledLSTM2D(2, coupling=coupling, directions=4), rng, pair_shapes(x, y))
    calls = _count_steps(monkeypatch, coupling)
    call_layer(layer, [x, y], [x_mask, y_mask])
    assert len(calls) == n + m - 1
    calls.clear()
    grid = np.zeros((2, n, m, 4), "float32")
    grid_layer = CoupledLSTM2D(2, coupling=coupling)
    call_layer(grid_layer, grid)
    assert len(calls) == n + m - 1


def test_tf_function_with_unknown_shapes_traces_once_and_runs():
    rng, x, y, x_mask, y_mask = make_pair(10)
    layer = randomized(CoupledLSTM2D(4, coupling="tight"), rng, pair_shapes(x, y))
    loose = randomized(CoupledLSTM2D(2, coupling="loose"), rng, (None, None, None, 4))

    @tf.function(input_signature=[
        tf.TensorSpec([None, None, 3]), tf.TensorSpec([None, None, 2]),
        tf.TensorSpec([None, None], tf.bool), tf.TensorSpec([None, None], tf.bool),
    ])
    def run(x, y, x_mask, y_mask):
        grid = layer([x, y], mask=[x_mask, y_mask])
        return loose(grid, mask=layer.compute_mask([x, y], [x_mask, y_mask]))

    eager = call_layer(loose, call_layer(layer, [x, y], [x_mask, y_mask]), x_mask[:, :, None] & y_mask[:, None, :])
    np.testing.assert_allclose(run(x, y, x_mask, y_mask).numpy(), eager, atol=1e-5)
    _, x2, y2, x2_mask, y2_mask = make_pair(11, x_lengths=(2, 1), y_lengths=(3, 2), n=2, m=3)
    assert run(x2, y2, x2_mask, y2_mask).shape == (2, 2, 3, 4)
    graph = run.get_concrete_function().graph
    loops = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
    assert len(loops) == 2  # one loop per block: the four directions share it


def test_saved_model_export_with_unknown_shapes(tmp_path):
    rng, x, y, x_mask, y_mask = make_pair(12)
    inputs = [keras.Input((None, 3)), keras.Input((None, 2)), keras.Input((None,), dtype="bool"),
              keras.Input((None,), dtype="bool")]
    block = randomized(CoupledLSTM2D(2, coupling="loose"), rng, pair_shapes(x, y))
    pooled = DynamicPooling2D(2, 1)(block(inputs[:2], mask=inputs[2:]))
    model = keras.Model(inputs, keras.layers.Flatten()(pooled))
    expected = np.asarray(model([x, y, x_mask, y_mask]))
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "export"))
    np.testing.assert_allclose(reloaded.serve([x, y, x_mask, y_mask]).numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("first,second", [("tight", "loose"), ("loose", "tight")])
def test_converts_to_onnx_and_matches_tensorflow(first, second):
    """tf2onnx exits 0 even when it leaves TF ops behind: run the ONNX model in onnxruntime on two shapes."""
    tf2onnx = pytest.importorskip("tf2onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    rng, x, y, x_mask, y_mask = make_pair(16, dx=3, dy=3)
    lower = randomized(CoupledLSTM2D(2, coupling=first), rng, pair_shapes(x, y), scale=0.5)
    upper = randomized(CoupledLSTM2D(2, coupling=second), rng, (None, None, None, lower.output_units), scale=0.5)
    pool = DynamicPooling2D(2, 1)
    spec = [tf.TensorSpec([None, None, 3], name="x"), tf.TensorSpec([None, None, 3], name="y"),
            tf.TensorSpec([None, None], tf.bool, name="x_mask"), tf.TensorSpec([None, None], tf.bool, name="y_mask")]

    @tf.function(input_signature=spec)
    def run(x, y, x_mask, y_mask):
        grid_mask = lower.compute_mask([x, y], [x_mask, y_mask])
        return pool(upper(lower([x, y], mask=[x_mask, y_mask]), mask=grid_mask), mask=grid_mask)

    model, _ = tf2onnx.convert.from_function(run, input_signature=spec, opset=17)
    assert {node.op_type for node in model.graph.node} >= {"Loop", "ReverseSequence"}
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    _, x2, y2, x2_mask, y2_mask = make_pair(17, x_lengths=(5, 1), y_lengths=(2, 2), n=5, m=2, dx=3, dy=3)
    for arrays in ([x, y, x_mask, y_mask], [x2, y2, x2_mask, y2_mask]):
        feed = dict(zip(["x", "y", "x_mask", "y_mask"], arrays))
        np.testing.assert_allclose(session.run(None, feed)[0], run(*arrays).numpy(), atol=1e-5)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_gradients_reach_every_weight_and_no_padded_input(coupling):
    rng, x, y, x_mask, y_mask = make_pair(13)
    layer = CoupledLSTM2D(3, coupling=coupling)  # the paper's initialization
    x, y = tf.constant(x), tf.constant(y)
    probe = rng.normal(size=(3, 4, 6, layer.output_units)).astype("float32")
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        loss = tf.reduce_sum(layer([x, y], mask=[x_mask, y_mask]) * probe)
    grads = tape.gradient(loss, layer.trainable_weights + [x, y])
    assert len(grads) == len(layer.trainable_weights) + 2
    for weight, grad in zip(layer.trainable_weights + ["x", "y"], grads):
        grad = np.asarray(grad)
        assert np.all(np.isfinite(grad)), weight
        if isinstance(weight, str):
            continue
        # Every direction's slice of every weight gets a gradient.
        assert np.all(np.abs(grad).reshape(4, -1).max(axis=1) > 0), weight.name
    grad_x, grad_y = np.asarray(grads[-2]), np.asarray(grads[-1])
    assert np.all(grad_x[~x_mask] == 0) and np.all(grad_y[~y_mask] == 0)
    assert np.all(np.abs(grad_x[x_mask]).max(axis=-1) > 0)


def test_grid_input_gradients_are_finite_and_nonzero():
    rng, grid, mask = make_grid(14)
    layer = CoupledLSTM2D(2, coupling="loose")
    grid = tf.constant(grid)
    with tf.GradientTape() as tape:
        tape.watch(grid)
        loss = tf.reduce_sum(layer(grid, mask=mask) ** 2)
    grads = tape.gradient(loss, layer.trainable_weights + [grid])
    for grad in grads[:-1]:
        assert np.all(np.isfinite(grad)) and np.abs(np.asarray(grad)).reshape(4, -1).max(axis=1).min() > 0
    grad_grid = np.asarray(grads[-1])
    assert np.all(grad_grid[~mask] == 0) and np.all(np.abs(grad_grid[mask]).max(axis=-1) > 0)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_gradients_match_finite_differences(coupling):
    """float64, tiny: the gradients of the wavefront (window gathers, TensorArrays, flips) are the true ones."""
    rng, x, y, x_mask, y_mask = make_pair(15, x_lengths=(3, 2), y_lengths=(2, 3), n=3, m=3, dx=2, dy=2)
    layer = randomized(CoupledLSTM2D(2, coupling=coupling, dtype="float64"), rng, pair_shapes(x, y))
    upper = randomized(CoupledLSTM2D(2, coupling=coupling, dtype="float64"), rng, (None, None, None,
                                                                                  layer.output_units))
    probe = rng.normal(size=(2, 3, 3, upper.output_units))

    # Traced once: the central differences below call it twice per checked entry.
    @tf.function(input_signature=[tf.TensorSpec(x.shape, tf.float64), tf.TensorSpec(y.shape, tf.float64)])
    def loss(x, y):
        grid = layer([x, y], mask=[x_mask, y_mask])
        return tf.reduce_sum(upper(grid, mask=layer.compute_mask([x, y], [x_mask, y_mask])) * probe)

    x, y = (tf.constant(v / GARBAGE * 5, tf.float64) for v in (x, y))
    kernel = upper.weights[1]  # a recurrent kernel, used inside the loop
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        value = loss(x, y)
    grads = [np.asarray(g) for g in tape.gradient(value, [x, y, kernel])]

    def central_difference(variable, index, eps=1e-6):
        """d loss / d variable[index], perturbing one entry of an input array or of the kernel."""
        values = []
        for step in (eps, -eps):
            if variable == 2:
                changed = original.copy()
                changed[index] += step
                kernel.assign(changed)
                values.append(float(loss(x, y)))
                kernel.assign(original)
            else:
                inputs = [x.numpy(), y.numpy()]
                inputs[variable][index] += step
                values.append(float(loss(*inputs)))
        return (values[0] - values[1]) / (2 * eps)

    original = kernel.numpy()
    checks = [(0, (0, 0, 0)), (0, (1, 1, 1)), (0, (0, 2, 1)), (1, (0, 1, 0)), (1, (1, 2, 1)), (1, (0, 0, 1)),
              (2, (0, 0, 0)), (2, (3, 1, 2)), (2, (2, 3, 5))]
    for variable, index in checks:
        np.testing.assert_allclose(grads[variable][index], central_difference(variable, index), atol=1e-6)
    assert np.all(grads[0][1, 2] == 0) and np.all(grads[1][0, 2] == 0)  # padded positions


@pytest.mark.parametrize(
    "kwargs",
    [{"units": 0}, {"units": 2.0}, {"units": 2, "coupling": "medium"}, {"units": 2, "directions": 2},
     {"units": 2, "directions": True}],
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        CoupledLSTM2D(**kwargs)


@pytest.mark.parametrize(
    "coupling,shape",
    [
        ("tight", [(None, 4, 3), (None, 5, 6, 3)]),  # mismatched ranks
        ("tight", (None, 4, 3)),  # one sequence
        ("tight", [(None, 4, 3), (None, 5, 3), (None, 5, 3)]),  # three inputs
        ("tight", (None, 4, 5, None)),  # undefined channels
        ("loose", [(None, 4, None), (None, 5, 3)]),
        ("loose", (None, 4, 5, 3)),  # an odd grid cannot be split between LSTM^1 and LSTM^2
    ],
)
def test_bad_input_shapes_raise(coupling, shape):
    with pytest.raises(ValueError):
        CoupledLSTM2D(2, coupling=coupling).build(shape)
