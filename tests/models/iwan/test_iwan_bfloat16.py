"""IWAN's layers under the `mixed_bfloat16` policy (issue 55): each layer built from the float32 layer's config and
weights, computing in bfloat16, against the float64 NumPy references (references_iwan.py for the alignment and the
inter-weighting; for the context encoders, whose float32 tests compare with Keras layers, the NumPy LSTM, CARNN and
Position Encoder below, written from their equations).

Tolerances. bfloat16 keeps 8 significant bits: one rounding to nearest moves a value by at most u = 2^-8 of itself.
A product of a rounded input and a rounded weight is off by 2u, and a matmul accumulates in float32 and rounds its
result once, so a dot product over K terms `t_k` is off by at most ~3u sum_k |t_k| (~3u sqrt(sum_k t_k^2) with the
roundings' independent signs). The inputs here are N(0, 1) and the weights N(0, 0.7^2), so |t_k| ~ 0.5-1:

- `DecompositionAlignment`: the similarity logits (K = d = 4 terms, |M| up to ~8) are off by up to 3u * 8 ~ 0.1,
  which moves the softmax weights by up to ~10% of themselves (typically ~1%); `f`'s pre-activation sums 2d = 8
  (16 for concat_diff_prod) such terms on top. Hence `ATOL = 2^-4` (16u) and `RTOL = 2^-6`; measured: <= 0.03.
- `InterWeighting`: the scores (K = 2d then `units` = 6 terms) and `v = sum_i w_i f_i`; the softmax and the mean
  normalise in float32. `ATOL = 2^-5`, `RTOL = 2^-6`; measured: <= 0.007.
- `ContextEncoder`, CARNNs: every gate pre-activation carries ~3u of its ~2d terms and the float32 state carries it
  on (gates < 1 shrink it); no rounding per step. `ATOL = 2^-5`, `RTOL = 2^-6`; measured: <= 0.023.
- `ContextEncoder`, BiLSTM: the LSTM runs in float32, so only the inputs' rounding (u, through K = d = 4 terms) and
  the output's (u |h|, |h| < 1) remain: `ATOL = 2^-7` (2u), `RTOL = 2^-8`; measured: <= 0.002, also over 40 steps.
"""

import ml_dtypes
import numpy as np
import pytest

import references_iwan as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from keras_match.models.iwan import ContextEncoder
from keras_match.models.iwan import DecompositionAlignment
from keras_match.models.iwan import InterWeighting
from test_iwan_layers import ALIGNMENTS
from test_iwan_layers import DIM
from test_iwan_layers import LEN_S
from test_iwan_layers import LEN_T
from test_iwan_layers import UNITS
from test_iwan_layers import WEIGHTINGS
from test_iwan_layers import make_pair
from test_iwan_layers import new_garbage
from test_iwan_layers import randomize
from test_iwan_layers import weighting_inputs

POLICY = "mixed_bfloat16"
ALIGNMENT_TOL = {"atol": 2.0**-4, "rtol": 2.0**-6}  # the module docstring's reasoning, for each
WEIGHTING_TOL = {"atol": 2.0**-5, "rtol": 2.0**-6}
CARNN_TOL = {"atol": 2.0**-5, "rtol": 2.0**-6}
BILSTM_TOL = {"atol": 2.0**-7, "rtol": 2.0**-8}


def bfloat16_twin(layer, input_shape):
    """The layer's bfloat16 copy: its config under the policy and its (float32) weights."""
    twin = type(layer).from_config({**layer.get_config(), "dtype": POLICY})
    twin.build(input_shape)
    twin.set_weights(layer.get_weights())
    assert all(w.dtype == "float32" for w in twin.weights)
    return twin


def call_bfloat16(layer, inputs, masks):
    outputs = call_layer(layer, inputs, masks)
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    assert all(out.dtype == ml_dtypes.bfloat16 for out in outputs)
    return [np.asarray(out).astype(np.float32) for out in outputs]


# ------------------------------------------------------------------------------------------ DecompositionAlignment
@pytest.mark.parametrize("similarity, compare, _", ALIGNMENTS)
def test_bfloat16_alignment_matches_reference(similarity, compare, _):
    rng, hs, ht, mask_s, mask_t = make_pair(1)
    layer = DecompositionAlignment(5, similarity=similarity, compare=compare)
    layer.build([hs.shape, ht.shape])
    randomize(layer, rng)
    bilinear = layer.bilinear.numpy() if similarity == "bilinear" else None
    ref_fs, ref_ft = ref.alignment(hs, ht, mask_s, mask_t, *layer.projection.get_weights(), similarity, compare,
                                   bilinear)
    twin = bfloat16_twin(layer, [hs.shape, ht.shape])
    fs, ft = call_bfloat16(twin, [hs, ht], [mask_s, mask_t])
    np.testing.assert_allclose(fs, ref_fs, **ALIGNMENT_TOL)
    np.testing.assert_allclose(ft, ref_ft, **ALIGNMENT_TOL)
    assert not fs[~mask_s].any() and not ft[~mask_t].any()  # exact zeros at padding
    # A padded batch (more padding, new garbage) gives the unpadded result.
    hs2, mask_s2 = pad_more(rng, new_garbage(rng, hs, mask_s), mask_s, extra=2)
    ht2, mask_t2 = pad_more(rng, new_garbage(rng, ht, mask_t), mask_t, extra=3)
    fs2, ft2 = call_bfloat16(twin, [hs2, ht2], [mask_s2, mask_t2])
    np.testing.assert_allclose(fs2[:, :LEN_S], ref_fs, **ALIGNMENT_TOL)
    np.testing.assert_allclose(ft2[:, :LEN_T], ref_ft, **ALIGNMENT_TOL)
    assert not fs2[~mask_s2].any() and not ft2[~mask_t2].any()


def test_bfloat16_decomposition_keeps_the_orthogonal_part_of_a_nearly_parallel_word():
    """`o = h - p` for `h` nearly parallel to `h~` (|o| ~ 1% of |h|): a difference of two close vectors, computed
    in float32 and rounded once, so `o` is right to ~u of itself; computed in bfloat16, `p` alone would be off by up
    to u |h| (~40% of |o| here)."""
    rng = np.random.default_rng(2)
    aligned = rng.normal(size=(2, 3, DIM))
    orthogonal = rng.normal(size=(2, 3, DIM))
    orthogonal -= (orthogonal * aligned).sum(-1, keepdims=True) / (aligned * aligned).sum(-1, keepdims=True) * aligned
    h = 3.0 * aligned + 0.05 * orthogonal / np.linalg.norm(orthogonal, axis=-1, keepdims=True)
    h, aligned = (v.astype(ml_dtypes.bfloat16) for v in (h, aligned))  # what a bfloat16 layer holds
    ref_p, ref_o = ref.decompose(h.astype(np.float64), aligned.astype(np.float64))
    assert np.all(np.linalg.norm(ref_o, axis=-1) < 0.02 * np.linalg.norm(ref_p, axis=-1))  # nearly parallel
    layer = DecompositionAlignment(UNITS, dtype=POLICY)
    p, o = (np.asarray(v).astype(np.float64) for v in layer.decompose(h, aligned))
    # One final rounding each (u); the float32 arithmetic before it adds ~1e-7 |h| (atol).
    np.testing.assert_allclose(p, ref_p, rtol=2.0**-8, atol=1e-5)
    np.testing.assert_allclose(o, ref_o, rtol=2.0**-8, atol=1e-5)


# ------------------------------------------------------------------------------------------------ InterWeighting
@pytest.mark.parametrize("weighting, _", WEIGHTINGS)
def test_bfloat16_weighting_matches_reference(weighting, _):
    rng, f, hs, ht, mask_s, mask_t = weighting_inputs(1)
    layer = InterWeighting(weighting, units=6, return_weights=True)
    layer.build([f.shape, hs.shape, ht.shape])
    randomize(layer, rng)
    ref_v, ref_w = ref.inter_weighting(f, hs, ht, mask_s, mask_t, weighting, layer.get_weights())
    twin = bfloat16_twin(layer, [f.shape, hs.shape, ht.shape])
    v, w = call_bfloat16(twin, [f, hs, ht], [mask_s, mask_s, mask_t])
    np.testing.assert_allclose(v, ref_v, **WEIGHTING_TOL)
    np.testing.assert_allclose(w, ref_w, **WEIGHTING_TOL)
    assert not w[~mask_s].any()  # exact zeros at padding
    if weighting != "inter_skip":  # a distribution: 1 up to the weights' own rounding (u each)
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=LEN_S * 2.0**-8)
    f2, mask_s2 = pad_more(rng, new_garbage(rng, f, mask_s), mask_s, extra=2)
    hs2, _ = pad_more(rng, new_garbage(rng, hs, mask_s), mask_s, extra=2)
    ht2, mask_t2 = pad_more(rng, new_garbage(rng, ht, mask_t), mask_t, extra=3)
    v2, w2 = call_bfloat16(twin, [f2, hs2, ht2], [mask_s2, mask_s2, mask_t2])
    np.testing.assert_allclose(v2, ref_v, **WEIGHTING_TOL)
    np.testing.assert_allclose(w2[:, :LEN_S], ref_w, **WEIGHTING_TOL)
    assert not w2[:, LEN_S:].any()


# ------------------------------------------------------------------------------------------------ ContextEncoder
def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_reference(x, cell):
    """keras.layers.LSTM over the real steps `x [M, d]` (gates i, f, c, o; h_0 = c_0 = 0): `[M, u]`."""
    kernel, recurrent, bias = (np.asarray(w.numpy(), np.float64) for w in cell.weights)
    units = recurrent.shape[0]
    h, c, states = np.zeros(units), np.zeros(units), []
    for x_t in x:
        z = x_t @ kernel + h @ recurrent + bias
        i, f, g, o = (sigmoid(z[:units]), sigmoid(z[units:2 * units]), np.tanh(z[2 * units:3 * units]),
                      sigmoid(z[3 * units:]))
        c = f * c + i * g
        h = o * np.tanh(c)
        states.append(h)
    return np.array(states).reshape(len(x), units)


def carnn_reference(x, context, cell, variant):
    """CARNN eq. 3 / 5 / 6 over the real steps `x [M, d]` with context `c [dc]` (h_0 = 0): `[M, u]`."""
    w = {v.path.split("/")[-1]: np.asarray(v.numpy(), np.float64) for v in cell.weights}
    units = w["gate_bias"].shape[0] // 2
    h, states = np.zeros(units), []
    for e in x:
        z = e @ w["input_kernel"] + context @ w["context_kernel"] + w["gate_bias"]
        if variant == "n":
            z = z + h @ w["recurrent_kernel"]
        g_u, g_f = sigmoid(z[:units]), sigmoid(z[units:])
        e_bar = e if variant == "s" else e @ w["projection_kernel"] + w["projection_bias"]
        h = g_u * (g_f * e_bar) + (1.0 - g_u) * h
        states.append(h)
    return np.array(states).reshape(len(x), units)


def position_encoding(x):
    """Sukhbaatar et al. 2015 section 4.1 of the real words `x [J, d]`: sum_j l_j x_j (0 for no word)."""
    length, dim = x.shape
    k = np.arange(1, dim + 1)
    return sum(((1 - j / length) - (k / dim) * (1 - 2 * j / length)) * x[j - 1] for j in range(1, length + 1)) \
        if length else np.zeros(dim)


def encoder_reference(layer, xs, xt, mask_s, mask_t):
    """`(h_s, h_t)` of a float32-built `ContextEncoder`, example by example over the real words (0 at padding)."""
    outputs = []
    for x, mask, other, other_mask in ((xs, mask_s, xt, mask_t), (xt, mask_t, xs, mask_s)):
        out = np.zeros(x.shape[:2] + (layer.output_width(x.shape[-1]),))
        for b in range(len(x)):
            real = x[b, mask[b]].astype(np.float64)
            if not len(real):
                continue
            if layer.encoder == "bilstm":
                forward = lstm_reference(real, layer.bilstm.forward_layer.cell)
                backward = lstm_reference(real[::-1], layer.bilstm.backward_layer.cell)[::-1]
            else:
                context = position_encoding(other[b, other_mask[b]].astype(np.float64))
                variant = layer.encoder[0]
                forward = carnn_reference(real, context, layer.forward.cell, variant)
                backward = carnn_reference(real[::-1], context, layer.backward.cell, variant)[::-1]
            out[b, mask[b]] = np.concatenate([forward, backward], -1)
        outputs.append(out)
    return outputs


@pytest.mark.parametrize("encoder", ["bilstm", "ncarnn", "icarnn", "scarnn"])
def test_bfloat16_encoder_matches_reference(encoder):
    rng, xs, xt, mask_s, mask_t = make_pair(7)
    layer = ContextEncoder(encoder, units=None if encoder == "scarnn" else UNITS)
    layer.build([xs.shape, xt.shape])
    randomize(layer, rng)
    ref_s, ref_t = encoder_reference(layer, xs, xt, mask_s, mask_t)
    np.testing.assert_allclose(call_layer(layer, [xs, xt], [mask_s, mask_t])[0], ref_s, atol=1e-5)  # the reference
    tolerance = BILSTM_TOL if encoder == "bilstm" else CARNN_TOL
    twin = bfloat16_twin(layer, [xs.shape, xt.shape])
    hs, ht = call_bfloat16(twin, [xs, xt], [mask_s, mask_t])
    np.testing.assert_allclose(hs, ref_s, **tolerance)
    np.testing.assert_allclose(ht, ref_t, **tolerance)
    assert not hs[~mask_s].any() and not ht[~mask_t].any()
    xs2, mask_s2 = pad_more(rng, new_garbage(rng, xs, mask_s), mask_s, extra=2)
    xt2, mask_t2 = pad_more(rng, new_garbage(rng, xt, mask_t), mask_t, extra=3)
    hs2, ht2 = call_bfloat16(twin, [xs2, xt2], [mask_s2, mask_t2])
    np.testing.assert_allclose(hs2[:, :LEN_S], ref_s, **tolerance)
    np.testing.assert_allclose(ht2[:, :LEN_T], ref_t, **tolerance)
    assert not hs2[~mask_s2].any() and not ht2[~mask_t2].any()


def test_bfloat16_bilstm_runs_in_float32_and_does_not_drift_over_a_long_sentence():
    """40 steps: the float32 LSTM keeps the BiLSTM tolerance (an error of the inputs' and the output's rounding
    only), where a bfloat16 cell state would take a rounding (up to u |c|) at every step."""
    rng = np.random.default_rng(9)
    xs, mask_s = padded_batch(rng, [40, 33], 40, DIM)
    xt, mask_t = padded_batch(rng, [2, 1], 3, DIM)
    layer = ContextEncoder("bilstm", units=UNITS)
    layer.build([xs.shape, xt.shape])
    randomize(layer, rng, scale=0.5)
    ref_s, _ = encoder_reference(layer, xs, xt, mask_s, mask_t)
    twin = bfloat16_twin(layer, [xs.shape, xt.shape])
    assert twin.bilstm.compute_dtype == "float32" and twin.compute_dtype == "bfloat16"
    hs, _ = call_bfloat16(twin, [xs, xt], [mask_s, mask_t])
    np.testing.assert_allclose(hs, ref_s, **BILSTM_TOL)
