"""Training and evaluation of zoo models on question-grouped benchmarks.

`train(name, data)` builds the vocabulary from the training text, loads pretrained vectors, builds and
compiles the zoo model, fits it with dev-MAP early stopping (best weights restored), scores the test split
with MAP / MRR / P@1 and writes a run directory:

```
RUN_DIR/
  config.json      the resolved preset, dataset, seed, embeddings and truncation lengths
  vocabulary.txt   the training vocabulary, one token per line (ids from 2; 0 = padding, 1 = OOV)
  document_frequencies.tsv   presets with `"overlap_features": true` only: the training texts' document
                   frequencies behind the word-overlap features' IDF (`keras_match.features.OverlapFeatures`)
  model.keras      the trained model (best dev MAP)
  metrics.json     dev and test figures, the epoch history, wall time
  logs/            TensorBoard logs
  checkpoints/     state for resuming an interrupted run (removed when the run completes)
```

An interrupted run (Ctrl-C, a killed process) resumes from its last completed epoch when `train` is called
again with the same `run_dir`: Keras' `BackupAndRestore` brings back the weights, the optimizer and the epoch
counter, and `DevRankingCallback` keeps its best-so-far weights and patience counter on disk.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from keras_match import datasets, metrics, text, zoo
from keras_match.datasets.base import MatchingDataset, Split

RANKING_METRICS = ("map", "mrr", "p@1")

# Dataset names the command line and `train` accept besides a path to the user's own files.
DATASET_SPECS = {
    "trecqa-clean": ("trecqa", "clean"),
    "trecqa-raw": ("trecqa", "raw"),
    # raw dev/test with every question, those without a relevant answer scored 0: trec_eval's figure
    "trecqa-raw-trec-eval": ("trecqa", "raw", {"no_positive": "zero"}),
    "wikiqa": ("wikiqa", None),
    "semeval2016": ("semeval2016", None),
}


def load_dataset(spec, data_dir=None, train_split=None, download=False):
    """Load a dataset by its command-line name (`trecqa-clean`, `trecqa-raw`, `trecqa-raw-trec-eval`, `wikiqa`,
    `semeval2016`), or from a path to the user's TSV/JSONL file or folder. A `MatchingDataset` is returned
    unchanged. `trecqa-raw` drops the raw dev/test questions without a relevant answer; `trecqa-raw-trec-eval`
    keeps them and scores them 0, as trec_eval does on the full raw qrels.

    `train_split` chooses TrecQA's training set (`"train-all"`, the default, or `"train"`).

    Raises:
        ValueError: `spec` is neither a known name nor an existing path; `train_split` given for a dataset
            other than TrecQA.
    """
    if isinstance(spec, MatchingDataset):
        return spec
    if spec in DATASET_SPECS:
        name, variant, *options = DATASET_SPECS[spec]
        kwargs = dict(options[0]) if options else {}
        if train_split is not None:
            if name != "trecqa":
                raise ValueError(f"--train-split applies to TrecQA only, not to {spec!r}")
            kwargs["train_split"] = train_split
        return datasets.load(name, variant=variant, data_dir=data_dir, download=download, **kwargs)
    if os.path.exists(spec):
        return datasets.load(spec)
    raise ValueError(
        f"unknown dataset {spec!r}: use one of {sorted(DATASET_SPECS)} or the path of a TSV/JSONL file or folder"
    )


def default_embeddings_path(data_dir=None):
    """The GloVe 6B 50d file of the data directory (`glove/glove.6B.50d.filtered.txt.gz`), if present."""
    root = datasets.resolve_data_dir(data_dir)
    path = pathlib.Path(root) / "glove" / "glove.6B.50d.filtered.txt.gz"
    return path if path.exists() else None


# --------------------------------------------------------------------------------------------- data pipeline


TEXT_INPUTS = ("question", "answer")
"""The model inputs that hold token ids (trimmed per batch); any other input (`features`) is kept whole."""

FEATURES_BATCH = 1024
"""Pairs per call when computing overlap features (their set operations take memory quadratic in length)."""


def _trim_to_longest(features, *rest):
    """Cut the padding columns every row of the batch shares: batches are as long as their longest text."""
    trimmed = dict(features)
    for key in TEXT_INPUTS:
        ids = features[key]
        length = tf.reduce_max(tf.math.count_nonzero(ids, axis=1, dtype=tf.int32))
        trimmed[key] = ids[:, : tf.maximum(length, 1)]
    return (trimmed, *rest)


def encode_pairs(encoder, questions, answers, max_question_length, max_answer_length, overlap=None):
    """The model inputs of text pairs.

    Returns:
        `{"question": int32 [n, max_question_length], "answer": int32 [n, max_answer_length]}` token ids, plus
        `"features"` float32 `[n, 4]` when `overlap` (a `keras_match.features.OverlapFeatures`) is given: the
        word-overlap features of the tokens the model sees (each text truncated to its maximum length), as the
        exported raw-text signatures compute them.
    """
    questions = np.asarray(questions, dtype=object)
    answers = np.asarray(answers, dtype=object)
    inputs = {
        "question": encoder.encode(questions, max_question_length).numpy(),
        "answer": encoder.encode(answers, max_answer_length).numpy(),
    }
    if overlap is not None:
        from keras_match.features import FEATURE_NAMES

        chunks = [
            overlap(
                questions[i : i + FEATURES_BATCH],
                answers[i : i + FEATURES_BATCH],
                max_question_length,
                max_answer_length,
            ).numpy()
            for i in range(0, len(questions), FEATURES_BATCH)
        ]
        inputs["features"] = (
            np.concatenate(chunks).astype(np.float32)
            if chunks
            else np.zeros([0, len(FEATURE_NAMES)], np.float32)
        )
    return inputs


def overlap_features_of(preset):
    """Whether a resolved preset's model takes the word-overlap features (`"overlap_features": true`).

    Raises:
        ValueError: the model takes extra pair features the data pipeline cannot compute (`num_features > 0`
            without `overlap_features`), or a number other than the four overlap features.
    """
    from keras_match.features import FEATURE_NAMES

    wanted = bool(preset.get("overlap_features", False))
    num_features = preset["model"].get("num_features", 0)
    expected = len(FEATURE_NAMES) if wanted else 0
    if num_features != expected:
        raise ValueError(
            f"zoo entry {preset.get('name')!r}: overlap_features={wanted} feeds {expected} pair features but "
            f"the model expects num_features={num_features}; set overlap_features (true: 4 features, false: 0)"
            " instead of num_features"
        )
    return wanted


def make_dataset(features, labels=None, batch_size=64, shuffle=False, seed=0):
    """A `tf.data.Dataset` of batches trimmed to their longest text (and labels, when given)."""
    tensors = (features,) if labels is None else (features, np.asarray(labels, dtype=np.int32))
    ds = tf.data.Dataset.from_tensor_slices(tensors)
    if shuffle:
        ds = ds.shuffle(len(next(iter(features.values()))), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).map(_trim_to_longest).prefetch(tf.data.AUTOTUNE)


def score_pairs(model, features, batch_size=256):
    """Relevance scores (probability of the relevant class), float32 [n]; no pairs give an empty array (Keras'
    `predict` fails on an empty dataset)."""
    if len(features["question"]) == 0:
        return np.zeros([0], np.float32)
    probabilities = model.predict(make_dataset(features, batch_size=batch_size), verbose=0)
    return np.asarray(probabilities, dtype=np.float32)[:, 1]


def no_positive_rule(dataset):
    """How a benchmark scores questions without a relevant candidate: `"skip"` or `"zero"` (SemEval's
    official scorer); see `keras_match.metrics.evaluate_ranking`."""
    return dataset.metadata.get("no_positive_rule", "skip")


def evaluate_split(
    model,
    encoder,
    split: Split,
    max_question_length,
    max_answer_length,
    batch_size=256,
    no_positive="skip",
    overlap=None,
):
    """MAP / MRR / P@1 of `model` on a question-grouped split (trec_eval's ranking, see `metrics`)."""
    pairs = split.pairs()
    features = encode_pairs(
        encoder, pairs.questions, pairs.answers, max_question_length, max_answer_length, overlap=overlap
    )
    scores = score_pairs(model, features, batch_size)
    report = metrics.evaluate_ranking(
        pairs.qids, pairs.aids, scores, pairs.labels, metrics=RANKING_METRICS, no_positive=no_positive
    )
    return report, scores


def describe_split(name, split: Split):
    """One line: the split's questions and pairs, and which questions the benchmark's convention dropped."""
    line = f"{name}: {split.num_questions} questions / {split.num_pairs} pairs"
    if split.dropped:
        line += " (dropped: " + ", ".join(f"{n} {why}" for why, n in split.dropped.items()) + ")"
    return line


# ------------------------------------------------------------------------------------------------ callback


class DevRankingCallback(keras.callbacks.Callback):
    """Score the dev split after every epoch, keep the best weights by dev MAP, and stop early.

    Adds `val_map`, `val_mrr` and `val_p@1` to the epoch logs (so the progress bar, TensorBoard and the
    history show them). The best weights and the early-stopping state (best MAP, its epoch, epochs without
    improvement) are written to `state_dir` after each epoch, so a resumed run continues the same search
    instead of starting its patience and best weights over. At the end of training the best weights are
    put back into the model.

    Args:
        features: dev token ids as returned by `encode_pairs`.
        pairs: the dev split's `Pairs` (qids, aids, labels), in the order of `features`.
        state_dir: folder for `best.weights.h5` and `ranking_state.json`.
        patience: epochs without a better dev MAP before training stops.
        batch_size: prediction batch size.
        no_positive: the benchmark's rule for questions without a relevant candidate (`"skip"`, `"zero"`).
    """

    def __init__(self, features, pairs, state_dir, patience=3, batch_size=256, no_positive="skip"):
        super().__init__()
        self.no_positive = no_positive
        self.features = features
        self.pairs = pairs
        self.state_dir = pathlib.Path(state_dir)
        self.patience = patience
        self.batch_size = batch_size
        self.state = {"best_map": -1.0, "best_epoch": -1, "wait": 0, "history": []}

    @property
    def _state_path(self):
        return self.state_dir / "ranking_state.json"

    @property
    def _weights_path(self):
        return self.state_dir / "best.weights.h5"

    def on_train_begin(self, logs=None):
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self._state_path.exists():
            self.state = json.loads(self._state_path.read_text())

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        scores = score_pairs(self.model, self.features, self.batch_size)
        report = metrics.evaluate_ranking(
            self.pairs.qids,
            self.pairs.aids,
            scores,
            self.pairs.labels,
            metrics=RANKING_METRICS,
            no_positive=self.no_positive,
        )
        for key in RANKING_METRICS:
            logs[f"val_{key}"] = report[key]
        entry = {"epoch": epoch + 1, "loss": float(logs.get("loss", float("nan")))}
        entry.update({f"dev_{k}": report[k] for k in RANKING_METRICS})
        # A run resumed after a crash between this callback and the backup repeats an epoch: keep the newest.
        self.state["history"] = [h for h in self.state["history"] if h["epoch"] < epoch + 1] + [entry]
        if report["map"] > self.state["best_map"]:
            self.state.update(best_map=report["map"], best_epoch=epoch + 1, wait=0)
            self.model.save_weights(self._weights_path)
        else:
            self.state["wait"] += 1
            if self.state["wait"] >= self.patience:
                self.model.stop_training = True
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2))
        os.replace(tmp, self._state_path)
        print(
            f"epoch {epoch + 1}: dev MAP {report['map']:.4f} MRR {report['mrr']:.4f} "
            f"P@1 {report['p@1']:.4f} (best MAP {self.state['best_map']:.4f} at epoch "
            f"{self.state['best_epoch']})",
            flush=True,
        )

    def restore_best(self):
        """Load the best weights into the model (no-op before the first epoch finished)."""
        if self._weights_path.exists():
            self.model.load_weights(self._weights_path)


# ------------------------------------------------------------------------------------------------- training


@dataclasses.dataclass
class RunFiles:
    """The paths of a run directory."""

    root: pathlib.Path

    config = property(lambda self: self.root / "config.json")
    vocabulary = property(lambda self: self.root / "vocabulary.txt")
    document_frequencies = property(lambda self: self.root / "document_frequencies.tsv")
    model = property(lambda self: self.root / "model.keras")
    metrics = property(lambda self: self.root / "metrics.json")
    logs = property(lambda self: self.root / "logs")
    checkpoints = property(lambda self: self.root / "checkpoints")


def _write_json(path, obj):
    tmp = pathlib.Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")
    os.replace(tmp, path)


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, pathlib.Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)}")


def _check_resume(files, config):
    """Refuse to resume a run directory written with other settings, or to overwrite a finished run."""
    if files.metrics.exists():
        raise FileExistsError(
            f"{files.root} holds a finished run ({files.metrics.name} exists); choose another --run-dir"
        )
    if files.config.exists():
        previous = json.loads(files.config.read_text())
        keys = ("zoo", "preset", "dataset", "train_split", "seed", "max_train_questions", "embeddings",
                "overlap_features")
        changed = [k for k in keys if previous.get(k) != json.loads(json.dumps(config, default=_json_default)).get(k)]
        if changed:
            raise ValueError(
                f"{files.root} holds an interrupted run with other settings ({', '.join(changed)} differ); "
                "rerun with the same settings to resume it, or choose another --run-dir"
            )
        return True
    return False


def train(
    name,
    data="trecqa-clean",
    *,
    data_dir=None,
    train_split=None,
    embeddings_path="default",
    run_dir=None,
    epochs=None,
    batch_size=None,
    max_train_questions=None,
    seed=1234,
    verbose="auto",
    **overrides,
):
    """Train zoo entry `name` on a benchmark and report its test figures.

    Args:
        name: zoo entry (`keras_match.zoo.names()`).
        data: a dataset name (`"trecqa-clean"`, `"trecqa-raw"`, `"wikiqa"`, `"semeval2016"`), a path to the
            user's TSV/JSONL files, or a loaded `MatchingDataset`. It needs `train` and `dev` splits; `test`
            is scored when present.
        data_dir: the benchmark data folder (default: `$KERAS_MATCH_DATA`, then the user cache).
        train_split: TrecQA's training set, `"train-all"` (default) or `"train"`.
        embeddings_path: GloVe-format vectors; `"default"` uses the data folder's GloVe 6B 50d file when
            present; `None` trains with randomly initialised (and then trainable) embeddings.
        run_dir: where the run is written; default `runs/<name>-<dataset>`.
        epochs, batch_size: override the preset's values.
        max_train_questions: train on the first N training questions only (short runs, CI).
        seed: random seed for weights, dropout and shuffling.
        verbose: Keras `fit` verbosity (`"auto"`: a progress bar on a terminal, a line per epoch otherwise).
        **overrides: model or training settings of the preset by name (`lstm_units=100`, ...).

    Returns:
        dict with `dev` and `test` figures (`map`, `mrr`, `p@1`, `num_questions`, `num_skipped`),
        `best_epoch`, `epochs_run`, `wall_time_s`, `run_dir` and `embeddings` coverage; the same is written
        to `RUN_DIR/metrics.json`.

    Raises:
        FileExistsError: `run_dir` holds a finished run.
        ValueError: unknown entry, setting or dataset; `run_dir` holds an unfinished run with other settings.
        KeyboardInterrupt: re-raised after saying how to resume.
    """
    start = time.time()
    dataset = load_dataset(data, data_dir=data_dir, train_split=train_split)
    for split in ("train", "dev"):
        if split not in dataset:
            raise ValueError(f"dataset {dataset.name!r} has no {split!r} split; training needs train and dev")
    if epochs is not None:
        overrides["epochs"] = epochs
    if batch_size is not None:
        overrides["batch_size"] = batch_size
    preset = zoo.resolve(name, **overrides)
    use_overlap = overlap_features_of(preset)
    settings = preset["training"]
    if embeddings_path == "default":
        embeddings_path = default_embeddings_path(data_dir)
    spec = data if isinstance(data, str) else dataset.name
    files = RunFiles(pathlib.Path(run_dir or f"runs/{name}-{pathlib.Path(str(spec)).name}"))
    config = {
        "zoo": name,
        "preset": preset,
        "dataset": spec,
        "train_split": train_split,
        "seed": seed,
        "max_train_questions": max_train_questions,
        "embeddings": str(embeddings_path) if embeddings_path else None,
        "max_question_length": settings["max_question_length"],
        "max_answer_length": settings["max_answer_length"],
        "lowercase": True,
        "overlap_features": use_overlap,
    }
    files.root.mkdir(parents=True, exist_ok=True)
    resuming = _check_resume(files, config)

    keras.utils.set_random_seed(seed)
    train_split_data = dataset["train"]
    if max_train_questions:
        train_split_data = train_split_data.head(max_train_questions)
    train_pairs = train_split_data.pairs()
    # the training documents: each distinct question once and every answer (the vocabulary and, as Severyn &
    # Moschitti count them, the overlap features' document frequencies)
    documents = np.concatenate([np.unique(train_pairs.questions), train_pairs.answers])
    if resuming and files.vocabulary.exists():
        encoder = text.TextEncoder.from_file(files.vocabulary)
    else:
        encoder = text.TextEncoder.build(documents)
        encoder.save_vocabulary(files.vocabulary)
    overlap = None
    if use_overlap:
        from keras_match.features import OverlapFeatures

        if resuming and files.document_frequencies.exists():
            overlap = OverlapFeatures.from_file(files.document_frequencies)
        else:
            overlap = OverlapFeatures.build(documents)  # IDF from the training texts only
            overlap.save(files.document_frequencies)
            overlap = OverlapFeatures.from_file(files.document_frequencies)
    _write_json(files.config, config)

    embeddings, coverage = None, None
    if embeddings_path:
        embeddings, coverage = text.load_embeddings(embeddings_path, encoder, seed=seed)
    model = zoo.build(
        preset if embeddings is not None else _trainable_embeddings(preset),
        vocab_size=encoder.vocab_size,
        embeddings=embeddings,
    )
    zoo.compile_model(model, preset)

    lq, la = settings["max_question_length"], settings["max_answer_length"]
    train_features = encode_pairs(encoder, train_pairs.questions, train_pairs.answers, lq, la, overlap=overlap)
    dev_pairs = dataset["dev"].pairs()
    dev_features = encode_pairs(encoder, dev_pairs.questions, dev_pairs.answers, lq, la, overlap=overlap)
    ranking = DevRankingCallback(
        dev_features,
        dev_pairs,
        files.checkpoints,
        patience=settings["patience"],
        no_positive=no_positive_rule(dataset),
    )
    callbacks = [
        ranking,
        keras.callbacks.BackupAndRestore(str(files.checkpoints / "backup"), delete_checkpoint=False),
        keras.callbacks.TensorBoard(str(files.logs), write_graph=False, profile_batch=0),
    ]
    train_ds = make_dataset(
        train_features, train_pairs.labels, batch_size=settings["batch_size"], shuffle=True, seed=seed
    )
    print(
        f"training {name} on {spec}: {train_split_data.num_questions} questions / {len(train_pairs)} pairs, "
        f"vocabulary {encoder.vocab_size}"
        + (f", embeddings coverage {coverage['coverage']:.3f}" if coverage else "")
        + (" (resuming)" if resuming else ""),
        flush=True,
    )
    for split_name in ("dev", "test"):
        if split_name in dataset:
            print(describe_split(split_name, dataset[split_name]), flush=True)
    try:
        # the tf.data pipeline shuffles (seeded); fit's own shuffle does not apply to datasets
        model.fit(train_ds, epochs=settings["epochs"], callbacks=callbacks, verbose=verbose, shuffle=False)
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the last completed epoch is saved in {files.checkpoints}; run the same command "
            "again to resume from it",
            file=sys.stderr,
        )
        raise
    ranking.restore_best()

    report = {
        "zoo": name,
        "dataset": spec,
        "run_dir": str(files.root),
        "best_epoch": ranking.state["best_epoch"],
        "epochs_run": len(ranking.state["history"]),
        "history": ranking.state["history"],
        "embeddings": coverage,
        "counts": {k: s.counts() for k, s in dataset.splits.items()},
    }
    rule = no_positive_rule(dataset)
    for split_name in ("dev", "test"):
        if split_name in dataset:
            report[split_name], _ = evaluate_split(
                model, encoder, dataset[split_name], lq, la, no_positive=rule, overlap=overlap
            )
    report["wall_time_s"] = round(time.time() - start, 1)
    model.save(files.model)
    _write_json(files.metrics, report)
    shutil.rmtree(files.checkpoints, ignore_errors=True)
    return report


def _trainable_embeddings(preset):
    """Without pretrained vectors, random embeddings are trained (frozen random vectors carry nothing)."""
    preset = json.loads(json.dumps(preset))
    preset["model"]["trainable_embeddings"] = True
    return preset


# ------------------------------------------------------------------------------------------- loading a run


@dataclasses.dataclass
class Run:
    """A trained run loaded back from its directory: the model, the text encoder and the settings."""

    model: keras.Model
    encoder: "text.TextEncoder"
    config: dict
    overlap: object = None
    """`keras_match.features.OverlapFeatures` when the model takes the word-overlap features, else None."""

    @property
    def max_question_length(self):
        return self.config["max_question_length"]

    @property
    def max_answer_length(self):
        return self.config["max_answer_length"]

    def score(self, questions, answers, batch_size=256):
        """Scores (probability of relevance) of raw question/answer string pairs, float32 [n]."""
        if len(questions) != len(answers):
            raise ValueError(
                f"questions and answers must have the same length, got {len(questions)} and {len(answers)}"
            )
        features = encode_pairs(
            self.encoder,
            questions,
            answers,
            self.max_question_length,
            self.max_answer_length,
            overlap=self.overlap,
        )
        return score_pairs(self.model, features, batch_size)

    def evaluate(self, split: Split, no_positive="skip"):
        """MAP / MRR / P@1 on a split (`no_positive`: see `keras_match.metrics.evaluate_ranking`)."""
        report, _ = evaluate_split(
            self.model,
            self.encoder,
            split,
            self.max_question_length,
            self.max_answer_length,
            no_positive=no_positive,
            overlap=self.overlap,
        )
        return report


def load_run(run_dir):
    """Load a finished run directory written by `train`.

    Raises:
        FileNotFoundError: the folder has no trained model (the message says which file is missing).
    """
    files = RunFiles(pathlib.Path(run_dir))
    for path in (files.config, files.vocabulary, files.model):
        if not path.exists():
            raise FileNotFoundError(f"{path} not found: {run_dir} is not a finished keras-match run")
    import keras_match.layers  # noqa: F401  (registers the custom layers for deserialisation)

    config = json.loads(files.config.read_text())
    encoder = text.TextEncoder.from_file(files.vocabulary, lowercase=config.get("lowercase", True))
    model = keras.models.load_model(files.model)
    overlap = None
    if config.get("overlap_features"):
        from keras_match.features import OverlapFeatures

        if not files.document_frequencies.exists():
            raise FileNotFoundError(
                f"{files.document_frequencies} not found: the run's model takes word-overlap features and "
                "needs the document frequencies it was trained with"
            )
        overlap = OverlapFeatures.from_file(
            files.document_frequencies, lowercase=config.get("lowercase", True)
        )
    return Run(model=model, encoder=encoder, config=config, overlap=overlap)
