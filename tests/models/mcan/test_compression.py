import numpy as np
import pytest

from keras_match.models.mcan import DenseCompression
from keras_match.models.mcan import FactorizationMachine
from keras_match.models.mcan import SumCompression
from keras_match.models.mcan import get_compression

import references_mcan as ref
from helpers import call_layer
from helpers import run_layer_test

KINDS = {"sm": (SumCompression, 0), "nn": (DenseCompression, 2), "fm": (FactorizationMachine, 3)}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("shape", [(3, 6), (2, 4, 6)])
def test_layer_roundtrip(tmp_path, kind, shape):
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    run_layer_test(
        lambda: get_compression(kind),
        x,
        expected_shape=shape[:-1] + (1,),
        expected_weights=KINDS[kind][1],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_matches_numpy_reference(kind):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 7)).astype("float32")
    layer = get_compression(kind, factors=4) if kind == "fm" else get_compression(kind)
    layer.build(x.shape)
    # Full-size random weights (biases included) so that every term of eq. 10-12 matters.
    layer.set_weights([rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])
    expected = ref.apply_compression(ref.compression_fn(kind, layer.get_weights()), x)
    np.testing.assert_allclose(call_layer(layer, x), expected, rtol=1e-4, atol=1e-4)


def test_fm_pairwise_term_is_the_double_sum():
    # Zero w0 and w: the output is the pairwise term alone, the O(nk) identity against the explicit double sum.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 5)).astype("float32")
    layer = FactorizationMachine(factors=3)
    layer.build(x.shape)
    factors = rng.normal(size=(5, 3)).astype("float32")
    layer.set_weights([np.zeros(1, "float32"), np.zeros((5, 1), "float32"), factors])
    expected = [[ref.fm_compression(v.astype(np.float64), np.zeros(1), np.zeros((5, 1)), factors)] for v in x]
    np.testing.assert_allclose(call_layer(layer, x), expected, rtol=1e-4, atol=1e-4)
    assert np.abs(expected).max() > 0.5  # the pairwise term is really exercised


def test_fm_weight_shapes():
    layer = FactorizationMachine(factors=10)
    layer.build((None, 50))
    assert [tuple(w.shape) for w in layer.get_weights()] == [(1,), (50, 1), (50, 10)]
    assert layer.count_params() == 1 + 50 + 500


@pytest.mark.parametrize("name, cls", [("sm", SumCompression), ("NN", DenseCompression), ("Fm", FactorizationMachine)])
def test_get_compression_is_case_insensitive_and_new(name, cls):
    first, second = get_compression(name), get_compression(name)
    assert type(first) is cls and first is not second


def test_get_compression_passes_kwargs():
    layer = get_compression("fm", factors=3, kernel_regularizer="l2", dtype="float64")
    assert layer.factors == 3 and layer.kernel_regularizer is not None and layer.compute_dtype == "float64"


@pytest.mark.parametrize("name", ["mlp", "", "s m", None, 3])
def test_get_compression_rejects_unknown_names(name):
    with pytest.raises(ValueError, match=r"Valid names.*\['fm', 'nn', 'sm'\]"):
        get_compression(name)


@pytest.mark.parametrize("factors", [0, -1, 1.5])
def test_fm_invalid_factors(factors):
    with pytest.raises(ValueError, match="factors"):
        FactorizationMachine(factors=factors)
