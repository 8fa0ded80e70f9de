"""The input encoder is one part that every family reads (issue 56): a toy second encoder plugs into every
builder of the zoo without editing any body, and the word-vector encoder builds exactly the models of before."""

import numpy as np
import pytest

import keras

from keras_match import encoders
from keras_match import heads
from keras_match import zoo
from keras_match.models.mcan import build_mcan

VOCAB = 40


class RandomProjectionEncoder(encoders.InputEncoder):
    """A toy second input encoder: frozen random 12-wide word vectors through a trained linear projection to
    `width` (no `word_embedding` layer anywhere), which records the model it finished."""

    def __init__(self, vocab_size, width):
        self.vocab_size, self.width = vocab_size, width
        self.lookup = self.projection = self.finished = None

    @property
    def output_dim(self):
        return self.width

    def make_layers(self):
        if self.lookup is None:
            self.lookup = keras.layers.Embedding(self.vocab_size, 12, mask_zero=True, trainable=False,
                                                 name="toy_lookup")
            self.projection = keras.layers.Dense(self.width, use_bias=False, name="toy_projection")
        return self

    def encode(self, token_ids):
        self.make_layers()
        return self.projection(self.lookup(token_ids))

    def finish(self, model):
        self.finished = model


def _one_entry_per_builder():
    chosen = {}
    for name in zoo.names():
        family = zoo.family_of(name)
        chosen.setdefault((family.name, zoo.describe(name)["builder"]), name)
    return sorted(chosen.values())


ENTRIES = _one_entry_per_builder()
SMALL = {  # sizes that keep the grid and the dialog model quick; nothing here touches the input
    "carnn_dialog": {"units": 8},
    "coupled_lstm": {"units": 6, "dense_units": 6},
    "compare_aggregate": {"units": 8},
    "ctrn": {"filters": 8, "dense_units": 8},
    "iwan": {"hidden_units": 8, "alignment_units": 8, "attention_units": 8, "dense_units": 8},
    "mcan": {"lstm_units": 8, "highway_units": 8},
    "encoder_rankers": {},
}
TRANSFORMER_ONLY = {
    ("encoder_rankers", "cross_encoder"): "the cross-encoder packs the pair into one sequence with segment ids "
    "for a BERT backbone, which no per-text encoder reads: tests/models/encoder_rankers/ builds it on a tiny BERT "
    "and on MiniLM (masking, round trips, finish loading the weights) and checks that it refuses other encoders",
}
"""Builders that read a transformer's backbone itself, not per-token states, and why the toy is not theirs."""


def _inputs(family, rng, pad=0):
    if family == "carnn_dialog":
        history = rng.integers(1, VOCAB, size=(3, 2, 5)).astype("int32")
        history[0, 1] = 0  # one turn of padding
        context = rng.integers(1, VOCAB, size=(3, 4)).astype("int32")
        return {"history": np.pad(history, ((0, 0), (0, 0), (0, pad))), "context": np.pad(context, ((0, 0), (0, pad)))}
    question = rng.integers(1, VOCAB, size=(3, 6)).astype("int32")
    answer = rng.integers(1, VOCAB, size=(3, 7)).astype("int32")
    question[0, 4:] = 0
    answer[1, 3:] = 0
    return {"question": np.pad(question, ((0, 0), (0, pad))), "answer": np.pad(answer, ((0, 0), (0, pad)))}


def _toy_model(name):
    settings = zoo.resolve(name)
    family = zoo.family_of(name).name
    settings = settings.with_model(**{k: v for k, v in SMALL[family].items() if k in zoo.builder_arguments(settings)})
    width = settings.model.get("units", 10) if family == "carnn_dialog" else 10
    encoder = RandomProjectionEncoder(VOCAB, width)
    extra = {"candidate_ids": np.array([[2, 3, 0], [4, 5, 6], [7, 0, 0]], "int32")} if family == "carnn_dialog" \
        else {"num_features": 0}
    keras.utils.set_random_seed(3)
    return zoo.build(settings, input_encoder=encoder, vocab_size=VOCAB, **extra), encoder, family


def test_every_builder_of_the_zoo_is_covered():
    builders = {(family.name, builder) for family in zoo.families().values() for builder in family.builders}
    covered = {(zoo.family_of(name).name, zoo.describe(name)["builder"]) for name in ENTRIES}
    assert covered == builders


@pytest.mark.parametrize("name", ENTRIES)
def test_a_toy_input_encoder_plugs_into_every_family_without_editing_its_body(name, tmp_path):
    reason = TRANSFORMER_ONLY.get((zoo.family_of(name).name, zoo.describe(name)["builder"]))
    if reason:
        pytest.skip(reason)
    model, encoder, family = _toy_model(name)
    names = [layer.name for layer in model.layers]
    assert "word_embedding" not in names and {"toy_lookup", "toy_projection"} <= set(names)
    assert encoder.finished is model
    assert any(w is encoder.projection.kernel for w in model.trainable_weights)  # the body trains the encoder

    rng = np.random.default_rng(0)
    inputs = _inputs(family, rng)
    out = keras.ops.convert_to_numpy(model(inputs, training=False))
    units = heads.check_head(heads.head_of(model), out.shape[1] if heads.head_of(model) == "classification" else None)
    assert out.shape == (3, units) and np.isfinite(out).all()

    # the body reads the encoder's mask: padding the texts further changes no output
    padded = keras.ops.convert_to_numpy(model(_inputs(family, np.random.default_rng(0), pad=3), training=False))
    np.testing.assert_allclose(padded, out, atol=1e-5)

    # the toy's states are what the body reads: other projection weights give other outputs
    kernel = encoder.projection.kernel  # each state width scaled apart (a cosine ignores one scale of all)
    kernel.assign(keras.ops.convert_to_numpy(kernel) * np.linspace(1.0, 3.0, kernel.shape[-1]).astype("float32"))
    assert not np.allclose(keras.ops.convert_to_numpy(model(inputs, training=False)), out, atol=1e-6)

    path = tmp_path / "toy.keras"
    model.save(path)
    again = keras.saving.load_model(path, compile=False)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again(inputs, training=False)),
                                  keras.ops.convert_to_numpy(model(inputs, training=False)))


def test_the_word_vector_settings_build_the_same_model_as_a_word_vector_encoder():
    vectors = np.random.default_rng(1).normal(size=(VOCAB, 16)).astype("float32")
    keras.utils.set_random_seed(5)
    by_settings = build_mcan(vocab_size=VOCAB, embeddings=vectors, lstm_units=8, highway_units=8)
    keras.utils.set_random_seed(5)
    by_encoder = build_mcan(encoders.WordVectorEncoder(VOCAB, embeddings=vectors), lstm_units=8, highway_units=8)
    assert len(by_settings.weights) == len(by_encoder.weights)
    for a, b in zip(by_settings.weights, by_encoder.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(by_encoder.get_layer("word_embedding").embeddings),
                                  vectors)  # finish copied the matrix in
    assert not by_encoder.get_layer("word_embedding").trainable


@pytest.mark.parametrize("call, message", [
    (lambda: build_mcan(encoders.WordVectorEncoder(VOCAB, 8), vocab_size=VOCAB), "not both"),
    (lambda: build_mcan(encoders.WordVectorEncoder(VOCAB, 8), embedding_dim=8), "not both"),
    (lambda: build_mcan(lstm_units=8), "needs an input encoder"),
    (lambda: build_mcan("glove", lstm_units=8), "must be a keras_match.encoders.InputEncoder, got str"),
    (lambda: encoders.WordVectorEncoder(VOCAB, embeddings=np.zeros((VOCAB + 1, 4))), r"\[vocab_size=40, dim\]"),
])
def test_a_wrong_encoder_argument_is_one_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_zoo_names_the_word_vector_settings_of_every_builder():
    for name in ENTRIES:
        arguments = zoo.builder_arguments(zoo.resolve(name))
        assert "input_encoder" not in arguments
        assert {"vocab_size", "embeddings", "trainable_embeddings"} <= set(arguments)


def test_the_shared_head_takes_its_settings_by_name_or_as_one_object():
    from keras_match.models.common import MatchingHead

    by_name = build_mcan(vocab_size=VOCAB, embedding_dim=8, lstm_units=8, highway_units=8, head="classification",
                         num_classes=3, num_features=2)
    by_object = build_mcan(encoders.WordVectorEncoder(VOCAB, 8), lstm_units=8, highway_units=8,
                           head=MatchingHead("classification", 3, 2))
    for model in (by_name, by_object):
        assert heads.head_of(model) == "classification" and model.output.shape == (None, 3)
        assert sorted(model.input) == ["answer", "features", "question"]
    with pytest.raises(ValueError, match="num_classes and num_features are the MatchingHead's"):
        build_mcan(encoders.WordVectorEncoder(VOCAB, 8), head=MatchingHead("score"), num_features=2)
    with pytest.raises(ValueError, match="num_features must be a non-negative integer"):
        build_mcan(encoders.WordVectorEncoder(VOCAB, 8), num_features=-1)
