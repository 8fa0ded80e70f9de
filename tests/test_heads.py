"""Tests for keras_match.heads (the score contract) and keras_match.models.common.output_head.

The output heads and their layer names, `head_of` (also on reloaded `.keras` models and legacy models),
`ranking_score` against NumPy, `training_loss` for every (head, mode) pair, and `ListScorer` against a row-by-row
reference and in a few training steps; then the real builders with non-default heads.
"""

import keras
import numpy as np
import pytest

from keras_match import heads, losses, zoo
from keras_match.models.common import output_head

EPSILON = 1e-7  # heads._EPSILON, the guard of log p in the softmax head's logit
VOCAB = 30
NUM_FEATURES = 4


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def dense_model(head="softmax", num_classes=None, dim=6, layer_name=None):
    """`[batch, dim]` floats -> one hidden Dense -> the head (or a Dense named `layer_name`)."""
    x = keras.Input((dim,), name="x")
    hidden = keras.layers.Dense(5, activation="tanh")(x)
    if layer_name is None:
        out = output_head(hidden, head, num_classes)
    else:
        out = keras.layers.Dense(2, activation="softmax", name=layer_name)(hidden)
    return keras.Model(x, out)


def small_scorer(head="softmax", num_features=0, num_classes=None, seed=0):
    """A tiny matching model: masked embedding, mean pooling of both texts (+ features), the head."""
    keras.utils.set_random_seed(seed)
    question = keras.Input((None,), dtype="int32", name="question")
    answer = keras.Input((None,), dtype="int32", name="answer")
    inputs = {"question": question, "answer": answer}
    embedding = keras.layers.Embedding(VOCAB, 8, mask_zero=True)
    pool = keras.layers.GlobalAveragePooling1D()
    parts = [pool(embedding(question)), pool(embedding(answer))]
    if num_features:
        features = keras.Input((num_features,), dtype="float32", name="features")
        inputs["features"] = features
        parts.append(features)
    x = keras.layers.Concatenate()(parts)
    x = keras.layers.Dense(8, activation="tanh")(x)
    return keras.Model(inputs, output_head(x, head, num_classes))


def list_inputs(rng, batch, k, length, num_features=0):
    """Ids `[batch, k, length]` with random lengths >= 1 (padding at the end) and features `[batch, k, f]`."""
    inputs = {}
    for key in ("question", "answer"):
        ids = rng.integers(2, VOCAB, size=(batch, k, length)).astype("int32")
        lengths = rng.integers(1, length + 1, size=(batch, k))
        ids[np.arange(length)[None, None, :] >= lengths[..., None]] = 0
        inputs[key] = ids
    if num_features:
        inputs["features"] = rng.normal(size=(batch, k, num_features)).astype("float32")
    return inputs


def numpy_ranking_logit(head, outputs):
    outputs = np.asarray(outputs, np.float64)
    if head == "softmax":
        return np.log(outputs[:, 1] + EPSILON) - np.log(outputs[:, 0] + EPSILON)
    return outputs[:, 0]


# ---------------------------------------------------------------------------------------------------------------
# output_head
# ---------------------------------------------------------------------------------------------------------------


def test_output_head_softmax():
    model = dense_model("softmax")
    layer = model.get_layer("relevance_probabilities")
    assert model.layers[-1] is layer
    assert layer.units == 2 and layer.activation is keras.activations.softmax
    x = np.random.default_rng(0).normal(size=(7, 6)).astype("float32")
    out = np.asarray(model(x))
    assert out.shape == (7, 2) and out.dtype == np.float32
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(out > 0)


def test_output_head_score_is_linear():
    model = dense_model("score")
    layer = model.get_layer("relevance_score")
    assert model.layers[-1] is layer
    assert layer.units == 1 and layer.activation is keras.activations.linear
    x = np.random.default_rng(1).normal(size=(7, 6)).astype("float32")
    out = np.asarray(model(x))
    assert out.shape == (7, 1)
    hidden = np.asarray(keras.Model(model.input, model.layers[-2].output)(x))
    kernel, bias = (np.asarray(w) for w in layer.weights)
    np.testing.assert_allclose(out, hidden @ kernel + bias, atol=1e-5)


def test_output_head_classification():
    model = dense_model("classification", num_classes=3)
    layer = model.get_layer("class_probabilities")
    assert model.layers[-1] is layer
    assert layer.units == 3 and layer.activation is keras.activations.softmax
    out = np.asarray(model(np.random.default_rng(2).normal(size=(5, 6)).astype("float32")))
    assert out.shape == (5, 3)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)


def test_output_head_regularizer():
    x = keras.Input((4,))
    out = output_head(x, "score", regularizer=keras.regularizers.L2(0.1))
    model = keras.Model(x, out)
    assert isinstance(model.get_layer("relevance_score").kernel_regularizer, keras.regularizers.L2)
    model(np.ones((2, 4), "float32"))
    assert len(model.losses) == 1


@pytest.mark.parametrize(
    "head, num_classes, match",
    [
        ("sigmoid", None, "unknown head"),
        (None, None, "unknown head"),
        ("Softmax", None, "unknown head"),
        ("classification", None, "num_classes"),
        ("classification", 1, "num_classes"),
        ("classification", 0, "num_classes"),
        ("classification", True, "num_classes"),
        ("classification", 3.0, "num_classes"),
    ],
)
def test_output_head_errors(head, num_classes, match):
    with pytest.raises(ValueError, match=match):
        output_head(keras.Input((4,)), head, num_classes)
    with pytest.raises(ValueError, match=match):
        heads.check_head(head, num_classes)


def test_check_head_units():
    assert heads.check_head("softmax") == 2
    assert heads.check_head("score") == 1
    assert heads.check_head("classification", 2) == 2
    assert heads.check_head("classification", 7) == 7
    assert set(heads.OUTPUT_LAYERS) == set(heads.HEADS)


# ---------------------------------------------------------------------------------------------------------------
# head_of
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("head, num_classes", [("softmax", None), ("score", None), ("classification", 3)])
def test_head_of_survives_saving(head, num_classes, tmp_path):
    model = small_scorer(head, num_classes=num_classes)
    assert heads.head_of(model) == head
    path = tmp_path / f"{head}.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert heads.head_of(reloaded) == head
    x = list_inputs(np.random.default_rng(3), 4, 1, 6)
    x = {key: value[:, 0] for key, value in x.items()}
    np.testing.assert_allclose(np.asarray(reloaded(x)), np.asarray(model(x)), atol=1e-6)


def test_head_of_legacy_probabilities_layer(tmp_path):
    model = dense_model(layer_name="probabilities")
    assert heads.head_of(model) == "softmax"
    model.save(tmp_path / "legacy.keras")
    assert heads.head_of(keras.models.load_model(tmp_path / "legacy.keras")) == "softmax"


def test_head_of_other_layer_is_named():
    model = dense_model(layer_name="my_output")
    with pytest.raises(ValueError, match="my_output"):
        heads.head_of(model)


def test_head_of_two_outputs():
    x = keras.Input((3,))
    model = keras.Model(x, [output_head(x, "score"), output_head(x, "softmax")])
    with pytest.raises(ValueError, match="2 outputs"):
        heads.head_of(model)


# ---------------------------------------------------------------------------------------------------------------
# ranking_score
# ---------------------------------------------------------------------------------------------------------------


def test_ranking_score_softmax():
    rng = np.random.default_rng(4)
    logits = rng.normal(scale=3.0, size=(9, 2))
    probabilities = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype("float32")
    probabilities[0] = [1.0, 0.0]  # the epsilon keeps the logit finite
    probabilities[1] = [0.0, 1.0]
    score = np.asarray(heads.ranking_score("softmax", probabilities))
    np.testing.assert_array_equal(score, probabilities[:, 1])
    logit = np.asarray(heads.ranking_score("softmax", probabilities, logits=True))
    assert logit.shape == (9,) and np.all(np.isfinite(logit))
    np.testing.assert_allclose(logit, numpy_ranking_logit("softmax", probabilities), rtol=1e-5, atol=1e-4)
    # away from 0 and 1 (where the epsilon matters) it is the softmax's logit difference
    moderate = probabilities.min(axis=1) > 1e-3
    assert moderate.sum() >= 4
    np.testing.assert_allclose(logit[moderate], (logits[:, 1] - logits[:, 0])[moderate], rtol=1e-3, atol=1e-3)
    # probability and logit order candidates the same way
    np.testing.assert_array_equal(np.argsort(score[2:]), np.argsort(logit[2:]))


def test_ranking_score_score_head():
    outputs = np.random.default_rng(5).normal(size=(6, 1)).astype("float32")
    np.testing.assert_array_equal(np.asarray(heads.ranking_score("score", outputs)), outputs[:, 0])
    np.testing.assert_array_equal(np.asarray(heads.ranking_score("score", outputs, logits=True)), outputs[:, 0])
    tensor = keras.ops.convert_to_tensor(outputs)
    np.testing.assert_array_equal(np.asarray(heads.ranking_score("score", tensor)), outputs[:, 0])


def test_ranking_score_classification_is_refused():
    with pytest.raises(ValueError, match="classification"):
        heads.ranking_score("classification", np.full((2, 3), 1 / 3, "float32"))


# ---------------------------------------------------------------------------------------------------------------
# training_loss
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head, expected",
    [
        ("softmax", losses.PointwiseCrossEntropy),
        ("score", losses.PointwiseSigmoidCrossEntropy),
        ("classification", keras.losses.SparseCategoricalCrossentropy),
    ],
)
def test_training_loss_pointwise(head, expected):
    loss = heads.training_loss(head, "pointwise")
    assert type(loss) is expected
    if head == "softmax":
        assert loss.from_logits is False  # the head outputs probabilities


@pytest.mark.parametrize("head", ["softmax", "score"])
def test_training_loss_ranking_modes(head):
    assert type(heads.training_loss(head, "pairwise")) is losses.PairwiseHinge
    assert type(heads.training_loss(head, "listwise")) is losses.ListwiseSoftmax
    assert type(heads.training_loss(head, "pairwise", "pairwise_hinge")) is losses.PairwiseHinge
    assert type(heads.training_loss(head, "listwise", "listwise_softmax")) is losses.ListwiseSoftmax
    configured = losses.PairwiseHinge(margin=0.25)
    resolved = heads.training_loss(head, "pairwise", configured)
    assert isinstance(resolved, losses.PairwiseHinge) and resolved.margin == 0.25
    assert heads.training_loss(head, "pairwise", losses.PairwiseHinge).margin == 1.0


@pytest.mark.parametrize("mode", ["pairwise", "listwise"])
def test_training_loss_classification_ranking_modes_are_refused(mode):
    with pytest.raises(ValueError, match="pointwise"):
        heads.training_loss("classification", mode)


@pytest.mark.parametrize(
    "head, mode, loss",
    [
        ("softmax", "pairwise", "listwise"),
        ("softmax", "pairwise", "pointwise"),
        ("score", "listwise", losses.PairwiseHinge(margin=0.5)),
        ("score", "pairwise", losses.ListwiseSoftmax()),
    ],
)
def test_training_loss_mode_mismatch(head, mode, loss):
    with pytest.raises(ValueError, match=mode):
        heads.training_loss(head, mode, loss)


# ---------------------------------------------------------------------------------------------------------------
# ListScorer
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_features", [0, NUM_FEATURES], ids=["ids", "features"])
@pytest.mark.parametrize("head", ["softmax", "score"])
def test_list_scorer_equals_row_by_row_reference(head, num_features):
    scorer = small_scorer(head, num_features)
    list_scorer = heads.ListScorer(scorer)
    assert list_scorer.head == head
    rng = np.random.default_rng(6)
    for batch, k, length in ((3, 2, 5), (2, 5, 7)):
        inputs = list_inputs(rng, batch, k, length, num_features)
        out = np.asarray(list_scorer(inputs))
        assert out.shape == (batch, k) and out.dtype == np.float32
        expected = np.zeros((batch, k))
        for i in range(batch):
            for j in range(k):
                row = {key: value[i, j][None] for key, value in inputs.items()}
                expected[i, j] = numpy_ranking_logit(head, scorer(row))[0]
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        # the compiled predict path (graph, unknown shapes) agrees
        np.testing.assert_allclose(list_scorer.predict(inputs, batch_size=2, verbose=0), out, atol=1e-5)
    assert len(list_scorer.trainable_weights) == len(scorer.trainable_weights)
    assert {id(w) for w in list_scorer.weights} == {id(w) for w in scorer.weights}


@pytest.mark.parametrize("head", ["softmax", "score"])
def test_list_scorer_trains_with_pairwise_hinge(head):
    """Positives use ids 2..15, negatives 16..29: a few hinge steps must rank positives first."""
    scorer = small_scorer(head, NUM_FEATURES, seed=1)
    list_scorer = heads.ListScorer(scorer)
    assert len(list_scorer.trainable_weights) == len(scorer.trainable_weights)
    rng = np.random.default_rng(7)
    n, length = 96, 6
    question = rng.integers(2, VOCAB, size=(n, length))
    positive = rng.integers(2, 16, size=(n, length))
    negative = rng.integers(16, VOCAB, size=(n, length))
    x = {
        "question": np.stack([question, question], axis=1).astype("int32"),
        "answer": np.stack([positive, negative], axis=1).astype("int32"),
        "features": rng.normal(size=(n, 2, NUM_FEATURES)).astype("float32"),
    }
    y = np.zeros((n,), "float32")
    list_scorer.compile(optimizer=keras.optimizers.Adam(0.01), loss=losses.PairwiseHinge())
    before_weights = [np.array(w) for w in scorer.trainable_weights]
    before = list_scorer.evaluate(x, y, batch_size=32, verbose=0)
    list_scorer.fit(x, y, batch_size=16, epochs=4, verbose=0)
    after = list_scorer.evaluate(x, y, batch_size=32, verbose=0)
    assert after < before * 0.5, (before, after)
    assert any(not np.allclose(b, np.array(w)) for b, w in zip(before_weights, scorer.trainable_weights))
    assert len(list_scorer.trainable_weights) == len(scorer.trainable_weights)
    # the scorer itself (what gets saved) learnt the ranking
    scores = np.asarray(list_scorer(x))
    assert np.mean(scores[:, 0] > scores[:, 1]) > 0.9


def test_list_scorer_refuses_a_classifier():
    with pytest.raises(ValueError, match="classification"):
        heads.ListScorer(small_scorer("classification", num_classes=3))


def test_list_scorer_refuses_a_model_without_a_head():
    with pytest.raises(ValueError, match="my_output"):
        heads.ListScorer(dense_model(layer_name="my_output"))


# ---------------------------------------------------------------------------------------------------------------
# The real builders
# ---------------------------------------------------------------------------------------------------------------


def ids_batch(rng, batch=3, lq=7, la=9, vocab=50):
    return {
        "question": rng.integers(1, vocab, size=(batch, lq)).astype("int32"),
        "answer": rng.integers(1, vocab, size=(batch, la)).astype("int32"),
    }


def test_zoo_mcan_with_a_score_head():
    model = zoo.load("mcan_sm", vocab_size=50, embedding_dim=8, lstm_units=8, highway_units=8, compile=False,
                     head="score")
    assert heads.head_of(model) == "score"
    assert model.get_layer("relevance_score").activation is keras.activations.linear
    assert tuple(model.outputs[0].shape) == (None, 1)
    out = np.asarray(model(ids_batch(np.random.default_rng(8))))
    assert out.shape == (3, 1) and np.all(np.isfinite(out))
    # compiled, it gets the score head's pointwise loss
    compiled = zoo.load("mcan_sm", vocab_size=50, embedding_dim=8, lstm_units=8, highway_units=8, head="score")
    assert type(compiled.loss) is losses.PointwiseSigmoidCrossEntropy


def test_zoo_ctrn_with_a_classification_head():
    rng = np.random.default_rng(9)
    small = dict(vocab_size=50, embedding_dim=8, filters=8, dense_units=4, compile=False,
                 head="classification", num_classes=3)
    without_features = zoo.load("ctrn", overlap_features=False, **small)
    assert heads.head_of(without_features) == "classification"
    assert set(without_features.input) == {"question", "answer"}
    assert tuple(without_features.outputs[0].shape) == (None, 3)
    out = np.asarray(without_features(ids_batch(rng)))
    assert out.shape == (3, 3)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)

    with_features = zoo.load("ctrn", **small)  # the preset's four overlap features
    assert heads.head_of(with_features) == "classification"
    assert set(with_features.input) == {"question", "answer", "features"}
    batch = {**ids_batch(rng), "features": rng.uniform(0, 0.5, size=(3, 4)).astype("float32")}
    out = np.asarray(with_features(batch))
    assert out.shape == (3, 3)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="classification"):
        heads.ListScorer(with_features)
