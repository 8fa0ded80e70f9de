"""The pretrained-transformer input encoder (`TransformerEncoder` over keras-hub's `BertBackbone`), on the shared
all-MiniLM-L6-v2 folder: the model card's similarities, masking, what trains, the layer mix, and a `.keras` round
trip. The backbone is loaded once per module (a frozen and a mixed, top-1 fine-tuned encoder)."""

import json
import zipfile

import keras
import numpy as np
import pytest

from keras_match.encoders import TRANSFORMER_LAYER, InputEncoder, TransformerEncoder, TransformerStates, tokenizer

pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")

CARD = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
"""The model card's example sentences; its similarities are 0.6660 (0-1), 0.1045 (0-2), 0.1410 (1-2)."""


@pytest.fixture(scope="module")
def card_ids(encoders_dir):
    """`[CLS] sentence [SEP]` WordPiece ids of the card's sentences, padded with 0 to a common length + 3."""
    split = tokenizer("minilm-l6", encoders_dir)
    rows = [[101, *np.asarray(split(text)).tolist(), 102] for text in CARD]
    ids = np.zeros((len(rows), max(map(len, rows)) + 3), "int32")
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
    return ids


@pytest.fixture(scope="module")
def frozen(encoders_dir):
    """A frozen last-layer encoder in a model `ids -> states`, finished (pretrained weights in)."""
    encoder = TransformerEncoder("minilm-l6", encoders_dir=encoders_dir)
    (ids,) = InputEncoder.token_inputs("ids")
    model = keras.Model(ids, encoder(ids))
    encoder.finish(model)
    return encoder, model


@pytest.fixture(scope="module")
def mixed(encoders_dir):
    """A layer-mix encoder whose top transformer layer trains, in a tiny regression model, finished."""
    encoder = TransformerEncoder("minilm-l6", layers="mix", trainable=1, encoders_dir=encoders_dir)
    (ids,) = InputEncoder.token_inputs("ids")
    pooled = keras.layers.GlobalAveragePooling1D()(encoder(ids))  # masked mean
    model = keras.Model(ids, keras.layers.Dense(1)(pooled))
    encoder.finish(model)
    return encoder, model


def pooled(states, ids):
    """sentence-transformers' sentence embedding: the mean of the real tokens' states, L2-normalised."""
    mask = (ids != 0)[..., None]
    mean = (np.asarray(states) * mask).sum(axis=1) / mask.sum(axis=1)
    return mean / np.linalg.norm(mean, axis=1, keepdims=True)


def test_the_model_card_similarities(frozen, card_ids):
    _, model = frozen
    embeddings = pooled(model(card_ids), card_ids)
    similarity = embeddings @ embeddings.T
    np.testing.assert_allclose([similarity[0, 1], similarity[0, 2], similarity[1, 2]], [0.6660, 0.1045, 0.1410],
                               atol=1e-3)


def test_the_states_are_the_backbones_and_padding_changes_no_real_state(frozen, card_ids):
    encoder, model = frozen
    states = encoder.layer(card_ids)
    assert states.shape == (3, card_ids.shape[1], 384) and encoder.output_dim == 384
    np.testing.assert_array_equal(np.asarray(states._keras_mask), card_ids != 0)
    backbone = encoder.layer.backbone({"token_ids": card_ids, "segment_ids": np.zeros_like(card_ids),
                                       "padding_mask": card_ids != 0})["sequence_output"]
    real = card_ids != 0
    np.testing.assert_allclose(np.asarray(states)[real], np.asarray(backbone)[real], atol=1e-5)
    longer = np.pad(card_ids, ((0, 0), (0, 17)))
    padded = np.asarray(model(longer))
    assert padded.shape == (3, card_ids.shape[1] + 17, 384)
    np.testing.assert_allclose(padded[:, :card_ids.shape[1]][real], np.asarray(states)[real], atol=1e-5)
    # a dialog's [batch, turns, length] ids: each turn encoded alone, the mask kept
    turns = encoder.layer(card_ids[None])
    assert turns.shape == (1, 3, card_ids.shape[1], 384)
    np.testing.assert_array_equal(np.asarray(turns._keras_mask), card_ids[None] != 0)
    np.testing.assert_allclose(np.asarray(turns)[0][real], np.asarray(states)[real], atol=1e-5)
    # frozen: no dropout in training, so states can be cached
    np.testing.assert_array_equal(np.asarray(encoder.layer(card_ids, training=True)), np.asarray(states))


ARCHITECTURE = {"vocabulary_size": 30522, "num_layers": 6, "num_heads": 12, "hidden_dim": 384,
                "intermediate_dim": 1536, "dropout": 0.1, "max_sequence_length": 512, "num_segments": 2}
LAYER_PARAMETERS = 1_774_464  # one transformer layer
POOLER_PARAMETERS = 147_840  # never trained (the encoder does not use the pooled output)


@pytest.mark.parametrize("trainable,layers,weights,parameters", [
    ("frozen", "last", 0, 0),
    ("all", "last", 101, 22_713_216 - POOLER_PARAMETERS),
    (2, "last", 32, 2 * LAYER_PARAMETERS),
    ("frozen", "mix", 2, 7 + 1),
    (1, "mix", 16 + 2, LAYER_PARAMETERS + 7 + 1),
])
def test_what_trains(trainable, layers, weights, parameters):
    layer = TransformerStates(**ARCHITECTURE, layers=layers, trainable_layers=trainable)
    layer.build((None, None))
    assert layer.count_params() == 22_713_216 + (8 if layers == "mix" else 0)
    assert len(layer.trainable_weights) == weights
    assert sum(int(np.prod(w.shape)) for w in layer.trainable_weights) == parameters
    trained = {w.path.split("/")[0] for w in layer.trainable_weights} - {layer.name}
    every = {"token_embedding", "position_embedding", "segment_embedding", "embeddings_layer_norm",
             *(f"transformer_layer_{i}" for i in range(6))}  # never the pooler
    top = {"all": every, 2: {"transformer_layer_4", "transformer_layer_5"}, 1: {"transformer_layer_5"},
           "frozen": set()}
    assert trained == top[trainable]
    if layers == "mix":  # a plain mean at first
        np.testing.assert_allclose(np.asarray(layer.mix_weights), np.full(7, 1 / 7), rtol=1e-6)
        assert float(layer.mix_scale) == 1.0


@pytest.mark.parametrize("settings,message", [
    ({"trainable": True}, "trainable: expected 'frozen', 'all' or an int k in \\[0, 6\\]"),
    ({"trainable": 7}, "got 7"),
    ({"trainable": -1}, "got -1"),
    ({"trainable": "top"}, "got 'top'"),
    ({"layers": "first"}, "layers: expected one of \\('last', 'mix'\\), got 'first'"),
])
def test_bad_settings_are_named(settings, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        TransformerEncoder("minilm-l6", encoders_dir=tmp_path, **settings)  # checked before the folder is


def test_the_mix_is_a_softmax_weighted_sum_with_a_scale(mixed, card_ids):
    encoder, _ = mixed
    layer = encoder.layer
    rng = np.random.default_rng(0)
    layer.mix_logits.assign(rng.normal(size=7).astype("float32"))
    layer.mix_scale.assign(1.7)
    weights = np.exp(layer.mix_logits.numpy()) / np.exp(layer.mix_logits.numpy()).sum()
    np.testing.assert_allclose(np.asarray(layer.mix_weights), weights, rtol=1e-5)
    assert abs(float(np.sum(layer.mix_weights)) - 1) < 1e-6
    states = [np.asarray(s) for s in layer.all_states(card_ids)]
    assert len(states) == 7
    expected = 1.7 * sum(w * s for w, s in zip(weights, states, strict=True))
    np.testing.assert_allclose(np.asarray(layer(card_ids)), expected, atol=1e-4)


def test_a_training_step_moves_the_top_layer_and_the_mix_only(mixed, card_ids):
    encoder, model = mixed
    backbone = encoder.layer.backbone
    groups = {"mix": [encoder.layer.mix_logits, encoder.layer.mix_scale],
              "top": backbone.get_layer("transformer_layer_5").weights,
              "below": backbone.get_layer("transformer_layer_4").weights,
              "embeddings": backbone.get_layer("token_embedding").weights,
              "pooler": backbone.get_layer("pooled_dense").weights}
    before = {name: [np.array(w) for w in weights] for name, weights in groups.items()}
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.train_on_batch(card_ids, np.array([[3.0], [-3.0], [3.0]], "float32"))
    moved = {name: any(not np.array_equal(a, np.array(w)) for a, w in zip(before[name], weights, strict=True))
             for name, weights in groups.items()}
    assert moved == {"mix": True, "top": True, "below": False, "embeddings": False, "pooler": False}


def test_keras_file_round_trip_without_the_folder(frozen, card_ids, tmp_path, monkeypatch):
    """A question / answer model over one shared encoder: the `.keras` config holds the architecture only, the file
    holds the weights, and it loads with no encoder folder reachable."""
    encoder, _ = frozen
    question, answer = InputEncoder.token_inputs("question", "answer")
    pool = keras.layers.GlobalAveragePooling1D()
    score = keras.layers.Dot(axes=1, normalize=True)([pool(encoder(question)), pool(encoder(answer))])
    model = keras.Model([question, answer], score)
    assert [type(layer) for layer in model.layers].count(TransformerStates) == 1  # question and answer share it
    inputs = [card_ids[[0, 0, 1]], card_ids[[1, 2, 2]]]
    before = np.asarray(model(inputs))
    np.testing.assert_allclose(before[:, 0], [0.6660, 0.1045, 0.1410], atol=1e-3)
    path = tmp_path / "model.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json")
    assert len(config) < 20_000  # the architecture, not the weights
    layer_config = next(layer for layer in json.loads(config)["config"]["layers"]
                        if layer["class_name"] == "TransformerStates")["config"]
    assert layer_config["name"] == TRANSFORMER_LAYER and layer_config["encoder"] == "minilm-l6"
    assert (layer_config["layers"], layer_config["trainable_layers"], layer_config["hidden_dim"]) == \
        ("last", "frozen", 384)
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(tmp_path / "no-encoders-here"))
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path / "no-cache"))
    monkeypatch.setenv("KERAS_MATCH_HF_URL", "http://127.0.0.1:9/tests-never-reach-hugging-face")
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(inputs)), before, rtol=0, atol=1e-6)
    assert not (tmp_path / "no-encoders-here").exists() and not (tmp_path / "no-cache").exists()
