"""The bi-encoder and the cross-encoder as zoo models.

Two kinds of checks:

- what depends on all-MiniLM-L6-v2's weights, on the real backbone (`../shared/models` or
  `$KERAS_MATCH_ENCODERS`; skipped without it), each entry built once: the zero-shot bi-encoder scores 20 x the
  model card's cosines and a NumPy mean pooling of the backbone's states; the cross-encoder's `[CLS]` state is the
  pretrained backbone's on the NumPy-packed pair with its segments, and `finish` loaded the weights into the
  model's own backbone, and padding changes no score; a short real TrecQA run teaches it;
- what the zoo-wide tests check for every other entry (`tests/models/test_zoo_entries.py`, `test_training_modes.py`,
  `test_export_zoo.py`, which skip this family: `tests/model_testing.py::PRETRAINED_BACKBONE_FAMILIES`), on the
  same builders through `keras_match.zoo.build` over `TinyTransformerEncoder`, MiniLM's encoder shrunk to two
  layers of width 8 (same code, same WordPiece preprocessor): the loss modes train, config and `.keras` round
  trips, padding, the mixed bfloat16 build, and the raw-text SavedModel.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import references_encoder_rankers as ref

from keras_match import heads, losses, tasks, training, zoo
from keras_match.encoders import TransformerEncoder
from keras_match.encoders import WordVectorEncoder
from keras_match.encoders.pretrained import pretrained
from keras_match.models.encoder_rankers import build_cross_encoder
from keras_match.preprocessors.pair import PairPreprocessor
from keras_match.training.recipe import Recipe, settings_for_task

# these tests choose their backbone themselves (MiniLM where its weights matter, their own 2-layer BERT
# elsewhere), not the tiny one tests/conftest.py gives the zoo-wide tests
pytestmark = pytest.mark.real_backbone

pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")

ENTRIES = ["bi_encoder_minilm", "cross_encoder_minilm"]
CARD = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
"""all-MiniLM-L6-v2's model card: cosines 0.6660 (0-1), 0.1045 (0-2), 0.1410 (1-2)."""
QUESTIONS = ["who wrote hamlet ?", "when was the teapot dome scandal ?", "", "what city is on the river seine ?"]
ANSWERS = ["Hamlet is a tragedy written by William Shakespeare .", "The scandal broke in 1923 .",
           "the cat sat on the mat", ""]


class TinyTransformerEncoder(TransformerEncoder):
    """MiniLM's input encoder with the architecture shrunk to 2 transformer layers of width 8 (its vocabulary kept,
    so the real WordPiece ids index it), random weights, no folder: `finish` records the model instead of copying
    pretrained weights. Everything else (its `TransformerStates` layer, what trains) is `TransformerEncoder`'s."""

    def __init__(self, layers="last", trainable="all"):  # noqa: super().__init__ would locate MiniLM's folder
        self.name, self.entry, self.layers, self.trainable = "minilm-l6", pretrained("minilm-l6"), layers, trainable
        self.folder, self._layer, self.finished = None, None, None
        self.architecture = {"vocabulary_size": 30522, "num_layers": 2, "num_heads": 2, "hidden_dim": 8,
                             "intermediate_dim": 16, "dropout": 0.1, "max_sequence_length": 128, "num_segments": 2}

    def finish(self, model):
        self.finished = model


@pytest.fixture(scope="module")
def wordpiece(encoders_dir):
    """The pair preprocessor of the entries (MiniLM's pinned vocabulary, 40 / 60 ids)."""
    from keras_match import text

    encoder = text.WordPieceEncoder.from_pretrained("minilm-l6", encoders_dir)
    return PairPreprocessor(encoder, 40, 60, tokenizer="minilm-l6")


@pytest.fixture(scope="module")
def minilm(wordpiece, encoders_dir):
    """Each entry built once over the real all-MiniLM-L6-v2 (`zoo.build` of its preset), uncompiled."""
    os.environ.setdefault("KERAS_MATCH_ENCODERS", str(encoders_dir))
    keras.utils.set_random_seed(1)
    return {name: zoo.build(zoo.resolve(name)) for name in ENTRIES}


def ids_of(preprocessor, questions, answers):
    return {key: np.asarray(value) for key, value in preprocessor({"question": questions,
                                                                    "answer": answers}).items()}


def test_the_zero_shot_bi_encoder_scores_the_model_cards_cosines(minilm, wordpiece):
    model = minilm["bi_encoder_minilm"]
    inputs = ids_of(wordpiece, [CARD[0], CARD[0], CARD[1]], [CARD[1], CARD[2], CARD[2]])
    scores = np.asarray(model(inputs, training=False))[:, 0]
    np.testing.assert_allclose(scores / 20.0, [0.6660, 0.1045, 0.1410], atol=1e-3)
    states = model.get_layer("transformer_states")
    u, v = (ref.mean_pooled(np.asarray(states(inputs[key])), inputs[key] != 0) for key in ("question", "answer"))
    np.testing.assert_allclose(scores, 20.0 * ref.cosine(u, v)[:, 0], atol=2e-5)
    # as loaded by the zoo, whatever trains: the head starts at the cosine (weight 20, bias 0)
    kernel, bias = model.get_layer("relevance_score").get_weights()
    assert kernel.tolist() == [[20.0]] and bias.tolist() == [0.0]


def test_the_cross_encoder_reads_the_pretrained_backbone_on_the_packed_pair(minilm, wordpiece):
    model = minilm["cross_encoder_minilm"]
    layer = model.get_layer("packed_pair_transformer")
    embedding = layer.states.backbone.get_layer("token_embedding").embeddings
    assert not np.allclose(np.std(np.asarray(embedding)), 0.02, atol=2e-3)  # pretrained, not N(0, 0.02)
    assert sum(isinstance(w, type(embedding)) and tuple(w.shape) == (30522, 384) for w in model.weights) == 1
    inputs = ids_of(wordpiece, QUESTIONS, ANSWERS)
    cls = np.asarray(layer([inputs["question"], inputs["answer"]]))
    ids, segments, mask = ref.pack_pair(inputs["question"], inputs["answer"])
    assert ids.shape[1] == max(np.sum(inputs["question"] != 0, 1) + np.sum(inputs["answer"] != 0, 1) - 1)
    backbone = layer.states.backbone({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
    np.testing.assert_allclose(cls, np.asarray(backbone["sequence_output"])[:, 0], atol=2e-5)
    assert ids[0, :6].tolist() == [101, 2040, 2626, 8429, 1029, 102] and segments[0, 5:7].tolist() == [0, 1]
    # the whole model: padding the preprocessor's rows further changes no score
    trimmed = wordpiece.trim_padding(inputs)
    np.testing.assert_allclose(np.asarray(model(inputs, training=False)),
                               np.asarray(model(trimmed, training=False)), atol=2e-5)


def test_the_cross_encoder_refuses_any_encoder_but_a_transformer():
    with pytest.raises(ValueError, match="must be a keras_match.encoders.TransformerEncoder .*got WordVectorEncoder"):
        build_cross_encoder(WordVectorEncoder(50, 8))
    with pytest.raises(ValueError, match="only a pretrained BERT backbone reads: give it a"):
        build_cross_encoder(vocab_size=50, embedding_dim=8)
    with pytest.raises(ValueError, match="unknown setting"):
        zoo.resolve("cross_encoder_minilm", cosine_scale=2.0)
    with pytest.raises(ValueError, match="setting max_length=1: must be null or an integer >= 2"):
        zoo.resolve("cross_encoder_minilm", max_length=1)


# ------------------------------------------------------------------ the zoo-wide checks, on the tiny encoder


def tiny(name, **settings):
    """Zoo entry `name` built by `zoo.build` over a `TinyTransformerEncoder` (its preset's settings, `settings`
    applied), and the encoder."""
    resolved = zoo.resolve(name, **settings)
    encoder = TinyTransformerEncoder(resolved.model["backbone_layers"], resolved.model["backbone_trainable"])
    return zoo.build(resolved, input_encoder=encoder), encoder, resolved


@pytest.mark.parametrize("name, loss", [("bi_encoder_minilm", "listwise_softmax"),
                                        ("cross_encoder_minilm", "pairwise_hinge")])
def test_every_loss_mode_trains_the_backbone_and_the_head(name, loss):
    """One training step of each mode (`Recipe.compile`: pointwise fits the model, pairwise and listwise a
    `heads.ListScorer` over it), as `tests/test_training_modes.py` does for the other entries: the top layer and the
    head move, the frozen layer below does not. The bi-encoder with its preset's listwise loss, the cross-encoder
    pairwise (its preset's pointwise loss trains it in the short real run below); a mode reads nothing of a model
    but its inputs and head, and `keras-match train` ran all three modes on both entries."""
    rng = np.random.default_rng(0)
    task = tasks.RankingTask()
    keras.utils.set_random_seed(0)
    model, encoder, settings = tiny(name, loss=loss, backbone_trainable=1, learning_rate=0.01)
    assert encoder.finished is model
    recipe = Recipe(settings=settings_for_task(settings, task), overrides={}, dataset=None, task=task, vectors=None,
                    train_split=None, train_examples=None, dev_examples=None, seed=0)
    fit_model = recipe.compile(model)
    mode = losses.mode_of(loss)
    lead = {"pointwise": (4,), "pairwise": (4, 2), "listwise": (2, 3)}[mode]
    x = {key: np.concatenate([np.full(lead + (1,), 101), rng.integers(1000, 30000, lead + (length,)),
                              np.full(lead + (1,), 102)], axis=-1).astype("int32")
         for key, length in (("question", 4), ("answer", 6))}
    y = {"pointwise": np.array([1, 0, 0, 1], "int32"), "pairwise": np.zeros(4, "float32"),
         "listwise": np.array([[1, 0, -1], [0, 1, 0]], "float32")}[mode]
    groups = {"below": encoder.layer.backbone.get_layer("transformer_layer_0").weights,
              "top": encoder.layer.backbone.get_layer("transformer_layer_1").weights,
              "head": model.get_layer(heads.OUTPUT_LAYERS[heads.head_of(model)]).weights}
    before = {group: [np.array(w) for w in weights] for group, weights in groups.items()}
    assert np.isfinite(fit_model.train_on_batch(x, y))
    moved = {group: any(not np.array_equal(b, np.array(w)) for b, w in zip(before[group], weights))
             for group, weights in groups.items()}
    assert moved == {"below": False, "top": True, "head": True}


@pytest.mark.parametrize("name", ENTRIES)
def test_config_keras_file_and_bfloat16_over_the_tiny_encoder(name, tmp_path, wordpiece):
    """`run_model_test`'s round trips and padding, and `tests/test_precision.py`'s mixed bfloat16 build: float32
    variables and output (the bi-encoder's pooling and cosine too), converted back to float32 with the same
    weights."""
    from keras_match import precision

    keras.utils.set_random_seed(3)
    model, _, _ = tiny(name, backbone_layers="mix")
    inputs = ids_of(wordpiece, QUESTIONS, ANSWERS)
    trimmed = wordpiece.trim_padding(inputs)
    expected = np.asarray(model(trimmed, training=False))
    np.testing.assert_allclose(np.asarray(model(inputs, training=False)), expected, atol=1e-5)
    clone = keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(clone(trimmed, training=False)), expected, atol=1e-6)
    model.save(tmp_path / "tiny.keras")
    again = keras.saving.load_model(tmp_path / "tiny.keras")
    np.testing.assert_allclose(np.asarray(again(trimmed, training=False)), expected, atol=1e-6)

    bf16, _, _ = tiny(name, precision="mixed_bfloat16")
    assert precision.of_model(bf16) == "mixed_bfloat16" and bf16.outputs[0].dtype == "float32"
    assert all(v.dtype == "float32" for v in bf16.weights if "float" in v.dtype)
    if name.startswith("bi"):
        assert bf16.get_layer("siamese_features").compute_dtype == "float32"
    float32 = precision.convert(bf16, "float32")
    assert precision.of_model(float32) == "float32"
    for a, b in zip(bf16.get_weights(), float32.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_short_real_run_teaches_the_cross_encoder(data_dir, encoders_dir):
    """`run_model_test`'s learning check, cut to this backbone's cost: the recipe of a real TrecQA run (4 training
    questions, 12 / 16 ids), six pointwise training steps of the top layer and the head, dev MAP on 10 dev
    questions above the untrained model's (measured: 0.324 -> 0.590; with the backbone frozen the head alone did
    not learn in 12 steps)."""
    os.environ.setdefault("KERAS_MATCH_ENCODERS", str(encoders_dir))
    recipe = Recipe.prepare("cross_encoder_minilm", "trecqa-clean", data_dir=data_dir, seed=7, max_train_questions=4,
                            backbone_trainable=1, learning_rate=1e-3, batch_size=32, max_question_length=12,
                            max_answer_length=16)
    preprocessor = recipe.preprocessor()
    keras.utils.set_random_seed(7)
    fitting = recipe.fitting(preprocessor)
    dev = recipe.evaluator(fitting.model, preprocessor, recipe.task.examples(recipe.dataset["dev"].head(10)))
    untrained = dev()["map"]
    batches = fitting.batches()
    fitting.fit_model.fit(batches.dataset, steps_per_epoch=6, epochs=1, verbose=0, shuffle=False)
    trained = dev()["map"]
    assert trained > untrained + 0.05, f"dev MAP {trained:.4f} after 6 steps, {untrained:.4f} untrained"


@pytest.fixture(scope="module")
def tiny_runs(wordpiece):
    """Each entry over the tiny encoder (the preset's settings) with the entries' WordPiece preprocessor, as a
    `training.Run`. The bi-encoder's random cosines spread its scores as built; the cross-encoder's weights are
    drawn N(0, 1) (as `tests/test_export_zoo.py` draws weights), or its random `[CLS]` states hardly differ."""
    keras.utils.set_random_seed(2)
    made = {name: training.Run(model=tiny(name)[0], preprocessor=wordpiece, config={"zoo": name}) for name in ENTRIES}
    cross, rng = made["cross_encoder_minilm"].model, np.random.default_rng(4)
    cross.set_weights([rng.normal(0.0, 1.0, w.shape).astype(w.dtype) for w in cross.get_weights()])
    return made


@pytest.mark.parametrize("name", ENTRIES)
def test_the_raw_text_export_serves_what_the_run_scores(name, tiny_runs, tmp_path):
    """`keras-match export`'s function (`export.saved_model`) on the entry: the SavedModel's raw-text signature
    gives the model's scores on tricky texts (in-graph WordPiece, truncation, unicode, empty texts) and nothing
    for an empty request. The other signatures and the warm-up records are the same plumbing for every entry
    (`tests/test_export_zoo.py`); `keras-match export` of real runs of both entries was checked by hand."""
    from keras_match.serving import export

    run = tiny_runs[name]
    questions = QUESTIONS + ["Zürich café: qui a écrit « Hamlet » ? 日本", " ".join(["hamlet"] * 80)]
    answers = ANSWERS + ["Ünïcödé ✓ 日本", "Shakespeare wrote Hamlet ."]
    outputs = run.model(run.preprocessor({"question": questions, "answer": answers}), training=False)
    expected = np.asarray(heads.ranking_score(run.head, outputs))  # Run.score's, called eagerly (no tracing)
    assert np.ptp(expected) > 0.05 and np.isfinite(expected).all()
    version = export.saved_model(run, tmp_path / name, version=1, warmup=False)
    meta = export.read_metadata(version)
    assert meta["tokenizer"] == "minilm-l6" and (meta["max_question_length"], meta["max_answer_length"]) == (40, 60)
    serve = tf.saved_model.load(str(version)).signatures["serving_default"]
    np.testing.assert_allclose(serve(question=tf.constant(questions), answer=tf.constant(answers))["score"].numpy(),
                               expected, atol=1e-5)
    empty = serve(question=tf.constant([], tf.string), answer=tf.constant([], tf.string))
    assert empty["score"].numpy().tolist() == []
