"""Compare-Aggregate (Wang & Jiang, ICLR 2017), eq. 1-9, against the NumPy references of
compare_aggregate_reference.py (written from the paper, in its column layout)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.compare_aggregate import CNNAggregation
from keras_match.models.compare_aggregate import CompareAggregate
from keras_match.models.compare_aggregate import CompareAttention
from keras_match.models.compare_aggregate import EucCosComparison
from keras_match.models.compare_aggregate import GatedPreprocessing
from keras_match.models.compare_aggregate import MultComparison
from keras_match.models.compare_aggregate import NNComparison
from keras_match.models.compare_aggregate import NTNComparison
from keras_match.models.compare_aggregate import SubComparison
from keras_match.models.compare_aggregate import SubMultNNComparison
from keras_match.models.compare_aggregate import get_comparison
from keras_match.models.compare_aggregate import COMPARISONS

import compare_aggregate_reference as ref
from helpers import GARBAGE
from helpers import assert_finite
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

# Unequal lengths everywhere; answer 2 is shorter than the widest window, question 2 has one word.
Q_LENGTHS, A_LENGTHS, LEN_Q, LEN_A = [5, 3, 1], [4, 7, 2], 5, 7
WINDOWS = [1, 2, 4]
DIM, UNITS, FILTERS = 4, 3, 2
# name -> (class, trainable weights, output features for l = UNITS)
KINDS = {
    "nn": (NNComparison, 2, UNITS),
    "ntn": (NTNComparison, 2, UNITS),
    "euccos": (EucCosComparison, 0, 2),
    "sub": (SubComparison, 0, UNITS),
    "mult": (MultComparison, 0, UNITS),
    "submult_nn": (SubMultNNComparison, 2, UNITS),
}


def make_pair(seed, dim=DIM, q_lengths=Q_LENGTHS, a_lengths=A_LENGTHS):
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, q_lengths, LEN_Q, dim)
    a, a_mask = padded_batch(rng, a_lengths, LEN_A, dim)
    return rng, q, a, q_mask, a_mask


def new_garbage(rng, x, mask):
    """x with fresh garbage at its padded positions (the real values untouched)."""
    garbage = rng.uniform(-GARBAGE, GARBAGE, size=x.shape).astype(x.dtype)
    return np.where(mask[..., None], x, garbage)


def randomize(layer, rng, scale=0.5):
    """Full-size random weights, biases included, so every term of the equations matters."""
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])


def assert_close(actual, expected, err_msg=""):
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4, err_msg=err_msg)


# eq. 1: GatedPreprocessing ------------------------------------------------------------------------------------
def test_preprocessing_roundtrip(tmp_path):
    _, _, a, _, _ = make_pair(0)
    run_layer_test(
        lambda: GatedPreprocessing(units=UNITS),
        a,
        expected_shape=(3, LEN_A, UNITS),
        expected_weights=4,
        tmp_path=tmp_path,
    )


def test_preprocessing_matches_reference_and_is_shared():
    rng, q, a, _, _ = make_pair(1)
    layer = GatedPreprocessing(units=5)
    layer.build(q.shape)
    randomize(layer, rng, scale=1.0)
    for x in (q, a):  # one instance, the same W^i, W^u for both texts
        assert_close(call_layer(layer, x), ref.gated_preprocessing(x, layer.get_weights()))


def test_preprocessing_kernels_initialised_independently():
    layer = GatedPreprocessing(units=4)
    layer.build((None, None, 4))
    w_i, b_i, w_u, b_u = layer.get_weights()
    assert not np.allclose(w_i, w_u) and not b_i.any() and not b_u.any()


def test_preprocessing_passes_the_mask():
    ids = keras.Input((None,), dtype="int32")
    hidden = GatedPreprocessing(units=3)(keras.layers.Embedding(10, 4, mask_zero=True)(ids))
    model = keras.Model(ids, keras.ops.cast(hidden._keras_mask, "int32"))
    tokens = np.array([[3, 4, 0, 0], [1, 2, 3, 5]])
    np.testing.assert_array_equal(model(tokens), (tokens != 0).astype("int32"))


@pytest.mark.parametrize("units", [0, -3, 2.5, True, None])
def test_preprocessing_invalid_units(units):
    with pytest.raises(ValueError, match="units"):
        GatedPreprocessing(units=units)


# eq. 2: CompareAttention -------------------------------------------------------------------------------------
def attention_inputs(seed):
    """Preprocessed-like inputs (l = UNITS) for the attention: q_bar, a_bar with garbage at padding."""
    return make_pair(seed, dim=UNITS)


@pytest.mark.parametrize("return_attention", [False, True])
def test_attention_roundtrip(tmp_path, return_attention):
    _, q_bar, a_bar, q_mask, a_mask = attention_inputs(0)
    h_shape = (3, LEN_A, UNITS)
    run_layer_test(
        lambda: CompareAttention(return_attention=return_attention),
        [q_bar, a_bar],
        [q_mask, a_mask],
        expected_shape=(h_shape, (3, LEN_A, LEN_Q)) if return_attention else h_shape,
        expected_weights=2,
        tmp_path=tmp_path,
    )


def test_attention_matches_reference():
    rng, q_bar, a_bar, q_mask, a_mask = attention_inputs(1)
    layer = CompareAttention(return_attention=True)
    layer.build([q_bar.shape, a_bar.shape])
    randomize(layer, rng)
    h, weights = call_layer(layer, [q_bar, a_bar], [q_mask, a_mask])
    ref_h, ref_weights = ref.compare_attention(q_bar, a_bar, q_mask, a_mask, *layer.get_weights())
    assert_close(h, ref_h)
    assert_close(weights, ref_weights)
    # G's columns sum to one over the real question words of every real answer word.
    np.testing.assert_allclose(weights.sum(-1), a_mask.astype(float), atol=1e-5)
    assert not weights[~np.broadcast_to(q_mask[:, None, :], weights.shape)].any()
    # W^g matters: the plain dot-product attention differs.
    plain = CompareAttention()
    plain.build([q_bar.shape, a_bar.shape])
    plain.set_weights([np.eye(UNITS, dtype="float32"), np.zeros(UNITS, "float32")])
    assert not np.allclose(call_layer(plain, [q_bar, a_bar], [q_mask, a_mask]), h, atol=1e-3)


def test_attention_padding_changes_nothing():
    rng, q_bar, a_bar, q_mask, a_mask = attention_inputs(2)
    layer = CompareAttention(return_attention=True)
    h, weights = call_layer(layer, [q_bar, a_bar], [q_mask, a_mask])
    q2, q_mask2 = pad_more(rng, new_garbage(rng, q_bar, q_mask), q_mask, extra=2)
    a2, a_mask2 = pad_more(rng, new_garbage(rng, a_bar, a_mask), a_mask, extra=3)
    h2, weights2 = call_layer(layer, [q2, a2], [q_mask2, a_mask2])
    np.testing.assert_allclose(h2[:, :LEN_A], h, atol=1e-6)
    np.testing.assert_allclose(weights2[:, :LEN_A, :LEN_Q], weights, atol=1e-6)
    assert not h2[~a_mask2].any() and not weights2[:, LEN_A:].any() and not weights2[:, :, LEN_Q:].any()
    # The test can fail: without the question mask the garbage leaks into h.
    unmasked = call_layer(layer, [q_bar, a_bar], [None, a_mask])[0]
    assert not np.allclose(unmasked, h, atol=1e-3)


def test_attention_empty_question_gives_zero():
    _, q_bar, a_bar, q_mask, a_mask = make_pair(3, dim=UNITS, q_lengths=[0, 3, 0], a_lengths=[4, 7, 0])
    h, weights = call_layer(CompareAttention(return_attention=True), [q_bar, a_bar], [q_mask, a_mask])
    assert_finite((h, weights))
    assert not h[0].any() and not weights[0].any() and not h[2].any()
    assert h[1].any()


# eq. 3-8: the comparison functions ---------------------------------------------------------------------------
def comparison_inputs(seed):
    """a_bar-like and h-like inputs (l = UNITS), garbage at the padded answer positions of both."""
    rng = np.random.default_rng(seed)
    a, a_mask = padded_batch(rng, A_LENGTHS, LEN_A, UNITS)
    h = np.where(a_mask[..., None], rng.normal(size=a.shape), rng.uniform(-GARBAGE, GARBAGE, a.shape))
    return rng, a, h.astype("float32"), a_mask


@pytest.mark.parametrize("name", sorted(KINDS))
def test_comparison_roundtrip(tmp_path, name):
    _, a, h, a_mask = comparison_inputs(0)
    cls, n_weights, features = KINDS[name]
    layer, _ = run_layer_test(
        lambda: get_comparison(name),
        [a, h],
        [a_mask, a_mask],
        expected_shape=(3, LEN_A, features),
        expected_weights=n_weights,
        tmp_path=tmp_path,
    )
    assert type(layer) is cls


@pytest.mark.parametrize("name", sorted(KINDS))
def test_comparison_matches_reference(name):
    rng, a, h, a_mask = comparison_inputs(1)
    layer = get_comparison(name)
    layer.build([a.shape, h.shape])
    randomize(layer, rng)
    t = call_layer(layer, [a, h], [a_mask, a_mask])
    expected = ref.compare(ref.comparison(name, layer.get_weights()), a, h, a_mask)
    assert_close(t, expected)
    assert np.abs(expected).max() > 0.1  # not vacuous


@pytest.mark.parametrize("name", sorted(KINDS))
def test_comparison_padding_changes_nothing(name):
    rng, a, h, a_mask = comparison_inputs(2)
    layer = get_comparison(name)
    t = call_layer(layer, [a, h], [a_mask, a_mask])
    assert not t[~a_mask].any()  # 0 at padded answer positions
    a2, mask2 = pad_more(rng, new_garbage(rng, a, a_mask), a_mask, extra=2)
    h2, _ = pad_more(rng, new_garbage(rng, h, a_mask), a_mask, extra=2)
    t2 = call_layer(layer, [a2, h2], [mask2, mask2])
    np.testing.assert_allclose(t2[:, :LEN_A], t, atol=1e-6)
    assert not t2[:, LEN_A:].any()


@pytest.mark.parametrize(
    "name, cls", [("nn", NNComparison), ("ntn", NTNComparison), ("submult_nn", SubMultNNComparison)]
)
def test_comparison_units(name, cls):
    _, a, h, a_mask = comparison_inputs(3)
    layer = get_comparison(name, units=5)
    assert type(layer) is cls and layer.units == 5
    assert call_layer(layer, [a, h], [a_mask, a_mask]).shape == (3, LEN_A, 5)
    expected = [(5, UNITS, UNITS), (5,)] if name == "ntn" else [(2 * UNITS, 5), (5,)]
    assert [tuple(w.shape) for w in layer.get_weights()] == expected
    with pytest.raises(ValueError, match="units"):
        get_comparison(name, units=0)


def test_comparison_registry():
    assert sorted(COMPARISONS) == sorted(KINDS)
    for name in ("SUB", "SubMult_NN", "EucCos"):
        first, second = get_comparison(name), get_comparison(name)
        assert type(first) is COMPARISONS[name.lower()] and first is not second


@pytest.mark.parametrize("name", ["cos", "", "submult+nn", None, 3])
def test_unknown_comparison_names_the_valid_ones(name):
    valid = r"\['euccos', 'mult', 'nn', 'ntn', 'sub', 'submult_nn'\]"
    with pytest.raises(ValueError, match=valid):
        get_comparison(name)
    with pytest.raises(ValueError, match=valid):
        CompareAggregate(units=3, comparison=name)


def test_comparison_shape_errors():
    with pytest.raises(ValueError, match="same, defined last dimension"):
        get_comparison("sub").build([(None, 5, 3), (None, 5, 4)])


def test_euccos_is_finite_with_zero_vectors_and_equal_vectors():
    rng = np.random.default_rng(4)
    v = rng.normal(size=3).astype("float32")
    zero = np.zeros(3, "float32")
    # positions: a = 0; h = 0; a = h = 0; a = h != 0; an ordinary pair
    a = np.stack([zero, v, zero, v, v])[None]
    h = np.stack([v, zero, zero, v, -2 * v])[None]
    a, h = tf.constant(a), tf.constant(h)
    layer = EucCosComparison()
    with tf.GradientTape() as tape:
        tape.watch([a, h])
        t = layer([a, h])
        loss = tf.reduce_sum(t)
    grads = tape.gradient(loss, [a, h])
    t = t.numpy()
    assert_finite([t] + [g.numpy() for g in grads])
    norm = np.linalg.norm(v)
    expected = [[norm, 0.0], [norm, 0.0], [0.0, 0.0], [0.0, 1.0], [3 * norm, -1.0]]
    np.testing.assert_allclose(t[0], expected, atol=1e-5)
    # the ordinary pair's gradient is the analytic one (the safety floors do not touch it)
    g_a = grads[0].numpy()[0, 4]
    analytic = (v - (-2 * v)) / (3 * norm) + 0.0  # d||a-h||/da; d cos/da = 0 for anti-parallel vectors
    np.testing.assert_allclose(g_a, analytic, atol=1e-5)


def test_euccos_low_precision_policy_is_finite():
    a = np.zeros((1, 2, 3), "float16")
    h = np.ones((1, 2, 3), "float16")
    t = EucCosComparison(dtype="float16")([a, h])
    assert keras.backend.standardize_dtype(t.dtype) == "float16"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(t)[0], [[np.sqrt(3), 0.0]] * 2, atol=1e-2)


# eq. 9: CNNAggregation ---------------------------------------------------------------------------------------
def cnn_inputs(seed, lengths=A_LENGTHS, dim=UNITS):
    rng = np.random.default_rng(seed)
    t, mask = padded_batch(rng, lengths, LEN_A, dim)
    return rng, t, mask


def conv_weights(layer):
    weights = layer.get_weights()
    return [(weights[i], weights[i + 1]) for i in range(0, len(weights), 2)]


@pytest.mark.parametrize("conv_padding, return_word_features", [("valid", False), ("same", True)])
def test_cnn_roundtrip(tmp_path, conv_padding, return_word_features):
    _, t, mask = cnn_inputs(0)
    width = len(WINDOWS) * FILTERS
    expected = (3, width)
    if return_word_features:
        expected = {"aggregate": (3, width), "word_features": (3, LEN_A, width)}
    run_layer_test(
        lambda: CNNAggregation(FILTERS, WINDOWS, conv_padding=conv_padding, return_word_features=return_word_features),
        t,
        mask,
        expected_shape=expected,
        expected_weights=2 * len(WINDOWS),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("conv_padding", ["valid", "same"])
def test_cnn_matches_reference(conv_padding):
    rng, t, mask = cnn_inputs(1)
    layer = CNNAggregation(FILTERS, WINDOWS, conv_padding=conv_padding, return_word_features=True)
    layer.build(t.shape)
    randomize(layer, rng)
    out = call_layer(layer, t, mask)
    r, word_features = ref.cnn(t, mask, conv_weights(layer), conv_padding)
    assert_close(out["aggregate"], r, err_msg="r")
    assert_close(out["word_features"], word_features, err_msg="word features")
    assert r.max() > 0.1
    # r is the max over time of the word features (ReLU outputs are >= 0, non-counting positions are 0)
    np.testing.assert_allclose(out["word_features"].max(axis=1), out["aggregate"], atol=1e-6)


def test_cnn_counting_positions_valid_and_same():
    rng, t, mask = cnn_inputs(2)
    valid = CNNAggregation(FILTERS, WINDOWS, return_word_features=True)
    valid.build(t.shape)
    randomize(valid, rng)
    valid.set_weights([w + 10.0 if w.ndim == 1 else w for w in valid.get_weights()])  # every window > 0
    same = CNNAggregation(FILTERS, WINDOWS, conv_padding="same", return_word_features=True)
    same.build(t.shape)
    same.set_weights(valid.get_weights())

    def counting(layer, block):  # [batch, time] bool: where window WINDOWS[block] has (positive) features
        features = call_layer(layer, t, mask)["word_features"][..., block * FILTERS : (block + 1) * FILTERS]
        return (features > 0).all(-1)

    # "valid", window 4: answer 0 (4 words) and answer 2 (2 words, shorter than the window) have the one window
    # p = 0; answer 1 (7 words) has p = 0 .. 3. Window 1 counts every real word.
    expected = np.zeros_like(mask)
    expected[0, 0] = expected[2, 0] = True
    expected[1, :4] = True
    np.testing.assert_array_equal(counting(valid, 2), expected)
    np.testing.assert_array_equal(counting(valid, 0), mask)
    # "same": every real word, for every window size.
    for block in range(len(WINDOWS)):
        np.testing.assert_array_equal(counting(same, block), mask)


@pytest.mark.parametrize("conv_padding", ["valid", "same"])
def test_cnn_padding_never_wins(conv_padding):
    rng, t, mask = cnn_inputs(3)
    layer = CNNAggregation(FILTERS, WINDOWS, conv_padding=conv_padding, return_word_features=True)
    layer.build(t.shape)
    randomize(layer, rng)
    out = call_layer(layer, t, mask)
    t2, mask2 = pad_more(rng, new_garbage(rng, t, mask), mask, extra=4)
    out2 = call_layer(layer, t2, mask2)
    np.testing.assert_allclose(out2["aggregate"], out["aggregate"], atol=1e-6)
    np.testing.assert_allclose(out2["word_features"][:, :LEN_A], out["word_features"], atol=1e-6)
    assert not out2["word_features"][:, LEN_A:].any()
    # The test can fail: with every position real, the garbage (magnitude 50) takes over the max.
    assert not np.allclose(call_layer(layer, t, np.ones_like(mask))["aggregate"], out["aggregate"], atol=1e-2)


def test_cnn_all_padding_row_is_zero_and_no_mask_means_all_real():
    rng, t, mask = cnn_inputs(4, lengths=[0, 7, 3])
    layer = CNNAggregation(FILTERS, WINDOWS)
    layer.build(t.shape)
    randomize(layer, rng)
    layer.set_weights([w + 1.0 if w.ndim == 1 else w for w in layer.get_weights()])  # positive biases
    r = call_layer(layer, t, mask)
    assert_finite(r)
    assert not r[0].any() and r[1].min() > 0
    np.testing.assert_allclose(call_layer(layer, t), call_layer(layer, t, np.ones_like(mask)), atol=1e-6)
    # a single short text, time axis shorter than the widest window
    short = call_layer(layer, t[:, :2], mask[:, :2])
    np.testing.assert_allclose(short, ref.cnn(t[:, :2], mask[:, :2], conv_weights(layer))[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"windows": []}, "non-empty"),
        ({"windows": 3}, "non-empty"),
        ({"windows": [1, 0]}, "positive"),
        ({"windows": [2, 2]}, "distinct"),
        ({"filters": 0}, "filters"),
        ({"conv_padding": "causal"}, "conv_padding"),
    ],
)
def test_cnn_invalid_arguments(kwargs, message):
    args = {"filters": 2, "windows": [1, 2]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        CNNAggregation(**args)


def test_cnn_rank_error():
    with pytest.raises(ValueError, match="rank 3"):
        CNNAggregation(2).build((None, 4))


# eq. 1-9: CompareAggregate -----------------------------------------------------------------------------------
def model_layer(name, **kwargs):
    return CompareAggregate(units=UNITS, comparison=name, windows=WINDOWS, filters=FILTERS, **kwargs)


def n_weights(name):
    return 4 + 2 + KINDS[name][1] + 2 * len(WINDOWS)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_model_roundtrip(tmp_path, name):
    _, q, a, q_mask, a_mask = make_pair(0)
    run_layer_test(
        lambda: model_layer(name),
        [q, a],
        [q_mask, a_mask],
        expected_shape=(3, len(WINDOWS) * FILTERS),
        expected_weights=n_weights(name),
        tmp_path=tmp_path,
    )


def test_model_roundtrip_with_word_features(tmp_path):
    _, q, a, q_mask, a_mask = make_pair(1)
    width = len(WINDOWS) * FILTERS
    run_layer_test(
        lambda: model_layer("mult", conv_padding="same", return_word_features=True),
        [q, a],
        [q_mask, a_mask],
        expected_shape={"aggregate": (3, width), "word_features": (3, LEN_A, width), "attention": (3, LEN_A, LEN_Q)},
        expected_weights=n_weights("mult"),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("name", sorted(KINDS))
def test_model_matches_reference(name):
    rng, q, a, q_mask, a_mask = make_pair(2)
    layer = model_layer(name, return_word_features=True)
    layer.build([q.shape, a.shape])
    randomize(layer, rng, scale=0.8)
    out = call_layer(layer, [q, a], [q_mask, a_mask])
    expected = ref.compare_aggregate(q, a, q_mask, a_mask, layer.get_weights(), name, len(WINDOWS))
    for key in ("aggregate", "word_features", "attention"):
        assert_close(out[key], expected[key], err_msg=key)
    assert expected["aggregate"].max() > 0.05
    plain = model_layer(name)  # without the extra outputs, the same r
    plain.build([q.shape, a.shape])
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(call_layer(plain, [q, a], [q_mask, a_mask]), out["aggregate"], atol=1e-6)


def test_model_same_padding_matches_reference():
    rng, q, a, q_mask, a_mask = make_pair(3)
    layer = model_layer("submult_nn", conv_padding="same")
    layer.build([q.shape, a.shape])
    randomize(layer, rng, scale=0.8)
    expected = ref.compare_aggregate(q, a, q_mask, a_mask, layer.get_weights(), "submult_nn", len(WINDOWS), "same")
    assert_close(call_layer(layer, [q, a], [q_mask, a_mask]), expected["aggregate"])


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # the one-word question alone
@pytest.mark.parametrize("name", sorted(KINDS))
def test_model_padding_changes_nothing(name):
    rng, q, a, q_mask, a_mask = make_pair(4)
    layer = model_layer(name)
    layer.build([q.shape, a.shape])
    randomize(layer, rng, scale=0.8)
    r = call_layer(layer, [q, a], [q_mask, a_mask])
    q2, q_mask2 = pad_more(rng, new_garbage(rng, q, q_mask), q_mask, extra=3)
    a2, a_mask2 = pad_more(rng, new_garbage(rng, a, a_mask), a_mask, extra=2)
    np.testing.assert_allclose(call_layer(layer, [q2, a2], [q_mask2, a_mask2]), r, atol=1e-5)
    # Each text alone, unpadded, scores as in the padded batch.
    for b in range(3):
        n_q, n_a = Q_LENGTHS[b], A_LENGTHS[b]
        alone = call_layer(layer, [q[b : b + 1, :n_q], a[b : b + 1, :n_a]])
        np.testing.assert_allclose(alone[0], r[b], atol=1e-5)


def test_model_config_roundtrip_gives_identical_outputs():
    rng, q, a, q_mask, a_mask = make_pair(5)
    layer = model_layer("ntn", conv_padding="same")
    layer.build([q.shape, a.shape])
    randomize(layer, rng)
    config = layer.get_config()
    assert {k: config[k] for k in ("units", "comparison", "windows", "filters", "conv_padding")} == {
        "units": UNITS, "comparison": "ntn", "windows": WINDOWS, "filters": FILTERS, "conv_padding": "same"
    }
    clone = CompareAggregate.from_config(config)
    clone.build([q.shape, a.shape])
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(
        call_layer(clone, [q, a], [q_mask, a_mask]), call_layer(layer, [q, a], [q_mask, a_mask])
    )


def test_model_takes_keras_masks():
    # Seeded, with word vectors of unit scale: Keras' default embedding (uniform +-0.05) gave outputs of about
    # 1e-5, where masked and unmasked outputs differ by less than the tolerance below (a failure that depended on
    # the weights the test process happened to draw).
    keras.utils.set_random_seed(7)
    q_ids, a_ids = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(20, DIM, mask_zero=True)
    layer = model_layer("submult_nn")
    model = keras.Model([q_ids, a_ids], layer([embedding(q_ids), embedding(a_ids)]))
    embedding.set_weights([np.random.default_rng(7).normal(size=(20, DIM)).astype("float32")])
    q_tokens = np.array([[3, 4, 5, 0], [6, 0, 0, 0]])
    a_tokens = np.array([[7, 8, 0, 0, 0], [9, 10, 11, 12, 13]])
    vectors = embedding.get_weights()[0]
    explicit = call_layer(layer, [vectors[q_tokens], vectors[a_tokens]], [q_tokens != 0, a_tokens != 0])
    np.testing.assert_allclose(np.asarray(model([q_tokens, a_tokens])), explicit, atol=1e-6)
    unmasked = call_layer(layer, [vectors[q_tokens], vectors[a_tokens]])
    assert not np.allclose(unmasked, explicit, atol=1e-4)  # the masks matter


def test_model_defaults_follow_the_paper():
    layer = CompareAggregate(units=4)
    q = np.random.default_rng(6).normal(size=(2, 3, 5)).astype("float32")
    r = call_layer(layer, [q, q])
    assert r.shape == (2, 5 * 4)  # windows [1..5], l filters each: r in R^{nl}
    assert type(layer.comparator) is SubMultNNComparison


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, "units"),
        ({"units": None}, "units"),
        ({"filters": -1}, "filters"),
        ({"windows": []}, "non-empty"),
        ({"conv_padding": "full"}, "conv_padding"),
    ],
)
def test_model_invalid_arguments(kwargs, message):
    args = {"units": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        CompareAggregate(**args)


def test_model_shape_errors():
    with pytest.raises(ValueError, match="same, defined last dimension"):
        CompareAggregate(units=3).build([(None, 5, 4), (None, 7, 3)])
    with pytest.raises(ValueError, match="pair"):
        CompareAggregate(units=3).build([(None, 5, 4)])


def test_ntn_trains_at_the_papers_width_without_a_batch_times_slices_squared_intermediate():
    # l = 150 (the paper's), 32 answers of 60 words: the einsum this layer used before had TensorFlow's gradient
    # materialise [32, 60, 150 * 150, 150] floats (26 GB; a WikiQA batch ran out of memory at 146 GB); one matrix
    # product needs [32, 60, 150 * 150] (350 MB)
    layer = NTNComparison()
    rng = np.random.default_rng(0)
    a = tf.constant(rng.normal(size=(32, 60, 150)).astype("float32"))
    h = tf.constant(rng.normal(size=(32, 60, 150)).astype("float32"))
    with tf.GradientTape() as tape:
        out = layer([a, h])
        loss = tf.reduce_sum(out)
    grads = tape.gradient(loss, layer.trainable_weights)
    assert out.shape == (32, 60, 150)
    assert [g.shape for g in grads] == [(150, 150, 150), (150,)]
    assert all(np.isfinite(g.numpy()).all() for g in grads)
    tensor, bias = (w.numpy() for w in layer.trainable_weights)  # one position against the bilinear form itself
    expected = np.maximum(np.einsum("i,sij,j->s", a[3, 7].numpy(), tensor, h[3, 7].numpy()) + bias, 0)
    np.testing.assert_allclose(out[3, 7].numpy(), expected, rtol=1e-4, atol=1e-4)
