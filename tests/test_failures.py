"""Runs that fail loudly (issue 17): arguments are checked before anything is written, a failed start never
blocks the corrected command, every setting value is checked, export options are checked before a version is
written. Each case: the exit status (2: usage error, 1: a failure of the data, the run or the machine), one line
naming the argument or file, nothing left behind. Kills, changed inputs and write failures: tests/test_crashes.py."""

import json

import pytest

from keras_match import cli, zoo

from conftest import mcan_train_args, train_args


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize("argument, value", [("--epochs", "0"), ("--batch-size", "0"),
                                             ("--max-train-questions", "0"), ("--max-train-questions", "-2"),
                                             ("--epochs", "two")])
def test_bad_numbers_are_usage_errors_and_write_nothing(tmp_path, capsys, argument, value):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "mcan_fm", "--run-dir", str(run_dir), argument, value])
    assert info.value.code == 2
    line = _one_line(capsys)
    assert f"argument {argument}: must be an integer >= 1" in line and "--help" in line
    assert not run_dir.exists()


@pytest.mark.parametrize("setting, message", [
    ("learning_rate=-1.0", "setting learning_rate=-1.0: must be a number > 0"),
    ("dropout=1.5", "setting dropout=1.5: must be a number in [0, 1)"),
    ("epochs=0", "setting epochs=0: must be an integer >= 1"),
    ("lstm_units=2.5", "setting lstm_units=2.5: must be an integer >= 1"),
    ("patience=-1", "setting patience=-1: must be an integer >= 0"),
    ("list_size=1", "setting list_size=1: must be null or an integer >= 2"),
    ("bucketing=3", "setting bucketing=3: must be true or false"),
    ("overlap_features=1", "setting overlap_features=1: must be true or false"),
    ("compression=3", "setting compression=3: must be text"),
])
def test_bad_setting_values_are_named_before_anything_is_written(data_dir, tmp_path, capsys, setting, message):
    run_dir = tmp_path / "run"
    assert cli.main(mcan_train_args(data_dir, run_dir, "--set", setting)) == 2  # lstm_units, compression: MCAN's
    line = _one_line(capsys)
    assert message in line
    assert not run_dir.exists()


def test_good_values_of_every_kind_pass():
    settings = zoo.resolve("mcan_fm", learning_rate=1e-3, dropout=0.0, clipnorm=None, epochs=3, list_size=None,
                           bucketing=False, compression="nn", max_vocabulary=0, overlap_features=True)
    assert settings.training.epochs == 3 and settings.model["compression"] == "nn"
    assert zoo.resolve("mcan_fm", learning_rate=1).training.learning_rate == 1  # an int is a number


def test_a_mistyped_vector_file_leaves_nothing_and_the_corrected_command_runs(data_dir, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(train_args(data_dir, run_dir, "--embeddings", str(tmp_path / "typo.txt"))) == 2
    assert "typo.txt: no such vector file or folder" in _one_line(capsys)
    assert not run_dir.exists()
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "1")) == 0
    assert json.loads((run_dir / "metrics.json").read_text())["epochs_run"] == 1


def test_a_start_that_failed_before_its_first_epoch_is_not_a_run_to_resume(data_dir, tmp_path, monkeypatch,
                                                                            capsys):
    from keras_match.training import recipe

    run_dir = tmp_path / "run"

    def fail(*args, **kwargs):
        raise ValueError("simulated failure in the first step")

    with monkeypatch.context() as patch:  # fails after config.json and the vocabulary were written
        patch.setattr(recipe.Recipe, "compile", fail)
        assert cli.main(train_args(data_dir, run_dir, "--epochs", "1", "--seed", "3")) == 2
    assert (run_dir / "config.json").exists()
    capsys.readouterr()
    # other settings than the failed start's: no "interrupted run with other settings" refusal
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "1", "--seed", "4")) == 0
    assert json.loads((run_dir / "config.json").read_text())["seed"] == 4


def test_export_checks_the_opset_before_writing_a_version(trained_run, tmp_path, capsys):
    base = tmp_path / "export"
    assert cli.main(["export", str(trained_run), "--to", str(base), "--onnx", "--opset", "99"]) == 2
    assert "--opset 99: tf2onnx writes opsets 1 to 18; nothing was written" in _one_line(capsys)
    assert not base.exists()
    existing = tmp_path / "onnx-here"
    existing.mkdir()
    assert cli.main(["export", str(trained_run), "--to", str(base), "--onnx-path", str(existing)]) == 2
    assert "exists: give a new folder" in _one_line(capsys)
    assert not base.exists()


# ---------------------------------------------------------------------------------------------- damaged runs


def _copy_run(trained_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(trained_run, copy)
    return copy


def _truncate(path, keep=0.5):
    """Keeps the first `keep` of the file's lines (split at b"\n", so a binary file too): a cut inside a line of
    `vocabulary.txt` could leave a word repeating an earlier one ('c' of 'cat'), named as a duplicate instead."""
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[: int(len(lines) * keep)]) + b"\n")


@pytest.mark.parametrize("name, message", [
    ("config.json", r"config\.json is damaged \(not valid JSON"),
    ("model.keras", r"model\.keras is damaged or not a Keras model file"),
    ("vocabulary.txt", r"vocabulary\.txt gives \d+ token ids but the model's embedding has \d+ rows"),
])
def test_a_damaged_run_file_is_named_and_fails_with_status_1(trained_run, tmp_path, capsys, name, message):
    """A run records its files' sha256 (`files.sha256`): the cut file is named as damaged before it is read. A run
    written before that record existed (removed here) gets the file's own check, with its own message."""
    import re

    copy = _copy_run(trained_run, tmp_path)
    _truncate(copy / name)
    assert cli.main(["predict", str(copy), "--question", "who ?", "--answer", "me ."]) == 1
    line = _one_line(capsys)
    assert f"{copy / name} is damaged: its sha256 is not the one the run wrote (files.sha256)" in line
    (copy / "files.sha256").unlink()
    assert cli.main(["predict", str(copy), "--question", "who ?", "--answer", "me ."]) == 1
    line = _one_line(capsys)
    assert re.search(message, line) and str(copy / name) in line


def test_a_second_writer_of_a_run_folder_is_refused_with_the_holders_pid(data_dir, tmp_path, capsys):
    import os

    from keras_match.artifacts import runs

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with runs.locked(run_dir):  # as a `keras-match train` in progress would hold it
        assert cli.main(train_args(data_dir, run_dir, "--epochs", "1")) == 1  # a failure, not a usage error
        line = _one_line(capsys)
        assert f"is in use by process {os.getpid()}" in line and "choose another --run-dir" in line
        assert not (run_dir / "config.json").exists()
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "1")) == 0  # released: the command runs


def _write_jsonl(path, rows):
    with path.open("w", encoding="utf-8") as f:
        for qid, question, answer, label in rows:
            f.write(json.dumps({"qid": qid, "question": question, "answer": answer, "label": label}) + "\n")


ROWS = [("q1", "who wrote hamlet ?", "shakespeare wrote hamlet .", 1), ("q1", "who wrote hamlet ?", "a play .", 0),
        ("q2", "where is paris ?", "paris is in france .", 1), ("q2", "where is paris ?", "it rains .", 0)]


def test_a_single_file_is_not_a_training_dataset(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    _write_jsonl(path, ROWS)
    assert cli.main(["train", "mcan_fm", "--dataset", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    line = _one_line(capsys)
    assert f"{path} is one file: a training dataset is a folder of train / dev / test files" in line
    assert not (tmp_path / "run").exists()


def test_a_dev_split_without_relevant_answers_is_named_at_load(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", ROWS)
    _write_jsonl(folder / "dev.jsonl", [(q, t, a, 0) for q, t, a, _ in ROWS])
    assert cli.main(["train", "mcan_fm", "--dataset", str(folder), "--run-dir", str(tmp_path / "run"),
                     "--embeddings", "none"]) == 1  # the data's fault: a failure, not a usage error
    line = _one_line(capsys)
    assert "dev split" in line and "dev.jsonl" in line and "no question with a relevant answer" in line
    assert not (tmp_path / "run").exists()


def test_a_malformed_data_file_is_a_failure_naming_file_line_and_field(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", ROWS)
    _write_jsonl(folder / "dev.jsonl", ROWS)
    with (folder / "dev.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q3", "question": "why ?", "answer": "because .", "label": "yes"}) + "\n")
    assert cli.main(["train", "mcan_fm", "--dataset", str(folder), "--run-dir", str(tmp_path / "run"),
                     "--embeddings", "none"]) == 1
    line = _one_line(capsys)
    assert f"{folder / 'dev.jsonl'}, line 5" in line and "label" in line
    assert not (tmp_path / "run").exists()


def test_an_option_and_a_set_of_the_same_setting_is_a_usage_error(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", "mcan_fm", "--epochs", "2", "--set", "epochs=3", "--run-dir", str(run_dir)]) == 2
    assert "--epochs and --set epochs=... both given: give one" in _one_line(capsys)
    assert not run_dir.exists()
