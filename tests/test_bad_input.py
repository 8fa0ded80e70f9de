"""The last classes of bad input, through the `keras-match` command in a subprocess (as a user meets them): each
ends with its exit status and one line on stderr (TensorFlow's start-up notices silenced), names the file, line
or argument, and leaves nothing behind (no run folder, no temporary folder).

1. silent wrong answers: a run file cut short, a vector file with nan;
2. tracebacks: a run file cut mid-line, `tune --dir` a file, a truncated `--embeddings` .gz;
3. checked late: `--set learning_rate=1` (accepted), `1e400`, `head=nope`, `--seed -1`;
4. exit status and ignored options: a damaged `preprocessor.json`, a pairwise loss that cannot make a batch,
   `export --opset` without `--onnx`.
"""

import gzip
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import train_args

SMALL_CTRN = ["--set", "filters=8", "--set", "dense_units=8", "--set", "max_vocabulary=0"]


def keras_match(args, tmp_path, **env):
    """`keras-match ARGS` in a subprocess with its own TMPDIR: `(exit status, stderr lines, leftover temp files)`.
    `TF_CPP_MIN_LOG_LEVEL` is left to the command (a user's shell does not set it)."""
    temp = tmp_path / "temp"
    temp.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    environment.update(TMPDIR=str(temp), **env)
    done = subprocess.run([sys.executable, "-m", "keras_match.cli", *args], env=environment, capture_output=True,
                          text=True, timeout=900, cwd=tmp_path)
    return done.returncode, done.stderr.splitlines(), sorted(p.name for p in temp.iterdir())


@pytest.fixture(scope="module")
def run_with_features(data_dir, tmp_path_factory):
    """A finished CTRN run with the overlap features (so with `document_frequencies.tsv`)."""
    from keras_match import cli

    run_dir = tmp_path_factory.mktemp("runs") / "ctrn"
    assert cli.main(["train", "ctrn", "--dataset", "trecqa-raw", "--train-split", "train", "--data-dir",
                     str(data_dir), "--max-train-questions", "12", "--epochs", "1", "--run-dir", str(run_dir),
                     *SMALL_CTRN]) == 0
    return run_dir


def copy_run(run_dir, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


def one_line(stderr, command):
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith(f"keras-match {command}: error: ")
    return stderr[0]


# ---- 1. silent wrong answers -----------------------------------------------------------------------------------


def test_a_run_file_cut_at_a_line_end_is_named_not_used(run_with_features, tmp_path):
    run = copy_run(run_with_features, tmp_path)
    frequencies = run / "document_frequencies.tsv"
    lines = frequencies.read_bytes().splitlines(keepends=True)
    assert len(lines) > 1000
    frequencies.write_bytes(b"".join(lines[:1000]))  # still well formed: before, evaluate scored with it
    status, stderr, left = keras_match(["evaluate", str(run), "--dataset", "trecqa-raw"], tmp_path)
    assert status == 1 and left == []
    line = one_line(stderr, "evaluate")
    assert f"{frequencies} is damaged" in line and "restore the file or retrain the run" in line


def test_a_vector_file_with_nan_is_named_with_its_line(data_dir, tmp_path):
    lines = gzip.open(data_dir / "glove" / "glove.6B.50d.filtered.txt.gz", "rt").read().splitlines()[:2000]
    word, *values = lines[5].split(" ")
    lines[5] = " ".join([word, "nan", *values[1:]])
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("\n".join(lines) + "\n")
    status, stderr, left = keras_match(train_args(data_dir, tmp_path / "new", "--embeddings", str(vectors)),
                                       tmp_path)
    assert status == 1 and left == [] and not (tmp_path / "new").exists()
    line = one_line(stderr, "train")
    assert f"{vectors}, line 6: the vector of {word!r} holds a value that is not a finite number" in line


# ---- 2. tracebacks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["predict", "export"])
def test_a_run_file_cut_mid_line_is_one_line_and_no_temporary_folder_is_left(run_with_features, tmp_path,
                                                                              command):
    run = copy_run(run_with_features, tmp_path)
    frequencies = run / "document_frequencies.tsv"
    data = frequencies.read_bytes()
    frequencies.write_bytes(data[: len(data) // 2])
    args = {"predict": ["predict", str(run), "--question", "who is it ?", "--answer", "it is me ."],
            "export": ["export", str(run), "--to", str(tmp_path / "export"), "--no-warmup"]}[command]
    status, stderr, left = keras_match(args, tmp_path)
    assert status == 1 and left == [] and not (tmp_path / "export").exists()
    assert f"{frequencies} is damaged" in one_line(stderr, command)


def test_a_cut_run_file_of_a_run_without_digests_is_named_with_its_line(run_with_features, tmp_path):
    """A run written before `files.sha256` existed: the frequency file itself is checked, line by line."""
    run = copy_run(run_with_features, tmp_path)
    (run / "files.sha256").unlink()
    frequencies = run / "document_frequencies.tsv"
    lines = frequencies.read_text().splitlines(keepends=True)
    frequencies.write_text("".join(lines[:40]) + lines[40].split("\t")[0])  # cut inside line 41
    status, stderr, left = keras_match(["predict", str(run), "--question", "who ?", "--answer", "me ."], tmp_path)
    assert status == 1 and left == []
    line = one_line(stderr, "predict")
    assert f"{frequencies}, line 41" in line and "restore the file or retrain the run" in line


def test_tune_dir_that_is_a_file_is_refused_before_any_work(data_dir, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    status, stderr, left = keras_match(["tune", "qrnn", "--dataset", "trecqa-raw", "--train-split", "train",
                                        "--data-dir", str(data_dir), "--max-trials", "1", "--epochs", "1", "--dir",
                                        str(target)], tmp_path)
    assert status == 2 and left == [] and target.read_text() == "not a folder"
    assert f"--dir {target} is a file, not a folder" in one_line(stderr, "tune")


def test_tune_dir_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    from keras_match.artifacts import storage

    def refuse(self, *args, **kwargs):
        raise OSError(30, "Read-only file system", str(self))

    monkeypatch.setattr(pathlib.Path, "write_bytes", refuse)  # as root, a read-only mode bit would not stop it
    with pytest.raises(storage.WriteError, match="the file system is read-only: write elsewhere"):
        storage.check_writable_folder(tmp_path / "search", "--dir")


def test_a_truncated_vector_gz_is_named_with_its_line(data_dir, tmp_path):
    data = (data_dir / "glove" / "glove.6B.50d.filtered.txt.gz").read_bytes()
    vectors = tmp_path / "vectors.txt.gz"
    vectors.write_bytes(data[: len(data) // 3])
    status, stderr, left = keras_match(train_args(data_dir, tmp_path / "new", "--embeddings", str(vectors)),
                                       tmp_path)
    assert status == 1 and left == [] and not (tmp_path / "new").exists()
    line = one_line(stderr, "train")
    assert f"{vectors}, line " in line and "truncated or corrupt" in line


# ---- 3. checked late -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,message", [
    (["--set", "learning_rate=1e400"], "setting learning_rate=Infinity: must be a number > 0"),
    (["--set", "head=nope"], 'setting head="nope": must be one of the heads softmax, score, classification'),
    (["--set", "optimizer=nope"], 'setting optimizer="nope": must be a Keras optimizer name'),
    (["--seed", "-1"], "argument --seed: must be an integer from 0 to 4294967295, got -1"),
], ids=["infinite-rate", "head", "optimizer", "seed"])
def test_settings_and_arguments_are_refused_before_anything_is_written(data_dir, tmp_path, args, message):
    status, stderr, left = keras_match(train_args(data_dir, tmp_path / "new", *args), tmp_path)
    assert status == 2 and left == [] and not (tmp_path / "new").exists()
    assert message in one_line(stderr, "train")


def test_an_integer_learning_rate_is_a_number(data_dir, tmp_path):
    status, stderr, left = keras_match(train_args(data_dir, tmp_path / "new", "--epochs", "1", "--set",
                                                  "learning_rate=1"), tmp_path)
    assert (status, stderr, left) == (0, [], [])
    assert (tmp_path / "new" / "model.keras").is_file()


def test_a_search_space_of_integer_rates_is_accepted(tmp_path):
    from keras_match import zoo

    settings = zoo.resolve("mcan_fm", learning_rate=2)
    assert float(zoo.optimizer(settings).learning_rate.numpy()) == 2.0


# ---- 4. exit status and ignored options ------------------------------------------------------------------------


def test_a_damaged_preprocessor_json_is_a_damaged_run(run_with_features, tmp_path):
    run = copy_run(run_with_features, tmp_path)
    (run / "preprocessor.json").write_text("{not json")
    status, stderr, _ = keras_match(["evaluate", str(run), "--dataset", "trecqa-raw"], tmp_path)
    assert status == 1
    line = one_line(stderr, "evaluate")
    assert f"{run / 'preprocessor.json'} is damaged" in line and "restore the file or retrain the run" in line
    (run / "files.sha256").unlink()  # a run without digests: the parse error, with the same remedy and status
    status, stderr, _ = keras_match(["evaluate", str(run), "--dataset", "trecqa-raw"], tmp_path)
    assert status == 1
    line = one_line(stderr, "evaluate")
    assert "preprocessor.json: not a valid preprocessor config" in line and "restore the file or retrain" in line


def test_a_pairwise_loss_without_any_pair_is_a_data_failure(tmp_path):
    folder = tmp_path / "all-positive"
    folder.mkdir()
    header = "qid\tquestion\tanswer\tlabel\n"
    (folder / "train.tsv").write_text(header + "".join(f"q{q}\twhat is {q} ?\t{q} is answer {a} .\t1\n"
                                                       for q in range(4) for a in range(3)))
    (folder / "dev.tsv").write_text(header + "".join(f"d{q}\twhat is {q} ?\t{q} is it .\t{int(a == 0)}\n"
                                                     for q in range(3) for a in range(3)))
    status, stderr, left = keras_match(["train", "mcan_fm", "--dataset", str(folder), "--set",
                                        "loss=pairwise_hinge", "--run-dir", str(tmp_path / "new")], tmp_path)
    assert status == 1 and left == [] and not (tmp_path / "new").exists()
    line = one_line(stderr, "train")
    assert f"{folder / 'train.tsv'}: no training question has both a relevant and an irrelevant candidate" in line


def test_opset_without_onnx_is_refused(run_with_features, tmp_path):
    status, stderr, _ = keras_match(["export", str(run_with_features), "--to", str(tmp_path / "export"),
                                     "--opset", "99", "--no-warmup"], tmp_path)
    assert status == 2 and not (tmp_path / "export").exists()
    assert "--opset 99 applies to the ONNX export: add --onnx" in one_line(stderr, "export")


# ---- 5. one line: TensorFlow's start-up notices ----------------------------------------------------------------


def test_a_command_that_loads_tensorflow_writes_nothing_else_to_stderr(run_with_features, tmp_path):
    status, stderr, _ = keras_match(["predict", str(run_with_features), "--question", "who is it ?", "--answer",
                                     "it is me ."], tmp_path)
    assert (status, stderr) == (0, [])
