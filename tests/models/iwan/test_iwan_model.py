"""`build_iwan` for every encoder and weighting: shapes, heads, the pair vector, padding invariance of the score,
the cross-context wiring (a CARNN encoder reads the other sentence, the BiLSTM does not), saving, errors, and the
zoo entries `iwan`, `iwan_ncarnn`, `iwan_icarnn`, `iwan_scarnn` with their parameter counts and search space."""

import keras
import numpy as np
import pytest

from keras_match import heads, zoo
from keras_match.training import tuning
from keras_match.models.iwan import build_iwan

VOCAB = 30
EMBEDDING = 6
SMALL = dict(embedding_dim=EMBEDDING, hidden_units=4, alignment_units=5, attention_units=3, dense_units=4)
ENCODERS = ["bilstm", "ncarnn", "icarnn", "scarnn"]
WEIGHTINGS = ["inter_attention", "inter_skip", "none"]


def _build(encoder="bilstm", **kwargs):
    settings = {**SMALL, "encoder": encoder, **kwargs}
    if encoder == "scarnn":
        settings["hidden_units"] = None  # the embedding width (eq. 6)
    return build_iwan(vocab_size=VOCAB, **settings)


def _ids(rng, rows, length):
    return rng.integers(2, VOCAB, size=(rows, length)).astype("int32")


def _pairs(rng, batch=3, lq=5, la=7):
    q, a = _ids(rng, batch, lq), _ids(rng, batch, la)
    q[0, 3:] = 0
    a[1, 2:] = 0
    return {"question": q, "answer": a}


def _states_model(model):
    """Inputs -> the context encoder's (question states, answer states)."""
    return keras.Model(model.inputs, model.get_layer("context_encoder").output)


def _spread(model, seed=0):
    """Random weights large enough that the outputs differ visibly between inputs."""
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:
        weight.assign(rng.normal(0.0, 0.5, size=tuple(weight.shape)).astype("float32"))


# ------------------------------------------------------------------------------------------ shapes, heads


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_every_encoder_and_weighting_gives_class_probabilities(encoder, weighting):
    model = _build(encoder, weighting=weighting)
    out = model(_pairs(np.random.default_rng(0)), training=False).numpy()
    assert out.shape == (3, 2) and np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
    assert heads.head_of(model) == "softmax"
    assert model.name == ("iwan" if encoder == "bilstm" else f"iwan_{encoder}")
    width = 2 * (EMBEDDING if encoder == "scarnn" else 4)
    states = _states_model(model)(_pairs(np.random.default_rng(0)))
    assert [tuple(s.shape) for s in states] == [(3, 5, width), (3, 7, width)]
    assert tuple(model.get_layer("alignment").output[0].shape) == (None, None, 5)
    assert tuple(model.get_layer("pair_vector").output.shape) == (None, 4 * 5)  # [vs; vt; vs * vt; |vs - vt|]
    assert model.get_layer("prediction_hidden").activation.__name__ == "relu"


@pytest.mark.parametrize("head, num_classes, width", [("score", None, 1), ("classification", 3, 3)])
def test_other_heads(head, num_classes, width):
    model = _build("icarnn", head=head, num_classes=num_classes)
    assert model(_pairs(np.random.default_rng(1)), training=False).shape == (3, width)
    assert heads.head_of(model) == head


def test_the_pair_vector_is_v_s_v_t_product_and_absolute_difference():
    model = _build("bilstm")
    _spread(model, 2)
    inputs = _pairs(np.random.default_rng(2))
    vs, vt = (keras.Model(model.inputs, node.output_tensors[0])(inputs).numpy()
              for node in model.get_layer("inter_weighting")._inbound_nodes)
    z = keras.Model(model.inputs, model.get_layer("pair_vector").output)(inputs).numpy()
    np.testing.assert_allclose(z, np.concatenate([vs, vt, vs * vt, np.abs(vs - vt)], -1), rtol=1e-5, atol=1e-6)
    assert (z[:, 15:] >= 0).all() and not np.allclose(vs, vt)


def test_one_weight_set_for_both_sentences():
    """Figure 1: blocks of one colour share parameters; each shared layer is called once per sentence."""
    model = _build("ncarnn")
    for name in ("word_embedding", "inter_weighting"):
        assert len(model.get_layer(name)._inbound_nodes) == 2
    for name in ("context_encoder", "alignment"):  # pair layers: one call, both sentences
        assert len(model.get_layer(name)._inbound_nodes) == 1
    swapped = {"question": _pairs(np.random.default_rng(3))["answer"], "answer": _pairs(np.random.default_rng(3))
               ["question"]}
    hq, ha = _states_model(model)(_pairs(np.random.default_rng(3)))
    hq2, ha2 = _states_model(model)(swapped)
    np.testing.assert_allclose(hq2.numpy(), ha.numpy(), atol=1e-6)
    np.testing.assert_allclose(ha2.numpy(), hq.numpy(), atol=1e-6)


def test_pair_features_join_before_the_prediction_layers():
    model = _build("icarnn", num_features=4)
    assert sorted(model.input) == ["answer", "features", "question"]
    assert tuple(model.get_layer("pair_and_features").output.shape) == (None, 4 * 5 + 4)


def test_pretrained_embeddings_are_copied_and_frozen():
    matrix = np.random.default_rng(4).normal(size=(VOCAB, 7)).astype("float32")
    model = build_iwan(vocab_size=VOCAB, embeddings=matrix, encoder="scarnn", hidden_units=None,
                       **{k: v for k, v in SMALL.items() if k != "hidden_units"})
    np.testing.assert_array_equal(model.get_layer("word_embedding").get_weights()[0], matrix)
    assert not model.get_layer("word_embedding").trainable
    states = _states_model(model)(_pairs(np.random.default_rng(4)))
    assert states[0].shape[-1] == 2 * 7  # sCARNN: the embedding width per direction


def test_dropout_acts_in_training_only():
    model = _build("bilstm", dropout=0.5)
    assert model.get_layer("dropout_embedded").rate == 0.5  # embedding_dropout None: the dropout
    assert model.get_layer("dropout_pair").rate == 0.5
    assert _build("bilstm", dropout=0.5, embedding_dropout=0.1).get_layer("dropout_embedded").rate == 0.1
    inputs = _pairs(np.random.default_rng(5))
    np.testing.assert_array_equal(model(inputs, training=False).numpy(), model(inputs, training=False).numpy())
    assert not np.array_equal(model(inputs, training=True).numpy(), model(inputs, training=True).numpy())


# ------------------------------------------------------------------------------------------ masking, wiring


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # the one-word texts, alone
@pytest.mark.parametrize("encoder, weighting", [("bilstm", "inter_attention"), ("ncarnn", "inter_skip"),
                                                ("icarnn", "inter_attention"), ("scarnn", "none")])
def test_a_pair_scores_the_same_alone_and_padded_in_a_batch(encoder, weighting):
    rng = np.random.default_rng(6)
    model = _build(encoder, weighting=weighting, num_features=2)
    _spread(model, 6)
    lengths = [(3, 6), (5, 2), (1, 9), (4, 1)]
    pairs = [(_ids(rng, 1, lq)[0], _ids(rng, 1, la)[0]) for lq, la in lengths]
    features = rng.uniform(size=(len(pairs), 2)).astype("float32")
    alone = np.concatenate([
        model({"question": q[None], "answer": a[None], "features": features[i: i + 1]}, training=False).numpy()
        for i, (q, a) in enumerate(pairs)])
    batch = {"question": np.zeros((len(pairs), 8), "int32"), "answer": np.zeros((len(pairs), 12), "int32"),
             "features": features}
    for i, (q, a) in enumerate(pairs):
        batch["question"][i, : len(q)] = q
        batch["answer"][i, : len(a)] = a
    scores = model(batch, training=False).numpy()
    np.testing.assert_allclose(scores, alone, atol=1e-5)
    assert np.ptp(scores[:, 1]) > 1e-3  # the pairs score differently: the check is not vacuous


@pytest.mark.parametrize("encoder", ENCODERS)
def test_a_carnn_encoder_reads_the_other_sentence_and_the_bilstm_does_not(encoder):
    """Cross-context wiring (CARNN paper §4.3): another answer changes the question's states under a CARNN
    encoder (its context is the answer's Position Encoder summary) and changes nothing under IWAN's BiLSTM."""
    model = _build(encoder)
    _spread(model, 7)
    rng = np.random.default_rng(7)
    inputs = _pairs(rng)
    other = dict(inputs, answer=np.where(inputs["answer"] > 0, _ids(rng, 3, 7), 0).astype("int32"))
    states = _states_model(model)
    hq, ha = (s.numpy() for s in states(inputs))
    hq2, ha2 = (s.numpy() for s in states(other))
    assert not np.allclose(ha2, ha, atol=1e-4)  # the answer's own states change in every case
    if encoder == "bilstm":
        np.testing.assert_array_equal(hq2, hq)
    else:
        for row in range(3):
            assert not np.allclose(hq2[row], hq[row], atol=1e-4), row
    # and the padding of the question stays zero
    assert not hq[0, 3:].any()


def test_empty_texts_give_finite_outputs():
    for encoder in ENCODERS:
        model = _build(encoder)
        inputs = _pairs(np.random.default_rng(8))
        inputs["answer"][2, :] = 0
        inputs["question"][1, :] = 0
        assert np.isfinite(model(inputs, training=False).numpy()).all()


@pytest.mark.parametrize("encoder", ["ncarnn", "scarnn"])
def test_an_empty_batch_gives_no_scores(encoder):
    """An export's serve_ids passes batches of no rows straight to the model."""
    out = _build(encoder)({"question": np.zeros((0, 5), "int32"), "answer": np.zeros((0, 7), "int32")},
                          training=False)
    assert tuple(out.shape) == (0, 2)


# ------------------------------------------------------------------------------------------ saving, errors


@pytest.mark.parametrize("encoder, weighting, kwargs", [
    ("bilstm", "inter_skip", {"similarity": "bilinear"}),
    ("icarnn", "inter_attention", {"compare": "concat_diff_prod", "num_features": 2}),
    ("scarnn", "none", {"similarity": "cosine"}),
])
def test_keras_file_round_trip(tmp_path, encoder, weighting, kwargs):
    model = _build(encoder, weighting=weighting, **kwargs)
    _spread(model, 9)
    inputs = _pairs(np.random.default_rng(9))
    if kwargs.get("num_features"):
        inputs["features"] = np.random.default_rng(10).uniform(size=(3, 2)).astype("float32")
    path = tmp_path / "iwan.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(restored(inputs, training=False), model(inputs, training=False), atol=1e-6)
    assert restored.get_layer("context_encoder").encoder == encoder
    assert restored.get_layer("inter_weighting").weighting == weighting


@pytest.mark.parametrize("kwargs, message", [
    ({"encoder": "lstm"}, "encoder"),
    ({"weighting": "skip"}, "weighting"),
    ({"similarity": "euclidean"}, "similarity"),
    ({"compare": "sub"}, "compare"),
    ({"hidden_units": 0}, "hidden_units"),
    ({"alignment_units": None}, "alignment_units"),
    ({"attention_units": 2.5}, "attention_units"),
    ({"dense_units": 0}, "dense_units"),
    ({"encoder": "scarnn", "hidden_units": 4}, "hidden_units must be None or 6"),
    ({"dropout": 1.0}, "dropout"),
    ({"embedding_dropout": -0.1}, "embedding_dropout"),
    ({"head": "ranking"}, "unknown head"),
    ({"head": "classification"}, "num_classes"),
    ({"num_features": -1}, "num_features"),
    ({"embeddings": np.zeros((VOCAB - 1, 5))}, "vocab_size=30"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_iwan(vocab_size=VOCAB, **{**SMALL, **kwargs})


# ------------------------------------------------------------------------------------------ zoo entries

TABLE_3 = {"iwan": ("bilstm", 0.822, 0.889), "iwan_ncarnn": ("ncarnn", 0.827, 0.889),
           "iwan_icarnn": ("icarnn", 0.826, 0.907), "iwan_scarnn": ("scarnn", 0.829, 0.875)}

# Trainable parameters at preset size (GloVe 6B 50d, frozen; d = 50, 100 per direction, f 100, attention 50,
# hidden 100, 2-class softmax). The layers after the encoder, for 2u-wide states: W_a [4u, 100] + 100,
# W_1 [4u, 50] + 50, v [50], the hidden layer [400, 100] + 100, the head [100, 2] + 2.
AFTER_ENCODER = {200: 2 * 200 * 100 + 100 + 2 * 200 * 50 + 50 + 50 + 400 * 100 + 100 + 202,
                 100: 2 * 100 * 100 + 100 + 2 * 100 * 50 + 50 + 50 + 400 * 100 + 100 + 202}
ENCODER_PARAMETERS = {  # per direction, times 2
    "iwan": (2 * 4 * (100 * (50 + 100) + 100), 200),  # LSTM: 4u (d + u) + 4u
    "iwan_ncarnn": (2 * (50 * 200 + 50 * 200 + 100 * 200 + 200 + 50 * 100 + 100), 200),  # W_e, W_c, W_h, b, W_e_bar, b
    "iwan_icarnn": (2 * (50 * 200 + 50 * 200 + 200 + 50 * 100 + 100), 200),  # no W_h (eq. 5)
    "iwan_scarnn": (2 * (50 * 100 + 50 * 100 + 100), 100),  # u = d = 50, no projection (eq. 6)
}


@pytest.mark.parametrize("name", sorted(TABLE_3))
def test_presets_hold_our_settings_and_the_reported_figures(name):
    preset = zoo.describe(name)
    encoder, map_, mrr = TABLE_3[name]
    model, training = preset["model"], preset["training"]
    assert preset["builder"] == "iwan" and preset["family"] == "iwan" and preset["dataset"] == "trecqa-clean"
    assert (model["encoder"], model["weighting"], model["head"]) == (encoder, "inter_attention", "softmax")
    assert (model["embedding_dim"], model["trainable_embeddings"]) == (50, False)
    assert model["hidden_units"] == (None if encoder == "scarnn" else 100)
    assert (training["optimizer"], training["learning_rate"], training["loss"], training["batch_size"]) == (
        "adam", 0.001, "pointwise", 64)
    assert (preset["reported"]["dataset"], preset["reported"]["map"], preset["reported"]["mrr"]) == (
        "trecqa-clean", map_, mrr)
    assert "ours" in preset["notes"]["settings"] and "[I]" in preset["notes"]["reconstruction"]


def test_the_iwan_entry_records_the_reimplementation_and_wikiqa():
    reported = zoo.describe("iwan")["reported"]
    assert (reported["reimplementation"]["map"], reported["reimplementation"]["mrr"]) == (0.794, 0.879)
    assert (reported["wikiqa"]["map"], reported["wikiqa"]["mrr"]) == (0.733, 0.75)
    assert "iwan_base" not in zoo.names()  # abstract


@pytest.mark.parametrize("name", sorted(ENCODER_PARAMETERS))
def test_parameter_counts_at_preset_size(name):
    model = zoo.load(name, vocab_size=VOCAB, compile=False)
    encoder, width = ENCODER_PARAMETERS[name]
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert model.get_layer("context_encoder").count_params() == encoder
    assert trainable == encoder + AFTER_ENCODER[width]
    assert model.get_layer("word_embedding").count_params() == VOCAB * 50 and not model.get_layer(
        "word_embedding").trainable


def test_zoo_load_compiles_adam_and_takes_overrides():
    model = zoo.load("iwan_icarnn", vocab_size=VOCAB, embedding_dim=5, hidden_units=3, weighting="inter_skip")
    assert type(model.optimizer).__name__ == "Adam"
    assert model.get_layer("inter_weighting").weighting == "inter_skip"
    assert model.get_layer("context_encoder").units == 3
    for bad in ({"encoder": "gru"}, {"weighting": "inter_skip_b"}, {"hidden_units": 0}, {"similarity": "l2"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            zoo.load("iwan", vocab_size=VOCAB, **bad)


def test_the_search_space_fits_every_entry():
    for name in TABLE_3:
        space = tuning.space_for(name)
        assert space["file"] == "iwan.json"
        assert set(space["hyperparameters"]) == {"learning_rate", "hidden_units", "dropout", "weighting"}
        assert space["hyperparameters"]["weighting"]["values"] == ["inter_attention", "inter_skip"]
