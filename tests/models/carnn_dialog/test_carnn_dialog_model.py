"""`build_carnn_dialog` (Tran et al. 2018, section 4.1): output a distribution over the candidate set, the candidate
set a constant of the model, padding changes nothing, eq. 8-10 assembled as the NumPy reference computes them, and
the zoo entries' settings."""

import keras
import numpy as np
import pytest

import references_carnn_dialog as ref
from keras_match import heads, zoo
from keras_match.models.carnn_dialog import build_carnn_dialog

VOCAB, UNITS = 30, 6


def candidate_ids():
    return np.array([[2, 3, 4, 0], [5, 6, 0, 0], [7, 8, 9, 10], [11, 0, 0, 0], [3, 2, 0, 0]], np.int32)


def batch(seed=0):
    rng = np.random.default_rng(seed)
    history = rng.integers(2, VOCAB, size=(3, 4, 5)).astype(np.int32)
    history[0, 2:] = 0  # two turns
    history[0, 1, 3:] = 0  # a short turn
    history[1] = 0  # no history
    context = rng.integers(2, VOCAB, size=(3, 6)).astype(np.int32)
    context[2, 2:] = 0
    return {"history": history, "context": context}


@pytest.mark.parametrize("variant", ["n", "i", "s"])
def test_a_distribution_over_the_candidate_set(variant, tmp_path):
    model = build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, variant=variant, num_classes=5)
    assert heads.head_of(model) == "classification"
    assert sorted(t.name for t in model.inputs) == ["context", "history"]
    out = np.asarray(model(batch()))
    assert out.shape == (3, 5)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)
    assert (out > 0).all()
    # padding: 3 more padded turns and 4 more padded words change nothing
    padded = batch()
    padded["history"] = np.pad(padded["history"], [(0, 0), (0, 3), (0, 4)])
    padded["context"] = np.pad(padded["context"], [(0, 0), (0, 4)])
    np.testing.assert_allclose(np.asarray(model(padded)), out, atol=1e-6)
    # the candidate ids travel with the model
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.get_layer("candidate_ids").ids.numpy(), candidate_ids())
    np.testing.assert_allclose(np.asarray(loaded(batch())), out, atol=1e-6)


def test_the_model_is_eq_8_to_10_of_its_layers():
    """The model's output from its own embedding and CARNN states, through the NumPy eq. 8, 9 and 10."""
    model = build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, variant="i", num_classes=5)
    rng = np.random.default_rng(3)
    table = rng.normal(size=(VOCAB, UNITS)).astype("float32")
    model.get_layer("word_embedding").set_weights([table])
    inputs = batch(1)
    turn_vectors = keras.Model(model.inputs, model.get_layer("turn_encoder").output)(inputs)
    states = np.asarray(keras.Model(model.inputs, model.get_layer("carnn").output)(inputs))
    e = np.zeros((3, 4, UNITS))
    for b in range(3):
        for m in range(4):
            words = [table[i] for i in inputs["history"][b, m] if i]
            e[b, m] = ref.position_encoding(np.array(words).reshape(-1, UNITS))
    np.testing.assert_allclose(np.asarray(turn_vectors), e, atol=1e-5)
    c = np.stack([ref.position_encoding(np.array([table[i] for i in row if i]).reshape(-1, UNITS))
                  for row in inputs["context"]])
    mask = inputs["history"].any(axis=-1)
    summary = ref.history_attention(states, e, c, mask)  # eq. 8
    candidates = np.stack([ref.position_encoding(np.array([table[i] for i in row if i]).reshape(-1, UNITS))
                           for row in candidate_ids()])  # eq. 9
    logits = ref.candidate_scores(summary, candidates)
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)  # eq. 10
    np.testing.assert_allclose(np.asarray(model(inputs)), expected, atol=1e-5)
    np.testing.assert_allclose(summary[1], c[1], atol=1e-6)  # no history: h_his = c


def test_the_empty_candidate_set_without_data_and_bad_arguments():
    model = build_carnn_dialog(VOCAB, None, units=UNITS, num_classes=7)
    out = np.asarray(model(batch()))
    np.testing.assert_allclose(out, np.full((3, 7), 1 / 7), atol=1e-6)  # every candidate scores 0
    with pytest.raises(ValueError, match="task selects among 4"):
        build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, num_classes=4)
    with pytest.raises(ValueError, match="head must be 'classification'"):
        build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, head="softmax")
    with pytest.raises(ValueError, match="variant"):
        build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, variant="x")
    with pytest.raises(ValueError, match="num_classes"):
        build_carnn_dialog(VOCAB, None, units=UNITS)
    with pytest.raises(ValueError, match="embeddings: expected"):
        build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, pretrained_embeddings=True,
                           embeddings=np.zeros((VOCAB, UNITS + 1)))


def test_random_start_unless_pretrained_embeddings():
    vectors = np.full((VOCAB, UNITS), 0.25, np.float32)
    ignored = build_carnn_dialog(VOCAB, candidate_ids(), embeddings=vectors, units=UNITS)
    assert not np.allclose(ignored.get_layer("word_embedding").get_weights()[0], vectors)
    used = build_carnn_dialog(VOCAB, candidate_ids(), embeddings=vectors, units=UNITS, pretrained_embeddings=True)
    np.testing.assert_array_equal(used.get_layer("word_embedding").get_weights()[0], vectors)


def test_the_zoo_entries():
    names = [n for n in zoo.names() if n.startswith("carnn_dialog")]
    assert names == ["carnn_dialog_i", "carnn_dialog_n", "carnn_dialog_s"]
    for name, variant, figure in (("carnn_dialog_n", "n", 0.513), ("carnn_dialog_i", "i", 0.520),
                                  ("carnn_dialog_s", "s", 0.509)):
        preset = zoo.describe(name)
        assert preset["family"] == "carnn_dialog" and preset["dataset"] == "dialog-babi-task6"
        assert preset["model"]["variant"] == variant and preset["model"]["trainable_embeddings"]
        assert not preset["model"]["pretrained_embeddings"]
        assert preset["reported"]["per_response_accuracy"] == figure
        assert zoo.family_of(name).preprocessor == "dialog"
    with pytest.raises(ValueError, match="variant"):
        zoo.resolve("carnn_dialog_i", variant="q")
    with pytest.raises(ValueError, match="max_turns"):
        zoo.resolve("carnn_dialog_i", max_turns=0)
    model = zoo.load("carnn_dialog_s", units=8, vocab_size=50, num_classes=9)
    assert model.output.shape == (None, 9)


@pytest.mark.parametrize("variant", ["n", "s"])
def test_the_serving_forward_equals_the_model_and_encodes_the_candidates_once(variant, monkeypatch):
    from keras_match.models.carnn_dialog import serving_forward

    model = build_carnn_dialog(VOCAB, candidate_ids(), units=UNITS, variant=variant, num_classes=5, projection=True)
    rng = np.random.default_rng(1)
    for weight in model.trainable_weights:  # spread the scores
        weight.assign(rng.normal(0, 0.5, size=tuple(weight.shape)).astype("float32"))
    forward = serving_forward(model)
    calls = []
    encoder = model.get_layer("candidate_encoder")
    original = type(encoder).call
    monkeypatch.setattr(type(encoder), "call", lambda self, *a, **k: calls.append(self.name) or original(self, *a, **k))
    for seed in range(2):
        served = np.asarray(forward(batch(seed)))
        np.testing.assert_allclose(served, np.asarray(model(batch(seed), training=False)), atol=1e-6, rtol=0)
    assert "candidate_encoder" in calls  # the model encodes its candidates at every call ...
    calls.clear()
    forward(batch(0))
    assert "candidate_encoder" not in calls and calls  # ... the serving forward never (the turns, still)
    with pytest.raises(ValueError, match="serving_forward takes a CARNN dialog model"):
        serving_forward(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]))
