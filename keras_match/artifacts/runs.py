"""The run directory: what `keras_match.train` writes, how a run is loaded back and scored, resume checks.

```
RUN_DIR/
  config.json          the zoo entry, its settings (model / training / preprocessing, each setting once), the
                       dataset and its task, seed, vectors and the sha256 of every data file read, and
                       `holdout_dev` for a dev split held out of the training questions
  preprocessor.json    the preprocessor's config (keras_match.preprocessors)
  vocabulary.txt       its vocabulary, one token per line (ids from 2; 0 = padding, 1 = OOV), and its other
                       assets (document_frequencies.tsv with pair features)
  model.keras          the trained model (best dev figure)
  metrics.json         dev and test figures, the epoch history, wall time
  files.sha256         the sha256 of every file above, as the run wrote it (`sha256sum` format): checked
                       whenever the run is loaded or resumed, so a damaged or cut file is named, never used
  logs/                TensorBoard logs
  checkpoints/         an interrupted run's last complete epoch: state.json naming its weight files
                       (keras_match.training.callbacks; removed when the run completes)
  .lock                held (flock) by the process that writes the run; holds its process id meanwhile
```

Older runs still load: a `config.json` of the first layout (a `preset` with truncation lengths and pair features
among its training settings, the task as a word) is read into today's (`read_config`), and runs written before
the preprocessor existed (no `preprocessor.json`) get theirs from the preprocessor class's
`from_legacy_config`, which is what they were trained with; their output layer `probabilities` is read as the
`"softmax"` head.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import typing

import keras
import numpy as np

from keras_match.encoders import EMBEDDING_LAYER
from keras_match import heads, preprocessors, tasks
from keras_match.artifacts import storage
from keras_match.inputs import pipeline
from keras_match import precision as precision_lib
from keras_match.preprocessors.base import CONFIG_FILE as PREPROCESSOR_FILE
from keras_match.artifacts.storage import DamagedRunError, read_json  # noqa: F401  (part of this module's interface)

__all__ = ["RunFiles", "Run", "Ranking", "load_run", "write_json", "save_model", "read_json", "read_config",
           "check_resume", "locked", "record_digests", "check_digests", "DamagedRunError", "RunInUseError",
           "ChangedInputError"]

CONFIG_FORMAT = 2
"""The layout of `config.json` written today (1: the first layout, read by `read_config`)."""


@dataclasses.dataclass
class RunFiles:
    """The paths of a run directory."""

    root: pathlib.Path

    config = property(lambda self: self.root / "config.json")
    preprocessor = property(lambda self: self.root / PREPROCESSOR_FILE)
    model = property(lambda self: self.root / "model.keras")
    metrics = property(lambda self: self.root / "metrics.json")
    digests = property(lambda self: self.root / DIGESTS_FILE)
    logs = property(lambda self: self.root / "logs")
    checkpoints = property(lambda self: self.root / "checkpoints")


def write_json(path, obj):
    """Writes `obj` as JSON to a temporary name, then renames it into place (`keras_match.artifacts.storage`).

    Raises:
        keras_match.artifacts.storage.WriteError: the write failed (the message names the path and why).
    """
    storage.write_text(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def save_model(model, path):
    """Saves `model` as a `.keras` file under a temporary name, then renames it into place.

    Raises:
        keras_match.artifacts.storage.WriteError: the write failed (the message names the path and why).
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


DIGESTS_FILE = "files.sha256"
"""The run's record of the sha256 of each file it wrote (`record_digests`, `check_digests`)."""

_RESTORE = "restore the file or retrain the run"


def _run_file_names(root: pathlib.Path) -> list[str]:
    """The run's own files at its top level: not the lock, the digests, or a write in progress."""
    return sorted(p.name for p in root.iterdir() if p.is_file() and p.name not in (DIGESTS_FILE, ".lock")
                  and not p.name.startswith(".staged-"))


def read_digests(root) -> dict[str, str]:
    """`{file name: sha256}` of a run's `files.sha256` (empty for a run written before it existed).

    Raises:
        DamagedRunError: the file is malformed (names it and the line).
    """
    path = pathlib.Path(root) / DIGESTS_FILE
    if not path.exists():
        return {}
    digests = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest) or not name:
            raise DamagedRunError(f"{path}, line {number}: expected '<sha256>  <file name>'; {_RESTORE}")
        digests[name] = digest
    return digests


def record_digests(root) -> None:
    """Write `files.sha256` with the sha256 of every file of the run as it is now (atomically)."""
    from keras_match.datasets.download import sha256_of

    root = pathlib.Path(root)
    lines = [f"{sha256_of(root / name)}  {name}\n" for name in _run_file_names(root)]
    storage.write_text(root / DIGESTS_FILE, "".join(lines))


def check_digests(root) -> None:
    """Every file `files.sha256` lists is present with that sha256 (nothing to check for an older run).

    Raises:
        DamagedRunError: a listed file differs (cut short, edited); the message names it.
        keras_match.artifacts.storage.MissingRunFileError: a listed file is missing (a `DamagedRunError` and a
            `FileNotFoundError`).
    """
    from keras_match.datasets.download import sha256_of

    root = pathlib.Path(root)
    for name, digest in read_digests(root).items():
        path = root / name
        if not path.is_file():
            raise storage.MissingRunFileError(f"{path} is missing (the run wrote it; {DIGESTS_FILE} lists it); "
                                              f"{_RESTORE}", path)
        if sha256_of(path) != digest:
            raise DamagedRunError(f"{path} is damaged: its sha256 is not the one the run wrote ({DIGESTS_FILE}); "
                                  f"{_RESTORE}")


RESUME_KEYS = ("zoo", "settings", "dataset", "task", "train_split", "seed", "max_train_questions", "embeddings",
               "embeddings_sha256", "data_files", "init_preset", "holdout_dev")
"""The settings a resumed run must share with the interrupted one. `LATER_KEYS`, which runs written by an earlier
version lack, only where it recorded them (a held-out run's `data_files` differ anyway: a `test` file, no `dev`)."""
LATER_KEYS = ("holdout_dev",)


def read_config(path, remedy="") -> dict:
    """A run's `config.json`, in today's layout (`CONFIG_FORMAT`) whichever layout the file has.

    A config written before the `precision` training setting existed gets `"precision": "float32"` (what every
    run computed in then), and a dialog run's (its preprocessing has `max_turns`) written before `history_cut`
    existed gets `"history_cut": "oldest"` (the only cut then). The first layout kept the resolved preset as
    `preset` (truncation lengths, vocabulary settings and, at its top level, the pair features among the training
    settings), the task as a word with `label_names` and `no_positive_rule` beside it, and copies of the
    truncation lengths and pair features at the top level. Its settings are sorted into today's sections by name.

    Raises:
        DamagedRunError: the file is not valid JSON (the message names it and `remedy`).
    """
    config = read_json(path, remedy)
    if "settings" in config or "preset" not in config:
        return _with_precision(config)
    from keras_match.settings import TrainingSettings, section_fields

    preset = config["preset"]
    training_names = set(section_fields(TrainingSettings))
    training = {k: v for k, v in preset.get("training", {}).items() if k in training_names}
    preprocessing = {k: v for k, v in preset.get("training", {}).items() if k not in training_names}
    for key in ("overlap_features", "bm25_feature"):
        preprocessing[key] = bool(preset.get(key, config.get(key, False)))
    preprocessing.setdefault("lowercase", config.get("lowercase", True))
    task = {"kind": config.get("task") or "ranking"}
    if task["kind"] == "classification":
        task["label_names"] = config.get("label_names")
    else:
        task["no_positive_rule"] = config.get("no_positive_rule") or "skip"
    converted = {key: config[key] for key in ("zoo", "dataset", "train_split", "seed", "max_train_questions",
                                              "embeddings", "embeddings_sha256", "data_files") if key in config}
    converted.update(format=1, builder=preset.get("builder"), task=task,
                     settings={"model": dict(preset.get("model", {})), "training": training,
                               "preprocessing": preprocessing})
    return _with_precision(converted)


def _with_precision(config):
    """A config written before the `precision` setting existed trained in float32, and a dialog run's written
    before `history_cut` existed kept the last turns (`"oldest"`): say so, so that such a run resumes under today's
    settings and reports what it computed in and what it saw."""
    settings = config.get("settings") or {}
    training, preprocessing = settings.get("training"), settings.get("preprocessing")
    if isinstance(training, dict):
        training.setdefault("precision", "float32")
    if isinstance(preprocessing, dict) and "max_turns" in preprocessing:
        preprocessing.setdefault("history_cut", "oldest")
    return config


LOCK_FILE = ".lock"


@contextlib.contextmanager
def locked(root):
    """Holds the run folder's lock (`root/.lock`, an advisory `flock` the system releases when the process ends,
    however it ends) while a command writes the run.

    Raises:
        RunInUseError: another process holds it (the message gives its process id).
    """
    root = pathlib.Path(root)

    def refuse(holder):
        raise RunInUseError(f"{root} is in use by process {holder} (another keras-match train writes it): "
                            "wait for it to end, or choose another --run-dir")

    with storage.flocked(root / LOCK_FILE, busy=refuse):
        yield


class RunInUseError(ValueError):
    """Another process writes the run folder."""


def finished_epochs(files: RunFiles) -> int:
    """How many epochs an interrupted run finished (its checkpoint's; 0 without one)."""
    return int(storage.read_state(files.checkpoints).get("epoch", 0))


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
        assets = {name for cls in preprocessors.get_all().values() for name in cls.ASSET_FILES}
        for path in [files.config, files.preprocessor] + [files.root / name for name in sorted(assets)]:
            path.unlink(missing_ok=True)
        shutil.rmtree(files.checkpoints, ignore_errors=True)
        shutil.rmtree(files.logs, ignore_errors=True)
        return False
    previous = _as_built(read_config(files.config, "choose another --run-dir, or delete this one to start afresh"),
                         config)
    current = json.loads(json.dumps(config, default=_json_default))
    _check_inputs_unchanged(files, previous, current)
    changed = [k for k in RESUME_KEYS if (k in previous or k not in LATER_KEYS) and previous.get(k) != current.get(k)]
    if changed:
        raise ValueError(
            f"{files.root} holds an interrupted run with other settings ({', '.join(changed)} differ); "
            "rerun with the same settings to resume it, or choose another --run-dir"
        )
    return True


def _as_built(previous, current):
    """An interrupted run's config as the model was built: runs begun before `Settings.for_vectors` recorded the
    entry's `embedding_dim` over vectors of another width (mcan_fm: 300 over GloVe 50d) and `trainable_embeddings`
    false without vectors, though the model took the vectors' width and trained its embedding; read as built
    (`keras_match.settings.model_for_vectors`, the width of today's config of the same vectors), they resume."""
    from keras_match.settings import model_for_vectors

    vectors = previous.get("embeddings_sha256")
    width = ((current.get("settings") or {}).get("model") or {}).get("embedding_dim")
    if "settings" not in previous or vectors != current.get("embeddings_sha256") or (vectors and width is None):
        return previous
    model = model_for_vectors(previous["settings"].get("model") or {}, width if vectors else None)
    return dict(previous, settings=dict(previous["settings"], model=model))


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


class Ranking(typing.NamedTuple):
    """`Run.rank`'s result: `scores` float32 `[n]` in the candidates' order, `order` int64 `[n]` the candidate
    indices best first (equal scores keep their input order)."""

    scores: np.ndarray
    order: np.ndarray


@dataclasses.dataclass
class Run:
    """A trained model with its preprocessor and settings: scores raw text.

    What `load_run(RUN_DIR)`, `keras_match.artifacts.presets.load_preset(PRESET)` and `keras_match.zoo.load(entry,
    weights=dataset)` return. Texts are given as a dict under the preprocessor's text inputs (`{"question": [...],
    "answer": [...]}` for pairs), or positionally in the preprocessor's order (`run.score(questions, answers)`).
    A ranker: `score(questions, answers)` -> scores, `rank(question, answers)` -> `Ranking(scores, order)`; a
    classifier: `classify(...)` -> probabilities and label names, `probabilities(...)` -> `{label: p}` per pair;
    either: `evaluate(split)`, and `keras_match.serving.export.saved_model(run, BASE)`.

    Attributes:
        model: the matching model (one head, see `keras_match.heads`).
        preprocessor: the `keras_match.preprocessors.Preprocessor` it was trained with.
        config: the run's `config.json` as a dict (`read_config`; may be minimal for a model exported without a
            run).
    """

    model: keras.Model
    preprocessor: preprocessors.Preprocessor
    config: dict = dataclasses.field(default_factory=dict)

    @property
    def head(self) -> str:
        """The model's head: `"softmax"`, `"score"` or `"classification"`."""
        return heads.head_of(self.model)

    @property
    def task(self):
        """The run's task (`keras_match.tasks`), from its config (ranking for a model exported without a run)."""
        return tasks.task_from_config(self.config)

    @property
    def label_names(self):
        """A classifier's class names (None for ranking models)."""
        return getattr(self.task, "label_names", None)

    def texts(self, *texts, **named) -> dict:
        """`{text input: texts}` from texts given positionally (in the preprocessor's order) or by name.

        Raises:
            ValueError: too many texts, a text input missing, or text inputs of different lengths.
        """
        names = list(self.preprocessor.TEXT_INPUTS)
        if len(texts) == 1 and isinstance(texts[0], dict) and not named:
            named, texts = dict(texts[0]), ()
        if len(texts) > len(names):
            raise ValueError(f"this run's model reads {len(names)} texts ({', '.join(names)}), got {len(texts)}")
        given = {**dict(zip(names, texts)), **named}
        missing = [name for name in names if name not in given]
        if missing:
            raise ValueError(f"missing text input(s) {missing}; this run's model reads {names}")
        sizes = {name: len(given[name]) for name in names}
        if len(set(sizes.values())) > 1:
            raise ValueError("the text inputs must have the same length, got "
                             + " and ".join(f"{size} {name}s" for name, size in sizes.items()))
        return {name: given[name] for name in names}

    def predict(self, *texts, batch_size=pipeline.PREDICT_BATCH, **named) -> np.ndarray:
        """The model's outputs for raw texts: float32 `[n, units]` (n = 0 gives `[0, units]`).

        Raises:
            ValueError: the text inputs differ in length or one is missing.
        """
        inputs = pipeline.encode(self.preprocessor, self.texts(*texts, **named))
        return pipeline.predict(self.model, inputs, self.preprocessor.SEQUENCE_INPUTS, batch_size)

    def score(self, *texts, batch_size=pipeline.PREDICT_BATCH, **named) -> np.ndarray:
        """Relevance scores of raw examples (question/answer pairs), float32 `[n]` (p(relevant) for a softmax
        head).

        Raises:
            ValueError: the lengths differ, or the model is a classifier (use `classify`).
        """
        outputs = self.predict(*texts, batch_size=batch_size, **named)
        return np.asarray(heads.ranking_score(self.head, outputs), np.float32)

    def rank(self, query, candidates, batch_size=pipeline.PREDICT_BATCH) -> Ranking:
        """Rank candidates for one query (answers for a question): the scores of `score` for each (query,
        candidate) pair and the candidate indices best first, by the rule of the export's `rank` signature (equal
        scores keep their input order, the lower index first).

        Args:
            query: one text (the preprocessor's query input, `question` for pairs).
            candidates: a list of texts (its candidate input, `answer`).

        Returns:
            `Ranking(scores, order)`: float32 `[n]` and int64 `[n]` (`scores[order]` descends); unpacks as a pair.

        Raises:
            ValueError: the model is a classifier, its preprocessor has no query / candidate inputs, or `query`
                is not one text.
        """
        if self.head == "classification":
            raise ValueError("this run's model is a classifier (a 'classification' head): use classify() or "
                             "probabilities()")
        if not isinstance(query, str):
            raise ValueError(f"rank takes one query text and a list of candidates, got a {type(query).__name__} "
                             "query: use score() for pairs")
        if not self.preprocessor.ranking_inputs:
            raise ValueError(f"this run's preprocessor ({type(self.preprocessor).__name__}) has no query and "
                             "candidate inputs to rank: use score()")
        if isinstance(candidates, str):
            candidates = [candidates]
        candidates = list(candidates)
        query_input, candidate_input = self.preprocessor.ranking_inputs
        scores = self.score({query_input: [query] * len(candidates), candidate_input: candidates},
                            batch_size=batch_size)
        return Ranking(scores, np.argsort(-scores, kind="stable"))

    def probabilities(self, *texts, batch_size=pipeline.PREDICT_BATCH, **named) -> list[dict]:
        """A classifier's class probabilities by label name: one `{label name: probability}` per example, the
        labels in the model's column order (`label_names`).

        Raises:
            ValueError: the model has no classification head.
        """
        probabilities, _ = self.classify(*texts, batch_size=batch_size, **named)
        return [{name: float(p) for name, p in zip(self.label_names, row)} for row in probabilities]

    def classify(self, *texts, batch_size=pipeline.PREDICT_BATCH, **named):
        """A classifier's class probabilities `[n, classes]` and predicted label names `[n]`.

        Raises:
            ValueError: the model has no classification head.
        """
        if self.head != "classification":
            raise ValueError(f"this run's model has a {self.head!r} head, not a classifier: use score()")
        probabilities = self.predict(*texts, batch_size=batch_size, **named)
        names = np.asarray(self.label_names, dtype=object)
        return probabilities, names[np.argmax(probabilities, axis=-1)] if len(probabilities) else names[:0]

    def evaluate(self, split, task=None) -> dict:
        """The task's figures on a split: MAP / MRR / P@1 for a ranker, accuracy / F1 for a classifier.

        Args:
            split: a split of a loaded dataset.
            task: the task to score with (the dataset's, `keras_match.tasks.task_for(dataset)`, which carries
                the benchmark's own rules, such as its rule for questions without a relevant candidate); it must
                be of the run's kind. Default: the run's task.

        Raises:
            ValueError: the split is of another task (a classification split for a ranker, a ranking split for
                a classifier), or a classification split's labels are not the run's, in the same order (a
                SICK classifier scored on MSRP, say): its figures would be a silent wrong answer.
        """
        own = self.task
        own.check_split(split)
        if task is not None and task.kind != own.kind:
            raise ValueError(f"split {split.name!r} is a {task.kind} split; this run is a {own.kind} model")
        task = task if task is not None else own
        if task is not own:
            task.check_split(split)
        examples, outputs = self.outputs(split, task)
        return task.evaluate(self.head, outputs, examples)

    def outputs(self, split, task=None):
        """`(examples, outputs)`: the examples of a split (`task.examples`, default the run's task; the split is
        not checked here, `evaluate` checks it) and the model's outputs on them, as training scores a split."""
        examples = (task or self.task).examples(split)
        inputs = pipeline.encode(self.preprocessor, examples.texts)
        return examples, pipeline.predict(self.model, inputs, self.preprocessor.SEQUENCE_INPUTS)


def preprocessor_class_of(run_dir):
    """The preprocessor class of a run folder, read from `preprocessor.json` (or, for a run written before it
    existed, its zoo entry's family) without loading the vocabulary or the model: what the run's texts are.

    Raises:
        FileNotFoundError: the folder is not a keras-match run.
        DamagedRunError: `preprocessor.json` or `config.json` is not valid JSON.
    """
    from keras_match import families as zoo

    files = RunFiles(pathlib.Path(run_dir))
    if files.preprocessor.exists():
        name = read_json(files.preprocessor, "restore the file or retrain the run").get("class_name")
        for cls in preprocessors.get_all().values():
            if cls.__name__ == name:
                return cls
        raise DamagedRunError(f"{files.preprocessor} names the preprocessor {name!r}, which keras-match does not "
                              "have; restore the file or retrain the run")
    if not files.config.exists():
        raise FileNotFoundError(f"{files.config} not found: {run_dir} is not a finished keras-match run")
    config = read_config(files.config, "restore the file or retrain the run")
    family = zoo.families().get(config.get("family")) or zoo.family_of(config["zoo"])
    return family.preprocessor_class()


def load_run(run_dir, precision="float32") -> Run:
    """Load a finished run directory written by `keras_match.train`.

    Args:
        run_dir: the run folder.
        precision: what the model computes in (`keras_match.precision`): `"float32"` (the default, whatever the
            run trained in), `"mixed_bfloat16"`, or `"trained"`: what the run trained in (its saved policy).

    Raises:
        FileNotFoundError: the folder holds no finished run (no trained model) or misses a file of its preprocessor
            (the message names the file).
        DamagedRunError: a file differs from what the run wrote (`files.sha256`), does not parse, or is missing
            from a finished run (`storage.MissingRunFileError`).
    """
    files = RunFiles(pathlib.Path(run_dir))
    check_digests(files.root)  # a file the run wrote and lost is named first: a damaged run
    for path in (files.config, files.model):
        if not path.exists() and files.metrics.is_file():  # a finished run (before files.sha256) lost it
            raise storage.MissingRunFileError(f"{path} is missing, but {files.metrics.name} says the run finished; "
                                              f"{_RESTORE}", path)
        if not path.exists():
            raise FileNotFoundError(f"{path} not found: {run_dir} is not a finished keras-match run")
    from keras_match import families as zoo

    zoo.families()  # every family's layers are registered for deserialisation
    config = read_config(files.config)
    try:
        if files.preprocessor.exists():
            preprocessor = preprocessors.Preprocessor.load(files.root)
        else:  # a run written before preprocessor.json existed
            family = zoo.families().get(config.get("family")) or zoo.family_of(config["zoo"])
            preprocessor = family.preprocessor_class().from_legacy_config(files.root, config["settings"])
    except (FileNotFoundError, DamagedRunError):
        raise
    except ValueError as error:  # a preprocessor file that does not parse (names the file and line)
        raise DamagedRunError(f"{error}; {_RESTORE}") from None
    _check_frequencies_cover_training_words(files, config, preprocessor)
    try:
        model = keras.models.load_model(files.model)
    except Exception as error:  # Keras reports a truncated zip as "File not found" or a BadZipFile
        raise DamagedRunError(f"{files.model} is damaged or not a Keras model file ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''}); retrain the run or restore "
                              "the file") from None
    rows = _embedding_rows(model)
    if rows is not None and rows != preprocessor.vocab_size:
        raise DamagedRunError(
            f"{files.root / preprocessor.VOCABULARY_FILE} gives {preprocessor.vocab_size} token ids but the model's "
            f"embedding has {rows} rows: the vocabulary file is damaged or from another run; restore it or retrain "
            "the run")
    precision = precision_lib.of_model(model) if precision == "trained" else precision
    return Run(model=precision_lib.convert(model, precision), preprocessor=preprocessor, config=config)


def _check_frequencies_cover_training_words(files, config, preprocessor):
    """A word preprocessor's document frequencies (`document_frequencies.tsv`) and the training words of its
    vocabulary come from the same training texts: the file gives one line to each of those words. Cut at a line
    end, it still parses, and a run written before `files.sha256` (whose record names the cut file first) would
    score with it; this count names it. The training words: `metrics.json`'s count, or the whole vocabulary of a
    run that read no vectors (a fine-tuned run keeps its preset's frequencies: not checked).

    Raises:
        DamagedRunError: the file gives fewer words than there are training words (names it and its last line).
    """
    overlap = getattr(preprocessor, "overlap", None)
    if overlap is None or getattr(preprocessor, "tokenizer", "words") != "words" or config.get("init_preset"):
        return
    recorded = (read_json(files.metrics, _RESTORE).get("embeddings") or {}) if files.metrics.is_file() else {}
    training_words = recorded.get("training_words")
    if training_words is None and config.get("embeddings") is None:
        training_words = len(preprocessor.encoder.vocabulary)
    if training_words is not None and overlap.num_words < training_words:
        path = files.root / pathlib.Path(overlap.path).name  # the table reads a private copy of the run's file
        last = overlap.num_words + (1 if overlap.num_tokens is None else 2)
        raise DamagedRunError(f"{path}, line {last}: the file ends after {overlap.num_words} words, but the run's "
                              f"vocabulary has {training_words} training words, each with a line here: the file was "
                              f"cut short; {_RESTORE}")


def _embedding_rows(model):
    """The number of rows of the model's word embedding (`word_embedding`), or None without one."""
    try:
        return int(model.get_layer(EMBEDDING_LAYER).input_dim)
    except ValueError:
        return None
