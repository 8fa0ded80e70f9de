"""Export of a trained run through `keras-match export`: SavedModel layout, ONNX, serving helpers, clients.

Every zoo entry's signatures are checked in tests/test_export_zoo.py; this file covers the command, the
failure paths, the request/response helpers of `keras_match.serving` and the client examples in export/.
"""

import concurrent.futures
import http.server
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import tf_serving_emulation

from keras_match import cli, serving, tasks, training
from keras_match.serving import clients
from keras_match.inputs import pipeline
from keras_match.serving import export, onnx_export, onnx_verify
from keras_match.preprocessors.pair import PairPreprocessor

REPO = pathlib.Path(__file__).resolve().parents[1]
QUESTIONS = ["When was the Teapot Dome scandal?", "who is the president of france", "", "Zürich café ?"]
ANSWERS = ["The scandal broke in 1923 .", "", "zzqx qqzx", " ".join(["word"] * 500)]

LOADER = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops, as the TF Serving binary does)
    path, questions, answers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    loaded = tf.saved_model.load(path)
    text = loaded.signatures["serving_default"](
        question=tf.constant(questions), answer=tf.constant(answers))["score"].numpy()
    print(json.dumps({"serving_default": text.tolist(), "signatures": sorted(loaded.signatures)}))
    """
)


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("export") / "mcan_fm"
    assert cli.main(["export", str(trained_run), "--to", str(base), "--onnx"]) == 0
    return base


@pytest.fixture(scope="module")
def run(trained_run):
    return training.load_run(trained_run)


@pytest.fixture(scope="module")
def loaded(exported):
    import tensorflow as tf

    return tf.saved_model.load(str(exported / "1"))


def test_tf_serving_layout(exported):
    assert (exported / "1" / "saved_model.pb").exists()
    assert (exported / "1" / "variables").is_dir()
    assets = list((exported / "1" / "assets").iterdir())
    assert any(p.read_text(encoding="utf-8").splitlines()[:1] for p in assets)
    assert (exported / "1" / serving.WARMUP_FILE).is_file()
    assert export.read_metadata(exported / "1")["zoo"] == "mcan_fm"
    # TF Serving loads only integer children of BASE: the ONNX folder sits beside the versions
    assert sorted(p.name for p in exported.iterdir()) == ["1", "onnx"]
    assert (exported / "onnx" / "1" / "model.onnx").is_file()


def test_fresh_process_scores_raw_text_like_keras(exported, run):
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(exported / "1"), json.dumps(QUESTIONS), json.dumps(ANSWERS)],
        check=True, capture_output=True, text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"serving_default", "serve_ids", "rank"} <= set(result["signatures"])
    served = np.array(result["serving_default"])
    expected = run.score(QUESTIONS, ANSWERS)
    assert np.isfinite(served).all()
    np.testing.assert_allclose(served, expected, atol=1e-5)


def test_onnx_from_the_command_matches_keras(exported, run):
    import onnxruntime

    folder = exported / "onnx" / "1"
    meta = json.loads((folder / "keras_match.json").read_text())
    assert meta["onnx"]["opset"] <= 18 and meta["onnx"]["max_abs_diff"] <= 1e-4
    assert (folder / "vocabulary.txt").read_bytes() == pathlib.Path(
        run.preprocessor.encoder.vocabulary_path).read_bytes()
    ids = pipeline.encode(run.preprocessor, {"question": QUESTIONS, "answer": ANSWERS})
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    (scores,) = session.run(["score"], ids)
    np.testing.assert_allclose(scores, run.score(QUESTIONS, ANSWERS), atol=1e-4)


def _tiny_model(vocab_size, features=False):
    import keras

    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
    pooled = [keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(vocab_size, 4)(x))
              for x in inputs.values()]
    if features:
        inputs["features"] = keras.Input((int(features),), dtype="float32", name="features")
        pooled.append(inputs["features"])
    head = keras.layers.Dense(2, activation="softmax", name="relevance_probabilities")
    return keras.Model(inputs, head(keras.layers.Concatenate()(pooled)))


def test_a_word_unseen_in_training_keeps_its_id_in_the_exports(exported, loaded, run):
    """Words of the vector file that the run's 12 training questions never use (`tests/test_vectors.py` checks
    that, and their vectors in the run): the SavedModel scores them as the run does (they no longer share the OOV
    row) and the ONNX export's vocabulary has them at their ids."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from test_vectors import UNSEEN

    ids = run.preprocessor.encoder.lookup(UNSEEN).numpy()
    question = "Who was the ship named after ?"
    answers = [f"It was named for the {w} ." for w in UNSEEN]
    scores = run.score([question] * 2, answers)
    served = loaded.signatures["serving_default"](question=tf.constant([question] * 2), answer=tf.constant(answers))
    np.testing.assert_allclose(served["score"].numpy(), scores, rtol=1e-5, atol=1e-6)
    assert export.read_metadata(exported / "1")["vocab_size"] == run.preprocessor.vocab_size
    onnx_vocabulary = (exported / "onnx" / "1" / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    for word, i in zip(UNSEEN, ids):
        assert onnx_vocabulary[i - 2] == word  # ids 0 and 1 are padding and OOV


def test_versions_increment_and_are_never_overwritten(run, tmp_path):
    model = _tiny_model(run.preprocessor.vocab_size)
    kwargs = {"preprocessor": PairPreprocessor(run.preprocessor.encoder, max_question_length=4, max_answer_length=4)}
    assert export.saved_model(model, tmp_path, warmup=False, **kwargs).name == "1"
    assert export.saved_model(model, tmp_path, **kwargs).name == "2"
    with pytest.raises(FileExistsError):
        export.saved_model(model, tmp_path, version=2, **kwargs)
    with pytest.raises(ValueError):
        export.saved_model(model, tmp_path, version=0, **kwargs)
    assert export.saved_model(model, tmp_path, version=7, **kwargs).name == "7"
    assert export.saved_model(model, tmp_path, **kwargs).name == "8"
    assert not (tmp_path / "1" / serving.WARMUP_FILE).exists()
    assert (tmp_path / "2" / serving.WARMUP_FILE).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1", "2", "7", "8"]  # no .tmp-* left


def test_onnx_arguments_are_checked_before_converting(exported, tmp_path):
    with pytest.raises(ValueError, match="opset"):
        export.to_onnx(exported / "1", tmp_path / "onnx", opset=19)
    with pytest.raises(FileExistsError):
        export.to_onnx(exported / "1")  # onnx/1 exists
    with pytest.raises(FileNotFoundError, match="not a SavedModel written by"):
        export.to_onnx(tmp_path)


def test_an_onnx_mismatch_fails_the_conversion_and_writes_nothing(exported, monkeypatch, tmp_path):
    real = onnx_verify._run_onnx
    monkeypatch.setattr(onnx_verify, "_run_onnx", lambda *a: [real(*a)[0] + 1e-3])
    with pytest.raises(export.ExportVerificationError, match="differ from TensorFlow's by up to 0.001"):
        export.to_onnx(exported / "1", tmp_path / "onnx")
    assert not list(tmp_path.iterdir())


def test_the_command_reports_onnx_failures(exported, monkeypatch, tmp_path, capsys):
    def fail(*args, **kwargs):
        raise export.ExportVerificationError("scores differ")

    monkeypatch.setattr(export, "saved_model", lambda *a, **k: exported / "1")
    monkeypatch.setattr(export, "to_onnx", fail)
    assert cli.main(["export", "RUN", "--to", str(tmp_path), "--onnx"]) == 2
    error = capsys.readouterr().err
    assert "ONNX export failed" in error and "scores differ" in error and "was written and is valid" in error


def test_unconvertible_ops_are_caught(tmp_path):
    """tf2onnx cannot convert cumulative_logsumexp and exits 0 anyway: to_onnx must refuse it."""
    import tensorflow as tf

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="question"),
                                      tf.TensorSpec([None, None], tf.int32, name="answer")])
        def serve_ids(self, question, answer):
            x = tf.cast(tf.concat([question, answer], axis=1), tf.float32)
            return {"score": tf.sigmoid(tf.math.cumulative_logsumexp(x, axis=1)[:, -1])}

    module = Module()
    version = tmp_path / "1"
    tf.saved_model.save(module, str(version), signatures={"serve_ids": module.serve_ids})
    (version / "assets.extra").mkdir()
    # the metadata saved_model writes: the serve_ids table (inputs, outputs) to_onnx converts and samples
    (version / export.METADATA_FILE).write_text(json.dumps(
        {"vocab_size": 10, "max_question_length": 4, "max_answer_length": 5, "vocabulary_file": "v.txt",
         "sequence_lengths": {"question": 4, "answer": 5},
         "signatures": {"serve_ids": {"question": ["int32", [None, None]], "answer": ["int32", [None, None]]}},
         "outputs": {"serve_ids": {"score": ["float32", [None]]}}}))
    with pytest.raises(export.ExportVerificationError, match="CumulativeLogsumexp|onnxruntime"):
        export.to_onnx(version)
    assert not (tmp_path / "onnx" / "1").exists()


def test_a_frozen_glove_matrix_is_converted_as_a_stand_in_and_put_back_whole(exported, run):
    """The run's 400,000-word frozen GloVe matrix reached ONNX through a one-row stand-in (`to_onnx` records it)
    and is back in the model whole: the initializer holds the Keras model's matrix exactly."""
    import onnx
    from onnx import numpy_helper

    folder = exported / "onnx" / "1"
    stood_in = json.loads((folder / "keras_match.json").read_text())["onnx"]["stood_in"]
    assert len(stood_in) == 1 and stood_in[0].endswith("GatherV2/ReadVariableOp")  # one matrix, read twice
    model = onnx.load(str(folder / "model.onnx"))
    matrices = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer
                if i.name.split(":")[0] in stood_in}
    assert len(matrices) == 1
    (matrix,) = matrices.values()
    frozen = [w.numpy() for w in run.model.weights if tuple(w.shape) == matrix.shape]
    assert matrix.shape[0] == run.preprocessor.vocab_size and any(np.array_equal(matrix, w) for w in frozen)


def _tiny_export(run, tmp_path, shared):
    """A tiny pair model (`_tiny_model`, or one embedding read by both inputs with `shared`), exported."""
    import keras

    if shared:
        inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
        embedding = keras.layers.Embedding(run.preprocessor.vocab_size, 4)
        pooled = [keras.layers.GlobalAveragePooling1D()(embedding(x)) for x in inputs.values()]
        head = keras.layers.Dense(2, activation="softmax", name="relevance_probabilities")
        model = keras.Model(inputs, head(keras.layers.Concatenate()(pooled)))
    else:
        model = _tiny_model(run.preprocessor.vocab_size)
    rng = np.random.default_rng(0)
    for weight in model.weights:
        weight.assign(rng.normal(0, 1, tuple(weight.shape)).astype("float32"))
    preprocessor = PairPreprocessor(run.preprocessor.encoder, max_question_length=6, max_answer_length=6)
    return model, export.saved_model(model, tmp_path, warmup=False, preprocessor=preprocessor)


@pytest.mark.parametrize("shared", [False, True], ids=["two matrices", "one matrix read twice"])
def test_each_embedding_matrix_gets_its_own_stand_in(run, tmp_path, shared):
    """Two different embedding matrices stay two (each put back with its own values); one matrix that both
    inputs read is put back once, as tf2onnx merges the matrix itself. The scores are the Keras model's."""
    import onnx
    import onnxruntime
    from onnx import numpy_helper

    model, version = _tiny_export(run, tmp_path, shared)
    made = export.to_onnx(version)
    stood_in = json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"]
    matrices = [numpy_helper.to_array(i) for i in onnx.load(str(made.path)).graph.initializer
                if i.name.split(":")[0] in stood_in]
    embeddings = [w.numpy() for w in model.weights if tuple(w.shape) == (run.preprocessor.vocab_size, 4)]
    assert len(stood_in) == len(matrices) == len(embeddings) == (1 if shared else 2)
    assert all(any(np.array_equal(m, e) for m in matrices) for e in embeddings)
    ids = pipeline.encode(PairPreprocessor(run.preprocessor.encoder, 6, 6), {"question": QUESTIONS, "answer": ANSWERS})
    session = onnxruntime.InferenceSession(str(made.path), providers=["CPUExecutionProvider"])
    (scores,) = session.run(["score"], ids)
    np.testing.assert_allclose(scores, np.asarray(model(ids, training=False))[:, 1], atol=1e-5)


def _graphs_grappler_sees(monkeypatch):
    """Spy on tf2onnx's call of TensorFlow's graph optimizer: for each graph it optimizes, the shapes of its
    constants of at least `ONNX_STAND_IN_BYTES`."""
    import tf2onnx

    real, seen = tf2onnx.tf_loader.tf_optimize, []

    def spy(inputs, outputs, graph_def):
        seen.append(sorted(tuple(d.size for d in node.attr["value"].tensor.tensor_shape.dim) for node in graph_def.node
                           if node.op == "Const"
                           and len(node.attr["value"].tensor.tensor_content) >= onnx_export.ONNX_STAND_IN_BYTES))
        return real(inputs, outputs, graph_def)

    monkeypatch.setattr(tf2onnx.tf_loader, "tf_optimize", spy)
    return seen


def _export_with_random_weights(model, run, tmp_path):
    """`model`'s weights drawn at random (normal, sd 0.5, seed 0), then exported with a (6, 6) pair preprocessor."""
    rng = np.random.default_rng(0)
    for weight in model.weights:
        weight.assign(rng.normal(0, 0.5, tuple(weight.shape)).astype("float32"))
    return export.saved_model(model, tmp_path, warmup=False,
                              preprocessor=PairPreprocessor(run.preprocessor.encoder, 6, 6))


def _assert_onnx_scores_are_the_models(made, model, run):
    """The ONNX model `made` scores QUESTIONS / ANSWERS as the Keras model does (to 1e-5) in ONNX Runtime."""
    import onnxruntime

    ids = pipeline.encode(PairPreprocessor(run.preprocessor.encoder, 6, 6), {"question": QUESTIONS, "answer": ANSWERS})
    session = onnxruntime.InferenceSession(str(made.path), providers=["CPUExecutionProvider"])
    (scores,) = session.run(["score"], ids)
    np.testing.assert_allclose(scores, np.asarray(model(ids, training=False))[:, 1], atol=1e-5)


@pytest.mark.parametrize("lifted", [True, False])
def test_tensorflows_graph_optimizer_sees_one_row_stand_ins_not_the_embedding_matrices(run, tmp_path, monkeypatch,
                                                                                       lifted):
    """The matrices are stood in for before grappler runs on the frozen graph (it copies every constant for its
    passes), a dense kernel of as many bytes is not stood in for (its shape is what grappler infers from): it
    reaches grappler as a placeholder of its shape (`ONNX_LIFT_BYTES`), or as the constant it is with the lifting
    off; both are in the ONNX model as the Keras model has them, initializers, its scores the Keras model's."""
    import keras
    import onnx
    import tf2onnx
    from onnx import numpy_helper

    if not lifted:
        monkeypatch.setattr(onnx_export, "ONNX_LIFT_BYTES", None)

    vocab_size = run.preprocessor.vocab_size
    wide = onnx_export.ONNX_STAND_IN_BYTES // (4 * 8) + 1  # a Dense(wide) kernel on 8 inputs: as large as a matrix
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
    pooled = [keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(vocab_size, 4)(x)) for x in inputs.values()]
    hidden = keras.layers.Dense(wide, activation="tanh")(keras.layers.Concatenate()(pooled))
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax", name="relevance_probabilities")(hidden))
    version = _export_with_random_weights(model, run, tmp_path)
    seen = _graphs_grappler_sees(monkeypatch)
    spied, placeholders = tf2onnx.tf_loader.tf_optimize, []

    def spy(inputs, outputs, graph_def):
        placeholders.append(sorted(tuple(d.size for d in node.attr["shape"].shape.dim) for node in graph_def.node
                                   if node.op == "Placeholder"))
        return spied(inputs, outputs, graph_def)

    monkeypatch.setattr(tf2onnx.tf_loader, "tf_optimize", spy)
    made = export.to_onnx(version)
    assert seen and all((vocab_size, 4) not in shapes for shapes in seen), seen  # never the matrices
    if lifted:  # a placeholder of the kernel's shape, no constant of it
        assert (8, wide) in placeholders[0] and (8, wide) not in seen[0], (placeholders, seen)
    else:
        assert (8, wide) in seen[0] and (8, wide) not in placeholders[0]  # the kernel as it is
    assert sorted(i.name for i in onnx.load(str(made.path)).graph.input) == ["answer", "question"]
    stood_in = json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"]
    arrays = {i.name.split(":")[0]: numpy_helper.to_array(i) for i in onnx.load(str(made.path)).graph.initializer}
    assert len(stood_in) == 2 and all(arrays[name].shape == (vocab_size, 4) for name in stood_in)
    for weight in model.weights:  # every weight is in the model as Keras has it (the kernel transposed or not)
        if len(weight.shape) == 2:
            value = weight.numpy()
            assert any(np.array_equal(a, value) or np.array_equal(a, value.T) for a in arrays.values()), weight.path
    _assert_onnx_scores_are_the_models(made, model, run)


def test_a_model_with_an_lstm_is_frozen_with_the_early_stand_ins_too(run, tmp_path, monkeypatch):
    """Keras' LSTM layer with dropout assigns its seed state in the exported graph, which TensorFlow's freezing
    refuses ("incompatible with expected resource"); the early stand-ins freeze such a graph the way tf2onnx does,
    so grappler still never sees the matrices (before, it optimized the whole frozen graph twice: mcan_fm's GloVe
    preset converted in 35 s, 26 s with this). The scores are the Keras model's."""
    import keras

    vocab_size = run.preprocessor.vocab_size
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
    embedding = keras.layers.Embedding(vocab_size, 4, mask_zero=True)
    lstm = keras.layers.LSTM(3, dropout=0.1)  # its dropout's seed state is what the graph assigns
    encoded = [lstm(embedding(x)) for x in inputs.values()]
    head = keras.layers.Dense(2, activation="softmax", name="relevance_probabilities")
    model = keras.Model(inputs, head(keras.layers.Concatenate()(encoded)))
    version = _export_with_random_weights(model, run, tmp_path)
    seen = _graphs_grappler_sees(monkeypatch)
    made = export.to_onnx(version)
    assert seen and all((vocab_size, 4) not in shapes for shapes in seen), seen  # never the matrix
    assert json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"]
    _assert_onnx_scores_are_the_models(made, model, run)


@pytest.mark.parametrize("how", ["refused", "failed"])
def test_without_the_early_stand_ins_the_matrices_are_stood_in_after_grappler(run, tmp_path, monkeypatch, how):
    """When the stand-ins put in before grappler are not accepted (`_frozen_with_early_stand_ins` finds one
    missing or read by something else than a lookup) or freezing them fails, grappler optimizes the whole frozen
    graph and the matrices are stood in for after it, as before: still in the model whole."""
    import onnx
    from onnx import numpy_helper

    def early(*args):
        if how == "failed":
            raise ValueError("grappler failed")
        return None, {}, {}

    monkeypatch.setattr(onnx_export, "_frozen_with_early_stand_ins", early)
    seen = _graphs_grappler_sees(monkeypatch)
    model, version = _tiny_export(run, tmp_path, shared=False)
    made = export.to_onnx(version)
    vocab_size = run.preprocessor.vocab_size
    assert seen[0].count((vocab_size, 4)) == 2  # grappler saw both matrices
    stood_in = json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"]
    matrices = [numpy_helper.to_array(i) for i in onnx.load(str(made.path)).graph.initializer
                if i.name.split(":")[0] in stood_in]
    embeddings = [w.numpy() for w in model.weights if tuple(w.shape) == (vocab_size, 4)]
    assert len(stood_in) == len(matrices) == 2
    assert all(any(np.array_equal(m, e) for m in matrices) for e in embeddings)
    assert made.max_abs_diff <= 1e-4


def test_a_refused_stand_in_conversion_falls_back_to_the_usual_one(run, tmp_path, monkeypatch):
    """A stand-in model that fails the verification (here: a matrix put back damaged) is dropped, and the model
    converted the usual way, the whole graph through tf2onnx, still verified."""
    from onnx import numpy_helper

    real = onnx_export._convert_with_stand_ins
    refused = []

    def damaged(*args):
        proto, names = real(*args)
        for index, initializer in enumerate(proto.graph.initializer):
            if initializer.name.split(":")[0] in names:
                array = numpy_helper.to_array(initializer) + 1.0
                proto.graph.initializer[index].CopyFrom(numpy_helper.from_array(array, initializer.name))
        refused.append(names)
        return proto, names

    monkeypatch.setattr(onnx_export, "_convert_with_stand_ins", damaged)
    model, version = _tiny_export(run, tmp_path, shared=False)
    made = export.to_onnx(version)
    assert len(refused) == 1 and len(refused[0]) == 2  # the stand-in model was made, then refused
    assert json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"] == []
    assert made.max_abs_diff <= 1e-4


def test_tf2onnx_optimizers_run_without_their_graph_copies_and_a_failure_is_retried_as_tf2onnx_default(monkeypatch):
    """`_converting`: first with tf2onnx's optimizers raising (no copy of the graph per pass), and when that
    raises, once more with tf2onnx's default (a failing optimizer skipped); a user's own setting is kept."""
    key = onnx_export.CATCH_ERRORS
    monkeypatch.delenv(key, raising=False)
    seen = []

    def convert():
        seen.append(os.environ.get(key))
        if len(seen) == 1:
            raise RuntimeError("an optimizer failed")
        return "model"

    assert onnx_export._converting(convert) == "model"
    assert seen == ["FALSE", None] and key not in os.environ
    seen.clear()
    assert onnx_export._converting(lambda: seen.append(os.environ.get(key)) or "fast") == "fast"
    assert seen == ["FALSE"] and key not in os.environ
    monkeypatch.setenv(key, "TRUE")
    seen.clear()
    with pytest.raises(RuntimeError, match="an optimizer failed"):  # the user's setting: one call, not retried
        onnx_export._converting(convert)
    assert seen == ["TRUE"] and os.environ[key] == "TRUE"


@pytest.mark.parametrize("width, overlap, message", [
    (2, True, "takes a 'features' input of width 2; its preprocessor makes width 4"),
    (4, False, r"takes inputs \['answer', 'features', 'question'\]; its preprocessor makes \['answer', 'question'\]"),
])
def test_models_with_features_the_graph_cannot_compute_are_refused(run, tmp_path, width, overlap, message):
    """Only the four overlap features can be computed from text, and only by a preprocessor that makes them."""
    from keras_match.text.features import OverlapFeatures

    preprocessor = PairPreprocessor(run.preprocessor.encoder, 4, 4, overlap_features=overlap,
                                    document_frequencies=OverlapFeatures.build(["a b", "b c"]) if overlap else None)
    with pytest.raises(ValueError, match=message):
        export.saved_model(_tiny_model(run.preprocessor.vocab_size, features=width), tmp_path / "m",
                           preprocessor=preprocessor)
    assert not (tmp_path / "m").exists()


def test_a_model_without_a_head_is_refused(run, tmp_path):
    import keras

    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
    pooled = [keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(10, 4)(x)) for x in inputs.values()]
    model = keras.Model(inputs, keras.layers.Dense(2, name="logits")(keras.layers.Concatenate()(pooled)))
    with pytest.raises(ValueError, match="ends in layer 'logits'"):
        export.saved_model(model, tmp_path / "m",
                           preprocessor=PairPreprocessor(run.preprocessor.encoder, max_question_length=4,
                                                         max_answer_length=4))
    assert not (tmp_path / "m").exists()


def test_warmup_needs_tensorflow_serving_api(run, monkeypatch, tmp_path):
    for module in ("tensorflow_serving", "tensorflow_serving.apis"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install keras-match\[serving\]"):
        export.saved_model(run, tmp_path / "m")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------------------------ request formats


PAIR_RANKING_SIGNATURES = {
    "serving_default": {"question": ("string", [None]), "answer": ("string", [None])},
    "serve_ids": {"question": ("int32", [None, None]), "answer": ("int32", [None, None])},
    "rank": {"question": ("string", []), "answers": ("string", [None])},
}
"""The signature inputs of a pair ranking export, as clients know them: names, inputs, dtypes and shapes."""


@pytest.fixture(scope="module")
def signature_inputs():
    """The signature table of a pair ranking export, made as `saved_model` makes it (the preprocessor declares
    the inputs, the task adds `rank`): it must be the table clients know."""
    run = training.Run(model=_tiny_model(10), preprocessor=PairPreprocessor(), config={})
    assert isinstance(run.task, tasks.RankingTask)
    table = export.signature_table(run)
    assert table == PAIR_RANKING_SIGNATURES
    return table


def test_rest_row_format_is_decoded_like_tf_serving(signature_inputs):
    body = json.loads(json.dumps(serving.rest_predict_body(["who ?", "é"], [b"\xff\xfe", "b"])))
    assert body["instances"][1] == {"question": "é", "answer": "b"}
    assert body["instances"][0]["answer"] == {"b64": "//4="}
    feeds = tf_serving_emulation.decode_rest_body(body, signature_inputs["serving_default"])
    assert feeds["question"].tolist() == [b"who ?", "é".encode()]
    assert feeds["answer"].tolist() == [b"\xff\xfe", b"b"]
    ids = tf_serving_emulation.decode_rest_body(serving.rest_ids_body([[3, 4, 0]], [[5, 0]]), {"question": "int32",
                                                                                   "answer": "int32"})
    assert ids["question"].dtype == np.int32 and ids["question"].shape == (1, 3)


def test_rest_columnar_format_keeps_a_scalar_question(signature_inputs):
    feeds = tf_serving_emulation.decode_rest_body(serving.rest_rank_body("q", ["a", "b", ""]),
                                                  signature_inputs["rank"])
    assert feeds["question"].shape == () and feeds["question"][()] == b"q"
    assert feeds["answers"].tolist() == [b"a", b"b", b""]


@pytest.mark.parametrize("body, message", [
    ({"instances": [{"question": "a", "answer": "b"}], "inputs": {}}, "exactly one"),
    ({"instances": [{"question": "a", "answer": "b"}, {"question": "a"}]}, "same inputs"),
    ({"instances": [{"question": "a", "answer": "b", "extra": "c"}]}, "not in the signature"),
    ({"inputs": {"question": ["a"]}}, "misses"),
    ({"instances": [{"question": 3, "answer": "b"}]}, "expected a string"),
    ({"instances": ["a", "b"]}, "must be an object"),
])
def test_rest_bodies_tf_serving_rejects_are_rejected(signature_inputs, body, message):
    with pytest.raises(ValueError, match=message):
        tf_serving_emulation.decode_rest_body(body, signature_inputs["serving_default"])


def test_rest_numbers_must_fit_the_dtype(signature_inputs):
    spec = signature_inputs["serve_ids"]
    with pytest.raises(ValueError, match="not an integer"):
        tf_serving_emulation.decode_rest_body({"instances": [{"question": [1.5], "answer": [1]}]}, spec)
    with pytest.raises(ValueError, match="out of range"):
        tf_serving_emulation.decode_rest_body({"instances": [{"question": [2 ** 40], "answer": [1]}]}, spec)
    with pytest.raises(ValueError, match="different shapes"):
        tf_serving_emulation.decode_rest_body({"instances": [{"question": [1, 2], "answer": [1]},
                                                {"question": [1], "answer": [1]}]}, spec)


def test_rest_responses_round_trip():
    row = tf_serving_emulation.encode_rest_response({"score": np.array([0.25, 0.5], np.float32)})
    assert row == {"predictions": [0.25, 0.5]}
    assert serving.parse_rest_response(json.dumps(row))["score"].tolist() == [0.25, 0.5]
    columns = tf_serving_emulation.encode_rest_response({"scores": np.array([0.5, 0.75]), "order": np.array([1, 0])},
                                           row_format=False)
    assert columns == {"outputs": {"scores": [0.5, 0.75], "order": [1, 0]}}
    parsed = serving.parse_rest_response(columns)
    assert parsed["order"].dtype == np.int32 and parsed["order"].tolist() == [1, 0]
    with pytest.raises(ValueError, match="TF Serving error: bad"):
        serving.parse_rest_response({"error": "bad"})


def test_grpc_requests_hold_the_signature_inputs():
    request = serving.grpc_rank_request("who?", ["a", "b"], "mcan_fm", version=3)
    assert (request.model_spec.name, request.model_spec.signature_name) == ("mcan_fm", "rank")
    assert request.model_spec.version.value == 3
    feeds = tf_serving_emulation.request_to_feeds(request)
    assert feeds["question"].shape == () and feeds["answers"].tolist() == [b"a", b"b"]
    request = serving.grpc_predict_request(["q1", "q2"], ["a1", "a2"], "m")
    assert request.model_spec.signature_name == "serving_default"
    assert tf_serving_emulation.request_to_feeds(request)["answer"].tolist() == [b"a1", b"a2"]
    with pytest.raises(ValueError, match="same length"):
        serving.grpc_predict_request(["q1"], ["a1", "a2"], "m")


def test_model_config_list_parses_as_tf_serving_config(tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    path = serving.write_model_config({"mcan_fm": "/models/mcan_fm", "mcan_sm": "/models/mcan_sm"},
                                      tmp_path / "models.config", versions={"mcan_sm": [1, 2]})
    config = text_format.Parse(path.read_text(), model_server_config_pb2.ModelServerConfig())
    models = {c.name: c for c in config.model_config_list.config}
    assert sorted(models) == ["mcan_fm", "mcan_sm"]
    assert models["mcan_fm"].base_path == "/models/mcan_fm"
    assert models["mcan_fm"].model_platform == "tensorflow"
    assert not models["mcan_fm"].HasField("model_version_policy")
    assert list(models["mcan_sm"].model_version_policy.specific.versions) == [1, 2]
    with pytest.raises(ValueError, match="invalid model name"):
        serving.model_config_text({"bad name": "/m"})
    with pytest.raises(ValueError, match="unknown model"):
        serving.model_config_text({"a": "/m"}, versions={"b": [1]})


def test_model_config_script(tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    out = tmp_path / "models.config"
    subprocess.run([sys.executable, str(REPO / "export" / "model_config.py"), "mcan_fm", "mcan_sm=/srv/sm",
                    "--version", "mcan_sm=4", "-o", str(out)], check=True, capture_output=True)
    config = text_format.Parse(out.read_text(), model_server_config_pb2.ModelServerConfig())
    assert [(c.name, c.base_path) for c in config.model_config_list.config] == [
        ("mcan_fm", "/models/mcan_fm"), ("mcan_sm", "/srv/sm")]


# ------------------------------------------------------------------------------- clients against fake servers


def _load_client(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "export" / "clients" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_signature(loaded, name, feeds):
    import tensorflow as tf

    outputs = loaded.signatures[name or "serving_default"](**{k: tf.constant(v) for k, v in feeds.items()})
    return {k: v.numpy() for k, v in outputs.items()}


class _FakeRestServer(http.server.ThreadingHTTPServer):
    """TF Serving's REST :predict, emulated with the helpers that mirror its JSON conversion."""

    def __init__(self, loaded, model_name):
        self.loaded, self.model_name = loaded, model_name

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(handler):  # noqa: N805
                try:
                    assert handler.path == f"/v1/models/{self.model_name}:predict", handler.path
                    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
                    signature = self.loaded.signatures[body.get("signature_name", "serving_default")]
                    inputs = {k: s.dtype for k, s in signature.structured_input_signature[1].items()}
                    feeds = tf_serving_emulation.decode_rest_body(body, inputs)
                    outputs = _run_signature(self.loaded, body.get("signature_name"), feeds)
                    reply, status = tf_serving_emulation.encode_rest_response(outputs, "instances" in body), 200
                except Exception as error:  # the server answers 400 with {"error": ...}
                    reply, status = {"error": str(error)}, 400
                data = json.dumps(reply).encode()
                handler.send_response(status)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)


def test_rest_client_against_a_fake_server(loaded, run, capsys):
    server = _FakeRestServer(loaded, "mcan_fm")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = _load_client("rest_client")
        port = str(server.server_address[1])
        argv = ["--host", "127.0.0.1", "--port", port, "--model", "mcan_fm", "--question", QUESTIONS[0]]
        for answer in ANSWERS:
            argv += ["--answer", answer]
        expected = run.score([QUESTIONS[0]] * len(ANSWERS), ANSWERS)
        for signature in ("rank", "serving_default"):
            scores, order = client.main(argv + ["--signature", signature])
            np.testing.assert_allclose(scores, expected, atol=1e-5)
            assert order == np.argsort(-np.asarray(scores), kind="stable").tolist()
        lines = capsys.readouterr().out.strip().splitlines()
        assert len(lines) == 2 * len(ANSWERS) and lines[0].startswith("1\t")
        with pytest.raises(RuntimeError, match="HTTP 400"):
            client.predict("127.0.0.1", port, "mcan_fm", {"instances": [{"question": "a"}]})
    finally:
        server.shutdown()
        server.server_close()


def test_grpc_client_against_a_fake_server(loaded, run):
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    class Servicer(prediction_service_pb2_grpc.PredictionServiceServicer):
        def Predict(self, request, context):  # noqa: N802
            outputs = _run_signature(loaded, request.model_spec.signature_name, tf_serving_emulation.request_to_feeds(request))
            response = predict_pb2.PredictResponse()
            response.model_spec.CopyFrom(request.model_spec)
            for name, value in outputs.items():
                response.outputs[name].CopyFrom(clients._tensor_proto(value))
            return response

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        client = _load_client("grpc_client")
        expected = run.score([QUESTIONS[1]] * len(ANSWERS), ANSWERS)
        for signature in ("rank", "serving_default"):
            scores, order = client.rank("127.0.0.1", port, "mcan_fm", QUESTIONS[1], ANSWERS, signature)
            np.testing.assert_allclose(scores, expected, atol=1e-5)
            assert order == np.argsort(-np.asarray(scores), kind="stable").tolist()
    finally:
        server.stop(None)


def test_export_folder_documents_its_files():
    readme = (REPO / "export" / "README.md").read_text()
    for name in ("docker-compose.yml", "model_config.py", "rest_client.py", "grpc_client.py", "rank",
                 "serve_ids", "tf_serving_warmup_requests", "onnx/"):
        assert name in readme, name
