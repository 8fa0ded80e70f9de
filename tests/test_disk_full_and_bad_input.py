"""Ten bad inputs that misbehaved (issue 59), each as a user meets it: its exit status (2: a usage error, 1: a
failure of the data, the files or the machine), one line naming the field, file or line and what to do, nothing
partial left behind, and nothing already computed lost.

1. a full disk: HDF5 weight files (checkpoints, presets, Keras Tuner's trial checkpoints) are made in memory and
   written by Python, so a failed write is one line instead of h5py tracebacks and a segmentation fault; so is a
   failed write of TensorBoard's logs; Keras Tuner's state files are written atomically and a failed write ends the
   search in one line; a failed export or preset leaves no folder;
2. silent wrong answers: a setting the vectors contradict (`embedding_dim`), a run without `files.sha256` whose
   `document_frequencies.tsv` lost its last lines;
3. checked late or not at all: every value of a search space, an unknown `--split`, `data verify --data-dir FILE`;
4. exit status and message: a finished run without `model.keras`, a preset without `metadata.json`, a text file
   that is not UTF-8;
5. stderr: TensorFlow's start-up notices of `keras-match zoo`; a refused `tune` leaves no empty folder.
"""

import errno
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from keras_match import cli

SMALL_CTRN = ["--set", "filters=8", "--set", "dense_units=8", "--set", "max_vocabulary=0"]


def ctrn_args(data_dir, run_dir, *extra):
    """`keras-match train` of a small CTRN with the overlap features on 12 TrecQA questions (a vocabulary of the
    training words only: small files)."""
    return ["train", "ctrn", "--dataset", "trecqa-raw", "--train-split", "train", "--data-dir", str(data_dir),
            "--max-train-questions", "12", "--run-dir", str(run_dir), *SMALL_CTRN, *extra]


def one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def keras_match_process(args, tmp_path, before=""):
    """`keras-match ARGS` in a fresh process (TensorFlow's own notices and crashes are seen as a user sees them),
    with the Python statements `before` run first (after TensorFlow's quiet import, as the command makes it):
    `(exit status, stdout, stderr lines)`."""
    quiet = ("import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\nfrom keras_match import cli\n"
             "cli._quiet_tensorflow_import()\n" if before else "")
    code = f"import sys\n{quiet}{before}\nfrom keras_match import cli\nsys.exit(cli.main(sys.argv[1:]))\n"
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code, *args], env=environment, capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    return done.returncode, done.stdout, done.stderr.splitlines()


@pytest.fixture(scope="module")
def ctrn_run(data_dir, tmp_path_factory):
    """A finished one-epoch CTRN run with the overlap features (so with `document_frequencies.tsv`)."""
    run_dir = tmp_path_factory.mktemp("runs") / "ctrn"
    assert cli.main(ctrn_args(data_dir, run_dir, "--epochs", "1")) == 0
    return run_dir


def copy_run(run_dir, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


# ---- 1. a full disk ----------------------------------------------------------------------------------------------

# The system's refusal of a write from inside a library (HDF5, TensorFlow's event writer): a file-size limit (ulimit -f)
# set when the second epoch's checkpoint begins (10 kB: HDF5 writes its first blocks and fails in the middle of the
# file, as on a full disk), or when TensorBoard writes the first epoch's logs (10 bytes: the event file's next
# write). Without root no small file system can be mounted; /dev/full refuses the first byte, which HDF5 survives.
_LIMIT = """
import resource, signal
def _limit(size):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
"""
_LIMIT_AT = {
    "checkpoint": """
from keras_match.training import callbacks
_checkpoint = callbacks.DevEvaluationCallback._checkpoint
def _limited(self, epoch, improved):
    if epoch == 1:
        _limit(10_000)
    return _checkpoint(self, epoch, improved)
callbacks.DevEvaluationCallback._checkpoint = _limited
""",
    "logs": """
import keras
_epoch_end = keras.callbacks.TensorBoard.on_epoch_end
def _limited(self, epoch, logs=None):
    _limit(10)
    return _epoch_end(self, epoch, logs)
keras.callbacks.TensorBoard.on_epoch_end = _limited
"""}


@pytest.mark.parametrize("where, failed", [
    ("checkpoint", r"checkpoints/(best-)?epoch-2\.weights\.h5"),  # before: h5py tracebacks, then signal 11
    ("logs", r"logs"),  # before: TensorFlow's OutOfRangeError traceback from the TensorBoard callback
])
def test_a_write_that_fails_inside_a_library_is_one_line_and_the_run_resumes(data_dir, tmp_path, where, failed):
    run_dir = tmp_path / "run"
    args = ctrn_args(data_dir, run_dir, "--epochs", "2")
    status, _, stderr = keras_match_process(args, tmp_path, before=_LIMIT + _LIMIT_AT[where])
    assert status == 1, stderr
    assert len(stderr) == 1, stderr
    assert re.fullmatch(f"keras-match train: error: cannot write {re.escape(str(run_dir))}/{failed}: File too large; "
                        "the file exceeds the process's file-size limit .*", stderr[0]), stderr
    assert not any(p.name.startswith(".staged-") for p in run_dir.rglob("*"))  # nothing partial
    status, stdout, stderr = keras_match_process(args, tmp_path)
    assert (status, stderr) == (0, [])
    assert "resuming after epoch 1" in stdout  # the last complete epoch's checkpoint


@pytest.mark.parametrize("command", ["export", "preset"])
def test_an_export_or_preset_on_a_full_disk_leaves_no_folder(ctrn_run, tmp_path, monkeypatch, capsys, command):
    import tempfile

    new = tmp_path / "new"
    mkdtemp = tempfile.mkdtemp

    def full(*args, dir=None, **kwargs):  # the staging folder of the version or preset cannot be made
        if dir is not None and str(dir).startswith(str(new)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dir))
        return mkdtemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    target = new / "deeper" / command
    args = {"export": ["export", str(ctrn_run), "--to", str(target), "--no-warmup"],
            "preset": ["preset", str(ctrn_run), "--to", str(target)]}[command]
    assert cli.main(args) == 1
    assert "No space left on device; free space on that disk or write elsewhere" in one_line(capsys)
    assert not new.exists()  # before: the empty folders made for it


def test_a_full_disk_under_the_state_cache_is_found_before_the_states_are_mapped(tmp_path, monkeypatch):
    """Neighbour of the checkpoint case: a frozen backbone's states are written through a memory map, and a mapped
    page that meets a full disk is a bus error (signal 7, the process killed; seen on a 64 kB tmpfs). The file's
    blocks are reserved first, so a full disk is one WriteError and no partial file."""
    import types

    import numpy as np
    import tensorflow as tf

    from keras_match.artifacts import storage
    from keras_match.encoders import state_cache

    layer = types.SimpleNamespace(hidden_dim=3, encoder="stub", num_layers=2, trained_layers=0)
    monkeypatch.setattr(state_cache, "_frozen_function", lambda layer: lambda ids: tf.constant(
        np.repeat(ids[..., None], 3, axis=-1).astype(np.float32)))
    rows = [np.array([5, 6]), np.array([7])]
    starts, lengths = np.array([0, 2]), np.array([2, 1])
    folder = tmp_path / "states"
    fallocate = os.posix_fallocate

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(storage.WriteError, match="states.npy.partial: No space left on device"):
        state_cache._compute(layer, rows, starts, lengths, folder, verbose=False)  # before: no error (then SIGBUS)
    assert sorted(p.name for p in folder.iterdir()) == []
    monkeypatch.setattr(os, "posix_fallocate", fallocate)
    state_cache._compute(layer, rows, starts, lengths, folder, verbose=False)
    np.testing.assert_array_equal(np.load(folder / "states.npy")[:, 0], [5, 6, 7])


SPACE = {"hyperparameters": {"dropout": {"type": "choice", "values": [0.5, 0.2]}}}


def tune_args(data_dir, search, space, *extra):
    """`keras-match tune` of a small QRNN over the search space file `space` (grid, 1 epoch a trial)."""
    return ["tune", "qrnn", "--dataset", "trecqa-raw", "--train-split", "train", "--data-dir", str(data_dir),
            "--max-train-questions", "12", "--epochs", "1", "--tuner", "grid", "--space", str(space), "--dir",
            str(search), *SMALL_CTRN, *extra]


# a file-size limit of 200 bytes from the moment a trial's first epoch ends (its checkpoint, an HDF5 file, is written
# next) or the trial ends (its trial.json, written by Keras Tuner's JSON writer)
_LIMIT_IN_A_TRIAL = _LIMIT + """
from keras_match.training import callbacks
from keras_tuner.src.engine import oracle
_epoch_end, _end_trial = callbacks.DevEvaluationCallback.on_epoch_end, oracle.Oracle.end_trial
def _at_epoch_end(self, epoch, logs=None):
    _epoch_end(self, epoch, logs)
    if WHERE == "checkpoint":
        _limit(200)
def _at_trial_end(self, trial):
    if WHERE == "trial":
        _limit(200)
    return _end_trial(self, trial)
callbacks.DevEvaluationCallback.on_epoch_end = _at_epoch_end
oracle.Oracle.end_trial = _at_trial_end
"""


@pytest.mark.parametrize("where, failed", [("checkpoint", "checkpoint.weights.h5"), ("trial", "trial.json")])
def test_a_full_disk_while_tuning_ends_the_search_in_one_line_and_the_rerun_continues(data_dir, tmp_path, where,
                                                                                      failed):
    space = tmp_path / "space.json"
    space.write_text(json.dumps(SPACE))
    search = tmp_path / "search"
    args = tune_args(data_dir, search, space)
    status, _, stderr = keras_match_process(args, tmp_path, before=f"WHERE = {where!r}\n{_LIMIT_IN_A_TRIAL}")
    # before: a traceback (tensorflow's ResourceExhaustedError from Keras Tuner's tuner0.json), files of 0 bytes
    assert status == 1, stderr
    assert len(stderr) == 1, stderr
    assert re.fullmatch(f"keras-match tune: error: cannot write {re.escape(str(search / 'search'))}/trial_0+/"
                        f"{re.escape(failed)}: File too large; .*", stderr[0]), stderr
    for path in search.rglob("*"):  # no partial file left for the next command to read
        assert not path.name.startswith(".staged-"), path
        if path.suffix == ".json":
            json.loads(path.read_text())
    if where == "trial":
        status, stdout, stderr = keras_match_process(args, tmp_path)
        assert (status, stderr) == (0, [])
        assert "2 trials (2 finished)" in stdout


def test_every_value_of_a_search_space_is_checked_before_any_trial(data_dir, tmp_path, capsys):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"hyperparameters": {"dropout": {"type": "choice", "values": [0.5, 1.5]}}}))
    search = tmp_path / "search"
    assert cli.main(tune_args(data_dir, search, space)) == 2  # before: exit 0, a trial failed with a traceback
    line = one_line(capsys)
    assert (f"search space {space} does not fit zoo entry 'qrnn': hyperparameter 'dropout' = 1.5: setting "
            "dropout=1.5: must be a number in [0, 1)") in line
    assert not search.exists()
    space.write_text(json.dumps({"hyperparameters": {"filters": {"type": "int", "min_value": 0, "max_value": 8,
                                                                 "step": 4}}}))
    assert cli.main(tune_args(data_dir, search, space)[:-6]) == 2  # without --set filters
    assert "hyperparameter 'filters' = 0" not in one_line(capsys)  # the first value: its setting's own message


@pytest.mark.parametrize("extra", [["--set", "lstm_units=4"], ["--set", "dropout=0.1"], ["--set", "dropout=2"],
                                   ["--dataset", "no-such-data"]], ids=["unknown", "searched", "value", "dataset"])
def test_a_refused_search_leaves_no_empty_folder(data_dir, tmp_path, capsys, extra):
    space = tmp_path / "space.json"
    space.write_text(json.dumps(SPACE))
    search = tmp_path / "new" / "search"
    assert cli.main(tune_args(data_dir, search, space, *extra)) == 2
    one_line(capsys)
    assert not (tmp_path / "new").exists()  # before: an empty search/ folder


# ---- 2. silent wrong answers -------------------------------------------------------------------------------------


@pytest.fixture
def vec50(data_dir, tmp_path):
    """A GloVe text file of 2,000 words, 50 wide."""
    import gzip

    with gzip.open(data_dir / "glove" / "glove.6B.50d.filtered.txt.gz", "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(2000)]
    path = tmp_path / "vec50.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_width_the_vectors_contradict_is_refused_before_anything_is_written(data_dir, vec50, tmp_path, capsys):
    run_dir = tmp_path / "run"
    # before: exit 0, config.json recorded embedding_dim 100 and the model was 50 wide
    assert cli.main(ctrn_args(data_dir, run_dir, "--embeddings", str(vec50), "--set", "embedding_dim=100")) == 2
    assert (f"setting embedding_dim=100: the vectors {vec50} are 50 wide, and a model over pretrained vectors takes "
            "their width") in one_line(capsys)
    assert not run_dir.exists()
    # without vectors the embedding starts random and trains: a frozen one is refused the same way
    assert cli.main(ctrn_args(data_dir, run_dir, "--embeddings", "none", "--set", "trainable_embeddings=false")) == 2
    assert "setting trainable_embeddings=false: without pretrained vectors" in one_line(capsys)
    assert not run_dir.exists()


def test_the_settings_a_run_records_are_the_ones_its_model_has(data_dir, vec50):
    from keras_match.training.recipe import Recipe

    def settings(**kwargs):
        return Recipe.prepare("mcan_fm", "trecqa-raw", data_dir=data_dir, train_split="train",
                              max_train_questions=2, **kwargs).settings.model

    over_vectors = settings(embeddings=str(vec50))
    assert over_vectors["embedding_dim"] == 50  # before: the preset's 300, recorded for a model 50 wide
    without = settings(embeddings=None, embedding_dim=8)
    assert without["embedding_dim"] == 8 and without["trainable_embeddings"] is True  # before: false, yet trained


def test_a_search_space_width_the_vectors_contradict_is_refused_before_any_trial(data_dir, vec50):
    from keras_match.training import tuning

    space = {"file": "space.json", "hyperparameters": {"embedding_dim": {"type": "choice", "values": [50, 100]}}}
    with pytest.raises(ValueError, match=r"search space space\.json on trecqa-raw: hyperparameter 'embedding_dim' = "
                                         r"100: setting embedding_dim=100: the vectors .* are 50 wide"):
        tuning.MatchHyperModel("qrnn", "trecqa-raw", space=space, data_dir=data_dir, train_split="train",
                               embeddings_path=str(vec50), max_train_questions=2)


def test_zoo_load_refuses_a_width_its_embeddings_contradict():
    import numpy as np

    from keras_match import zoo

    with pytest.raises(ValueError, match="setting embedding_dim=8: the vectors given as embeddings are 4 wide"):
        zoo.load("qrnn", embeddings=np.zeros([30, 4], np.float32), embedding_dim=8, compile=False)
    assert zoo.load("qrnn", embeddings=np.zeros([30, 4], np.float32), filters=4, dense_units=4,
                    compile=False).get_layer("word_embedding").output_dim == 4


def test_a_run_without_digests_whose_frequencies_lost_their_last_lines_is_named(ctrn_run, tmp_path, capsys):
    run = copy_run(ctrn_run, tmp_path)
    (run / "files.sha256").unlink()  # a run written before files.sha256
    frequencies = run / "document_frequencies.tsv"
    lines = frequencies.read_bytes().splitlines(keepends=True)
    frequencies.write_bytes(b"".join(lines[:1000]))  # cut at a line end: every line still parses
    # before: exit 0 and figures of the cut file (MAP 0.3376 against the intact run's 0.3404 in the issue)
    assert cli.main(["evaluate", str(run), "--dataset", "trecqa-raw"]) == 1
    line = one_line(capsys)
    assert f"{frequencies}, line 1000: the file ends after 998 words, but the run's vocabulary has " in line
    assert "restore the file or retrain the run" in line


def test_frequencies_are_counted_in_the_vocabularys_letter_case():
    """Neighbour of the cut frequency file: a run that keeps letter case (`lowercase=false`) with the overlap
    features was refused when its preprocessor was made ("the document frequencies have lowercase=True"), after
    the run folder was; its frequencies now count the words the vocabulary has, so the count check holds too."""
    from keras_match.preprocessors.pair import PairPreprocessor, PairSettings

    texts = {"question": ["Who wrote Hamlet ?"] * 2, "answer": ["Shakespeare wrote Hamlet .", "Not Hamlet ."]}
    preprocessor = PairPreprocessor.from_training(texts, PairSettings(lowercase=False, overlap_features=True))
    assert preprocessor.overlap.lowercase is False
    assert preprocessor.overlap.num_words == len(preprocessor.encoder.vocabulary)


# ---- 3. checked late or not at all ------------------------------------------------------------------------------


def test_an_unknown_split_is_a_usage_error_listing_the_splits(ctrn_run, tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    rows = "qid\tquestion\tanswer\tlabel\nq1\twho wrote hamlet ?\tShakespeare wrote Hamlet .\t1\n" \
           "q1\twho wrote hamlet ?\tTeapots are made of clay .\t0\n"
    for split in ("dev", "test"):
        (folder / f"{split}.tsv").write_text(rows)
    # before: exit 1 and a traceback ending in KeyError
    assert cli.main(["evaluate", str(ctrn_run), "--dataset", str(folder), "--split", "nosuchsplit"]) == 2
    assert "dataset 'data' has no split 'nosuchsplit'; it has ['dev', 'test']" in one_line(capsys)


def test_a_data_folder_that_is_a_file_is_named(tmp_path, capsys, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    # before: exit 1 after 21 files reported missing under afile/
    assert cli.main(["data", "verify", "trecqa", "--data-dir", str(afile)]) == 2
    assert f"the data folder (--data-dir) {afile} is a file, not a folder" in one_line(capsys)
    monkeypatch.setenv("KERAS_MATCH_DATA", str(afile))
    assert cli.main(["data", "download", "trecqa"]) == 2
    assert f"the data folder ($KERAS_MATCH_DATA) {afile} is a file, not a folder" in one_line(capsys)
    monkeypatch.delenv("KERAS_MATCH_DATA")
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(afile))  # the cache would be afile/data
    assert cli.main(["data", "verify", "trecqa"]) == 2
    assert f"the data cache ($KERAS_MATCH_CACHE) {afile / 'data'} cannot be made: {afile} is a file" in one_line(capsys)
    assert afile.read_text() == "not a folder"
    # a folder that does not exist yet: every file missing (exit 1), and the line says the folder itself is absent
    monkeypatch.delenv("KERAS_MATCH_CACHE")
    absent = tmp_path / "not-made"
    assert cli.main(["data", "verify", "trecqa", "--data-dir", str(absent)]) == 1
    assert f"(the data folder {absent} does not exist yet: download creates it)" in one_line(capsys)
    assert not absent.exists()


def test_an_unknown_loss_is_refused_before_the_data_is_read(data_dir, tmp_path, monkeypatch, capsys):
    """Neighbour of the search space's values: the loss was checked only by the task, after the data was read."""
    from keras_match.training import recipe

    def read(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr(recipe, "load_training_data", read)
    assert cli.main(ctrn_args(data_dir, tmp_path / "run", "--set", "loss=nope")) == 2
    assert 'setting loss="nope": must be a loss name (pointwise, pairwise_hinge, listwise_softmax' in one_line(capsys)


# ---- 4. exit status and message ----------------------------------------------------------------------------------


def test_a_finished_run_without_its_model_is_a_damaged_run(ctrn_run, tmp_path, capsys):
    run = copy_run(ctrn_run, tmp_path)
    (run / "model.keras").unlink()
    # before: exit 2, "not a finished keras-match run"
    assert cli.main(["evaluate", str(run), "--dataset", "trecqa-raw"]) == 1
    assert f"{run / 'model.keras'} is missing (the run wrote it; files.sha256 lists it); restore the file or " \
           "retrain the run" in one_line(capsys)
    (run / "files.sha256").unlink()  # a run written before files.sha256: its metrics.json says it finished
    assert cli.main(["predict", str(run), "--question", "who ?", "--answer", "me ."]) == 1
    assert f"{run / 'model.keras'} is missing, but metrics.json says the run finished" in one_line(capsys)
    (run / "metrics.json").unlink()  # an unfinished run: nothing to score yet, a usage error
    assert cli.main(["predict", str(run), "--question", "who ?", "--answer", "me ."]) == 2
    assert "is not a finished keras-match run" in one_line(capsys)


@pytest.mark.parametrize("lost", ["metadata.json", "model.weights.h5"])
def test_a_preset_that_lost_a_file_is_a_damaged_preset(tmp_path, capsys, lost):
    from keras_match.artifacts import presets

    preset = tmp_path / "preset"
    shutil.copytree(presets.preset_dir("ctrn/trecqa-raw"), preset)
    (preset / lost).unlink()
    # before: exit 2, "not a keras-match preset"
    assert cli.main(["predict", "--preset", str(preset), "--question", "who ?", "--answer", "me ."]) == 1
    assert f"{preset / lost} is missing (the preset's files.sha256 lists it); restore the preset" in one_line(capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["predict", "--preset", str(empty), "--question", "who ?", "--answer", "me ."]) == 2
    assert "is not a keras-match preset" in one_line(capsys)


def test_a_damaged_shipped_preset_says_to_reinstall_the_package(tmp_path, capsys, monkeypatch):
    """A shipped preset (loaded by its name from the package's folder) cannot be written again by the user:
    the remedy is reinstalling keras-match; a copy of it elsewhere is the user's to write again."""
    from keras_match.artifacts import preset_loader, presets

    package = tmp_path / "package_presets"
    shutil.copytree(presets.preset_dir("ctrn/trecqa-raw"), package / "ctrn" / "trecqa-raw")
    monkeypatch.setattr(preset_loader, "_shipped_root", lambda: package)
    (package / "ctrn" / "trecqa-raw" / "metadata.json").unlink()
    assert cli.main(["predict", "--preset", "ctrn/trecqa-raw", "--question", "who ?", "--answer", "me ."]) == 1
    line = one_line(capsys)
    assert "metadata.json is missing" in line and "reinstall keras-match" in line, line
    copy = tmp_path / "copy"
    shutil.copytree(package / "ctrn" / "trecqa-raw", copy)
    assert cli.main(["predict", "--preset", str(copy), "--question", "who ?", "--answer", "me ."]) == 1
    line = one_line(capsys)
    assert "restore the preset" in line and "reinstall" not in line, line


def test_a_text_file_that_is_not_utf8_is_named_with_its_line(tmp_path, capsys):
    answers = tmp_path / "latin1.txt"
    answers.write_bytes("tea .\ncaf\u00e9 au lait .\n".encode("latin-1"))
    # before: exit 2, "'utf-8' codec can't decode byte 0xe9 in position 3"
    assert cli.main(["predict", "--preset", "ctrn/trecqa-raw", "--question", "who ?", "--answers-file",
                     str(answers)]) == 1
    assert f"{answers}, line 2: not valid UTF-8" in one_line(capsys)


# ---- 5. stderr ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["zoo"], ["zoo", "--trained"],
                                  ["predict", "--preset", "compare_aggregate_submult_nn_sick/sick", "--question", "",
                                   "--answer", ""]], ids=["zoo", "trained", "empty-texts"])
def test_a_successful_command_writes_nothing_to_stderr(tmp_path, args):
    # before: zoo printed TensorFlow's start-up notices; predict with empty texts on a classifier preset printed
    # Keras's "softmax over axis -1 of a tensor of shape (1, 1, 1)" warning at 66aa43c (gone since 96ae13d)
    status, stdout, stderr = keras_match_process(args, tmp_path)
    assert (status, stderr) == (0, []) and stdout
