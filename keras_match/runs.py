"""The run directory: what `keras_match.train` writes, how a run is loaded back and scored, resume checks.

```
RUN_DIR/
  config.json          the resolved preset, dataset, task, loss mode, seed, embeddings
  preprocessor.json    the PairPreprocessor's config (keras_match.preprocessing)
  vocabulary.txt       its vocabulary, one token per line (ids from 2; 0 = padding, 1 = OOV)
  document_frequencies.tsv   with overlap features: the training texts' document frequencies
  model.keras          the trained model (best dev figure)
  metrics.json         dev and test figures, the epoch history, wall time
  logs/                TensorBoard logs
  checkpoints/         an interrupted run's last complete epoch: state.json naming its weight files
                       (keras_match.callbacks; removed when the run completes)
  .lock                held (flock) by the process that writes the run; holds its process id meanwhile
```

Runs written before the preprocessor existed (no `preprocessor.json`) still load: their preprocessor is made from
`config.json`'s truncation lengths, `vocabulary.txt` and `document_frequencies.tsv`, which is what they were
trained with, and their output layer `probabilities` is read as the `"softmax"` head.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import pathlib
import shutil

import keras
import numpy as np

from keras_match import callbacks, heads, pipeline, preprocessing, storage, tasks
from keras_match.storage import DamagedRunError, read_json  # noqa: F401  (part of this module's interface)

__all__ = ["RunFiles", "Run", "load_run", "write_json", "save_model", "read_json", "check_resume", "locked",
           "DamagedRunError", "RunInUseError", "ChangedInputError"]


@dataclasses.dataclass
class RunFiles:
    """The paths of a run directory."""

    root: pathlib.Path

    config = property(lambda self: self.root / "config.json")
    preprocessor = property(lambda self: self.root / preprocessing.CONFIG_FILE)
    vocabulary = property(lambda self: self.root / preprocessing.VOCABULARY_FILE)
    document_frequencies = property(lambda self: self.root / preprocessing.FREQUENCIES_FILE)
    model = property(lambda self: self.root / "model.keras")
    metrics = property(lambda self: self.root / "metrics.json")
    logs = property(lambda self: self.root / "logs")
    checkpoints = property(lambda self: self.root / "checkpoints")


def write_json(path, obj):
    """Writes `obj` as JSON to a temporary name, then renames it into place (`keras_match.storage`).

    Raises:
        keras_match.storage.WriteError: the write failed (the message names the path and why).
    """
    storage.write_text(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def save_model(model, path):
    """Saves `model` as a `.keras` file under a temporary name, then renames it into place.

    Raises:
        keras_match.storage.WriteError: the write failed (the message names the path and why).
    """
    storage.atomic_write(path, model.save)


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, pathlib.Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)}")


RESUME_KEYS = ("zoo", "preset", "dataset", "train_split", "seed", "max_train_questions", "embeddings",
               "embeddings_sha256", "data_files", "overlap_features", "bm25_feature", "loss_mode")
"""The settings a resumed run must share with the interrupted one."""


LOCK_FILE = ".lock"


@contextlib.contextmanager
def locked(root):
    """Holds the run folder's lock (`root/.lock`, an advisory `flock` the system releases when the process ends,
    however it ends) while a command writes the run.

    Raises:
        RunInUseError: another process holds it (the message gives its process id).
    """
    root = pathlib.Path(root)
    handle = open(root / LOCK_FILE, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise RunInUseError(f"{root} is in use by process {holder} (another keras-match train writes it): "
                                "wait for it to end, or choose another --run-dir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


class RunInUseError(ValueError):
    """Another process writes the run folder."""


def finished_epochs(files: RunFiles) -> int:
    """How many epochs an interrupted run finished (its checkpoint's; 0 without one)."""
    return int(callbacks.read_state(files.checkpoints).get("epoch", 0))


def check_resume(files: RunFiles, config: dict) -> bool:
    """Whether `files.root` holds an interrupted run of the same settings to resume.

    A folder whose run never finished an epoch (it failed at the start, or was stopped during the first epoch)
    holds nothing to resume: its files are removed and the run starts afresh.

    Raises:
        FileExistsError: the folder holds a finished run.
        ChangedInputError: a data or vector file it was trained on changed (the message names it).
        ValueError: it holds an interrupted run with other settings (the message names them).
    """
    if files.metrics.exists():
        raise FileExistsError(
            f"{files.root} holds a finished run ({files.metrics.name} exists); choose another --run-dir"
        )
    if not files.config.exists():
        return False
    if not finished_epochs(files):  # a start that failed before its first epoch ended: start afresh
        for path in (files.config, files.preprocessor, files.vocabulary, files.document_frequencies):
            path.unlink(missing_ok=True)
        shutil.rmtree(files.checkpoints, ignore_errors=True)
        shutil.rmtree(files.logs, ignore_errors=True)
        return False
    previous = read_json(files.config, "choose another --run-dir, or delete this one to start afresh")
    current = json.loads(json.dumps(config, default=_json_default))
    _check_inputs_unchanged(files, previous, current)
    changed = [key for key in RESUME_KEYS if previous.get(key) != current.get(key)]
    if changed:
        raise ValueError(
            f"{files.root} holds an interrupted run with other settings ({', '.join(changed)} differ); "
            "rerun with the same settings to resume it, or choose another --run-dir"
        )
    return True


class ChangedInputError(ValueError):
    """A file an interrupted run was trained on changed since (its sha256 differs from the one recorded)."""


def _check_inputs_unchanged(files, previous, current):
    """Raises `ChangedInputError` naming the first data or vector file whose sha256 differs from the run's record."""
    remedy = "restore the file to resume the run, or choose another --run-dir to train on the new one"
    before, now = previous.get("data_files") or {}, current.get("data_files") or {}
    for split, record in before.items():
        new = now.get(split)
        if new is not None and new["file"] == record["file"] and new["sha256"] != record["sha256"]:
            raise ChangedInputError(f"{record['file']} (the {split} split) changed since {files.root} began "
                                    f"(sha256 {record['sha256'][:12]}... is now {new['sha256'][:12]}...); {remedy}")
    old_vectors, new_vectors = previous.get("embeddings_sha256"), current.get("embeddings_sha256")
    if (old_vectors and new_vectors and old_vectors != new_vectors
            and previous.get("embeddings") == current.get("embeddings")):
        raise ChangedInputError(f"{current.get('embeddings')} (the pretrained vectors) changed since {files.root} "
                                f"began (sha256 {old_vectors[:12]}... is now {new_vectors[:12]}...); {remedy}")


@dataclasses.dataclass
class Run:
    """A trained model with its preprocessor and settings: scores raw text.

    Attributes:
        model: the matching model (one head, see `keras_match.heads`).
        preprocessor: the `keras_match.preprocessing.PairPreprocessor` it was trained with.
        config: the run's `config.json` as a dict (may be minimal for a model exported without a run).
    """

    model: keras.Model
    preprocessor: preprocessing.PairPreprocessor
    config: dict = dataclasses.field(default_factory=dict)

    @property
    def head(self) -> str:
        """The model's head: `"softmax"`, `"score"` or `"classification"`."""
        return heads.head_of(self.model)

    @property
    def task(self):
        """The run's task (`keras_match.tasks`), from its config."""
        return tasks.task_from_config(self.config)

    @property
    def label_names(self):
        """A classifier's class names (None for ranking models)."""
        return tuple(self.config["label_names"]) if self.config.get("label_names") else None

    # the parts of the preprocessor the export metadata and older callers name
    encoder = property(lambda self: self.preprocessor.encoder)
    overlap = property(lambda self: self.preprocessor.overlap)
    max_question_length = property(lambda self: self.preprocessor.max_question_length)
    max_answer_length = property(lambda self: self.preprocessor.max_answer_length)

    def predict(self, questions, answers, batch_size=pipeline.PREDICT_BATCH) -> np.ndarray:
        """The model's outputs for raw text pairs: float32 `[n, units]` (`[n, 0]`-free: n = 0 gives `[0, units]`).

        Raises:
            ValueError: `questions` and `answers` differ in length.
        """
        if len(questions) != len(answers):
            raise ValueError(
                f"questions and answers must have the same length, got {len(questions)} and {len(answers)}"
            )
        inputs = pipeline.encode(self.preprocessor, {"question": questions, "answer": answers})
        return pipeline.predict(self.model, inputs, batch_size)

    def score(self, questions, answers, batch_size=pipeline.PREDICT_BATCH) -> np.ndarray:
        """Relevance scores of raw question/answer pairs, float32 `[n]` (p(relevant) for a softmax head).

        Raises:
            ValueError: the lengths differ, or the model is a classifier (use `classify`).
        """
        outputs = self.predict(questions, answers, batch_size)
        return np.asarray(heads.ranking_score(self.head, outputs), np.float32)

    def classify(self, first, second, batch_size=pipeline.PREDICT_BATCH):
        """A classifier's class probabilities `[n, classes]` and predicted label names `[n]`.

        Raises:
            ValueError: the model has no classification head.
        """
        if self.head != "classification":
            raise ValueError(f"this run's model has a {self.head!r} head, not a classifier: use score()")
        probabilities = self.predict(first, second, batch_size)
        names = np.asarray(self.label_names, dtype=object)
        return probabilities, names[np.argmax(probabilities, axis=-1)] if len(probabilities) else names[:0]

    def evaluate(self, split, no_positive=None) -> dict:
        """The task's figures on a split: MAP / MRR / P@1 (`no_positive`: the rule for questions without a
        relevant candidate, default the run's) or accuracy / F1 for a classifier.

        Raises:
            ValueError: the split is of the other task (a classification split for a ranker, a ranking split for
                a classifier), or a classification split's labels are not the run's, in the same order (a
                SICK classifier scored on MSRP, say): its accuracy would be a silent wrong answer.
        """
        task = self.task
        split_labels = getattr(split, "label_names", None)
        if isinstance(task, tasks.ClassificationTask):
            if split_labels is None:
                raise ValueError(f"split {split.name!r} is a ranking split; this run is a classification model "
                                 f"over {list(task.label_names)}")
            if tuple(split_labels) != task.label_names:
                raise ValueError(f"split {split.name!r} has the labels {list(split_labels)}; this run classifies "
                                 f"into {list(task.label_names)} (same names, same order needed)")
        elif split_labels is not None:
            raise ValueError(f"split {split.name!r} is a classification split (labels {list(split_labels)}); "
                             "this run is a ranker")
        if isinstance(task, tasks.RankingTask) and no_positive is not None:
            task = tasks.RankingTask(no_positive)
        examples = task.examples(split)
        inputs = pipeline.encode(self.preprocessor, examples.texts)
        return task.evaluate(self.head, pipeline.predict(self.model, inputs), examples)


def _legacy_preprocessor(files: RunFiles, config: dict):
    """The preprocessor of a run written before `preprocessor.json` existed."""
    overlap = bool(config.get("overlap_features"))
    if overlap and not files.document_frequencies.exists():
        raise FileNotFoundError(
            f"{files.document_frequencies} not found: the run's model takes word-overlap features and needs the "
            "document frequencies it was trained with"
        )
    return preprocessing.PairPreprocessor(
        vocabulary=files.vocabulary,
        max_question_length=config["max_question_length"],
        max_answer_length=config["max_answer_length"],
        lowercase=config.get("lowercase", True),
        overlap_features=overlap,
        document_frequencies=files.document_frequencies if overlap else None,
    )


def load_run(run_dir) -> Run:
    """Load a finished run directory written by `keras_match.train`.

    Raises:
        FileNotFoundError: the folder has no trained model or misses a file of its preprocessor (the message
            names the file).
    """
    files = RunFiles(pathlib.Path(run_dir))
    for path in (files.config, files.vocabulary, files.model):
        if not path.exists():
            raise FileNotFoundError(f"{path} not found: {run_dir} is not a finished keras-match run")
    import keras_match.layers  # noqa: F401  (registers the custom layers for deserialisation)

    config = read_json(files.config)
    if files.preprocessor.exists():
        preprocessor = preprocessing.PairPreprocessor.load(files.root)
    else:
        preprocessor = _legacy_preprocessor(files, config)
    try:
        model = keras.models.load_model(files.model)
    except Exception as error:  # Keras reports a truncated zip as "File not found" or a BadZipFile
        raise DamagedRunError(f"{files.model} is damaged or not a Keras model file ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''}); retrain the run or restore "
                              "the file") from None
    rows = _embedding_rows(model)
    if rows is not None and rows != preprocessor.vocab_size:
        raise DamagedRunError(
            f"{files.vocabulary} gives {preprocessor.vocab_size} token ids but the model's embedding has {rows} "
            "rows: the vocabulary file is damaged or from another run; restore it or retrain the run")
    return Run(model=model, preprocessor=preprocessor, config=config)


def _embedding_rows(model):
    """The number of rows of the model's word embedding (`word_embedding`), or None without one."""
    try:
        return int(model.get_layer("word_embedding").input_dim)
    except ValueError:
        return None
