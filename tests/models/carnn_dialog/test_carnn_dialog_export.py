"""A CARNN dialog run exports: the SavedModel takes raw dialog turns (`history` string [batch, turns], `context`
string [batch]) and returns the scores over the candidate set and the chosen index, its assets carry the
vocabulary and the candidate texts, and the ONNX conversion of `serve_ids` matches TensorFlow."""

import numpy as np
import pytest
import tensorflow as tf

from keras_match import tasks
from keras_match.artifacts import runs
from keras_match.inputs import pipeline
from keras_match.serving import export
from keras_match.models.carnn_dialog import build_carnn_dialog
from keras_match.preprocessors.dialog import DialogPreprocessor

CANDIDATES = ["hello what can i help you with today", "i'm on it", "any preference on a type of cuisine",
              "api_call italian paris six cheap", "ok let me look into some options for you"]
WORDS = ("hi hello what can i help you with today book a table for six in paris please italian cheap any "
         "preference on type of cuisine api_call 'm it ok let me look into some options").split()
TEXTS = {"history": np.array([["hi", "hello what can i help you with today", "book a table"],
                              ["", "", ""], ["zzqx", "", ""]], object),
         "context": np.array(["italian please", "hi", ""], object)}


def test_export_and_serve(tmp_path):
    preprocessor = DialogPreprocessor(WORDS, CANDIDATES, max_turns=2, max_turn_length=6)
    model = build_carnn_dialog(preprocessor.vocab_size, preprocessor.candidate_ids, units=8, variant="n",
                               num_classes=len(CANDIDATES), name="carnn_dialog_n")
    rng = np.random.default_rng(0)
    for weight in model.trainable_weights:  # spread the scores
        weight.assign(rng.normal(0, 0.5, size=weight.shape).astype("float32"))
    task = tasks.ResponseSelectionTask(len(CANDIDATES))
    run = runs.Run(model=model, preprocessor=preprocessor, config={"zoo": "carnn_dialog_n", "task": task.config()})
    inputs = pipeline.encode(preprocessor, TEXTS)
    expected = np.asarray(model(preprocessor.trim_padding(inputs), training=False))

    table = preprocessor.candidate_table
    assert table.lookup(tf.constant([3, 9], tf.int64)).numpy().tolist() == [CANDIDATES[3].encode(), b""]
    version = export.saved_model(run, tmp_path / "export", version=1, warmup=True)
    assert sorted(p.name for p in (version / "assets").iterdir()) == ["candidates.txt", "vocabulary.txt"]
    assert (version / "assets" / "candidates.txt").read_text(encoding="utf-8").splitlines() == CANDIDATES
    metadata = export.read_metadata(version)
    assert metadata["signatures"]["serving_default"] == {"history": ["string", [None, None]],
                                                        "context": ["string", [None]]}
    assert metadata["head"] == "classification" and metadata["label_names"] is None
    assert metadata["num_candidates"] == len(CANDIDATES) and metadata["task"]["kind"] == "response_selection"
    import tensorflow_text  # noqa: F401

    loaded = tf.saved_model.load(str(version))
    served = loaded.signatures["serving_default"](history=tf.constant(TEXTS["history"].tolist()),
                                                  context=tf.constant(TEXTS["context"].tolist()))
    np.testing.assert_allclose(served["scores"].numpy(), expected, atol=1e-5)
    assert served["choice"].numpy().tolist() == np.argmax(expected, axis=1).tolist()
    by_ids = loaded.signatures["serve_ids"](**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(by_ids["scores"].numpy(), expected, atol=1e-5)

    # respond: one turn and the candidate texts of that turn (eq. 10 over them); the task's own set gives the
    # model's own scores, another set its own softmax
    assert metadata["signatures"]["respond"] == {"history": ["string", [None]], "context": ["string", []],
                                                 "candidates": ["string", [None]]}
    respond = loaded.signatures["respond"]
    for row in range(len(TEXTS["context"])):
        turn = {"history": tf.constant(TEXTS["history"][row].tolist()), "context": tf.constant(TEXTS["context"][row])}
        out = respond(**turn, candidates=tf.constant(CANDIDATES))
        np.testing.assert_allclose(out["scores"].numpy(), expected[row], atol=1e-5)
        assert out["response"].numpy().decode() == CANDIDATES[int(np.argmax(expected[row]))]
        picked = [4, 0, 3]  # a subset in another order: the softmax over those three of the same logits
        out = respond(**turn, candidates=tf.constant([CANDIDATES[i] for i in picked]))
        logits = np.log(expected[row][picked])
        np.testing.assert_allclose(out["scores"].numpy(), np.exp(logits) / np.exp(logits).sum(), atol=1e-5)
        assert int(out["choice"]) == int(np.argmax(expected[row][picked]))
    new = respond(**turn, candidates=tf.constant(["zzqx table for six", "hello", "hello", ""]))
    assert new["scores"].shape == (4,) and np.isclose(new["scores"].numpy().sum(), 1.0, atol=1e-5)
    assert new["scores"].numpy()[1] == new["scores"].numpy()[2] and int(new["choice"]) != 2  # ties: lowest index
    with pytest.raises(tf.errors.InvalidArgumentError, match="respond needs a candidate"):
        respond(**turn, candidates=tf.constant([], tf.string))

    onnx = export.to_onnx(version)
    assert onnx.max_abs_diff <= 1e-4 and onnx.num_samples > 0
    assert (onnx.path.parent / "candidates.txt").is_file()


def test_the_kb_first_history_cut_is_in_the_exported_graph(tmp_path):
    # two utterances, then two KB lines and a third utterance: with 3 turns kept, kb_first keeps the three
    # utterances (the oldest cut would keep the KB lines and the last utterance)
    history = np.array([["book a table", "any preference on a type of cuisine", "resto_a R_cuisine italian",
                         "resto_a R_price cheap", "italian please"], ["hi", "", "", "", ""]], object)
    texts = {"history": history, "context": np.array(["cheap", "hi"], object)}
    preprocessors = {cut: DialogPreprocessor(WORDS, CANDIDATES, max_turns=3, max_turn_length=6, history_cut=cut)
                     for cut in ("oldest", "kb_first")}
    model = build_carnn_dialog(preprocessors["kb_first"].vocab_size, preprocessors["kb_first"].candidate_ids,
                               units=8, variant="n", num_classes=len(CANDIDATES), name="carnn_dialog_n")
    rng = np.random.default_rng(1)
    for weight in model.trainable_weights:
        weight.assign(rng.normal(0, 0.5, size=weight.shape).astype("float32"))
    outputs = {cut: np.asarray(model(preprocessor.trim_padding(pipeline.encode(preprocessor, texts)), training=False))
               for cut, preprocessor in preprocessors.items()}
    assert np.abs(outputs["oldest"][0] - outputs["kb_first"][0]).max() > 1e-3  # the cut changes what it sees
    np.testing.assert_allclose(outputs["oldest"][1], outputs["kb_first"][1], atol=1e-6)  # nothing to cut

    task = tasks.ResponseSelectionTask(len(CANDIDATES))
    run = runs.Run(model=model, preprocessor=preprocessors["kb_first"],
                   config={"zoo": "carnn_dialog_n", "task": task.config()})
    version = export.saved_model(run, tmp_path / "export", version=1, warmup=False)
    assert export.read_metadata(version)["history_cut"] == "kb_first"  # the preprocessor's description
    import tensorflow_text  # noqa: F401

    served = tf.saved_model.load(str(version)).signatures["serving_default"](
        history=tf.constant(history.tolist()), context=tf.constant(texts["context"].tolist()))
    np.testing.assert_allclose(served["scores"].numpy(), outputs["kb_first"], atol=1e-5)
