"""A short real training on TrecQA through the command-line path, then evaluate / predict / resume."""

import json

import keras
import numpy as np
import pytest

from keras_match import cli, training

from conftest import train_args as _train_args


def test_train_writes_a_complete_run(trained_run, capsys):
    for name in ("config.json", "vocabulary.txt", "model.keras", "metrics.json"):
        assert (trained_run / name).exists(), name
    assert not (trained_run / "checkpoints").exists()
    assert any((trained_run / "logs").rglob("events.out.tfevents*"))
    report = json.loads((trained_run / "metrics.json").read_text())
    assert report["test"]["num_questions"] == 68 and report["dev"]["num_questions"] == 65
    for split in ("dev", "test"):
        for key in ("map", "mrr", "p@1"):
            assert 0.0 < report[split][key] <= 1.0
    assert report["embeddings"]["coverage"] > 0.9
    assert report["epochs_run"] == 1 and report["best_epoch"] == 1


def test_evaluate_reproduces_the_test_figures(trained_run, data_dir, capsys):
    assert cli.main(["evaluate", str(trained_run), "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    report = json.loads((trained_run / "metrics.json").read_text())
    assert printed["map"] == pytest.approx(report["test"]["map"], abs=1e-6)


def test_predict_ranks_raw_answers(trained_run, capsys):
    answers = ["The teapot dome scandal was in 1923 .", "", "zzqx unknownword"]
    assert cli.main(["predict", str(trained_run), "--question", "When was the Teapot Dome scandal?",
                     *sum((["--answer", a] for a in answers), [])]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    scores = [float(line.split("\t")[1]) for line in lines]
    assert scores == sorted(scores, reverse=True)
    run = training.load_run(trained_run)
    direct = run.score(["When was the Teapot Dome scandal?"] * 3, answers)
    assert sorted((round(float(x), 4) for x in direct), reverse=True) == scores


def test_finished_run_is_not_overwritten(trained_run, data_dir, capsys):
    assert cli.main(_train_args(data_dir, trained_run, "--epochs", "1")) == 2
    assert "finished run" in capsys.readouterr().err


def test_interrupted_run_resumes_from_its_last_epoch(data_dir, tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    epochs_seen = []
    original = training.DevRankingCallback.on_epoch_end

    def record(self, epoch, logs=None):
        epochs_seen.append(epoch)
        original(self, epoch, logs)

    def crash_after_first_epoch(self, epoch, logs=None):
        raise KeyboardInterrupt  # after the ranking state and the backup of epoch 1 were written

    monkeypatch.setattr(training.DevRankingCallback, "on_epoch_end", record)
    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", crash_after_first_epoch)
        assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--set", "patience=5")) == 130
    assert epochs_seen == [0]
    assert (run_dir / "checkpoints" / "ranking_state.json").exists()
    assert not (run_dir / "metrics.json").exists()

    # Resuming with other settings is refused rather than mixing two runs.
    assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--seed", "7")) == 2

    assert cli.main(_train_args(data_dir, run_dir, "--epochs", "3", "--set", "patience=5")) == 0
    assert epochs_seen == [0, 1, 2]
    report = json.loads((run_dir / "metrics.json").read_text())
    assert [h["epoch"] for h in report["history"]] == [1, 2, 3]


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
