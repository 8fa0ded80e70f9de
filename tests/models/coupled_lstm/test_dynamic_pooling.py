import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.coupled_lstm import DynamicPooling2D
from keras_match.models.coupled_lstm.dynamic_pooling import region_bounds

import references_coupled_lstm as ref
from helpers import GARBAGE
from helpers import call_layer
from helpers import run_layer_test

SIZES = [(1, 1), (2, 3), (5, 7)]
POOLS = [(1, 1), (2, 1), (3, 3)]


def grid_batch(seed, sizes, n=6, m=8, channels=3):
    """One example per true size (n_b, m_b) in a [batch, n, m, channels] grid; padded cells hold +GARBAGE, larger
    than every real value, so a masked cell that won a max would show."""
    rng = np.random.default_rng(seed)
    x_mask = np.arange(n)[None, :] < np.array([s[0] for s in sizes])[:, None]
    y_mask = np.arange(m)[None, :] < np.array([s[1] for s in sizes])[:, None]
    mask = x_mask[:, :, None] & y_mask[:, None, :]
    grid = np.where(mask[..., None], rng.normal(size=(len(sizes), n, m, channels)), GARBAGE)
    return grid.astype("float32"), mask


@pytest.mark.parametrize("p,q", POOLS)
def test_matches_numpy_reference_for_grids_larger_and_smaller_than_p_by_q(p, q):
    grid, mask = grid_batch(0, SIZES)
    out = call_layer(DynamicPooling2D(p, q), grid, mask)
    assert out.shape == (3, p, q, 3)
    np.testing.assert_array_equal(out, ref.dynamic_pooling(grid, mask, p, q).astype("float32"))
    assert np.all(out < GARBAGE)


@pytest.mark.parametrize("p,q", POOLS + [(4, 2)])
def test_every_size_alone(p, q):
    for n, m in SIZES + [(3, 1), (6, 8)]:
        grid, mask = grid_batch(n * 10 + m, [(n, m)])
        np.testing.assert_array_equal(call_layer(DynamicPooling2D(p, q), grid, mask),
                                      ref.dynamic_pooling(grid, mask, p, q).astype("float32"))


def test_without_mask_the_whole_grid_counts():
    grid = np.random.default_rng(1).normal(size=(2, 5, 4, 3)).astype("float32")
    out = call_layer(DynamicPooling2D(2, 2), grid)
    np.testing.assert_array_equal(out, ref.dynamic_pooling(grid, np.ones((2, 5, 4), bool), 2, 2).astype("float32"))
    np.testing.assert_array_equal(out[:, 0, 0], grid[:, :2, :2].max(axis=(1, 2)))
    np.testing.assert_array_equal(out[:, 1, 1], grid[:, 2:, 2:].max(axis=(1, 2)))


def test_an_empty_example_gives_zeros():
    grid, mask = grid_batch(2, [(2, 3), (0, 3), (2, 0)])
    out = call_layer(DynamicPooling2D(2, 2), grid, mask)
    assert np.all(out[1:] == 0) and np.all(np.isfinite(out))


def test_region_bounds():
    def bounds(length, parts):
        return [(int(s[0]), int(e[0])) for s, e in region_bounds(tf.constant([length]), parts)]

    assert bounds(5, 2) == [(0, 2), (2, 5)]  # non-overlapping, nearly equal
    assert bounds(7, 3) == [(0, 2), (2, 4), (4, 7)]
    assert bounds(2, 3) == [(0, 1), (0, 1), (1, 2)]  # smaller than p: rows repeat, every row used
    assert bounds(1, 3) == [(0, 1)] * 3


def test_layer_roundtrip(tmp_path):
    grid, mask = grid_batch(3, SIZES)
    run_layer_test(lambda: DynamicPooling2D(2, 1), grid, mask, expected_shape=(3, 2, 1, 3), expected_weights=0,
                   tmp_path=tmp_path)


def test_gradient_goes_to_the_maxima_only():
    grid, mask = grid_batch(4, [(5, 7)])
    grid = tf.constant(grid)
    with tf.GradientTape() as tape:
        tape.watch(grid)
        loss = tf.reduce_sum(DynamicPooling2D(2, 1)(grid, mask=mask))
    grad = np.asarray(tape.gradient(loss, grid))
    assert grad.sum() == 2 * 3 and np.all(grad[~mask] == 0)


@pytest.mark.parametrize("kwargs", [{"p": 0, "q": 1}, {"p": 1, "q": 1.5}, {"p": None, "q": 2}])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        DynamicPooling2D(**kwargs)


def test_bad_input_rank_raises():
    with pytest.raises(ValueError):
        DynamicPooling2D(2, 2).build((None, 5, 3))
