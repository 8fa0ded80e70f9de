"""Every zoo entry exports for TensorFlow Serving and ONNX, verified by loading the exports back.

Parametrized over `keras_match.zoo.names()`: a model added to the zoo is covered without new test code. Each
entry is built small (widths shrunk generically, see `small_overrides`) with random weights that spread the
scores, exported with `keras_match.serving.export.saved_model` and `to_onnx`; ONE fresh Python process (importing only
tensorflow_text, tensorflow and `keras_match.serving`, as a model server would) loads every export and calls
every signature, directly, through REST bodies, gRPC requests and the warmup records, on tricky inputs. The
parent compares with the Keras model scoring the same pairs the way training does (`Run.score`).
"""

import base64
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tf_serving_emulation
from model_testing import small_lengths, small_overrides

from keras_match import text, training, zoo
from keras_match.serving import export
from keras_match import heads
from keras_match.inputs import pipeline
from keras_match.text.features import FEATURE_NAMES, OverlapFeatures
from keras_match.preprocessors.pair import PairPreprocessor

NAMES = [name for name in zoo.names() if zoo.family_of(name).preprocessor == "pair"
         and not zoo.describe(name)["model"].get("backbone")]
"""The entries whose family reads the pair preprocessor: the tricky texts here are (question, answer) pairs. The
other entries' exports (the dialog models') are checked by `run_model_test(exports=True)`
(`tests/models/test_zoo_entries.py`); the pretrained-transformer entries' (`bi_encoder_minilm`,
`cross_encoder_minilm`: this file's word vocabulary is not their WordPiece one, and each export and its scoring
of `MANY` pairs through a 22.7M-parameter backbone would cost minutes) by the file
`model_testing.PRETRAINED_BACKBONE_FAMILIES` names, on the same builders over a 2-layer BERT; the transformer-input
variants of the paper families (`mcan_fm_minilm` ...) by `tests/test_backbone_export.py`, through the same path."""

WORDS = ("who wrote hamlet the cat sat on mat when was teapot dome scandal broke in 1923 . ? , shakespeare "
         "william play a an of is to and zürich café 日 本 what where how many people live city river").split()
OOV = ["zzqx", "qqzx", "vvkw", "xyzzy", "blorf"]
LONG = " ".join(WORDS[i % len(WORDS)] for i in range(500))  # longer than any truncation length
TRICKY_QUESTIONS = ["Who wrote Hamlet?", "", "zzqx qqzx vvkw", LONG,
                    "Zürich café: qui a écrit « Hamlet » ? 日本 😀", "   \t ", b"caf\xe9 \xff\xfe hamlet",
                    "the cat sat on the mat ."]
TRICKY_ANSWERS = ["Hamlet was written by William Shakespeare .", "the cat", "", "blorf xyzzy", LONG,
                  "Ünïcödé ✓ 日本", "hamlet", b"\xc3\xa9t\xc3\xa9 \x80"]
RANK_QUESTION = "who wrote hamlet ?"
RANK_ANSWERS = ["Shakespeare wrote Hamlet .", "", "zzqx", "the cat sat", "Shakespeare wrote Hamlet .", LONG,
                "日本 café", "hamlet hamlet hamlet"]
MANY = 600
"""Pairs in the "many" case: one request of many texts of every length, two full `pipeline.PREDICT_BATCH` batches
of training's scoring (and `export.CHUNK_SIZE` chunks of the text signatures) and a partial third. It was 3,000,
then 1,000 (four batches), until the suite had to get faster: scoring the cases in the parent alone took 18-25 s of
the 50-95 s that building, exporting and scoring took per entry at 3,000 (five entries timed on a busy 2-core
machine), the child scores them twice more and ONNX Runtime once. `benchmarks/export_latency.py` still sends one
batch of 3,000."""
TRAINING_TEXTS = ["who wrote hamlet ?", "shakespeare wrote hamlet .", "the cat sat on the mat .",
                  "when was the teapot dome scandal ?", "the scandal broke in 1923 .", "a play of william"]

def randomize(model, seed):
    """Random weights (std 0.5) so untrained scores spread over (0, 1) instead of sitting at 0.5."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if not str(weight.dtype).startswith("float"):
            continue
        values = rng.normal(0.0, 0.5, size=tuple(weight.shape)).astype(str(weight.dtype))
        if "variance" in weight.path:
            values = np.abs(values) + 0.5
        weight.assign(values)


def many_pairs(seed=0):
    """`MANY` pairs of random lengths (0 to 90 words) mixing vocabulary and unknown words and the tricky texts."""
    rng = np.random.default_rng(seed)
    pool = WORDS + OOV
    questions, answers = [], []
    for i in range(MANY):
        if i % 97 == 0:
            questions.append(TRICKY_QUESTIONS[i % len(TRICKY_QUESTIONS)])
            answers.append(TRICKY_ANSWERS[(i // 7) % len(TRICKY_ANSWERS)])
            continue
        questions.append(" ".join(rng.choice(pool, size=rng.integers(0, 50))))
        answers.append(" ".join(rng.choice(pool, size=rng.integers(0, 90))))
    return questions, answers


def _b64(texts):
    return [base64.b64encode(t if isinstance(t, bytes) else t.encode("utf-8")).decode("ascii") for t in texts]


CHILD = textwrap.dedent(
    """
    import base64, json, sys
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops, as the TF Serving binary links them)
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2
    from keras_match import serving
    import tf_serving_emulation  # the server's side, from tests/ (copied beside this script)

    spec = json.load(open(sys.argv[1]))
    texts = lambda values: [base64.b64decode(v) for v in values]
    cases = {name: (texts(c["questions"]), texts(c["answers"])) for name, c in spec["cases"].items()}
    rank_question, rank_answers = texts([spec["rank"]["question"]])[0], texts(spec["rank"]["answers"])

    def id_feeds(ids, rows=None):
        dtypes = {"question": np.int32, "answer": np.int32, "features": np.float32}
        return {k: np.array(v[:rows] if rows is not None else v, dtypes[k]).reshape(
            (-1,) + np.array(v).shape[1:]) for k, v in ids.items()}

    def call(signature, **inputs):
        return {k: v.numpy().tolist() for k, v in signature(**{k: tf.constant(v) for k, v in inputs.items()}).items()}

    def error_of(signature, **inputs):
        try:
            call(signature, **inputs)
        except Exception as error:
            return [type(error).__name__, str(error)]
        return None

    def wire_grpc(signature, request):
        request = predict_pb2.PredictRequest.FromString(request.SerializeToString())
        outputs = signature(**{k: tf.constant(v) for k, v in tf_serving_emulation.request_to_feeds(request).items()})
        response = predict_pb2.PredictResponse()
        for name, value in outputs.items():
            response.outputs[name].CopyFrom(tf.make_tensor_proto(value.numpy()))
        response = predict_pb2.PredictResponse.FromString(response.SerializeToString())
        return {k: v.tolist() for k, v in serving.parse_predict_response(response).items()}

    def wire_rest(signature, body):
        body = json.loads(json.dumps(body))
        inputs = {k: s.dtype for k, s in signature.structured_input_signature[1].items()}
        feeds = tf_serving_emulation.decode_rest_body(body, inputs)
        outputs = signature(**{k: tf.constant(v) for k, v in feeds.items()})
        response = json.loads(json.dumps(tf_serving_emulation.encode_rest_response(outputs, "instances" in body)))
        names = sorted(signature.structured_outputs)
        return {k: v.tolist() for k, v in serving.parse_rest_response(response, names).items()}

    results = {}
    for name, path in spec["models"].items():
        loaded = tf.saved_model.load(path)
        sigs = loaded.signatures
        text_sig, ids_sig, rank_sig = sigs["serving_default"], sigs["serve_ids"], sigs["rank"]
        out = {"signatures": sorted(sigs), "text": {}, "ids": {}}
        for case, (questions, answers) in cases.items():
            out["text"][case] = call(text_sig, question=questions, answer=answers)["score"]
        for case, ids in spec["ids"][name].items():
            out["ids"][case] = call(ids_sig, **id_feeds(ids))["score"]
        out["rank"] = call(rank_sig, question=rank_question, answers=rank_answers)
        out["rank_empty"] = call(rank_sig, question=rank_question, answers=tf.constant([], tf.string))
        out["text_empty"] = call(text_sig, question=tf.constant([], tf.string), answer=tf.constant([], tf.string))
        tq, ta = cases["tricky"]
        out["mismatch_text"] = error_of(text_sig, question=tq[:3], answer=ta[:2])
        ids = spec["ids"][name]["tricky"]
        out["mismatch_ids"] = error_of(ids_sig, **dict(id_feeds(ids, 3), answer=id_feeds(ids, 2)["answer"]))
        out["ids_empty"] = call(ids_sig, **id_feeds(ids, 0))
        out["rest_text"] = wire_rest(text_sig, serving.rest_predict_body(tq, ta))["score"]
        out["rest_rank"] = wire_rest(rank_sig, serving.rest_rank_body(rank_question, rank_answers))
        out["rest_ids"] = wire_rest(ids_sig, serving.rest_ids_body(ids["question"], ids["answer"],
                                                                   ids.get("features")))["score"]
        out["grpc_ids"] = wire_grpc(ids_sig, serving.grpc_ids_request(ids["question"], ids["answer"], name,
                                                                      features=ids.get("features")))["score"]
        out["grpc_text"] = wire_grpc(text_sig, serving.grpc_predict_request(tq, ta, name))["score"]
        out["grpc_rank"] = wire_grpc(rank_sig, serving.grpc_rank_request(rank_question, rank_answers, name))
        out["warmup"] = []
        for record in serving.read_warmup_file(path):
            request = record.predict_log.request
            signature = sigs[request.model_spec.signature_name or "serving_default"]
            outputs = signature(**{k: tf.constant(v) for k, v in tf_serving_emulation.request_to_feeds(request).items()})
            out["warmup"].append([request.model_spec.signature_name,
                                  {k: v.numpy().tolist() for k, v in outputs.items()}])
        results[name] = out
    results["keras_match_modules"] = sorted(m for m in sys.modules if m.startswith("keras_match"))
    json.dump(results, open(sys.argv[2], "w"))
    """
)


def build_run(name, seed, encoder):
    """Zoo entry `name` built small with random weights (`randomize(model, seed)`: the same weights in any
    process) and its pair preprocessor, as a `training.Run`."""
    preset = zoo.describe(name)["preprocessing"]
    model = zoo.load(name, vocab_size=encoder.vocab_size, compile=False, **small_overrides(name))
    randomize(model, seed)
    overlap = preset["overlap_features"]
    lengths = small_lengths(name)
    preprocessor = PairPreprocessor(encoder, lengths["max_question_length"], lengths["max_answer_length"],
                                    overlap_features=overlap,
                                    document_frequencies=OverlapFeatures.build(TRAINING_TEXTS) if overlap else None)
    return training.Run(model=model, preprocessor=preprocessor, config={"zoo": name})


def export_entry(run, folder):
    """`run` exported as a SavedModel into `folder` and converted to ONNX: (the version folder, the `OnnxExport`)."""
    version_dir = export.saved_model(run, folder)
    return version_dir, export.to_onnx(version_dir)


EXPORTER = textwrap.dedent(
    """
    import json, pathlib, sys
    tests, root, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    sys.path.insert(0, tests)
    import test_export_zoo as t
    from keras_match import text

    encoder = text.TextEncoder(t.WORDS)
    made = {}
    for item in sys.argv[4:]:
        seed, name = item.split(":", 1)
        version_dir, onnx = t.export_entry(t.build_run(name, int(seed), encoder), root / name)
        made[name] = {"version_dir": str(version_dir), "onnx": {"path": str(onnx.path), "opset": onnx.opset,
                      "max_abs_diff": onnx.max_abs_diff, "num_samples": onnx.num_samples}}
        print(name, flush=True)
    out.write_text(json.dumps(made))
    """
)
EXPORT_PROCESSES = min(2, len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else 2
"""Exporting (tracing every signature, writing the SavedModel and its warmup records, converting to ONNX) takes
about 8-29 s an entry on one core of this machine (SavedModel 4-9 s, ONNX 3-20 s; mcan_fm the slowest): the
entries are exported by two processes at once, each building its entries' models with the weights this process
builds them with; by this process itself, from the runs it built, when it may run on one CPU only (a pytest-xdist
worker of `-n 2` on two CPUs, pinned by `tests/conftest.py`: a second exporter would only take turns with the
first on that CPU, and one exporter process imported TensorFlow and built the 27 models again)."""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Each zoo entry built small with random weights, exported as SavedModel + ONNX: name -> dict (the run this
    process built, the SavedModel's version folder, the ONNX export)."""
    root = tmp_path_factory.mktemp("zoo_export")
    encoder = text.TextEncoder(WORDS)
    runs = {name: build_run(name, seed, encoder) for seed, name in enumerate(NAMES)}
    if EXPORT_PROCESSES == 1:  # no second CPU to export on: this process exports the runs it built
        return {name: dict(zip(("version_dir", "onnx"), export_entry(runs[name], root / name)), run=runs[name])
                for name in NAMES}
    shares = [[f"{seed}:{name}" for seed, name in enumerate(NAMES) if seed % EXPORT_PROCESSES == k]
              for k in range(EXPORT_PROCESSES)]
    (root / "exporter.py").write_text(EXPORTER)
    workers = [subprocess.Popen([sys.executable, str(root / "exporter.py"), str(pathlib.Path(__file__).parent),
                                 str(root), str(root / f"made-{k}.json"), *share],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for k, share in enumerate(shares) if share]
    made = {}
    for k, worker in enumerate(workers):
        stdout, stderr = worker.communicate()
        assert worker.returncode == 0, f"exporter {k} (done: {stdout.split()}): {stderr[-3000:]}"
        made.update(json.loads((root / f"made-{k}.json").read_text()))
    assert sorted(made) == sorted(NAMES)
    return {name: {"run": runs[name], "version_dir": pathlib.Path(made[name]["version_dir"]),
                   "onnx": export.OnnxExport(**dict(made[name]["onnx"], path=pathlib.Path(made[name]["onnx"]["path"])))}
            for name in NAMES}


def _cases():
    many_q, many_a = many_pairs()
    return {
        "tricky": (TRICKY_QUESTIONS, TRICKY_ANSWERS),
        "one": (TRICKY_QUESTIONS[:1], TRICKY_ANSWERS[:1]),
        "many": (many_q, many_a),
    }


def _ids(run, questions, answers):
    return pipeline.encode(run.preprocessor, {"question": questions, "answer": answers})


@pytest.fixture(scope="module")
def expected(exports):
    """The Keras model's scores (the training code path, `Run.score`) for every case: name -> case -> [n]."""
    cases = _cases()
    out = {}
    for name, made in exports.items():
        run = made["run"]
        out[name] = {case: run.score(q, a) for case, (q, a) in cases.items()}
        out[name]["rank"] = run.score([RANK_QUESTION] * len(RANK_ANSWERS), RANK_ANSWERS)
    return out


@pytest.fixture(scope="module")
def served(exports, tmp_path_factory):
    """Every export loaded in ONE fresh Python process; the results of every signature and request format."""
    work = tmp_path_factory.mktemp("zoo_served")
    cases = _cases()
    spec = {
        "models": {name: str(made["version_dir"]) for name, made in exports.items()},
        "cases": {case: {"questions": _b64(q), "answers": _b64(a)} for case, (q, a) in cases.items()},
        "rank": {"question": _b64([RANK_QUESTION])[0], "answers": _b64(RANK_ANSWERS)},
        "ids": {
            name: {case: {k: v.tolist() for k, v in _ids(made["run"], *cases[case]).items()}
                   for case in ("tricky", "many")}
            for name, made in exports.items()
        },
    }
    (work / "spec.json").write_text(json.dumps(spec))
    (work / "child.py").write_text(CHILD)
    shutil.copyfile(pathlib.Path(tf_serving_emulation.__file__), work / "tf_serving_emulation.py")
    proc = subprocess.run(
        [sys.executable, str(work / "child.py"), str(work / "spec.json"), str(work / "out.json")],
        capture_output=True, text=True, cwd=work,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((work / "out.json").read_text())


def test_small_overrides_shrink_widths_only():
    overrides = small_overrides("mcan_fm")
    assert overrides == {"embedding_dim": 8, "lstm_units": 8, "highway_units": 8, "fm_factors": 2}


def test_the_child_process_needs_no_model_code(served):
    # the client helpers and the signature table (pure Python), nothing of the layers, models or training
    assert served["keras_match_modules"] == ["keras_match", "keras_match._lazy", "keras_match._moved", "keras_match.serving",
                                             "keras_match.serving.clients", "keras_match.serving.signatures"]


@pytest.mark.parametrize("name", NAMES)
def test_tf_serving_layout(name, exports):
    version_dir = exports[name]["version_dir"]
    assert version_dir.name == "1"
    assert (version_dir / "saved_model.pb").is_file()
    assert (version_dir / "variables" / "variables.index").is_file()
    assert (version_dir / "assets" / "vocabulary.txt").read_text(encoding="utf-8").split("\n")[:2] == WORDS[:2]
    assert (version_dir / "assets.extra" / "tf_serving_warmup_requests").stat().st_size > 0
    meta = export.read_metadata(version_dir)
    preprocessor = exports[name]["run"].preprocessor
    assert (meta["max_question_length"], meta["max_answer_length"]) == (
        preprocessor.max_question_length, preprocessor.max_answer_length)
    assert meta["vocab_size"] == len(WORDS) + 2
    assert sorted(p.name for p in version_dir.parent.iterdir()) == ["1", "onnx"]


@pytest.mark.parametrize("name", NAMES)
def test_raw_text_signature_matches_keras(name, served, expected):
    assert served[name]["signatures"] == ["rank", "serve_ids", "serving_default"]
    many = len(expected[name]["many"])  # more than two chunks, the last one partial
    assert many > 2 * export.CHUNK_SIZE and many % export.CHUNK_SIZE and export.CHUNK_SIZE == pipeline.PREDICT_BATCH
    spread = np.ptp(expected[name]["many"])
    assert spread > 0.05, "random weights should spread the scores, or the comparison proves little"
    for case, scores in served[name]["text"].items():
        scores = np.asarray(scores, np.float32)
        assert scores.shape == expected[name][case].shape, case
        assert np.isfinite(scores).all(), case
        np.testing.assert_allclose(scores, expected[name][case], atol=1e-5, rtol=0, err_msg=case)


@pytest.mark.parametrize("name", NAMES)
def test_truncation_is_the_training_truncation(name, exports, served, expected):
    """Text past the truncation length must not change a score, in the graph as in training."""
    run = exports[name]["run"]
    words = LONG.split()
    cut_q = " ".join(words[: run.preprocessor.max_question_length])
    longer = run.score([LONG, cut_q], [TRICKY_ANSWERS[0]] * 2)
    assert longer[0] == pytest.approx(longer[1], abs=1e-6)
    tricky = dict(zip(TRICKY_QUESTIONS, served[name]["text"]["tricky"]))
    assert tricky[LONG] == pytest.approx(float(expected[name]["tricky"][TRICKY_QUESTIONS.index(LONG)]), abs=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_id_signature_matches_keras(name, served, expected):
    for case in ("tricky", "many"):
        np.testing.assert_allclose(served[name]["ids"][case], expected[name][case], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_rank_scores_and_orders_candidates(name, served, expected):
    ranked = served[name]["rank"]
    scores, order = np.asarray(ranked["scores"], np.float32), ranked["order"]
    np.testing.assert_allclose(scores, expected[name]["rank"], atol=1e-5, rtol=0)
    assert order == np.argsort(-scores, kind="stable").tolist()  # ties: lower index first
    if scores[0] == scores[4]:  # two identical candidates: a tie keeps the input order
        assert order.index(0) < order.index(4)
    assert served[name]["rank_empty"] == {"scores": [], "order": []}


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_batch_gives_no_scores(name, served):
    assert served[name]["text_empty"] == {"score": []}
    assert served[name]["ids_empty"] == {"score": []}


FEATURE_NAMES_IN_ZOO = [name for name in NAMES if zoo.describe(name)["preprocessing"]["overlap_features"]]


def test_the_zoo_has_overlap_feature_models():
    assert {"ctrn", "qrnn"} <= set(FEATURE_NAMES_IN_ZOO)


@pytest.mark.parametrize("name", FEATURE_NAMES_IN_ZOO)
def test_overlap_features_are_computed_in_the_graph(name, exports, served, expected):
    """The text signatures compute the overlap features from the exported document frequencies: their scores
    match Keras fed the pipeline's features, and differ from Keras fed zero features (so they are used)."""
    made = exports[name]
    version_dir, run = made["version_dir"], made["run"]
    meta = export.read_metadata(version_dir)
    assert meta["num_features"] == len(FEATURE_NAMES)
    assert meta["signatures"]["serve_ids"]["features"] == ["float32", [None, len(FEATURE_NAMES)]]
    assert meta["overlap_features"]["num_documents"] == len(TRAINING_TEXTS)
    asset = version_dir / "assets" / meta["overlap_features"]["document_frequencies_file"]
    assert asset.read_text(encoding="utf-8") == open(run.preprocessor.overlap.path, encoding="utf-8").read()
    onnx_dir = made["onnx"].path.parent
    assert (onnx_dir / "document_frequencies.tsv").read_text(encoding="utf-8") == asset.read_text(encoding="utf-8")
    ids = _ids(run, *_cases()["tricky"])
    assert np.ptp(ids["features"][:, 0]) > 0, "the tricky pairs should differ in overlap"
    without = heads.ranking_score(run.head, run.model.predict(dict(ids, features=np.zeros_like(ids["features"])),
                                                             verbose=0))
    assert np.max(np.abs(without - np.asarray(served[name]["text"]["tricky"]))) > 1e-3


@pytest.mark.parametrize("name", NAMES)
def test_question_and_answer_counts_must_agree(name, served):
    # the message names every input of the signature (serve_ids: the pair features too, for models with them)
    ids_inputs = "question, answer and features" if name in FEATURE_NAMES_IN_ZOO else "question and answer"
    for key, inputs in (("mismatch_text", "question and answer"), ("mismatch_ids", ids_inputs)):
        error = served[name][key]
        assert error is not None, f"{key}: a 3-question / 2-answer batch was accepted"
        kind, message = error
        assert kind == "InvalidArgumentError"
        assert f"{inputs} must hold the same number" in message
        assert re.search(r"\[3\].*\[2\]", message, re.S), message


@pytest.mark.parametrize("name", NAMES)
def test_rest_and_grpc_requests_reach_the_signatures(name, served, expected):
    tricky = expected[name]["tricky"]
    np.testing.assert_allclose(served[name]["rest_text"], tricky, atol=1e-5, rtol=0)
    np.testing.assert_allclose(served[name]["rest_ids"], tricky, atol=1e-5, rtol=0)
    np.testing.assert_allclose(served[name]["grpc_ids"], tricky, atol=1e-5, rtol=0)
    np.testing.assert_allclose(served[name]["grpc_text"], tricky, atol=1e-5, rtol=0)
    for key in ("rest_rank", "grpc_rank"):
        np.testing.assert_allclose(served[name][key]["scores"], expected[name]["rank"], atol=1e-5, rtol=0)
        assert served[name][key]["order"] == served[name]["rank"]["order"]


@pytest.mark.parametrize("name", NAMES)
def test_warmup_records_run_on_every_signature(name, served):
    warmup = served[name]["warmup"]
    assert sorted(signature for signature, _ in warmup) == ["rank", "serve_ids", "serving_default",
                                                            "serving_default"]
    sizes = []
    for _, outputs in warmup:
        for values in outputs.values():
            assert len(values) > 0 and np.isfinite(values).all()
            sizes.append(len(values))
    assert max(sizes) > export.CHUNK_SIZE  # the path of requests larger than one chunk is warmed too


@pytest.mark.parametrize("name", NAMES)
def test_onnx_matches_keras(name, exports, expected):
    import onnxruntime

    made = exports[name]
    result = made["onnx"]
    assert result.opset <= export.MAX_ONNX_OPSET
    assert result.max_abs_diff <= 1e-4
    assert result.path == made["version_dir"].parent / "onnx" / "1" / "model.onnx"
    session = onnxruntime.InferenceSession(str(result.path), providers=["CPUExecutionProvider"])
    cases = _cases()
    for case in ("tricky", "many"):
        ids = _ids(made["run"], *cases[case])
        (scores,) = session.run(["score"], ids)
        assert np.isfinite(scores).all()
        np.testing.assert_allclose(scores, expected[name][case], atol=1e-4, rtol=0, err_msg=case)
    assert (result.path.parent / "vocabulary.txt").read_text(encoding="utf-8").split("\n")[0] == WORDS[0]
