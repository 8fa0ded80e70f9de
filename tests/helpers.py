"""Shared test helpers for keras_match.layers: random padded inputs and the generic layer test."""

import keras
import numpy as np

GARBAGE = 50.0  # magnitude of the values put at padded positions: any leak shows up at once


def lengths_mask(lengths, max_len):
    """Bool mask [batch, max_len] with the first `lengths[b]` positions True."""
    return np.arange(max_len)[None, :] < np.asarray(lengths)[:, None]


def padded_batch(rng, lengths, max_len, dim):
    """Float32 [batch, max_len, dim]: N(0, 1) at real positions, large garbage at padded ones; and the mask."""
    mask = lengths_mask(lengths, max_len)
    x = rng.normal(size=(len(lengths), max_len, dim))
    garbage = rng.uniform(-GARBAGE, GARBAGE, size=x.shape)
    return np.where(mask[..., None], x, garbage).astype("float32"), mask


def pad_more(rng, x, mask, extra):
    """Append `extra` padded (garbage) positions along time to x [batch, time, dim] and its mask."""
    batch, _, dim = x.shape
    garbage = rng.uniform(-GARBAGE, GARBAGE, size=(batch, extra, dim)).astype(x.dtype)
    return np.concatenate([x, garbage], axis=1), np.concatenate([mask, np.zeros((batch, extra), bool)], axis=1)


def to_numpy(structure):
    return keras.tree.map_structure(lambda t: np.asarray(keras.ops.convert_to_numpy(t)), structure)


def call_layer(layer, inputs, masks=None):
    """Eager call, returning NumPy arrays in the layer's output structure."""
    if masks is None:
        return to_numpy(layer(inputs))
    return to_numpy(layer(inputs, mask=masks))


def assert_finite(structure):
    for array in keras.tree.flatten(structure):
        assert np.all(np.isfinite(array)), "non-finite values in the output"


def _input_spec(array, is_mask):
    """A keras.Input for `array` with batch and time dimensions left free."""
    if is_mask:
        return keras.Input(shape=(None,) * (array.ndim - 1), dtype="bool")
    if array.ndim >= 3:
        return keras.Input(shape=(None,) * (array.ndim - 2) + (array.shape[-1],), dtype=array.dtype)
    return keras.Input(shape=array.shape[1:], dtype=array.dtype)


def _functional_model(layer, inputs, masks):
    """A functional model around `layer`; its inputs are the flat list of arrays, then of masks."""
    flat_inputs = keras.tree.flatten(inputs)
    flat_masks = [] if masks is None else keras.tree.flatten(masks)
    symbolic_inputs = [_input_spec(a, False) for a in flat_inputs]
    symbolic_masks = [_input_spec(m, True) for m in flat_masks]
    structured_inputs = keras.tree.pack_sequence_as(inputs, symbolic_inputs)
    if masks is None:
        outputs = layer(structured_inputs)
    else:
        outputs = layer(structured_inputs, mask=keras.tree.pack_sequence_as(masks, symbolic_masks))
    model = keras.Model(symbolic_inputs + symbolic_masks, outputs)
    return model, flat_inputs + flat_masks


def assert_same_outputs(actual, expected, atol=1e-6):
    # Compared flat: a functional model returns a layer's tuple outputs as a list.
    assert [np.shape(a) for a in keras.tree.flatten(actual)] == [np.shape(e) for e in keras.tree.flatten(expected)]
    for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected)):
        np.testing.assert_allclose(a, e, atol=atol, rtol=0)


def run_layer_test(layer_factory, inputs, masks=None, expected_shape=None, expected_weights=0, tmp_path=None):
    """The test every layer gets.

    1. build + eager call; the output structure has `expected_shape` (same nesting, shape tuples as leaves),
       is finite, and the layer has `expected_weights` trainable weights;
    2. `get_config -> from_config` gives a layer with the same config, and so does the registered
       `keras.layers.serialize -> deserialize` path;
    3. a functional model around the layer (free batch and time dimensions, masks as bool inputs) matches the
       eager call, is saved to a `.keras` file, reloaded with `keras.models.load_model` (no custom_objects:
       registration must suffice) and gives identical outputs.

    Returns:
        `(layer, outputs)`, the eager outputs as NumPy arrays.
    """
    layer = layer_factory()
    outputs = call_layer(layer, inputs, masks)
    shapes = keras.tree.map_structure(lambda a: tuple(a.shape), outputs)
    assert shapes == expected_shape, f"output shapes {shapes} != expected {expected_shape}"
    assert_finite(outputs)
    assert len(layer.trainable_weights) == expected_weights
    assert len(layer.non_trainable_weights) == 0

    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    revived = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(revived) is type(layer)
    assert revived.get_config() == config

    model, model_inputs = _functional_model(layer, inputs, masks)
    model_outputs = to_numpy(model(model_inputs))
    assert_same_outputs(model_outputs, outputs, atol=1e-5)
    path = tmp_path / f"{layer.name}.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert_same_outputs(to_numpy(reloaded(model_inputs)), model_outputs, atol=1e-6)
    return layer, outputs


# bfloat16 checks of the families' layers (tests/models/*/test_*_bfloat16.py)
BF16 = "mixed_bfloat16"
U = 2.0**-8
"""The largest relative error of one rounding to bfloat16 (8 significant bits)."""


def as_float(structure):
    return keras.tree.map_structure(lambda a: np.asarray(a, np.float64), structure)


def assert_bf16(actual, float32_actual):
    """`actual` is bfloat16 and was computed in bfloat16 (it is not the float32 result)."""
    for a in keras.tree.flatten(actual):
        assert keras.backend.standardize_dtype(a.dtype) == "bfloat16"
    assert not all(np.array_equal(as_float(a), b) for a, b in zip(keras.tree.flatten(actual),
                                                                   keras.tree.flatten(float32_actual)))


def assert_within(actual, expected, roundings, scale=None, err_msg=""):
    """|actual - expected| <= roundings * U * scale (scale: the largest |expected| unless given, per element)."""
    expected = np.asarray(expected, np.float64)
    scale = np.abs(expected).max() if scale is None else np.asarray(scale, np.float64)
    bound = roundings * U * scale
    error = np.abs(as_float(actual) - expected)
    assert np.all(error <= bound), f"{err_msg}: error {np.max(error / bound):.2f} x the bound ({roundings} roundings)"
