"""Training zoo models on benchmarks: `train(name, data)`.

`train` reads as its steps: load the dataset and pick its task (`keras_match.tasks`), resolve the preset (the
task sets the head, the loss the batching mode), prepare the run directory (or resume it), make the
`PairPreprocessor` from the training texts, build and compile the model, encode the splits, fit with dev
early stopping, evaluate, write the run (`keras_match.runs` describes the directory).

Loss modes (`--set loss=...`, recorded in the run's `config.json` as `loss_mode`):

- `pointwise` (default): shuffled pairs, the head's own loss (2-class cross-entropy for the papers' softmax
  heads, sigmoid cross-entropy for a raw score head, categorical cross-entropy for a classifier);
- `pairwise_hinge`: `(positive, negative)` candidates of one question, hinge on the ranking scores;
- `listwise_softmax`: all candidates of a question (or `--set list_size=N` sampled ones), softmax over the list.

Every mode's batches are length-bucketed (examples of similar length share a batch, `keras_match.batching`)
unless `--set bucketing=false`; the run's `config.json` records it in its preset.

An interrupted run (Ctrl-C, a killed process) resumes from its last completed epoch when `train` is called
again with the same `run_dir`: `keras_match.callbacks.DevEvaluationCallback` checkpoints the weights, the optimizer,
the random-seed state, the best-so-far weights and the patience counter as one commit after each epoch, and the
input pipeline continues its epoch sequence, so the resumed run ends as the uninterrupted one would.
"""

from __future__ import annotations

import copy
import os
import pathlib
import shutil
import sys
import time

import keras
import numpy as np

from keras_match import distribution, heads, losses, pipeline, runs, tasks, text, zoo
from keras_match import vectors as vectors_lib
from keras_match.callbacks import DevEvaluationCallback
from keras_match.datasets.base import DataFormatError
from keras_match.datasets.catalog import load_by_name
from keras_match.datasets.download import sha256_of
from keras_match.preprocessing import PairPreprocessor

__all__ = ["train", "build_preprocessor", "default_embeddings_path", "load_run", "Run"]

# re-exported: a run is what train writes
Run = runs.Run
load_run = runs.load_run


def default_embeddings_path(data_dir=None):
    """The vectors a run uses when none are given (`keras_match.vectors.default_vectors`): `$KERAS_MATCH_EMBEDDINGS`,
    then the full GloVe 6B 50d of the `glove` extra (`"glove-6b-50d"`), then the data folder's filtered GloVe file."""
    return vectors_lib.default_vectors(data_dir)


def describe_split(name, split):
    """One line: the split's size, and which questions the benchmark's convention dropped."""
    if hasattr(split, "num_questions"):
        line = f"{name}: {split.num_questions} questions / {split.num_pairs} pairs"
    else:
        line = f"{name}: {split.num_pairs} pairs"
    if split.dropped:
        line += " (dropped: " + ", ".join(f"{n} {why}" for why, n in split.dropped.items()) + ")"
    return line


# ------------------------------------------------------------------------------------------------------ steps


def _data_files(dataset):
    """`{split: {"file": path, "sha256": digest}}` for each split read from a file: what the run was trained on."""
    files = {}
    for name, split in dataset.splits.items():
        if split.source and os.path.isfile(split.source):
            files[name] = {"file": str(split.source), "sha256": sha256_of(split.source)}
    return files


def load_training_data(data, data_dir=None, train_split=None):
    """A dataset to train on and its task, checked: it has train and dev splits, and a ranking dev split has a
    question with a relevant answer (dev MAP chooses the model).

    Returns:
        `(dataset, task)`.

    Raises:
        ValueError: a single file, or a dataset without train or dev.
        keras_match.datasets.base.DataFormatError: a ranking dev split without any relevant answer (names its file).
    """
    dataset = load_by_name(data, data_dir=data_dir, train_split=train_split)
    for split in ("train", "dev"):
        if split not in dataset:
            if isinstance(data, (str, os.PathLike)) and os.path.isfile(data):
                raise ValueError(f"{data} is one file: a training dataset is a folder of train / dev / test files "
                                 "(one file loads as a test split, for `keras-match evaluate`)")
            raise ValueError(f"dataset {dataset.name!r} has no {split!r} split; training needs train and dev")
    task = tasks.task_for(dataset)
    if isinstance(task, tasks.RankingTask) and not any(q.has_positive for q in dataset["dev"].questions):
        raise DataFormatError(dataset["dev"].source or dataset.name, None,
                              f"the dev split of {dataset.name!r} has no question with a relevant answer: early "
                              "stopping on dev MAP needs some; check its labels")
    return dataset, task


def _resolve_preset(name, task, epochs, batch_size, overrides):
    """The zoo preset with the overrides, the task's head and the loss's batching mode."""
    overrides = dict(overrides)
    if epochs is not None:
        overrides["epochs"] = epochs
    if batch_size is not None:
        overrides["batch_size"] = batch_size
    preset = zoo.resolve(name, **overrides)
    preset["model"].update(task.model_settings(preset["model"]))
    mode = losses.mode_of(preset["training"]["loss"])
    if task.kind == "classification" and mode != "pointwise":
        raise ValueError(f"{task.kind} trains pointwise; loss={preset['training']['loss']!r} ranks candidates")
    return preset, mode


def _training_documents(examples):
    """The training documents: each distinct first text (question) once and every second text (answer), as
    Severyn & Moschitti count them for the overlap features; the vocabulary is built from the same texts."""
    return np.concatenate([np.unique(examples.texts["question"]), examples.texts["answer"]])


def _vector_words(preset, vectors):
    """The words of the vector file that join the vocabulary: all, or the file's first `max_vocabulary`, for a
    model with frozen pretrained embeddings; none when the embeddings are trained (their rows would stay random
    for words training never sees) or there are no vectors."""
    if vectors is None or preset["model"].get("trainable_embeddings"):
        return None
    cap = preset["training"].get("max_vocabulary")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
        raise ValueError(f"max_vocabulary must be null or an integer >= 0, got {cap!r}")
    return vectors.words if cap is None else vectors.words[:cap]


def build_preprocessor(examples, preset, vectors=None):
    """The `PairPreprocessor` of a run: the vocabulary of the training texts (followed by the vector file's words
    for frozen pretrained embeddings, `_vector_words`), the preset's truncation lengths and, if the preset asks,
    the word-overlap features and BM25 with IDF (and average length) from the training texts only.

    Args:
        examples: the training examples (`keras_match.tasks`).
        preset: a resolved zoo preset.
        vectors: `keras_match.vectors.WordVectors` or None.
    """
    documents = _training_documents(examples)
    frequencies = None
    if zoo.num_features_of(preset):
        from keras_match.features import OverlapFeatures

        frequencies = OverlapFeatures.build(documents)  # df, N and average length of the training texts only
    settings = preset["training"]
    return PairPreprocessor(
        text.TextEncoder.build(documents, extra_words=_vector_words(preset, vectors)),
        max_question_length=settings["max_question_length"],
        max_answer_length=settings["max_answer_length"],
        overlap_features=bool(preset.get("overlap_features")),
        bm25_feature=bool(preset.get("bm25_feature")),
        document_frequencies=frequencies,
    )


def _make_preprocessor(files, resuming, examples, preset, vectors):
    if resuming and files.preprocessor.exists():
        return PairPreprocessor.load(files.root)
    preprocessor = build_preprocessor(examples, preset, vectors)
    preprocessor.save(files.root)
    saved = PairPreprocessor.load(files.root)  # the run uses what it wrote; the counts are for the report
    saved.encoder.token_counts = preprocessor.encoder.token_counts
    saved.encoder.num_training_words = preprocessor.encoder.num_training_words
    return saved


def _build_model(preset, preprocessor, vectors, seed):
    embeddings, coverage = pretrained_embeddings(preset, preprocessor, vectors, seed)
    return build_model(preset, preprocessor, embeddings), coverage


def pretrained_embeddings(preset, preprocessor, vectors, seed):
    """`(matrix, coverage report)` of `text.load_embeddings` for `preprocessor`'s vocabulary, words the vectors
    lack initialised as the preset's `missing_vectors` says; `(None, None)` without vectors."""
    if vectors is None:
        return None, None
    missing = preset["training"].get("missing_vectors", "random")
    return text.load_embeddings(vectors, preprocessor.encoder, seed=seed, missing=missing)


def build_model(preset, preprocessor, embeddings):
    """The zoo model of `preset` for `preprocessor`'s vocabulary and features, with the pretrained embedding
    matrix `embeddings` (`text.load_embeddings`), or trained random embeddings when it is None."""
    if embeddings is None:
        preset = copy.deepcopy(preset)
        preset["model"]["trainable_embeddings"] = True
    return zoo.build(preset, vocab_size=preprocessor.vocab_size, embeddings=embeddings,
                     num_features=preprocessor.num_features)


def _describe_vocabulary(preprocessor, coverage):
    line = f"vocabulary {preprocessor.vocab_size:,}"
    if coverage and coverage.get("training_words") is not None:
        extra = coverage["vocabulary"] - coverage["training_words"]
        line += (f" ({coverage['training_words']:,} training words"
                 + (f" + {extra:,} from the vectors" if extra else "") + ")")
    if coverage:
        share = coverage.get("token_coverage") or coverage["coverage"]
        line += f", training tokens with a pretrained vector {share:.3f}"
    return line


def _compile_for_mode(model, preset, mode):
    """The model that `fit` trains: the matching model itself (pointwise) or a `ListScorer` around it."""
    head = heads.head_of(model)
    loss = heads.training_loss(head, mode, preset["training"]["loss"])
    fit_model = model if mode == "pointwise" else heads.ListScorer(model, name=f"{model.name}_{mode}")
    fit_model.compile(optimizer=zoo.optimizer(preset), loss=loss)
    return fit_model


def schedule_callbacks(preset):
    """The Keras callbacks of the preset's learning-rate schedule: with `lr_decay` d, epoch e (counted from 0 over
    the whole run: a resumed fit counts from its checkpoint's epoch, see `DevEvaluationCallback`) trains at
    `learning_rate * d**e` (`keras.callbacks.LearningRateScheduler`); none without it."""
    settings = preset["training"]
    decay = settings.get("lr_decay")
    if decay is None:
        return []
    rate = float(settings["learning_rate"])
    return [keras.callbacks.LearningRateScheduler(lambda epoch, _: rate * decay ** epoch)]


def _evaluator(task, model, inputs, examples):
    head = heads.head_of(model)
    return lambda: task.evaluate(head, pipeline.predict(model, inputs), examples)


# ------------------------------------------------------------------------------------------------------ train


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
    """Train zoo entry `name` on a dataset and report its test figures.

    Args:
        name: zoo entry (`keras_match.zoo.names()`).
        data: a dataset name (`keras_match.datasets.catalog.known_names()`: `"trecqa-clean"`, `"trecqa-raw"`,
            `"wikiqa"`, `"semeval2016"`, `"sick"`, `"msrp"`, ...), a path to the user's TSV/JSONL files, or a
            loaded dataset. It needs `train` and `dev` splits; `test` is scored when present. A classification
            dataset (SICK, MSRP) gives the model a classification head with one unit per label.
        data_dir: the benchmark data folder (default: `$KERAS_MATCH_DATA`, then the user cache).
        train_split: TrecQA's training set, `"train-all"` (default) or `"train"`.
        embeddings_path: pretrained vectors (`keras_match.vectors.load_vectors`: a GloVe text file, a vector
            folder, or `"glove-6b-50d"`); `"default"`: `default_embeddings_path(data_dir)`; `None` trains with
            randomly initialised (and then trainable) embeddings. With frozen vectors the vocabulary is the
            training words followed by the file's words (`max_vocabulary=N` keeps the file's first N).
        run_dir: where the run is written; default `runs/<name>-<dataset>`.
        epochs, batch_size: override the preset's values.
        max_train_questions: train on the first N training questions (pairs, for classification) only.
        seed: random seed for weights, dropout and batches.
        verbose: Keras `fit` verbosity (`"auto"`: a progress bar on a terminal, a line per epoch otherwise).
        **overrides: model or training settings of the preset by name (`lstm_units=100`,
            `loss="listwise_softmax"`, `list_size=16`, `head="score"`, `overlap_features=True`, ...).

    Returns:
        dict with `dev` and `test` figures (ranking: `map`, `mrr`, `p@1`, `num_questions`, `num_skipped`;
        classification: `accuracy`, `macro_f1`, `per_class`, `num_pairs`), `summary` (one printable line per
        split), `task`, `loss_mode`, `best_epoch`, `epochs_run`, `wall_time_s`, `train_pairs_per_s`,
        `run_dir` and `embeddings` coverage; the same is written to `RUN_DIR/metrics.json`.

    Raises:
        FileExistsError: `run_dir` holds a finished run.
        ValueError: unknown entry, setting or dataset; a dataset without train or dev; `run_dir` holds an
            unfinished run with other settings.
        KeyboardInterrupt: re-raised after saying how to resume.
    """
    start = time.time()
    # 0. arguments are checked before anything is read or written
    if max_train_questions is not None and (isinstance(max_train_questions, bool) or
                                            not isinstance(max_train_questions, int) or max_train_questions < 1):
        raise ValueError(f"max_train_questions must be None or an integer >= 1, got {max_train_questions!r}")
    # TF_CONFIG's cluster: the strategy must exist before any other TensorFlow operation
    strategy = distribution.strategy_from_environment()
    # 1. the data and its task
    dataset, task = load_training_data(data, data_dir=data_dir, train_split=train_split)

    # 2. the settings
    preset, mode = _resolve_preset(name, task, epochs, batch_size, overrides)
    settings = preset["training"]
    if embeddings_path == "default":
        embeddings_path = default_embeddings_path(data_dir)
    vectors = vectors_lib.load_vectors(embeddings_path) if embeddings_path else None
    spec = data if isinstance(data, str) else dataset.name
    files = runs.RunFiles(pathlib.Path(run_dir or f"runs/{name}-{pathlib.Path(str(spec)).name}"))
    config = {
        "zoo": name,
        "preset": preset,
        "dataset": spec,
        "task": task.kind,
        "label_names": list(task.label_names) if task.kind == "classification" else None,
        "no_positive_rule": getattr(task, "no_positive", None),
        "loss_mode": mode,
        "train_split": train_split,
        "seed": seed,
        "max_train_questions": max_train_questions,
        "embeddings": str(embeddings_path) if embeddings_path else None,
        "embeddings_sha256": vectors.sha256 if vectors is not None else None,
        "data_files": _data_files(dataset),
        "max_question_length": settings["max_question_length"],
        "max_answer_length": settings["max_answer_length"],
        "lowercase": True,
        "overlap_features": bool(preset.get("overlap_features")),
        "bm25_feature": bool(preset.get("bm25_feature")),
    }

    # 3. the run directory
    files.root.mkdir(parents=True, exist_ok=True)
    with runs.locked(files.root):  # one writer per run folder
        resuming = runs.check_resume(files, config)
        keras.utils.set_random_seed(seed)
        train_data = dataset["train"]
        if max_train_questions:
            train_data = train_data.head(max_train_questions)
        train_examples = task.examples(train_data)
        dev_examples = task.examples(dataset["dev"])

        # 4. the preprocessor, the model
        preprocessor = _make_preprocessor(files, resuming, train_examples, preset, vectors)
        runs.write_json(files.config, config)
        with distribution.scope(strategy):
            model, coverage = _build_model(preset, preprocessor, vectors, seed)
            fit_model = _compile_for_mode(model, preset, mode)

        # 5. the inputs
        train_inputs = pipeline.encode(preprocessor, train_examples.texts)
        dev_inputs = pipeline.encode(preprocessor, dev_examples.texts)

        # 6. fit with dev early stopping; an interrupted run continues from its checkpoint's last epoch
        dev = DevEvaluationCallback(_evaluator(task, model, dev_inputs, dev_examples), task.monitor, task.figures,
                                    model, files.checkpoints, patience=settings["patience"])
        print(
            f"training {name} on {spec} ({task.kind}, {mode} batches"
            f"{', length-bucketed' if settings.get('bucketing', True) else ''}): {describe_split('train', train_data)}, "
            f"{_describe_vocabulary(preprocessor, coverage)}"
            + (f" (resuming after epoch {dev.completed_epochs})" if resuming else "")
            + (f"; data-parallel, {distribution.cluster_description()}" if strategy is not None else ""),
            flush=True,
        )
        for split_name in ("dev", "test"):
            if split_name in dataset:
                print(describe_split(split_name, dataset[split_name]), flush=True)
        fit_start, first_epoch = time.time(), dev.completed_epochs
        try:
            # the batches are reshuffled by the pipeline (seeded); fit's own shuffle does not apply to datasets
            if not dev.stopped and dev.completed_epochs < settings["epochs"]:  # else: killed before the report
                batches = pipeline.training_epochs(train_inputs, train_examples, mode, settings["batch_size"], seed,
                                                   settings["epochs"], list_size=settings.get("list_size"),
                                                   first_epoch=dev.completed_epochs,
                                                   bucketing=bool(settings.get("bucketing", True)))
                board = keras.callbacks.TensorBoard(str(files.logs), write_graph=False, profile_batch=0)
                distribution.prepare_fit(fit_model, batches.dataset, strategy)
                fit_model.fit(distribution.shard_by_data(batches.dataset, strategy), steps_per_epoch=batches.steps_per_epoch, epochs=settings["epochs"],
                              callbacks=[dev, *schedule_callbacks(preset), board],
                              verbose=verbose, shuffle=False)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted: the last completed epoch is saved in {files.checkpoints}; run the same command "
                "again to resume from it",
                file=sys.stderr,
            )
            raise
        fit_seconds = time.time() - fit_start
        dev.restore_best()

        # 7. evaluate and write the run
        epochs_run = len(dev.state["history"])
        report = {
            "zoo": name,
            "dataset": spec,
            "task": task.kind,
            "loss_mode": mode,
            "run_dir": str(files.root),
            "best_epoch": dev.state["best_epoch"],
            "epochs_run": epochs_run,
            "history": dev.state["history"],
            "embeddings": coverage,
            "counts": {k: s.counts() for k, s in dataset.splits.items()},
            "summary": {},
        }
        for split_name in ("dev", "test"):
            if split_name in dataset:
                examples = dev_examples if split_name == "dev" else task.examples(dataset[split_name])
                inputs = dev_inputs if split_name == "dev" else pipeline.encode(preprocessor, examples.texts)
                report[split_name] = _evaluator(task, model, inputs, examples)()
                report["summary"][split_name] = task.summary(report[split_name])
        report["wall_time_s"] = round(time.time() - start, 1)
        trained_here = epochs_run - first_epoch  # a resumed run: the epochs of this process only
        report["train_pairs_per_s"] = (round(len(train_examples) * trained_here / fit_seconds, 1)
                                       if trained_here > 0 and fit_seconds > 0 else None)
        runs.save_model(model, files.model)
        runs.write_json(files.metrics, report)
        shutil.rmtree(files.checkpoints, ignore_errors=True)
        return report
