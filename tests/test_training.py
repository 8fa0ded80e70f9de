"""A short real training on TrecQA through the command-line path, then evaluate / predict / resume."""

import json

import keras
import numpy as np
import pytest

from keras_match import cli, tasks, training, zoo
from keras_match.inputs import pipeline
from keras_match.training import callbacks
from keras_match.datasets.catalog import load_by_name
from keras_match.preprocessors.base import trim_padding
from keras_match.preprocessors.pair import FREQUENCIES_FILE, PairPreprocessor

from conftest import SMALL_CTRN, mcan_train_args
from conftest import train_args as _train_args
from learning_checks import ranking_figures_of_run


@pytest.fixture(scope="module")
def loaded_run(trained_run):
    """The shared run loaded once for the tests that only read it."""
    return training.load_run(trained_run)


def test_train_writes_a_complete_run(trained_run, loaded_run, data_dir, capsys):
    for name in ("config.json", "vocabulary.txt", "model.keras", "metrics.json"):
        assert (trained_run / name).exists(), name
    assert not (trained_run / "checkpoints").exists()
    assert any((trained_run / "logs").rglob("events.out.tfevents*"))
    report = json.loads((trained_run / "metrics.json").read_text())
    assert report["test"]["num_questions"] == 68 and report["dev"]["num_questions"] == 65
    # The figures written are those of the model written: the saved run, loaded back, scores each split's pairs
    # and trec_eval (pytrec_eval, not keras_match.metrics) gives the same MAP / MRR / P@1. (One epoch on 12
    # questions does not beat the untrained model here: dev MAP 0.448, and 0.453 for the same model built with the
    # run's seed and not trained, measured.)
    dataset = load_by_name("trecqa-clean", data_dir=data_dir)
    for split in ("dev", "test"):
        again = ranking_figures_of_run(loaded_run, dataset[split], tasks.task_for(dataset).no_positive)
        assert again["num_questions"] == report[split]["num_questions"], split
        for key in ("map", "mrr", "p@1"):
            assert report[split][key] == pytest.approx(again[key], abs=1e-9), (split, key)
    assert report["embeddings"]["coverage"] > 0.9
    assert report["epochs_run"] == 1 and report["best_epoch"] == 1


def test_evaluate_reproduces_the_test_figures(trained_run, data_dir, capsys):
    assert cli.main(["evaluate", str(trained_run), "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    report = json.loads((trained_run / "metrics.json").read_text())
    assert printed["map"] == pytest.approx(report["test"]["map"], abs=1e-6)


def test_reproduce_transfer_figures_score_a_run_as_evaluate_does(trained_run, data_dir, monkeypatch):
    from conftest import benchmark_module

    monkeypatch.setenv("KERAS_MATCH_DATA", str(data_dir))
    module = benchmark_module("reproduce")
    splits = module.transfer_splits(["trecqa-clean", "trecqa-raw-trec-eval"])
    assert splits["trecqa-raw-trec-eval"][1] == "zero" and splits["trecqa-clean"][1] == "skip"
    figures = module.transfer_figures(trained_run, splits)
    report = json.loads((trained_run / "metrics.json").read_text())
    assert set(figures["trecqa-clean"]) == {"map", "mrr", "p@1"}
    for key in ("map", "mrr", "p@1"):  # the run's own test split, scored again, gives the figures training wrote
        assert figures["trecqa-clean"][key] == pytest.approx(report["test"][key], abs=1e-6)
    assert figures["trecqa-raw-trec-eval"]["map"] != figures["trecqa-clean"]["map"]


def test_predict_ranks_raw_answers(trained_run, loaded_run, capsys):
    answers = ["The teapot dome scandal was in 1923 .", "", "zzqx unknownword"]
    assert cli.main(["predict", str(trained_run), "--question", "When was the Teapot Dome scandal?",
                     *sum((["--answer", a] for a in answers), [])]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    scores = [float(line.split("\t")[1]) for line in lines]
    assert scores == sorted(scores, reverse=True)
    direct = loaded_run.score(["When was the Teapot Dome scandal?"] * 3, answers)
    assert sorted((round(float(x), 4) for x in direct), reverse=True) == scores


def test_finished_run_is_not_overwritten(trained_run, data_dir, capsys):
    assert cli.main(mcan_train_args(data_dir, trained_run, "--epochs", "1")) == 2
    assert "finished run" in capsys.readouterr().err


def test_interrupted_run_resumes_from_its_last_epoch(data_dir, tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    epochs_seen = []
    original = callbacks.DevEvaluationCallback.on_epoch_end

    def record(self, epoch, logs=None):
        epochs_seen.append(epoch)
        original(self, epoch, logs)

    def crash_after_first_epoch(self, epoch, logs=None):
        raise KeyboardInterrupt  # after the ranking state and the backup of epoch 1 were written

    monkeypatch.setattr(callbacks.DevEvaluationCallback, "on_epoch_end", record)
    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", crash_after_first_epoch)
        assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--set", "patience=5")) == 130
    assert epochs_seen == [0]
    state = json.loads((run_dir / "checkpoints" / callbacks.STATE_FILE).read_text())
    assert state["epoch"] == 1
    assert len(state["epoch_seconds"]) == 1 and state["epoch_seconds"][0] > 0
    assert not (run_dir / "metrics.json").exists()

    # Resuming with other settings is refused rather than mixing two runs.
    assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--seed", "7")) == 2

    assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--set", "patience=5")) == 0
    assert epochs_seen == [0, 1, 2]
    report = json.loads((run_dir / "metrics.json").read_text())
    assert [h["epoch"] for h in report["history"]] == [1, 2, 3]
    # every epoch's time, the first one's from before the interruption
    assert report["epoch_seconds"][0] == state["epoch_seconds"][0]
    assert len(report["epoch_seconds"]) == 3 and all(seconds > 0 for seconds in report["epoch_seconds"])


def test_lr_decay_multiplies_the_learning_rate_every_epoch_and_a_resumed_run_continues_it(data_dir, tmp_path,
                                                                                          monkeypatch):
    run_dir = tmp_path / "run"
    rates = []
    original = callbacks.DevEvaluationCallback.on_epoch_end

    def record(self, epoch, logs=None):
        rates.append((epoch, float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))))
        original(self, epoch, logs)

    def crash(self, epoch, logs=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(callbacks.DevEvaluationCallback, "on_epoch_end", record)
    argv = _train_args(data_dir, run_dir, "--epochs", "3", "--set", "patience=5", "--set", "lr_decay=0.5")
    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", crash)
        assert cli.main(argv) == 130
    assert cli.main(argv) == 0  # resumes at epoch 2
    rate = zoo.describe(argv[1])["training"]["learning_rate"]  # the entry's own
    assert [epoch for epoch, _ in rates] == [0, 1, 2]
    np.testing.assert_allclose([r for _, r in rates], [rate, rate / 2, rate / 4], rtol=1e-6)


def test_unknown_dataset_is_a_clear_error(capsys):
    assert cli.main(["train", "mcan_fm", "--dataset", "no-such-data"]) == 2
    assert "unknown dataset 'no-such-data'" in capsys.readouterr().err


def test_trains_on_a_users_own_files(data_dir, tmp_path, capsys):
    """`--dataset PATH`: a folder of train/dev/test JSONL files in the generic format, from real TrecQA rows."""
    import csv

    rows = list(csv.DictReader((data_dir / "trecqa" / "tsv" / "clean-dev.tsv").open(encoding="utf-8"),
                               delimiter="\t", quoting=csv.QUOTE_NONE))
    qids = list(dict.fromkeys(r["qid"] for r in rows))
    folder = tmp_path / "mydata"
    folder.mkdir()
    for split, chosen in (("train", qids[:10]), ("dev", qids[10:20]), ("test", qids[20:30])):
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as f:
            for r in rows:
                if r["qid"] in chosen:
                    f.write(json.dumps({k: r[k] for k in ("qid", "question", "answer")} | {"label": int(r["label"])}) + "\n")
    run_dir = tmp_path / "run"
    glove = data_dir / "glove" / "glove.6B.50d.filtered.txt.gz"
    args = ["train", "mcan_sm", "--dataset", str(folder), "--embeddings", str(glove), "--epochs", "1",
            "--run-dir", str(run_dir), "--set", "lstm_units=8", "--set", "highway_units=4"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "test: MAP" in out
    report = json.loads((run_dir / "metrics.json").read_text())
    assert report["test"]["num_questions"] == 10
    assert report["embeddings"]["path"] == str(glove)


def test_predict_reads_candidates_from_a_file(trained_run, tmp_path, capsys):
    path = tmp_path / "answers.txt"
    path.write_text("first answer .\n\nsecond answer , longer .\r\n", encoding="utf-8")
    assert cli.main(["predict", str(trained_run), "--question", "which answer ?", "--answers-file", str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert sorted(line.split("\t")[2] for line in lines) == ["first answer .", "second answer , longer ."]
    assert cli.main(["predict", str(trained_run), "--question", "which answer ?"]) == 2


def test_scoring_no_pairs_gives_no_scores(loaded_run):
    scores = loaded_run.score([], [])
    assert scores.shape == (0,) and scores.dtype == np.float32


@pytest.fixture(scope="module")
def ctrn_run(data_dir, tmp_path_factory):
    """A small CTRN run on TrecQA raw with the four overlap features."""
    run_dir = tmp_path_factory.mktemp("runs") / "ctrn"
    assert cli.main(["train", "ctrn", "--dataset", "trecqa-raw", "--data-dir", str(data_dir), "--train-split",
                     "train", "--max-train-questions", "10", "--epochs", "1", "--run-dir", str(run_dir),
                     *SMALL_CTRN]) == 0
    return run_dir


def test_overlap_features_are_fed_through_training(ctrn_run, data_dir):
    """`ctrn` takes the overlap features: IDF from the training texts only, saved with the run, computed the
    same way when the run is loaded back, and changing them changes the scores."""
    from keras_match.datasets import trecqa
    from keras_match.text.features import OverlapFeatures

    config = json.loads((ctrn_run / "config.json").read_text())
    preprocessing = config["settings"]["preprocessing"]
    assert preprocessing["overlap_features"] is True and "num_features" not in config["settings"]["model"]
    assert "overlap_features" not in config["settings"]["model"] and "overlap_features" not in config
    run = training.load_run(ctrn_run)
    assert run.preprocessor.num_features == 4
    assert sorted(t.name for t in run.model.inputs) == ["answer", "features", "question"]
    overlap = run.preprocessor.overlap
    assert isinstance(overlap, OverlapFeatures)
    train = trecqa.load("raw", data_dir, train_split="train")["train"].head(10).pairs()
    assert overlap.num_documents == len(np.unique(train.questions)) + len(train.answers)
    rebuilt = OverlapFeatures.build(np.concatenate([np.unique(train.questions), train.answers]))
    assert open(rebuilt.path).read() == (ctrn_run / FREQUENCIES_FILE).read_text()

    questions = ["When was the Teapot Dome scandal?"] * 3
    answers = ["The Teapot Dome scandal broke in 1923 .", "Nothing in common here .", ""]
    inputs = pipeline.encode(run.preprocessor, {"question": questions, "answer": answers})
    np.testing.assert_allclose(inputs["features"], overlap(questions, answers).numpy(), atol=0)
    assert inputs["features"][0, 0] > 0 and inputs["features"][2].tolist() == [0.0, 0.0, 0.0, 0.0]
    probabilities = run.model.predict(inputs, verbose=0)[:, 1]
    np.testing.assert_allclose(run.score(questions, answers), probabilities, atol=1e-6)
    swapped = run.model.predict(dict(inputs, features=inputs["features"][::-1].copy()), verbose=0)[:, 1]
    assert np.max(np.abs(swapped - probabilities)) > 1e-4


def test_overlap_features_use_the_truncated_texts(ctrn_run):
    """Words past the model's maximum length change neither the ids nor the features."""
    run = training.load_run(ctrn_run)
    question = "When was the Teapot Dome scandal ?"
    filler = " ".join(["filler"] * run.preprocessor.max_answer_length)
    answers = [filler, filler + " Teapot Dome scandal 1923"]
    inputs = pipeline.encode(run.preprocessor, {"question": [question] * 2, "answer": answers})
    assert inputs["features"][0].tolist() == inputs["features"][1].tolist()
    assert run.score([question] * 2, answers)[0] == run.score([question] * 2, answers)[1]


def test_batches_trim_ids_but_keep_every_feature():
    ids = np.array([[5, 6, 0, 0], [7, 0, 0, 0]], np.int32)
    features = np.arange(8, dtype=np.float32).reshape(2, 4)
    batch = trim_padding({"question": ids, "answer": ids, "features": features}, PairPreprocessor.SEQUENCE_INPUTS)
    assert batch["question"].shape == (2, 2) and batch["answer"].shape == (2, 2)
    np.testing.assert_array_equal(np.asarray(batch["features"]), features)
    lists = trim_padding({"question": ids[None], "answer": np.zeros((1, 2, 4), np.int32)},
                         PairPreprocessor.SEQUENCE_INPUTS)
    assert lists["question"].shape == (1, 2, 2) and lists["answer"].shape == (1, 2, 1)


def _num_features(settings):
    return PairPreprocessor.default_model_arguments(settings.preprocessing)["num_features"]


def test_overlap_features_follow_the_preset_flag():
    assert _num_features(zoo.resolve("ctrn")) == 4
    assert _num_features(zoo.resolve("ctrn", overlap_features=False)) == 0
    assert _num_features(zoo.resolve("qrnn_wikiqa", overlap_features=True)) == 4
    with pytest.raises(ValueError, match="unknown setting"):
        zoo.resolve("ctrn", num_features=2)  # the preprocessor decides the width, not a setting
    # every builder takes pair features now (issue 16); MCAN's width follows both switches
    assert _num_features(zoo.resolve("mcan_fm", overlap_features=True)) == 4
    assert _num_features(zoo.resolve("mcan_fm", overlap_features=True, bm25_feature=True)) == 5
    assert _num_features(zoo.resolve("mcan_fm", bm25_feature=True)) == 1


def test_a_builder_without_pair_features_refuses_them(monkeypatch):
    def build(vocab_size, embeddings=None, lstm_units=4, name=None):
        return None

    monkeypatch.setitem(zoo.families()["mcan"].builders, "mcan", build)
    with pytest.raises(ValueError, match="builder 'mcan' takes no num_features, so the preprocessing settings "
                                         "overlap_features / bm25_feature cannot be switched on"):
        zoo.resolve("mcan_fm", bm25_feature=True)


def test_a_run_without_its_document_frequencies_is_refused(ctrn_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(ctrn_run, copy)
    (copy / FREQUENCIES_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="document_frequencies.tsv"):
        training.load_run(copy)


def test_a_feature_run_exports_with_features_in_the_graph(ctrn_run, tmp_path):
    import tensorflow as tf

    from keras_match.serving import export

    run = training.load_run(ctrn_run)
    version_dir = export.saved_model(ctrn_run, tmp_path / "ctrn", warmup=False)
    loaded = tf.saved_model.load(str(version_dir))
    questions = ["When was the Teapot Dome scandal?", "who wrote hamlet ?"]
    answers = ["The Teapot Dome scandal broke in 1923 .", "Shakespeare wrote it ."]
    served = loaded.signatures["serving_default"](question=tf.constant(questions), answer=tf.constant(answers))
    np.testing.assert_allclose(served["score"].numpy(), run.score(questions, answers), atol=1e-5)
