"""Runs that survive what the machine does to them (issue 17): a SIGKILL mid-epoch or mid-checkpoint-write resumes
from the last complete epoch and ends as the uninterrupted run; changed input files are refused on resume; a full
disk or a forbidden folder gives one line naming the path, and leaves no partial file in place.

The kills are real `SIGKILL`s of a `keras-match train` subprocess, sent by the process to itself at a chosen
point (a batch of epoch 2, or half-way through writing a checkpoint file), so no cleanup code of ours runs."""

import errno
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from keras_match import cli
from keras_match.artifacts import storage
from keras_match.training import callbacks

from conftest import REPO, train_args

ARGS = ("--epochs", "3", "--set", "patience=5", "--seed", "11")


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def _train_subprocess(argv, kill_at=None):
    """Runs `keras-match train ARGV` in a child process; `kill_at` makes it SIGKILL itself:
    `("batch", E, B)` at batch B of epoch E (1-based), `("write", E, FRACTION)` after writing FRACTION of
    `checkpoints/epoch-E.weights.h5`'s temporary file, `("commit", E)` after that file was renamed into place
    but before `state.json` names it. Returns the completed process."""
    program = f"""
import os, signal, sys
sys.path.insert(0, {str(REPO)!r})
from keras_match import cli
from keras_match.artifacts import storage
from keras_match.training import callbacks
kill_at = {kill_at!r}

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if kill_at and kill_at[0] == "batch":
    original_end = callbacks.DevEvaluationCallback.on_train_batch_end
    state = {{"epoch": 0}}
    def on_epoch_begin(self, epoch, logs=None):
        state["epoch"] = epoch + 1
    def on_train_batch_end(self, batch, logs=None):
        if state["epoch"] == kill_at[1] and batch + 1 == kill_at[2]:
            die()
    callbacks.DevEvaluationCallback.on_epoch_begin = on_epoch_begin
    callbacks.DevEvaluationCallback.on_train_batch_end = on_train_batch_end
elif kill_at:
    original_write = storage.atomic_write
    def atomic_write(path, write):
        if os.path.basename(str(path)) != f"epoch-{{kill_at[1]}}.weights.h5":
            return original_write(path, write)
        if kill_at[0] == "write":
            staged = storage.staged_path(path)
            write(staged)
            data = open(staged, "rb").read()
            with open(staged, "wb") as f:
                f.write(data[: int(len(data) * kill_at[2])])
            die()
        original_write(path, write)
        die()
    storage.atomic_write = atomic_write
sys.exit(cli.main({list(argv)!r}))
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)


def _dev_figures(run_dir):
    report = json.loads((run_dir / "metrics.json").read_text())
    return [(h["epoch"], round(h["dev_map"], 6), round(h["dev_mrr"], 6)) for h in report["history"]], report


@pytest.fixture(scope="module")
def uninterrupted(data_dir, tmp_path_factory):
    """The run never killed, trained in this process: only the killed runs need a process of their own (a child
    pays TensorFlow's import again, 4-5 s of CPU each here), and the same command with the same seed gives the
    same figures in any process (tests/test_provenance.py)."""
    run_dir = tmp_path_factory.mktemp("whole") / "run"
    assert cli.main(train_args(data_dir, run_dir, *ARGS)) == 0
    return _dev_figures(run_dir)


@pytest.mark.parametrize("kill_at", [("batch", 2, 2), ("write", 2, 0.5), ("commit", 2)],
                         ids=["mid-epoch", "mid-checkpoint-write", "between-weights-and-commit"])
def test_a_killed_run_resumes_and_ends_as_the_uninterrupted_run(data_dir, tmp_path, uninterrupted, kill_at, capsys):
    run_dir = tmp_path / "run"
    argv = train_args(data_dir, run_dir, *ARGS)
    killed = _train_subprocess(argv, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    state = json.loads((run_dir / "checkpoints" / callbacks.STATE_FILE).read_text())
    assert state["epoch"] == 1  # the last complete epoch; epoch 2's files are not named
    assert (run_dir / "checkpoints" / state["weights"]).is_file()
    assert not (run_dir / "metrics.json").exists()

    capsys.readouterr()
    assert cli.main(argv) == 0  # resumed in this process, from the killed child's files
    assert "resuming after epoch 1" in capsys.readouterr().out
    figures, report = _dev_figures(run_dir)
    assert figures == uninterrupted[0]
    assert report["test"]["map"] == pytest.approx(uninterrupted[1]["test"]["map"], abs=1e-6)
    assert not (run_dir / "checkpoints").exists()


def test_a_damaged_checkpoint_is_named_when_resuming(data_dir, tmp_path, monkeypatch, capsys):
    import keras

    run_dir = tmp_path / "run"

    def stop(self, epoch, logs=None):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", stop)
        assert cli.main(train_args(data_dir, run_dir, "--epochs", "2")) == 130
    capsys.readouterr()
    state = run_dir / "checkpoints" / callbacks.STATE_FILE
    weights = run_dir / "checkpoints" / json.loads(state.read_text())["weights"]
    weights.write_bytes(weights.read_bytes()[:1000])
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "2")) == 1
    line = _one_line(capsys)
    assert f"{weights} is damaged" in line and "delete the run folder's checkpoints/" in line

    state.write_text(state.read_text()[:40])
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "2")) == 1
    line = _one_line(capsys)
    assert f"{state} is damaged (not valid JSON" in line


def _own_dataset(data_dir, folder):
    """A folder of train / dev / test JSONL files made of real TrecQA dev rows (10 questions each)."""
    import csv

    rows = list(csv.DictReader((data_dir / "trecqa" / "tsv" / "clean-dev.tsv").open(encoding="utf-8"),
                               delimiter="\t", quoting=csv.QUOTE_NONE))
    qids = list(dict.fromkeys(r["qid"] for r in rows))
    folder.mkdir()
    for split, chosen in (("train", qids[:10]), ("dev", qids[10:20]), ("test", qids[20:30])):
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as f:
            for r in rows:
                if r["qid"] in chosen:
                    f.write(json.dumps({k: r[k] for k in ("qid", "question", "answer")}
                                       | {"label": int(r["label"])}) + "\n")
    return folder


def test_a_run_refuses_to_resume_on_a_changed_data_file(data_dir, tmp_path, monkeypatch, capsys):
    import keras

    folder = _own_dataset(data_dir, tmp_path / "data")
    run_dir = tmp_path / "run"
    argv = ["train", "mcan_sm", "--dataset", str(folder), "--epochs", "2", "--run-dir", str(run_dir),
            "--set", "lstm_units=8", "--set", "highway_units=4"]

    def stop(self, epoch, logs=None):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", stop)
        assert cli.main(argv) == 130
    config = json.loads((run_dir / "config.json").read_text())
    assert set(config["data_files"]) == {"train", "dev", "test"}
    capsys.readouterr()
    train = folder / "train.jsonl"
    lines = train.read_text().splitlines(keepends=True)
    train.write_text("".join(lines[:-1]))  # one candidate fewer
    assert cli.main(argv) == 1
    line = _one_line(capsys)
    assert f"{train} (the train split) changed since {run_dir} began" in line and "restore the file" in line
    train.write_text("".join(lines))  # restored: the run resumes
    assert cli.main(argv) == 0
    assert json.loads((run_dir / "metrics.json").read_text())["epochs_run"] == 2


def test_a_run_refuses_to_resume_on_a_changed_vector_file(data_dir, tmp_path, monkeypatch, capsys):
    import gzip

    import keras

    vectors = tmp_path / "vectors.txt"
    with gzip.open(data_dir / "glove" / "glove.6B.50d.filtered.txt.gz", "rt", encoding="utf-8") as f:
        vectors.write_text("".join(line for _, line in zip(range(5000), f)), encoding="utf-8")
    run_dir = tmp_path / "run"
    argv = train_args(data_dir, run_dir, "--epochs", "2", "--embeddings", str(vectors))

    def stop(self, epoch, logs=None):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(keras.callbacks.TensorBoard, "on_epoch_end", stop)
        assert cli.main(argv) == 130
    capsys.readouterr()
    original = vectors.read_text(encoding="utf-8")
    vectors.write_text(original.replace(" 0.", " 0.0", 1), encoding="utf-8")  # one number's digits, same value
    assert cli.main(argv) == 1
    line = _one_line(capsys)
    assert f"{vectors} (the pretrained vectors) changed since {run_dir} began" in line


# ------------------------------------------------------------------------------------------ write failures


def _full_disk_at(path):
    """Makes the next write of `path` (through keras_match.artifacts.storage) hit a full disk: its temporary name becomes
    a symbolic link to /dev/full, where every write fails with ENOSPC."""
    staged = storage.staged_path(path)
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.symlink_to("/dev/full")
    return staged


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_during_a_checkpoint_is_named_and_the_rerun_resumes(data_dir, tmp_path, capsys):
    run_dir = tmp_path / "run"
    staged = _full_disk_at(run_dir / "checkpoints" / "epoch-2.weights.h5")  # h5py writes this one
    argv = train_args(data_dir, run_dir, "--epochs", "2")
    assert cli.main(argv) == 1
    line = _one_line(capsys)
    assert f"cannot write {run_dir / 'checkpoints' / 'epoch-2.weights.h5'}: No space left on device" in line
    assert "free space on that disk" in line
    assert not staged.exists() and not staged.is_symlink()  # the partial file is gone
    assert json.loads((run_dir / "checkpoints" / callbacks.STATE_FILE).read_text())["epoch"] == 1
    assert cli.main(argv) == 0  # space again: the rerun resumes after epoch 1
    assert "resuming after epoch 1" in capsys.readouterr().out


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_when_the_run_starts_leaves_nothing_that_blocks_the_rerun(data_dir, tmp_path, capsys):
    run_dir = tmp_path / "run"
    _full_disk_at(run_dir / "config.json")
    argv = train_args(data_dir, run_dir, "--epochs", "1")
    assert cli.main(argv) == 1
    assert f"cannot write {run_dir / 'config.json'}: No space left on device" in _one_line(capsys)
    assert not (run_dir / "config.json").exists()
    assert cli.main(argv) == 0


def test_a_forbidden_folder_is_named(trained_run, tmp_path, monkeypatch, capsys):
    # Tests may run as root, for whom no folder is read-only: the system's refusal is simulated where it arises.
    original = pathlib.Path.mkdir

    def refuse(self, *args, **kwargs):
        if str(self).startswith(str(tmp_path / "locked")):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", refuse)
    base = tmp_path / "locked" / "export"
    assert cli.main(["export", str(trained_run), "--to", str(base), "--no-warmup"]) == 1
    line = _one_line(capsys)
    assert f"cannot write {base}: Permission denied; no permission to write there" in line


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_while_writing_a_trec_run_file_keeps_the_old_one(tmp_path):
    from keras_match import metrics

    path = tmp_path / "run.txt"
    metrics.write_trec_run(path, ["q1", "q1"], ["d1", "d2"], [0.5, 0.25], "before")
    _full_disk_at(path)
    with pytest.raises(storage.WriteError, match=f"cannot write {path}: No space left on device"):
        metrics.write_trec_run(path, ["q1", "q1"], ["d1", "d2"], [0.25, 0.5], "after")
    assert path.read_text().split()[-1] == "before"
