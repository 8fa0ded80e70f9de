"""Coupled-LSTMs and dynamic pooling under the `mixed_bfloat16` policy (issue 55), against the float64 NumPy
references of references_coupled_lstm.py with the float32 layer's weights.

bfloat16 keeps 8 significant bits (7 stored): one rounding to nearest moves a value by at most u = 2^-8 of itself.
Under the policy `CoupledLSTM2D` rounds its inputs, its input kernels and biases and the input projections of the
gates to bfloat16 (the projection's matmul accumulates in float32 and rounds once), runs the recurrence in float32
and rounds its output once. So a gate pre-activation `z = sum_k x_k W_k + b` is off by about 3u (x, W, the result)
times `sum_k |x_k W_k| + |b|`, a few units for these unit-scale inputs and N(0, 0.7^2) weights, with independent
signs: ~0.02, 0.05 at the very worst; tanh and sigmoid (derivatives <= 1) pass that on to `c` and `h`, shrunk by the
gates, and the float32 recurrence adds no rounding of its own (a bfloat16 state would add up to u |c| at each of the
n + m - 1 diagonals). The four directions sum independent errors and the output adds u |h|. Hence `ATOL = 2^-5`
(8u) and `RTOL = 2^-7` (two output roundings); the largest error measured is 0.015.
"""

import ml_dtypes
import numpy as np
import pytest

from keras_match.models.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm import DynamicPooling2D

import references_coupled_lstm as ref
from helpers import call_layer
from helpers import pad_more
from test_coupled_lstm import make_grid
from test_coupled_lstm import make_pair
from test_coupled_lstm import pair_shapes
from test_coupled_lstm import randomized
from test_coupled_lstm import weights_of

POLICY = "mixed_bfloat16"
ATOL, RTOL = 2.0**-5, 2.0**-7  # the module docstring's reasoning
VARIANTS = [(c, d) for c in ("tight", "loose") for d in (1, 4)]


def as_float32(array):
    return np.asarray(array).astype(np.float32)


def bfloat16_twin(layer, input_shape, **kwargs):
    """The layer's bfloat16 copy: the same config and the same (float32) weights, computing under the policy."""
    config = {**layer.get_config(), **kwargs, "dtype": POLICY}
    twin = type(layer).from_config(config)
    twin.build(input_shape)
    twin.set_weights(layer.get_weights())
    return twin


def call_bfloat16(layer, inputs, masks=None):
    out = call_layer(layer, inputs, masks)
    assert out.dtype == ml_dtypes.bfloat16  # the compute dtype: the float32 recurrence is internal
    return as_float32(out)


@pytest.mark.parametrize("coupling,directions", VARIANTS)
def test_bfloat16_matches_numpy_reference(coupling, directions):
    rng, x, y, x_mask, y_mask = make_pair(0)
    layer = randomized(CoupledLSTM2D(3, coupling=coupling, directions=directions), rng, pair_shapes(x, y))
    expected = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(layer), coupling, directions)
    twin = bfloat16_twin(layer, pair_shapes(x, y))
    assert twin.state_dtype == "float32" and all(w.dtype == "float32" for w in twin.weights)
    out = call_bfloat16(twin, [x, y], [x_mask, y_mask])
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)
    grid_mask = x_mask[:, :, None] & y_mask[:, None, :]
    assert np.all(out[~grid_mask] == 0.0)  # exact zeros at padded cells


@pytest.mark.parametrize("coupling", ["tight", "loose"])
def test_bfloat16_grid_input_matches_numpy_reference(coupling):
    rng, grid, mask = make_grid(3)
    layer = randomized(CoupledLSTM2D(3, coupling=coupling, directions=4), rng, (None, None, None, 4))
    expected = ref.coupled_lstm_grid(grid, mask, weights_of(layer), coupling, 4)
    out = call_bfloat16(bfloat16_twin(layer, (None, None, None, 4)), grid, mask)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)
    assert np.all(out[~mask] == 0.0)


@pytest.mark.parametrize("coupling", ["tight", "loose"])
def test_bfloat16_long_strip_does_not_drift(coupling):
    """A 2 x 30 grid: 30 diagonals of cell states. The recurrence runs in float32, so the error stays the
    per-cell one of the module docstring (a bfloat16 state would add up to u |c| at every diagonal)."""
    rng, x, y, x_mask, y_mask = make_pair(4, x_lengths=(2, 1), y_lengths=(30, 27), n=2, m=30)
    layer = randomized(CoupledLSTM2D(3, coupling=coupling, directions=1), rng, pair_shapes(x, y), scale=0.5)
    expected = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(layer), coupling, 1)
    out = call_bfloat16(bfloat16_twin(layer, pair_shapes(x, y)), [x, y], [x_mask, y_mask])
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("coupling", ["tight", "loose"])
def test_bfloat16_padded_batch_gives_the_unpadded_result(coupling):
    rng, x, y, x_mask, y_mask = make_pair(5, y_lengths=(6, 1, 0))  # an empty text too
    layer = randomized(CoupledLSTM2D(3, coupling=coupling), rng, pair_shapes(x, y))
    twin = bfloat16_twin(layer, pair_shapes(x, y))
    out = call_bfloat16(twin, [x, y], [x_mask, y_mask])
    assert np.all(out[2] == 0.0)
    long_x, long_x_mask = pad_more(rng, x, x_mask, 2)
    long_y, long_y_mask = pad_more(rng, y, y_mask, 3)
    long_out = call_bfloat16(twin, [long_x, long_y], [long_x_mask, long_y_mask])
    np.testing.assert_allclose(long_out[:, :4, :6], out, rtol=RTOL, atol=ATOL)
    long_grid_mask = long_x_mask[:, :, None] & long_y_mask[:, None, :]
    assert np.all(long_out[~long_grid_mask] == 0.0)
    expected = ref.coupled_lstm(long_x, long_y, long_x_mask, long_y_mask, weights_of(layer), coupling, 4)
    np.testing.assert_allclose(long_out, expected, rtol=RTOL, atol=ATOL)


def test_bfloat16_stacked_blocks_and_pooling():
    """Two blocks and the pooling, all under the policy: the lower block's output error (below ATOL) enters the
    upper block like an input rounding, so the upper block is held to twice the tolerance."""
    rng, x, y, x_mask, y_mask = make_pair(6)
    first = randomized(CoupledLSTM2D(2, coupling="loose"), rng, pair_shapes(x, y), scale=0.5)
    second = randomized(CoupledLSTM2D(2, coupling="tight"), rng, (None, None, None, 4), scale=0.5)
    lower_twin = bfloat16_twin(first, pair_shapes(x, y))
    upper_twin = bfloat16_twin(second, (None, None, None, 4))
    grid_mask = x_mask[:, :, None] & y_mask[:, None, :]
    grid = lower_twin([x, y], mask=[x_mask, y_mask])
    upper = upper_twin(grid, mask=grid_mask)
    pooled = as_float32(DynamicPooling2D(2, 1, dtype=POLICY)(upper, mask=grid_mask))
    lower = ref.coupled_lstm(x, y, x_mask, y_mask, weights_of(first), "loose", 4)
    expected = ref.coupled_lstm_grid(lower, grid_mask, weights_of(second), "tight", 4)
    np.testing.assert_allclose(as_float32(upper), expected, rtol=2 * RTOL, atol=2 * ATOL)
    np.testing.assert_allclose(pooled, ref.dynamic_pooling(expected, grid_mask, 2, 1), rtol=2 * RTOL,
                               atol=2 * ATOL)


@pytest.mark.parametrize("p,q", [(1, 1), (2, 1), (3, 3)])
def test_bfloat16_dynamic_pooling_is_exact_on_the_rounded_grid(p, q):
    """A maximum does no arithmetic: under the policy the output is the reference's maximum of the grid rounded
    to bfloat16 exactly, so within one rounding (relative u = 2^-8) of the float32 reference; padded cells (garbage
    larger than every real value) never win and an empty example gives exact zeros."""
    rng, grid, mask = make_grid(7, x_lengths=(3, 1, 0), y_lengths=(5, 2, 3))
    grid[~mask] = 50.0
    rounded = grid.astype(ml_dtypes.bfloat16).astype(np.float64)
    out = call_layer(DynamicPooling2D(p, q, dtype=POLICY), grid, mask)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(as_float32(out), ref.dynamic_pooling(rounded, mask, p, q))
    np.testing.assert_allclose(as_float32(out), ref.dynamic_pooling(grid, mask, p, q), rtol=2.0**-8, atol=0)
    assert np.all(as_float32(out)[2] == 0.0) and np.all(as_float32(out) < 50.0)
