import keras
import numpy as np
import pytest

from keras_match.models.mcan import build_mcan

SMALL = dict(embedding_dim=8, lstm_units=6, highway_units=5, fm_factors=3, dropout=0.2)


def _pair(rng, batch=3, lq=5, la=7, vocab=30):
    q = rng.integers(2, vocab, size=(batch, lq)).astype("int32")
    a = rng.integers(2, vocab, size=(batch, la)).astype("int32")
    q[0, 3:] = 0  # unequal true lengths
    a[1, 2:] = 0
    return {"question": q, "answer": a}


@pytest.mark.parametrize("compression", ["sm", "nn", "fm"])
def test_output_is_a_two_class_distribution(compression):
    model = build_mcan(vocab_size=30, compression=compression, **SMALL)
    out = model(_pair(np.random.default_rng(0)), training=False).numpy()
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    assert model.name == f"mcan_{compression}"


def test_compressions_differ_in_parameters():
    counts = {
        c: sum(np.prod(w.shape) for w in build_mcan(vocab_size=30, compression=c, **SMALL).trainable_weights)
        for c in ("sm", "nn", "fm")
    }
    assert counts["sm"] < counts["nn"] < counts["fm"]


def test_padding_does_not_change_the_score():
    model = build_mcan(vocab_size=30, compression="fm", **SMALL)
    inputs = _pair(np.random.default_rng(1))
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in inputs.items()}
    np.testing.assert_allclose(
        model(inputs, training=False).numpy(), model(padded, training=False).numpy(), atol=1e-6
    )


def test_empty_text_gives_a_finite_score():
    model = build_mcan(vocab_size=30, **SMALL)
    inputs = _pair(np.random.default_rng(2))
    inputs["answer"][2, :] = 0
    inputs["question"][1, :] = 0
    assert np.isfinite(model(inputs, training=False).numpy()).all()


def test_pretrained_embeddings_are_copied_and_frozen():
    matrix = np.random.default_rng(3).normal(size=(30, 4)).astype("float32")
    model = build_mcan(vocab_size=30, embeddings=matrix, **{**SMALL, "embedding_dim": 99})
    layer = model.get_layer("word_embedding")
    np.testing.assert_array_equal(layer.get_weights()[0], matrix)
    assert not layer.trainable
    assert all("word_embedding" not in w.path for w in model.trainable_weights)


def test_wrong_embedding_rows_are_rejected():
    with pytest.raises(ValueError, match="vocab_size=30"):
        build_mcan(vocab_size=30, embeddings=np.zeros((29, 4)), **SMALL)


def test_unknown_compression_is_rejected():
    with pytest.raises(ValueError):
        build_mcan(vocab_size=30, compression="xx", **SMALL)


def test_keras_file_round_trip(tmp_path):
    model = build_mcan(vocab_size=30, compression="fm", **SMALL)
    inputs = _pair(np.random.default_rng(4))
    path = tmp_path / "mcan.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(model(inputs, training=False), restored(inputs, training=False), atol=1e-6)


def test_learns_a_toy_overlap_task():
    """Relevant when the answer repeats the question's first word: MCAN's co-attention sees that."""
    rng = np.random.default_rng(5)
    n = 256
    q = rng.integers(2, 30, size=(n, 4)).astype("int32")
    a = rng.integers(2, 30, size=(n, 6)).astype("int32")
    labels = rng.integers(0, 2, size=n)
    a[labels == 1, 2] = q[labels == 1, 0]
    keras.utils.set_random_seed(0)
    model = build_mcan(vocab_size=30, **{**SMALL, "dropout": 0.0}, trainable_embeddings=True)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    history = model.fit({"question": q, "answer": a}, labels, epochs=40, batch_size=32, verbose=0)
    assert history.history["accuracy"][-1] > 0.9  # chance is 0.5; measured 0.98


@pytest.mark.parametrize("embedding_dropout, rate", [(None, 0.2), (0.0, 0.0), (0.1, 0.1)])
def test_embedding_dropout_defaults_to_dropout_and_can_be_switched_off(embedding_dropout, rate):
    model = build_mcan(vocab_size=30, embedding_dropout=embedding_dropout, **SMALL)
    assert model.get_layer("dropout_embedded").rate == rate
    assert model.get_layer("dropout_highway_1").rate == 0.2


def test_without_embedding_dropout_one_word_enters_both_texts_alike_in_training():
    # the paper's "all layers except the embedding layer": the projection of a word shared by question and
    # answer is the same on both sides even in training (dropout applies later)
    model = build_mcan(vocab_size=30, embedding_dropout=0.0, **{**SMALL, "dropout": 0.5})
    embedding = model.get_layer("word_embedding")
    projection = model.get_layer("highway_projection")
    drop = model.get_layer("dropout_embedded")
    ids = np.array([[5, 6, 7]], "int32")
    first = projection(drop(embedding(ids), training=True)).numpy()
    second = projection(drop(embedding(ids), training=True)).numpy()
    np.testing.assert_array_equal(first, second)
    dropped = build_mcan(vocab_size=30, **{**SMALL, "dropout": 0.5})  # the builder's default drops them
    drop = dropped.get_layer("dropout_embedded")
    embedded = dropped.get_layer("word_embedding")(ids)
    assert not np.array_equal(drop(embedded, training=True).numpy(), drop(embedded, training=True).numpy())


def _reloaded_with_the_same_scores(model, tmp_path, seed):
    """The model saved as a .keras file and loaded again, after checking it scores a padded batch the same."""
    inputs = _pair(np.random.default_rng(seed))
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded(inputs, training=False).numpy(), model(inputs, training=False).numpy(),
                               atol=1e-6)
    return loaded


@pytest.mark.parametrize("pooled_casts, scaled", [("weighted", False), ("broadcast", True)])
def test_cast_options_reach_the_layer_and_survive_a_keras_file(tmp_path, pooled_casts, scaled):
    model = build_mcan(vocab_size=30, pooled_casts=pooled_casts, scaled_affinity=scaled, **SMALL)
    layer = model.get_layer("multi_cast_attention")
    assert (layer.pooled_casts, layer.scaled_affinity) == (pooled_casts, scaled)
    loaded = _reloaded_with_the_same_scores(model, tmp_path, seed=5)
    assert loaded.get_layer("multi_cast_attention").get_config()["pooled_casts"] == pooled_casts


def test_lstm_dropout_and_per_cast_affinities_reach_the_layers_and_survive_a_keras_file(tmp_path):
    default = build_mcan(vocab_size=30, **SMALL)
    assert default.get_layer("siamese_lstm").dropout == SMALL["dropout"]
    assert default.get_layer("multi_cast_attention").shared_affinity is True
    model = build_mcan(vocab_size=30, lstm_dropout=0.0, shared_affinity=False, **SMALL)
    assert model.get_layer("siamese_lstm").dropout == 0.0
    assert model.get_layer("dropout_highway_1").rate == SMALL["dropout"]  # the other layers keep theirs
    layer = model.get_layer("multi_cast_attention")
    assert layer.shared_affinity is False
    assert len(model.trainable_weights) == len(default.trainable_weights) + 4  # two more F (kernel, bias)
    loaded = _reloaded_with_the_same_scores(model, tmp_path, seed=6)
    assert loaded.get_layer("multi_cast_attention").get_config()["shared_affinity"] is False
