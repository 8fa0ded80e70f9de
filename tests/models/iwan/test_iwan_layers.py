"""IWAN's layers (Shen, Yang & Deng, EMNLP 2017; reconstructed, shared/papers/iwan_architecture.md) against the
NumPy references of references_iwan.py: DecompositionAlignment, InterWeighting, ContextEncoder (BiLSTM and the
cross-context CARNNs of Tran et al., NAACL 2018)."""

import keras
import numpy as np
import pytest

import references_iwan as ref
from helpers import GARBAGE
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test
from keras_match.layers import CARNN
from keras_match.layers import PositionEncoder
from keras_match.models.iwan import ContextEncoder
from keras_match.models.iwan import DecompositionAlignment
from keras_match.models.iwan import InterWeighting

# Unequal lengths; the last example has an empty second sentence (aligned vectors 0, summary 0).
S_LENGTHS, T_LENGTHS, LEN_S, LEN_T = [5, 2, 3], [4, 6, 0], 5, 6
DIM, UNITS = 4, 3


def make_pair(seed, dim=DIM, s_lengths=S_LENGTHS, t_lengths=T_LENGTHS):
    rng = np.random.default_rng(seed)
    hs, mask_s = padded_batch(rng, s_lengths, LEN_S, dim)
    ht, mask_t = padded_batch(rng, t_lengths, LEN_T, dim)
    return rng, hs, ht, mask_s, mask_t


def new_garbage(rng, x, mask):
    """x with fresh garbage at its padded positions (the real values untouched)."""
    return np.where(mask[..., None], x, rng.uniform(-GARBAGE, GARBAGE, size=x.shape).astype(x.dtype))


def randomize(layer, rng, scale=0.7):
    """Full-size random weights, biases included, so every term of the equations matters."""
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])


def assert_close(actual, expected, err_msg=""):
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4, err_msg=err_msg)


# ------------------------------------------------------------------------------------------ DecompositionAlignment
ALIGNMENTS = [("dot", "orthogonal", 2), ("cosine", "orthogonal", 2), ("bilinear", "orthogonal", 3),
              ("dot", "concat_diff_prod", 2)]


@pytest.mark.parametrize("similarity, compare, n_weights", ALIGNMENTS)
def test_alignment_roundtrip(tmp_path, similarity, compare, n_weights):
    _, hs, ht, mask_s, mask_t = make_pair(0)
    run_layer_test(
        lambda: DecompositionAlignment(UNITS, similarity=similarity, compare=compare),
        [hs, ht],
        [mask_s, mask_t],
        expected_shape=((3, LEN_S, UNITS), (3, LEN_T, UNITS)),
        expected_weights=n_weights,
        tmp_path=tmp_path,
    )


def _alignment_reference(layer, hs, ht, mask_s, mask_t):
    kernel, bias = (w.numpy() for w in (layer.projection.kernel, layer.projection.bias))
    bilinear = layer.bilinear.numpy() if layer.similarity == "bilinear" else None
    return ref.alignment(hs, ht, mask_s, mask_t, kernel, bias, layer.similarity, layer.compare, bilinear)


@pytest.mark.parametrize("similarity, compare, _", ALIGNMENTS)
def test_alignment_matches_reference(similarity, compare, _):
    rng, hs, ht, mask_s, mask_t = make_pair(1)
    layer = DecompositionAlignment(5, similarity=similarity, compare=compare)
    layer.build([hs.shape, ht.shape])
    randomize(layer, rng)
    fs, ft = call_layer(layer, [hs, ht], [mask_s, mask_t])
    ref_fs, ref_ft = _alignment_reference(layer, hs, ht, mask_s, mask_t)
    assert_close(fs, ref_fs)
    assert_close(ft, ref_ft)
    assert np.abs(ref_fs).max() > 0.1 and np.abs(ref_ft).max() > 0.1  # not vacuous
    assert not fs[~mask_s].any() and not ft[~mask_t].any()


def test_alignment_is_one_weight_set_for_both_directions():
    """Swapping the sentences swaps the outputs (W_a and the similarity shared, Figure 1)."""
    rng, hs, ht, mask_s, mask_t = make_pair(2)
    layer = DecompositionAlignment(UNITS, similarity="bilinear")
    layer.build([hs.shape, ht.shape])
    randomize(layer, rng)
    layer.bilinear.assign(np.eye(DIM, dtype="float32"))  # symmetric: bilinear with W = I is the dot product
    fs, ft = call_layer(layer, [hs, ht], [mask_s, mask_t])
    ft2, fs2 = call_layer(layer, [ht, hs], [mask_t, mask_s])
    assert_close(fs2, fs)
    assert_close(ft2, ft)


def test_decomposition_splits_each_word_into_orthogonal_parts():
    rng = np.random.default_rng(3)
    h, aligned = rng.normal(size=(2, 5, DIM)), rng.normal(size=(2, 5, DIM))
    p, o = (np.asarray(x) for x in DecompositionAlignment(UNITS).decompose(
        keras.ops.convert_to_tensor(h.astype("float32")), keras.ops.convert_to_tensor(aligned.astype("float32"))))
    np.testing.assert_allclose(p + o, h, atol=1e-5)  # h = p + o
    np.testing.assert_allclose((p * o).sum(-1), 0.0, atol=1e-4)  # p orthogonal to o
    np.testing.assert_allclose(np.abs(np.cross(p[..., :3], aligned[..., :3])).max(), 0.0, atol=1e-4)  # p || h~
    ref_p, ref_o = ref.decompose(h, aligned)
    assert_close(p, ref_p)
    assert_close(o, ref_o)


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # one word aligned with one word
def test_alignment_of_a_word_with_itself_is_all_matched():
    """A sentence aligned to one copy of its single word: p = h, o = 0 (up to epsilon)."""
    layer = DecompositionAlignment(2 * DIM)
    layer.build([(None, None, DIM), (None, None, DIM)])
    kernel = np.zeros((2 * DIM, 2 * DIM), "float32")
    kernel[:, :] = np.eye(2 * DIM)  # f = ReLU([p; o]): shows the parts
    layer.projection.set_weights([kernel, np.zeros(2 * DIM, "float32")])
    word = np.abs(np.random.default_rng(4).normal(size=(1, 1, DIM))).astype("float32") + 0.5
    fs, _ = call_layer(layer, [word, word], [np.ones((1, 1), bool), np.ones((1, 1), bool)])
    np.testing.assert_allclose(fs[0, 0, :DIM], word[0, 0], atol=1e-5)
    np.testing.assert_allclose(fs[0, 0, DIM:], 0.0, atol=1e-5)


def test_alignment_padding_changes_nothing():
    rng, hs, ht, mask_s, mask_t = make_pair(5)
    layer = DecompositionAlignment(UNITS)
    fs, ft = call_layer(layer, [hs, ht], [mask_s, mask_t])
    hs2, mask_s2 = pad_more(rng, new_garbage(rng, hs, mask_s), mask_s, extra=2)
    ht2, mask_t2 = pad_more(rng, new_garbage(rng, ht, mask_t), mask_t, extra=3)
    fs2, ft2 = call_layer(layer, [hs2, ht2], [mask_s2, mask_t2])
    np.testing.assert_allclose(fs2[:, :LEN_S], fs, atol=1e-5)
    np.testing.assert_allclose(ft2[:, :LEN_T], ft, atol=1e-5)
    assert not fs2[~mask_s2].any() and not ft2[~mask_t2].any()
    # The test can fail: without the masks the garbage leaks in.
    unmasked, _ = call_layer(layer, [hs, ht], [mask_s, None])
    assert not np.allclose(unmasked, fs, atol=1e-3)


def test_alignment_with_an_empty_partner_leaves_every_word_unmatched():
    """Example 2 has an empty second sentence: h~ = 0, so p = 0 and o = h (f = ReLU(W_a [0; h] + b_a))."""
    rng, hs, ht, mask_s, mask_t = make_pair(6)
    layer = DecompositionAlignment(UNITS)
    layer.build([hs.shape, ht.shape])
    randomize(layer, rng)
    fs, ft = call_layer(layer, [hs, ht], [mask_s, mask_t])
    assert_finite((fs, ft))
    kernel, bias = layer.projection.get_weights()
    words = hs[2, : S_LENGTHS[2]]
    expected = np.maximum(np.concatenate([np.zeros_like(words), words], -1) @ kernel + bias, 0.0)
    assert_close(fs[2, : S_LENGTHS[2]], expected)
    assert not ft[2].any()


def test_alignment_passes_the_masks_and_shapes():
    ids = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, DIM, mask_zero=True)(ids)
    fs, ft = DecompositionAlignment(UNITS)([embedded, embedded])
    model = keras.Model(ids, [keras.ops.cast(fs._keras_mask, "int32"), keras.ops.cast(ft._keras_mask, "int32")])
    tokens = np.array([[3, 4, 0, 0], [1, 2, 3, 5]])
    for mask in model(tokens):
        np.testing.assert_array_equal(mask, (tokens != 0).astype("int32"))
    assert tuple(fs.shape) == (None, None, UNITS)


@pytest.mark.parametrize("kwargs, message", [
    ({"units": 0}, "units"), ({"units": 2.5}, "units"), ({"units": 3, "similarity": "bilinear_tanh"}, "similarity"),
    ({"units": 3, "compare": "sub"}, "compare"), ({"units": 3, "epsilon": 0}, "epsilon"),
])
def test_alignment_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DecompositionAlignment(**kwargs)


def test_alignment_shape_errors():
    with pytest.raises(ValueError, match="same, defined last dimension"):
        DecompositionAlignment(3).build([(None, 5, 3), (None, 5, 4)])
    with pytest.raises(ValueError, match="pair"):
        DecompositionAlignment(3).build((None, 5, 3))


# ------------------------------------------------------------------------------------------------ InterWeighting
WEIGHTINGS = [("inter_attention", 3), ("inter_skip", 2), ("none", 0)]
F_DIM = 5


def weighting_inputs(seed):
    """f (width F_DIM) and h of sentence S, h of sentence T, garbage at every padded position."""
    rng, hs, ht, mask_s, mask_t = make_pair(seed)
    f, _ = padded_batch(rng, S_LENGTHS, LEN_S, F_DIM)
    return rng, f, hs, ht, mask_s, mask_t


@pytest.mark.parametrize("weighting, n_weights", WEIGHTINGS)
@pytest.mark.parametrize("return_weights", [False, True])
def test_weighting_roundtrip(tmp_path, weighting, n_weights, return_weights):
    _, f, hs, ht, mask_s, mask_t = weighting_inputs(0)
    shape = ((3, F_DIM), (3, LEN_S)) if return_weights else (3, F_DIM)
    run_layer_test(
        lambda: InterWeighting(weighting, units=UNITS, return_weights=return_weights),
        [f, hs, ht],
        [mask_s, mask_s, mask_t],
        expected_shape=shape,
        expected_weights=n_weights,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("weighting, _", WEIGHTINGS)
def test_weighting_matches_reference(weighting, _):
    rng, f, hs, ht, mask_s, mask_t = weighting_inputs(1)
    layer = InterWeighting(weighting, units=6, return_weights=True)
    layer.build([f.shape, hs.shape, ht.shape])
    randomize(layer, rng)
    v, w = call_layer(layer, [f, hs, ht], [mask_s, mask_s, mask_t])
    ref_v, ref_w = ref.inter_weighting(f, hs, ht, mask_s, mask_t, weighting, layer.get_weights())
    assert_close(v, ref_v)
    assert_close(w, ref_w)
    assert not w[~mask_s].any()
    if weighting == "inter_skip":  # a gate per word, not a distribution
        assert (w[mask_s] > 0).all() and (w[mask_s] < 1).all()
        assert not np.allclose(w.sum(-1), 1.0, atol=1e-2)
    else:
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    if weighting == "inter_attention":  # W_1, b_1, v: weights not uniform
        assert np.ptp(w[0, : S_LENGTHS[0]]) > 0.05


@pytest.mark.parametrize("weighting", ["inter_attention", "inter_skip"])
def test_weighting_reads_the_other_sentence(weighting):
    """The weights of S's words change with T (h-bar of the other sentence), the inter- of inter-weighting."""
    rng, f, hs, ht, mask_s, mask_t = weighting_inputs(2)
    layer = InterWeighting(weighting, units=UNITS, return_weights=True)
    layer.build([f.shape, hs.shape, ht.shape])
    randomize(layer, rng)
    _, w = call_layer(layer, [f, hs, ht], [mask_s, mask_s, mask_t])
    other = np.where(mask_t[..., None], rng.normal(size=ht.shape), ht).astype("float32")
    _, w2 = call_layer(layer, [f, hs, other], [mask_s, mask_s, mask_t])
    assert not np.allclose(w[:2], w2[:2], atol=1e-4)
    np.testing.assert_allclose(w[2], w2[2], atol=1e-6)  # example 2's T is empty: nothing to read


@pytest.mark.parametrize("weighting, _", WEIGHTINGS)
def test_weighting_padding_changes_nothing(weighting, _):
    rng, f, hs, ht, mask_s, mask_t = weighting_inputs(3)
    layer = InterWeighting(weighting, units=UNITS, return_weights=True)
    v, w = call_layer(layer, [f, hs, ht], [mask_s, mask_s, mask_t])
    f2, mask_s2 = pad_more(rng, new_garbage(rng, f, mask_s), mask_s, extra=2)
    hs2, _ = pad_more(rng, new_garbage(rng, hs, mask_s), mask_s, extra=2)
    ht2, mask_t2 = pad_more(rng, new_garbage(rng, ht, mask_t), mask_t, extra=3)
    v2, w2 = call_layer(layer, [f2, hs2, ht2], [mask_s2, mask_s2, mask_t2])
    np.testing.assert_allclose(v2, v, atol=1e-5)
    np.testing.assert_allclose(w2[:, :LEN_S], w, atol=1e-6)
    assert not w2[:, LEN_S:].any()
    # The test can fail: without the other sentence's mask its garbage enters h-bar (or, for "none", the own
    # garbage enters v).
    masks = [mask_s, mask_s, None] if weighting != "none" else [None, None, mask_t]
    assert not np.allclose(call_layer(layer, [f, hs, ht], masks)[0], v, atol=1e-3)


def test_weighting_of_an_empty_sentence_is_zero():
    _, f, hs, ht, mask_s, mask_t = weighting_inputs(4)
    mask_s = mask_s.copy()
    mask_s[1] = False
    for weighting, _ in WEIGHTINGS:
        v, w = call_layer(InterWeighting(weighting, return_weights=True), [f, hs, ht], [mask_s, mask_s, mask_t])
        assert_finite((v, w))
        assert not v[1].any() and not w[1].any()


def test_weighting_units_default_to_the_state_width():
    layer = InterWeighting()
    layer.build([(None, None, F_DIM), (None, None, DIM), (None, None, DIM)])
    assert [tuple(w.shape) for w in layer.get_weights()] == [(2 * DIM, DIM), (DIM,), (DIM, 1)]
    skip = InterWeighting("inter_skip", units=7)
    skip.build([(None, None, F_DIM), (None, None, DIM), (None, None, DIM)])
    assert [tuple(w.shape) for w in skip.get_weights()] == [(2 * DIM, 1), (1,)]


def test_weighting_errors():
    with pytest.raises(ValueError, match="weighting"):
        InterWeighting("inter_skip_b")
    with pytest.raises(ValueError, match="units"):
        InterWeighting(units=0)
    with pytest.raises(ValueError, match="three rank-3 inputs"):
        InterWeighting().build([(None, 5, 3), (None, 5, 3)])
    with pytest.raises(ValueError, match="the same for h and h_other"):
        InterWeighting().build([(None, 5, 3), (None, 5, 3), (None, 4, 2)])
    _, f, hs, ht, mask_s, mask_t = weighting_inputs(5)
    with pytest.raises(ValueError, match="mask"):
        InterWeighting()([f, hs, ht], mask=[mask_s, mask_t])


# ------------------------------------------------------------------------------------------------ ContextEncoder
# encoder -> (trainable weights, per direction) of a ContextEncoder: the LSTM's kernel, recurrent kernel and bias;
# the CARNN cell's (keras_match.layers.CARNNCell: 6 for "n", 5 for "i", 3 for "s").
ENCODER_WEIGHTS = {"bilstm": 3, "ncarnn": 6, "icarnn": 5, "scarnn": 3}


@pytest.mark.parametrize("encoder", sorted(ENCODER_WEIGHTS))
def test_encoder_roundtrip(tmp_path, encoder):
    _, xs, xt, mask_s, mask_t = make_pair(0)
    units = None if encoder == "scarnn" else UNITS
    width = 2 * (units or DIM)
    run_layer_test(
        lambda: ContextEncoder(encoder, units=units),
        [xs, xt],
        [mask_s, mask_t],
        expected_shape=((3, LEN_S, width), (3, LEN_T, width)),
        expected_weights=2 * ENCODER_WEIGHTS[encoder],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("encoder", ["ncarnn", "icarnn", "scarnn"])
def test_cross_context_encoder_reads_each_sentence_under_the_other_s_position_encoding(encoder):
    """h^s = [CARNN_fw(e^s; PE(e^t)); CARNN_bw(e^s; PE(e^t))] and symmetrically (CARNN paper §4.3, Figure 4)."""
    rng, xs, xt, mask_s, mask_t = make_pair(7)
    units = None if encoder == "scarnn" else UNITS
    layer = ContextEncoder(encoder, units=units)
    layer.build([xs.shape, xt.shape])
    randomize(layer, rng)
    hs, ht = call_layer(layer, [xs, xt], [mask_s, mask_t])
    variant = encoder[0]
    forward, backward = CARNN(units, variant), CARNN(units, variant, go_backwards=True)
    for mine, theirs in ((forward, layer.forward), (backward, layer.backward)):
        mine.build([xs.shape, (None, DIM)])
        mine.set_weights(theirs.get_weights())
    pe = PositionEncoder()
    for x, mask, other, other_mask, h in ((xs, mask_s, xt, mask_t, hs), (xt, mask_t, xs, mask_s, ht)):
        context = call_layer(pe, other, other_mask)
        expected = np.concatenate([call_layer(forward, [x, context], [mask, None]),
                                   call_layer(backward, [x, context], [mask, None])], -1)
        assert_close(h, expected)
        assert not h[~mask].any()
    # The weights are the CARNN's own: the backward direction is a second set, not the forward one reversed.
    assert not np.allclose(layer.forward.get_weights()[0], layer.backward.get_weights()[0])


def test_bilstm_encoder_is_one_shared_bidirectional_lstm():
    rng, xs, xt, mask_s, mask_t = make_pair(8)
    layer = ContextEncoder("bilstm", units=UNITS)
    hs, ht = call_layer(layer, [xs, xt], [mask_s, mask_t])
    bilstm = keras.layers.Bidirectional(keras.layers.LSTM(UNITS, return_sequences=True))
    bilstm.build(xs.shape)
    bilstm.set_weights(layer.bilstm.get_weights())
    for x, mask, h in ((xs, mask_s, hs), (xt, mask_t, ht)):
        expected = call_layer(bilstm, x, mask)
        assert_close(h, np.where(mask[..., None], expected, 0.0))
        assert not h[~mask].any()


@pytest.mark.parametrize("encoder", sorted(ENCODER_WEIGHTS))
def test_encoder_padding_changes_nothing_and_the_other_sentence_matters_for_carnns_only(encoder):
    rng, xs, xt, mask_s, mask_t = make_pair(9)
    layer = ContextEncoder(encoder, units=None if encoder == "scarnn" else UNITS)
    hs, ht = call_layer(layer, [xs, xt], [mask_s, mask_t])
    xs2, mask_s2 = pad_more(rng, new_garbage(rng, xs, mask_s), mask_s, extra=2)
    xt2, mask_t2 = pad_more(rng, new_garbage(rng, xt, mask_t), mask_t, extra=3)
    hs2, ht2 = call_layer(layer, [xs2, xt2], [mask_s2, mask_t2])
    np.testing.assert_allclose(hs2[:, :LEN_S], hs, atol=1e-5)
    np.testing.assert_allclose(ht2[:, :LEN_T], ht, atol=1e-5)
    assert not hs2[~mask_s2].any() and not ht2[~mask_t2].any()
    # another T (same lengths): S's states change under a CARNN encoder, not under the BiLSTM
    other = np.where(mask_t[..., None], rng.normal(size=xt.shape), xt).astype("float32")
    hs3, _ = call_layer(layer, [xs, other], [mask_s, mask_t])
    if encoder == "bilstm":
        np.testing.assert_array_equal(hs3, hs)
    else:
        assert not np.allclose(hs3[:2], hs[:2], atol=1e-4)
        np.testing.assert_allclose(hs3[2], hs[2], atol=1e-6)  # example 2's T is empty either way: c = 0


def test_encoder_errors():
    with pytest.raises(ValueError, match="encoder"):
        ContextEncoder("lstm")
    with pytest.raises(ValueError, match="units"):
        ContextEncoder("bilstm", units=0)
    with pytest.raises(ValueError, match="sCARNN"):
        ContextEncoder("scarnn", units=DIM + 1).build([(None, 5, DIM), (None, 6, DIM)])
    with pytest.raises(ValueError, match="same, defined last dimension"):
        ContextEncoder("icarnn", units=3).build([(None, 5, DIM), (None, 6, DIM + 1)])
