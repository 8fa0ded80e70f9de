"""The Compare-Aggregate builder (Wang & Jiang, ICLR 2017): shapes, heads, masking, eq. 10, saving, errors, presets."""

import keras
import numpy as np
import pytest

from keras_match import heads, zoo
from keras_match.models.compare_aggregate import build_compare_aggregate

COMPARISONS = ["nn", "ntn", "euccos", "sub", "mult", "submult_nn"]
VOCAB = 30
SMALL = dict(embedding_dim=5, units=4, windows=[1, 2, 3], embedding_dropout=0.3)


def _ids(rng, rows, length):
    return rng.integers(2, VOCAB, size=(rows, length)).astype("int32")


def _pairs(rng, batch=3, lq=5, la=7):
    q, a = _ids(rng, batch, lq), _ids(rng, batch, la)
    q[0, 3:] = 0  # unequal true lengths
    a[1, 2:] = 0  # an answer shorter than the widest window
    return {"question": q, "answer": a}


def _r_model(model):
    """The sub-model from the inputs to `r` (eq. 9), the input of the prediction layers."""
    return keras.Model(model.inputs, model.get_layer("compare_aggregate").output)


# ------------------------------------------------------------------------------------------------ shapes, heads


@pytest.mark.parametrize("comparison", COMPARISONS)
def test_every_comparison_gives_one_raw_score_per_pair(comparison):
    model = build_compare_aggregate(vocab_size=VOCAB, comparison=comparison, **SMALL)
    out = model(_pairs(np.random.default_rng(0)), training=False)
    assert tuple(out.shape) == (3, 1) and out.dtype == "float32"
    assert np.isfinite(out.numpy()).all()
    assert heads.head_of(model) == "score"
    assert model.name == f"compare_aggregate_{comparison}"
    assert sorted(model.input) == ["answer", "question"]
    # r in R^{n l}: one max-pooled convolution of l filters per window (eq. 9)
    assert tuple(_r_model(model)(_pairs(np.random.default_rng(0))).shape) == (3, 3 * 4)


def test_comparisons_differ_in_parameters():
    counts = {c: build_compare_aggregate(vocab_size=VOCAB, comparison=c, **SMALL).count_params() for c in COMPARISONS}
    assert counts["sub"] == counts["mult"]  # eq. 6, 7: no weights of their own
    assert counts["euccos"] < counts["sub"]  # eq. 5: 2 features per word, narrower convolutions
    assert counts["nn"] == counts["submult_nn"] > counts["mult"]  # eq. 3, 8: W in R^{l x 2l}
    assert counts["ntn"] > counts["nn"]  # eq. 4: T in R^{l x l x l}


@pytest.mark.parametrize("head, num_classes, width", [("score", None, 1), ("softmax", None, 2),
                                                      ("classification", 3, 3)])
def test_each_head_has_its_output(head, num_classes, width):
    model = build_compare_aggregate(vocab_size=VOCAB, head=head, num_classes=num_classes, **SMALL)
    out = model(_pairs(np.random.default_rng(1)), training=False).numpy()
    assert out.shape == (3, width)
    assert heads.head_of(model) == head
    if head != "score":
        np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    # every head reads the same hidden tanh layer of eq. 10
    assert model.get_layer("prediction_hidden").units == SMALL["units"]
    assert model.get_layer("prediction_hidden").activation.__name__ == "tanh"


def test_widths_follow_units_filters_and_dense_units():
    model = build_compare_aggregate(vocab_size=VOCAB, **{**SMALL, "units": 6}, filters=3, dense_units=2)
    layer = model.get_layer("compare_aggregate")
    assert (layer.units, layer.filters, layer.windows) == (6, 3, (1, 2, 3))
    assert tuple(layer.output.shape) == (None, 3 * 3)
    assert model.get_layer("prediction_hidden").units == 2
    default = build_compare_aggregate(vocab_size=VOCAB, embedding_dim=5)  # the paper's l = 150, windows 1-5
    assert tuple(default.get_layer("compare_aggregate").output.shape) == (None, 5 * 150)
    assert default.get_layer("prediction_hidden").units == 150


def test_pair_features_join_r_before_the_prediction_layers():
    model = build_compare_aggregate(vocab_size=VOCAB, num_features=4, **SMALL)
    assert sorted(model.input) == ["answer", "features", "question"]
    assert tuple(model.get_layer("pair_and_features").output.shape) == (None, 3 * 4 + 4)
    inputs = _pairs(np.random.default_rng(2))
    features = np.random.default_rng(3).uniform(size=(3, 4)).astype("float32")
    with_features = model({**inputs, "features": features}, training=False).numpy()
    without = model({**inputs, "features": np.zeros_like(features)}, training=False).numpy()
    assert with_features.shape == (3, 1) and not np.allclose(with_features, without)


def test_pretrained_embeddings_are_copied_and_frozen():
    matrix = np.random.default_rng(4).normal(size=(VOCAB, 7)).astype("float32")
    model = build_compare_aggregate(vocab_size=VOCAB, embeddings=matrix, **{**SMALL, "embedding_dim": 99})
    layer = model.get_layer("word_embedding")
    np.testing.assert_array_equal(layer.get_weights()[0], matrix)
    assert not layer.trainable
    assert all("word_embedding" not in w.path for w in model.trainable_weights)
    trainable = build_compare_aggregate(vocab_size=VOCAB, trainable_embeddings=True, **SMALL)
    assert trainable.get_layer("word_embedding").trainable


def test_embedding_dropout_acts_in_training_only():
    model = build_compare_aggregate(vocab_size=VOCAB, **{**SMALL, "embedding_dropout": 0.5})
    assert model.get_layer("dropout_embedded").rate == 0.5
    inputs = _pairs(np.random.default_rng(5))
    np.testing.assert_array_equal(model(inputs, training=False).numpy(), model(inputs, training=False).numpy())
    assert not np.array_equal(model(inputs, training=True).numpy(), model(inputs, training=True).numpy())


# ------------------------------------------------------------------------------------------------ masking


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # the one-word question, alone
@pytest.mark.parametrize("comparison", ["ntn", "euccos", "submult_nn"])
def test_a_pair_scores_the_same_alone_and_padded_in_a_batch(comparison):
    rng = np.random.default_rng(6)
    model = build_compare_aggregate(vocab_size=VOCAB, comparison=comparison, num_features=2, **SMALL)
    lengths = [(3, 6), (5, 2), (1, 9), (4, 1)]  # answers shorter and longer than the widest window (3)
    pairs = [(_ids(rng, 1, lq)[0], _ids(rng, 1, la)[0]) for lq, la in lengths]
    features = rng.uniform(size=(len(pairs), 2)).astype("float32")
    alone = np.concatenate([
        model({"question": q[None], "answer": a[None], "features": features[i : i + 1]}, training=False).numpy()
        for i, (q, a) in enumerate(pairs)
    ])
    width_q, width_a = 8, 12  # longer than any text: every row padded
    batch = {"question": np.zeros((len(pairs), width_q), "int32"), "answer": np.zeros((len(pairs), width_a), "int32"),
             "features": features}
    for i, (q, a) in enumerate(pairs):
        batch["question"][i, : len(q)] = q
        batch["answer"][i, : len(a)] = a
    np.testing.assert_allclose(model(batch, training=False).numpy(), alone, atol=1e-5)


def test_empty_texts_give_finite_scores():
    model = build_compare_aggregate(vocab_size=VOCAB, comparison="euccos", **SMALL)
    inputs = _pairs(np.random.default_rng(7))
    inputs["answer"][2, :] = 0
    inputs["question"][1, :] = 0
    assert np.isfinite(model(inputs, training=False).numpy()).all()
    r = _r_model(model)(inputs, training=False).numpy()
    np.testing.assert_array_equal(r[2], 0.0)  # an empty answer gives r = 0


@pytest.mark.parametrize("comparison", ["mult", "euccos", "ntn"])
def test_an_empty_batch_gives_no_scores(comparison):
    """An export's serve_ids passes batches of no rows straight to the model."""
    model = build_compare_aggregate(vocab_size=VOCAB, **{**SMALL, "comparison": comparison})
    out = model({"question": np.zeros((0, 5), "int32"), "answer": np.zeros((0, 7), "int32")}, training=False)
    assert tuple(out.shape) == (0, 1)


# ------------------------------------------------------------------------------------------------ eq. 10


@pytest.mark.parametrize("num_features", [0, 3])
def test_the_score_head_is_eq_10(num_features):
    """score = w^T tanh(W^s r + b^s) + b, from the layers' weights and r (with the pair features after r)."""
    rng = np.random.default_rng(8)
    model = build_compare_aggregate(vocab_size=VOCAB, comparison="mult", num_features=num_features, **SMALL)
    inputs = _pairs(rng)
    if num_features:
        inputs["features"] = rng.uniform(size=(3, num_features)).astype("float32")
    for layer in ("prediction_hidden", "relevance_score"):  # nonzero biases, so their place is checked too
        kernel, bias = model.get_layer(layer).get_weights()
        model.get_layer(layer).set_weights([kernel, rng.normal(size=bias.shape).astype("float32")])
    r = _r_model(model)(inputs, training=False).numpy()
    x = np.concatenate([r, inputs["features"]], axis=1) if num_features else r
    w_s, b_s = model.get_layer("prediction_hidden").get_weights()  # W^s transposed [nl (+ f), l], b^s [l]
    w, b = model.get_layer("relevance_score").get_weights()  # w [l, 1], b [1]
    expected = np.tanh(x.astype("float64") @ w_s + b_s) @ w + b
    np.testing.assert_allclose(model(inputs, training=False).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert w_s.shape == (3 * 4 + num_features, 4) and w.shape == (4, 1)


def test_listwise_training_moves_the_scores_of_a_question_s_candidates():
    """The softmax of eq. 10 over a question's K candidates: a `ListScorer` batch `[questions, K]`.

    Frozen vectors of GloVe's scale (Keras' default embedding initialiser makes every score about 1e-4, and the
    paper's learning rate then moves the loss by less than 1e-3 in a few steps, for some initial weights not at
    all); seeded, so the weights do not depend on the tests run before."""
    from keras_match import losses

    keras.utils.set_random_seed(9)
    rng = np.random.default_rng(9)
    vectors = rng.normal(size=(VOCAB, SMALL["embedding_dim"])).astype("float32")
    model = build_compare_aggregate(vocab_size=VOCAB, embeddings=vectors, **{**SMALL, "embedding_dropout": 0.0})
    scorer = heads.ListScorer(model)
    scorer.compile(optimizer=keras.optimizers.Adamax(0.002), loss=losses.ListwiseSoftmax())
    x = {"question": _ids(rng, 6, 4).reshape(2, 3, 4), "answer": _ids(rng, 6, 6).reshape(2, 3, 6)}
    y = np.array([[1, 0, 0], [0, 1, -1]], "float32")
    assert tuple(scorer(x).shape) == (2, 3)
    first = scorer.train_on_batch(x, y)
    for _ in range(20):
        last = scorer.train_on_batch(x, y)
    # over initial seeds 0-11 the loss fell by 0.06 to 0.19 in these 20 steps
    assert np.isfinite(first) and last < first - 0.03


# ------------------------------------------------------------------------------------------------ saving


@pytest.mark.parametrize("comparison, head, num_classes, num_features",
                         [("submult_nn", "score", None, 0), ("ntn", "classification", 3, 2)])
def test_keras_file_round_trip(tmp_path, comparison, head, num_classes, num_features):
    model = build_compare_aggregate(vocab_size=VOCAB, comparison=comparison, head=head, num_classes=num_classes,
                                    num_features=num_features, **SMALL)
    inputs = _pairs(np.random.default_rng(10))
    if num_features:
        inputs["features"] = np.random.default_rng(11).uniform(size=(3, num_features)).astype("float32")
    path = tmp_path / "compare_aggregate.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(model(inputs, training=False), restored(inputs, training=False))
    layer = restored.get_layer("compare_aggregate")
    assert (layer.comparison, layer.windows, layer.units) == (comparison, (1, 2, 3), 4)
    assert heads.head_of(restored) == head and restored.name == model.name


# ------------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("kwargs, message", [
    ({"comparison": "cosine"}, "cosine"),
    ({"units": 0}, "units"),
    ({"units": 2.5}, "units"),
    ({"filters": 0}, "filters"),
    ({"dense_units": 0}, "dense_units"),
    ({"windows": []}, "windows"),
    ({"windows": [1, 1]}, "distinct"),
    ({"windows": [0, 2]}, "window"),
    ({"conv_padding": "causal"}, "conv_padding"),
    ({"embedding_dropout": 1.0}, "embedding_dropout"),
    ({"embedding_dropout": -0.1}, "embedding_dropout"),
    ({"head": "ranking"}, "unknown head"),
    ({"head": "classification"}, "num_classes"),
    ({"head": "classification", "num_classes": 1}, "num_classes"),
    ({"num_features": -1}, "num_features"),
    ({"embeddings": np.zeros((VOCAB - 1, 5))}, "vocab_size=30"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_compare_aggregate(vocab_size=VOCAB, **{**SMALL, **kwargs})


# ------------------------------------------------------------------------------------------------ zoo presets

WIKIQA = {"nn": (0.7102, 0.7224), "ntn": (0.7349, 0.7456), "euccos": (0.6740, 0.6882), "sub": (0.7019, 0.7151),
          "mult": (0.7433, 0.7545), "submult_nn": (0.7332, 0.7477)}  # the paper's Table 3


@pytest.mark.parametrize("comparison", sorted(WIKIQA))
def test_wikiqa_presets_hold_the_appendix_settings(comparison):
    preset = zoo.describe(f"compare_aggregate_{comparison}")
    model, training = preset["model"], preset["training"]
    assert preset["builder"] == "compare_aggregate" and preset["dataset"] == "wikiqa"
    assert model["comparison"] == comparison and model["head"] == "score"
    assert (model["units"], model["windows"], model["trainable_embeddings"]) == (150, [1, 2, 3, 4, 5], False)
    assert (training["optimizer"], training["learning_rate"], training["loss"]) == ("adamax", 0.002,
                                                                                  "listwise_softmax")
    assert training["batch_size"] == 300  # candidates: 30 questions of about 10
    assert "l2" not in model and "dropout" not in model  # no L2; only the embedding dropout
    assert (preset["reported"]["map"], preset["reported"]["mrr"]) == WIKIQA[comparison]


@pytest.mark.parametrize("comparison", ["submult_nn", "mult"])
def test_sick_presets_train_pointwise_and_report_nothing(comparison):
    preset = zoo.describe(f"compare_aggregate_{comparison}_sick")
    assert preset["dataset"] == "sick" and preset["reported"] is None
    assert preset["model"]["comparison"] == comparison
    assert (preset["training"]["loss"], preset["training"]["batch_size"]) == ("pointwise", 30)


def test_zoo_load_builds_the_paper_model_and_takes_overrides():
    model = zoo.load("compare_aggregate_mult", vocab_size=VOCAB, embedding_dim=5, units=6, filters=2)
    assert type(model.optimizer).__name__ == "Adamax"
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(0.002)
    assert tuple(model.get_layer("compare_aggregate").output.shape) == (None, 5 * 2)
    assert model.get_layer("prediction_hidden").units == 6
    assert model.name == "compare_aggregate_mult"
    with pytest.raises(ValueError, match="overlap"):
        zoo.load("compare_aggregate_mult", vocab_size=VOCAB, overlap_features="yes")
    with_features = zoo.load("compare_aggregate_mult", vocab_size=VOCAB, embedding_dim=5, units=4,
                             overlap_features=True, compile=False)
    assert with_features.get_layer("features").output.shape[-1] == 4
