"""The encoder rankers' layers against NumPy references (`references_encoder_rankers`): the packing of a pair, the
sentence embedding and the siamese features; `PackedPairTransformer` on a tiny random BERT (2 layers, width 8),
so no pretrained folder is needed: the backbone reads the packed ids and segments, padding changes nothing, what
trains follows `trainable_layers`, and config / `.keras` round trips."""

import keras
import numpy as np
import pytest

import references_encoder_rankers as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

from keras_match.models.encoder_rankers import PackedPairTransformer
from keras_match.models.encoder_rankers import SentenceEmbedding
from keras_match.models.encoder_rankers import SiameseFeatures
from keras_match.models.encoder_rankers import pack_pair

# these tests choose their backbone themselves (MiniLM where its weights matter, their own 2-layer BERT
# elsewhere), not the tiny one tests/conftest.py gives the zoo-wide tests
pytestmark = pytest.mark.real_backbone

TINY = {"vocabulary_size": 60, "num_layers": 2, "num_heads": 2, "hidden_dim": 8, "intermediate_dim": 16,
        "dropout": 0.1, "max_sequence_length": 32, "num_segments": 2}
"""A BERT small enough to build in a blink; the layers read it as they read MiniLM."""

CLS, SEP = 101 % 60, 102 % 60  # the tiny vocabulary's stand-ins (41, 42): any ids work for the packing


def wordpiece_rows(rng, lengths, width, vocabulary=60):
    """Right-padded `[CLS] pieces [SEP]` rows of `lengths` ids (0: an all-padding row), `width` wide."""
    ids = np.zeros((len(lengths), width), "int32")
    for i, length in enumerate(lengths):
        if length:
            ids[i, :length] = rng.integers(1, vocabulary, size=length)
            ids[i, 0], ids[i, length - 1] = CLS, SEP
    return ids


def pair_batch(seed=0):
    """Questions and answers of mixed lengths: a long pair, an empty answer (`[CLS] [SEP]`), an all-padding pair
    (a padded list item) and a short pair."""
    rng = np.random.default_rng(seed)
    return wordpiece_rows(rng, [7, 3, 0, 2], 8), wordpiece_rows(rng, [9, 2, 0, 4], 10)


@pytest.mark.parametrize("max_length", [None, 12, 5, 2])
def test_pack_pair_matches_the_numpy_reference(max_length):
    question, answer = pair_batch()
    ids, segments, mask = (np.asarray(t) for t in pack_pair(question, answer, SEP, max_length))
    expected = ref.pack_pair(question, answer, SEP, max_length)
    for actual, wanted in zip((ids, segments, mask), expected):
        np.testing.assert_array_equal(actual, wanted)
    assert ids.shape[1] == (15 if max_length is None else min(max_length, 15))  # 7 + 9 - 1: the longest pair
    # more padding columns change nothing; an empty batch packs to no rows
    wider = pack_pair(np.pad(question, ((0, 0), (0, 5))), np.pad(answer, ((0, 0), (0, 3))), SEP, max_length)
    for actual, wanted in zip(wider, expected):
        np.testing.assert_array_equal(np.asarray(actual), wanted)
    empty = pack_pair(np.zeros((0, 0), "int32"), np.zeros((0, 0), "int32"), SEP, max_length)
    assert [tuple(np.asarray(t).shape) for t in empty] == [(0, 1)] * 3


def test_pack_pair_refuses_a_bad_cap():
    with pytest.raises(ValueError, match="max_length must be None or an integer >= 2, got 1"):
        pack_pair(np.ones((1, 3), "int32"), np.ones((1, 3), "int32"), max_length=1)


def test_sentence_embedding_is_the_masked_mean_normalised(tmp_path):
    rng = np.random.default_rng(1)
    states, mask = padded_batch(rng, [5, 2, 0], 6, 4)  # garbage at padded positions, an empty row
    _, out = run_layer_test(SentenceEmbedding, states, mask, expected_shape=(3, 4), tmp_path=tmp_path)
    np.testing.assert_allclose(out, ref.mean_pooled(states, mask), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out[:2], axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(out[2], 0.0)  # no real token: a zero vector, not NaN
    longer, longer_mask = pad_more(rng, states, mask, 4)
    np.testing.assert_allclose(call_layer(SentenceEmbedding(), longer, longer_mask), out, atol=1e-6)
    plain = call_layer(SentenceEmbedding(normalize=False), states, mask)
    np.testing.assert_allclose(plain, ref.mean_pooled(states, mask, normalize=False), atol=1e-5)
    with pytest.raises(ValueError, match="epsilon must be a number > 0"):
        SentenceEmbedding(epsilon=0)


@pytest.mark.parametrize("features, width", [("cosine", 1), ("concatenation", 15)])
def test_siamese_features_match_sbert(features, width, tmp_path):
    rng = np.random.default_rng(2)
    u, v = rng.normal(size=(3, 5)).astype("float32"), rng.normal(size=(3, 5)).astype("float32")
    v[2] = 0.0  # a zero embedding (an empty text): cosine 0
    _, out = run_layer_test(lambda: SiameseFeatures(features), [u, v], expected_shape=(3, width),
                            tmp_path=tmp_path)
    expected = ref.cosine(u, v) if features == "cosine" else ref.sbert_concatenation(u, v)
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_siamese_features_refuse_what_they_cannot_read():
    with pytest.raises(ValueError, match="`features` must be one of"):
        SiameseFeatures("dot")
    with pytest.raises(ValueError, match=r"expects \[u, v\], two \[batch, dim\] tensors of one width"):
        SiameseFeatures()([np.zeros((2, 3), "float32"), np.zeros((2, 4), "float32")])


def tiny_states(layers="last", trainable_layers="all", seed=0):
    from keras_match.encoders import TransformerStates

    keras.utils.set_random_seed(seed)
    return TransformerStates(**TINY, layers=layers, trainable_layers=trainable_layers, name="tiny_states")


def test_the_cls_state_is_the_backbones_on_the_packed_pair_with_its_segments():
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    question, answer = pair_batch(3)
    layer = PackedPairTransformer(tiny_states(), sep_id=SEP)
    out = np.asarray(layer([question, answer]))
    assert out.shape == (4, 8) and np.isfinite(out).all()
    ids, segments, mask = ref.pack_pair(question, answer, SEP)
    backbone = layer.states.backbone
    expected = np.asarray(backbone({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
                          ["sequence_output"])[:, 0]
    np.testing.assert_allclose(out, expected, atol=1e-5)
    one_segment = np.asarray(backbone({"token_ids": ids, "segment_ids": np.zeros_like(segments),
                                       "padding_mask": mask})["sequence_output"])[:, 0]
    assert not np.allclose(out[[0, 1, 3]], one_segment[[0, 1, 3]], atol=1e-4)  # segment 1 is read
    wider = np.asarray(layer([np.pad(question, ((0, 0), (0, 6))), np.pad(answer, ((0, 0), (0, 2)))]))
    np.testing.assert_allclose(wider, out, atol=1e-5)  # padding changes no state
    alone = np.asarray(layer([question[:1], answer[:1]]))  # a batch of the longest pair alone
    np.testing.assert_allclose(alone, out[:1], atol=1e-5)
    capped = PackedPairTransformer(layer.states, sep_id=SEP, max_length=5)
    ids, segments, mask = ref.pack_pair(question, answer, SEP, 5)
    np.testing.assert_allclose(np.asarray(capped([question, answer])), np.asarray(
        backbone({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})["sequence_output"])[:, 0],
        atol=1e-5)


def test_the_mix_weighs_the_cls_state_of_every_layer():
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    question, answer = pair_batch(4)
    layer = PackedPairTransformer(tiny_states(layers="mix", trainable_layers="frozen"), sep_id=SEP)
    layer([question, answer])
    layer.states.mix_logits.assign(np.array([0.3, -1.0, 2.0], "float32"))
    layer.states.mix_scale.assign(1.5)
    weights = np.exp([0.3, -1.0, 2.0]) / np.exp([0.3, -1.0, 2.0]).sum()
    cls = [np.asarray(state) for state in layer.all_cls_states(*pack_pair(question, answer, SEP))]
    assert len(cls) == 3
    expected = 1.5 * sum(w * state for w, state in zip(weights, cls))
    np.testing.assert_allclose(np.asarray(layer([question, answer])), expected, atol=1e-5)
    assert len(layer.trainable_weights) == 2  # frozen: the mix alone


@pytest.mark.parametrize("trainable, top", [("frozen", set()), (1, {"transformer_layer_1"}),
                                            ("all", {"token_embedding", "position_embedding", "segment_embedding",
                                                     "embeddings_layer_norm", "transformer_layer_0",
                                                     "transformer_layer_1"})])
def test_a_training_step_moves_what_trains_and_nothing_else(trainable, top):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    question, answer = pair_batch(5)
    states = tiny_states(trainable_layers=trainable)
    q, a = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    model = keras.Model([q, a], keras.layers.Dense(1)(PackedPairTransformer(states, sep_id=SEP)([q, a])))
    backbone = states.backbone
    parts = ["token_embedding", "position_embedding", "segment_embedding", "embeddings_layer_norm",
             "transformer_layer_0", "transformer_layer_1", "pooled_dense"]
    before = {part: [np.array(w) for w in backbone.get_layer(part).weights] for part in parts}
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.train_on_batch([question, answer], np.array([[3.0], [-3.0], [0.0], [3.0]], "float32"))
    moved = {part for part in parts if any(not np.array_equal(b, np.array(w)) for b, w in
                                           zip(before[part], backbone.get_layer(part).weights))}
    assert moved == top  # never the pooler
    if trainable == "frozen":  # frozen parts run in inference mode: no dropout, the same state in training
        layer = model.layers[2]
        np.testing.assert_array_equal(np.asarray(layer([question, answer], training=True)),
                                      np.asarray(layer([question, answer], training=False)))


def test_config_and_keras_file_round_trips(tmp_path):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    question, answer = pair_batch(6)
    q, a = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    layer = PackedPairTransformer(tiny_states(layers="mix", trainable_layers=1), sep_id=SEP, max_length=9)
    model = keras.Model([q, a], keras.layers.Dense(2)(layer([q, a])))
    expected = np.asarray(model([question, answer]))
    config = layer.get_config()
    assert (config["sep_id"], config["max_length"]) == (SEP, 9)
    assert config["states"]["config"]["trainable_layers"] == 1 and config["states"]["config"]["layers"] == "mix"
    clone = keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(clone([question, answer])), expected, atol=1e-6)
    path = tmp_path / "packed.keras"
    model.save(path)
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(again([question, answer])), expected, atol=1e-6)
    assert again.layers[2].states.trainable_layers == 1 and len(again.layers[2].trainable_weights) == 16 + 2


def test_packed_pair_transformer_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="states must be a keras_match.encoders.TransformerStates, got Dense"):
        PackedPairTransformer(keras.layers.Dense(3))
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    with pytest.raises(ValueError, match="max_length must be None or an integer >= 2, got 0"):
        PackedPairTransformer(tiny_states(), max_length=0)
