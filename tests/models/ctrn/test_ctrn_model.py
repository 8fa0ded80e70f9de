import keras
import numpy as np
import pytest

from keras_match.models.ctrn import build_ctrn
from keras_match.models.ctrn import build_qrnn_matcher

SMALL = dict(embedding_dim=8, filters=6, kernel_size=2, dense_units=5, dropout=0.5)
BUILDERS = {
    "ctrn_stretch": lambda **kw: build_ctrn(vocab_size=30, alignment="stretch", **{**SMALL, **kw}),
    "ctrn_index": lambda **kw: build_ctrn(vocab_size=30, alignment="index", **{**SMALL, **kw}),
    "qrnn": lambda **kw: build_qrnn_matcher(vocab_size=30, **{**SMALL, **kw}),
}


def _pair(rng, batch=3, lq=5, la=7, vocab=30, num_features=0):
    q = rng.integers(2, vocab, size=(batch, lq)).astype("int32")
    a = rng.integers(2, vocab, size=(batch, la)).astype("int32")
    q[0, 3:] = 0  # unequal true lengths, shorter and longer than the partner
    a[1, 2:] = 0
    inputs = {"question": q, "answer": a}
    if num_features:
        inputs["features"] = rng.uniform(size=(batch, num_features)).astype("float32")
    return inputs


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_output_is_a_two_class_distribution(kind):
    model = BUILDERS[kind]()
    out = model(_pair(np.random.default_rng(0)), training=False).numpy()
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    assert model.name == kind.split("_")[0]
    assert sorted(model.input) == ["answer", "question"]


def test_ctrn_has_exactly_the_parameters_of_qrnn():
    for kw in ({}, {"num_dense_layers": 3, "num_features": 4, "projection_dim": 7}):
        counts = {k: BUILDERS[k](**kw).count_params() for k in BUILDERS}
        assert len(set(counts.values())) == 1, counts


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_padding_does_not_change_the_score(kind):
    model = BUILDERS[kind](num_features=2)
    inputs = _pair(np.random.default_rng(1), num_features=2)
    for pad_q, pad_a in ((4, 0), (0, 3), (2, 9)):
        padded = dict(inputs, question=np.pad(inputs["question"], ((0, 0), (0, pad_q))),
                      answer=np.pad(inputs["answer"], ((0, 0), (0, pad_a))))
        np.testing.assert_allclose(
            model(inputs, training=False).numpy(), model(padded, training=False).numpy(), atol=1e-6
        )


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_empty_text_gives_a_finite_score(kind):
    inputs = _pair(np.random.default_rng(2))
    inputs["answer"][2, :] = 0
    inputs["question"][1, :] = 0
    assert np.isfinite(BUILDERS[kind]()(inputs, training=False).numpy()).all()


def test_features_input_is_used():
    model = build_ctrn(vocab_size=30, num_features=4, **SMALL)
    assert sorted(model.input) == ["answer", "features", "question"]
    assert model.input["features"].shape == (None, 4)
    inputs = _pair(np.random.default_rng(3), num_features=4)
    changed = dict(inputs, features=inputs["features"] + 1.0)
    assert not np.allclose(model(inputs, training=False).numpy(), model(changed, training=False).numpy())


def test_dense_layers_dropout_and_l2():
    model = build_ctrn(vocab_size=30, num_dense_layers=3, l2=4e-6, **SMALL)
    dense = [layer for layer in model.layers if layer.name.startswith("dense_")]
    assert [d.units for d in dense] == [5, 5, 5]
    assert all(layer.rate == 0.5 for layer in model.layers if isinstance(layer, keras.layers.Dropout))
    assert model.get_layer("ctrn").kernel_regularizer.l2 == pytest.approx(4e-6)
    assert model.get_layer("ctrn").alignment == "index"  # the default
    assert len(model.losses) == 1 + 1 + 3 + 1  # projection, CTRN, three dense layers, softmax layer


def test_pretrained_embeddings_are_copied_and_frozen():
    matrix = np.random.default_rng(4).normal(size=(30, 4)).astype("float32")
    model = build_ctrn(vocab_size=30, embeddings=matrix, **{**SMALL, "embedding_dim": 99})
    layer = model.get_layer("word_embedding")
    np.testing.assert_array_equal(layer.get_weights()[0], matrix)
    assert not layer.trainable
    assert model.get_layer("projection").trainable and model.get_layer("projection").units == 4
    assert all("word_embedding" not in w.path for w in model.trainable_weights)


@pytest.mark.parametrize("kwargs, match", [({"num_dense_layers": 0}, "num_dense_layers"),
                                           ({"num_features": -1}, "num_features"),
                                           ({"alignment": "soft"}, "alignment"),
                                           ({"filters": 0}, "units")])
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_ctrn(vocab_size=30, **{**SMALL, **kwargs})


def test_keras_file_round_trip(tmp_path):
    model = build_ctrn(vocab_size=30, num_features=4, **SMALL)
    inputs = _pair(np.random.default_rng(5), num_features=4)
    path = tmp_path / "ctrn.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(model(inputs, training=False), restored(inputs, training=False), atol=1e-6)


@pytest.mark.parametrize("kind", ["ctrn_index", "qrnn"])
def test_training_reaches_every_weight_and_lowers_the_loss(kind):
    """A few Adam steps on one batch: every trainable weight moves (no disconnected gradient path) and the
    loss falls."""
    keras.utils.set_random_seed(0)
    model = BUILDERS[kind](num_features=2, dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    inputs = _pair(np.random.default_rng(7), batch=8, num_features=2)
    labels = np.arange(8) % 2
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(inputs, labels, epochs=10, batch_size=8, verbose=0).history["loss"]
    assert history[-1] < history[0] - 0.02
    moved = [not np.allclose(b, w.numpy()) for b, w in zip(before, model.trainable_weights)]
    assert all(moved), [w.path for w, m in zip(model.trainable_weights, moved) if not m]


@pytest.mark.parametrize("name", ["ctrn", "ctrn_wikiqa", "ctrn_semeval", "qrnn", "qrnn_wikiqa", "qrnn_semeval"])
def test_zoo_presets_build_with_the_paper_settings(name):
    from keras_match import zoo

    preset = zoo.describe(name)
    model_settings = preset["model"]
    settings = (model_settings["dropout"], model_settings["l2"], model_settings["trainable_embeddings"])
    assert settings == (0.5, 4e-6, False)
    assert model_settings.get("alignment", "index") == "index"
    assert preset["preprocessing"]["overlap_features"] is (name in ("ctrn", "qrnn"))
    model = zoo.load(name, vocab_size=40, embedding_dim=6, filters=4, dense_units=3, num_features=4)
    assert model.optimizer is not None and sorted(model.input) == ["answer", "features", "question"]
    out = model({"question": np.array([[2, 3, 0]], "int32"), "answer": np.array([[4, 5]], "int32"),
                 "features": np.zeros((1, 4), "float32")})
    assert out.shape == (1, 2)


def _cosine_reference(model, inputs):
    """The bi-encoder's score from the equations: the masked mean of each text's word vectors, L2-normalised,
    then their dot product (NumPy, float64)."""
    table = model.get_layer("word_embedding").get_weights()[0].astype("float64")
    scores = []
    for q, a in zip(inputs["question"], inputs["answer"]):
        means = [table[ids[ids != 0]].mean(axis=0) if (ids != 0).any() else np.zeros(table.shape[1])
                 for ids in (q, a)]
        units = [m / max(np.linalg.norm(m), 1e-12) for m in means]
        scores.append(units[0] @ units[1])
    return np.array(scores)[:, None]


@pytest.mark.parametrize("kind", ["ctrn_index", "qrnn"])
def test_sentence_cosine_is_the_bi_encoders_score_beside_the_dense_output(kind):
    model = BUILDERS[kind](sentence_cosine=True, num_features=2)
    plain = BUILDERS[kind](num_features=2)
    assert model.count_params() == plain.count_params() + 2  # the output layer's one more input, two classes
    inputs = _pair(np.random.default_rng(8), num_features=2)
    inputs["answer"][2, :] = 0  # an empty text: cosine 0
    cosine = keras.Model(model.inputs, model.get_layer("sentence_cosine").output)(inputs).numpy()
    assert cosine.dtype == np.float32 and cosine.shape == (3, 1)
    np.testing.assert_allclose(cosine, _cosine_reference(model, inputs), atol=1e-6)
    assert cosine[2, 0] == 0.0
    assert model.get_layer("prediction_and_cosine").output.shape == (None, SMALL["dense_units"] + 1)
    # the output layer reads it: its weight on the cosine changes the prediction
    out = model.get_layer("relevance_probabilities")
    kernel, bias = out.get_weights()
    kernel[-1] = [3.0, -3.0]
    out.set_weights([kernel, bias])
    changed = dict(inputs, answer=inputs["answer"].copy())
    changed["answer"][0] = inputs["question"][0, 0]  # every answer word is the question's first word
    assert not np.allclose(model(inputs, training=False).numpy(), model(changed, training=False).numpy())


def test_sentence_cosine_ignores_padding_and_round_trips(tmp_path):
    model = build_ctrn(vocab_size=30, sentence_cosine=True, num_features=2, **SMALL)
    inputs = _pair(np.random.default_rng(9), num_features=2)
    padded = dict(inputs, question=np.pad(inputs["question"], ((0, 0), (0, 3))),
                  answer=np.pad(inputs["answer"], ((0, 0), (0, 5))))
    np.testing.assert_allclose(model(inputs, training=False).numpy(), model(padded, training=False).numpy(),
                               atol=1e-6)
    path = tmp_path / "ctrn_cosine.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(model(inputs, training=False), restored(inputs, training=False), atol=1e-6)
    assert restored.get_layer("sentence_cosine") is not None


def test_sentence_cosine_setting_is_checked():
    from keras_match import families

    assert families.resolve("ctrn", sentence_cosine=True).model["sentence_cosine"] is True
    with pytest.raises(ValueError, match="sentence_cosine"):
        families.resolve("ctrn", sentence_cosine="yes")


def test_sentence_cosine_start_ranks_as_the_cosine_until_it_trains():
    model = build_ctrn(vocab_size=30, sentence_cosine="start", num_features=2, **SMALL)
    inputs = _pair(np.random.default_rng(10), batch=6, num_features=2)
    probabilities = model(inputs, training=False).numpy()
    cosine = _cosine_reference(model, inputs)[:, 0]
    # softmax over [-10 c, 10 c]: P(relevant) = sigmoid(20 c), whatever the body and the pair features say
    np.testing.assert_allclose(probabilities[:, 1], 1 / (1 + np.exp(-20 * cosine)), atol=1e-5)
    trained = build_ctrn(vocab_size=30, sentence_cosine=True, num_features=2, **SMALL)
    assert not np.allclose(trained(inputs, training=False).numpy()[:, 1], probabilities[:, 1], atol=1e-3)
    with pytest.raises(ValueError, match="sentence_cosine"):
        build_ctrn(vocab_size=30, sentence_cosine="begin", **SMALL)
