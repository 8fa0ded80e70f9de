"""Training zoo models on benchmarks: `train(name, data)`.

`train` reads as its steps: check the settings, load the dataset and its task and the vectors
(`keras_match.training.recipe.Recipe.prepare`), prepare the run directory (or resume it), make the preprocessor from the
training texts, build and compile the model, encode the splits, fit with dev early stopping, evaluate, write the
run (`keras_match.artifacts.runs` describes the directory).

Loss modes (`--set loss=...`; the run's `metrics.json` records the mode as `loss_mode`):

- `pointwise` (default): shuffled pairs, the head's own loss (2-class cross-entropy for the papers' softmax
  heads, sigmoid cross-entropy for a raw score head, categorical cross-entropy for a classifier);
- `pairwise_hinge`: `(positive, negative)` candidates of one question, hinge on the ranking scores;
- `listwise_softmax`: all candidates of a question (or `--set list_size=N` sampled ones), softmax over the list.

Every mode's batches are length-bucketed (examples of similar length share a batch, `keras_match.inputs.batching`)
unless `--set bucketing=false`; the run's `config.json` records it among its training settings.

An interrupted run (Ctrl-C, a killed process) resumes from its last completed epoch when `train` is called
again with the same `run_dir`: `keras_match.training.callbacks.DevEvaluationCallback` checkpoints the weights, the
optimizer, the random-seed state, the best-so-far weights and the patience counter as one commit after each epoch,
and the input pipeline continues its epoch sequence, so the resumed run ends as the uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import sys
import time

import keras

from keras_match import precision, preprocessors
from keras_match.artifacts import provenance, runs
from keras_match.training import distribution, finetune
from keras_match.training.callbacks import RunLogs
from keras_match.datasets.download import sha256_of
from keras_match.training.recipe import Recipe

__all__ = ["train", "load_run", "Run", "data_files"]

# re-exported: a run is what train writes
Run = runs.Run
load_run = runs.load_run


def describe_split(name, split):
    """One line: the split's size, and which questions the benchmark's convention dropped."""
    if hasattr(split, "num_questions"):
        line = f"{name}: {split.num_questions} questions / {split.num_pairs} pairs"
    else:
        line = f"{name}: {split.num_pairs} pairs"
    if split.dropped:
        line += " (dropped: " + ", ".join(f"{n} {why}" for why, n in split.dropped.items()) + ")"
    return line


def data_files(dataset):
    """`{split: {"file": path, "sha256": digest}}` for each split read from a file: what the run was trained on
    (a run's `config.json` and provenance; the benchmark scripts' provenance too)."""
    files = {}
    for name, split in dataset.splits.items():
        if split.source and os.path.isfile(split.source):
            files[name] = {"file": str(split.source), "sha256": sha256_of(split.source)}
    return files


def _make_preprocessor(files, resuming, recipe, init=None):
    """The run's preprocessor: the interrupted run's when resuming, else made from the training texts (with
    `init`, a `keras_match.training.finetune.InitPreset`: the preset's, its vocabulary extended by those texts'
    words)."""
    if resuming and files.preprocessor.exists():
        runs.check_digests(files.root)  # the files the interrupted run wrote, as it wrote them
        return preprocessors.Preprocessor.load(files.root)
    preprocessor = recipe.preprocessor()
    training_words = preprocessor.encoder.num_training_words
    if init is not None:
        fresh, preprocessor = preprocessor, init.run.preprocessor
        preprocessor.extend_vocabulary(fresh)
        preprocessor.encoder.token_counts, training_words = fresh.encoder.token_counts, None
    preprocessor.save(files.root)
    saved = preprocessors.Preprocessor.load(files.root)  # the run uses what it wrote; the counts are for the report
    saved.encoder.token_counts = preprocessor.encoder.token_counts
    saved.encoder.num_training_words = training_words
    return saved


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


def run_config(recipe, name, spec, train_split, max_train_questions, embeddings_path):
    """The run's `config.json`: the entry, its settings (each once, in its section), the dataset and its task,
    the seed, the vectors and the sha256 of every data file read; for a dataset whose dev split was held out of
    its training questions (`keras_match.datasets.base.hold_out_dev`), `holdout_dev`: `{"fraction": ...,
    "train_split": ...}` (the split held out of: `train_split`, else the one the dataset loaded), which
    `keras_match.artifacts.presets.write_preset` reads."""
    settings, vectors = recipe.settings, recipe.vectors
    metadata = getattr(recipe.dataset, "metadata", None) or {}
    holdout = ({"fraction": metadata["holdout_dev"], "train_split": train_split or metadata.get("train_split")}
               if metadata.get("holdout_dev") else None)
    return {
        "format": runs.CONFIG_FORMAT,
        "zoo": name,
        "family": settings.family,
        "builder": settings.builder,
        "settings": settings.to_dict(),
        "dataset": spec,
        "task": recipe.task.config(),
        "train_split": train_split,
        "seed": recipe.seed,
        "max_train_questions": max_train_questions,
        "embeddings": str(embeddings_path) if embeddings_path else None,
        "embeddings_sha256": vectors.sha256 if vectors is not None else None,
        "data_files": data_files(recipe.dataset),
        **({"holdout_dev": holdout} if holdout else {}),
    }


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
    init_preset=None,
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
        embeddings_path: pretrained vectors (`keras_match.text.vectors.load_vectors`: a GloVe text file, a vector
            folder, or `"glove-6b-50d"`); `"default"`: `default_embeddings_path(data_dir)`; `None` trains with
            randomly initialised (and then trainable) embeddings. With frozen vectors the vocabulary is the
            training words followed by the file's words (`max_vocabulary=N` keeps the file's first N).
        run_dir: where the run is written; default `runs/<name>-<dataset>`.
        epochs: overrides the preset's number of epochs.
        batch_size: overrides the preset's batch size.
        max_train_questions: train on the first N training questions (pairs, for classification) only.
        seed: random seed for weights, dropout and batches.
        verbose: Keras `fit` verbosity (`"auto"`: a progress bar on a terminal, a line per epoch otherwise).
        init_preset: fine-tune a trained preset (`"mcan_fm/trecqa-clean"` or a preset folder) of entry `name`
            instead of starting from random weights (`keras_match.training.finetune`): its model and preprocessing
            settings, its vocabulary extended by the training split's words, its weights; its vectors (found by
            their sha256 when `embeddings_path` is `"default"`). Training settings default to the preset's.
        **overrides: model or training settings of the preset by name (`lstm_units=100`,
            `loss="listwise_softmax"`, `list_size=16`, `head="score"`, `overlap_features=True`, ...).

    Returns:
        dict with `dev` and `test` figures (ranking: `map`, `mrr`, `p@1`, `num_questions`, `num_skipped`;
        classification: `accuracy`, `macro_f1`, `per_class`, `num_pairs`), `summary` (one printable line per
        split), `task`, `loss_mode`, `precision` (what the model computed in: the `precision` setting, `auto`
        resolved), `best_epoch`, `epochs_run`, `wall_time_s`, `train_pairs_per_s`,
        `epoch_seconds` (each epoch's training and dev evaluation, kept across resumes: None for an epoch of a
        checkpoint older than the timing), `run_dir`, `embeddings` coverage and `provenance`
        (`keras_match.artifacts.provenance`: the command, code version, package versions, machine, start / end time,
        seed, settings, data files and vectors with their sha256); the same is written to `RUN_DIR/metrics.json`.

    Raises:
        FileExistsError: `run_dir` holds a finished run.
        ValueError: unknown entry, setting or dataset; a dataset without train or dev; `run_dir` holds an
            unfinished run with other settings; with `init_preset`: another entry than the preset's, a model or
            preprocessing setting that differs from the preset's, a dataset of another task or labels.
        keras_match.artifacts.presets.PresetError: `init_preset` is damaged, or its vectors are not found.
        KeyboardInterrupt: re-raised after saying how to resume.
    """
    start = time.time()
    # TF_CONFIG's cluster: the strategy must exist before any other TensorFlow operation
    strategy = distribution.strategy_from_environment()
    overrides = dict(overrides)
    for key, value in (("epochs", epochs), ("batch_size", batch_size)):
        if value is not None:
            overrides[key] = value
    # 1. the settings (checked before anything is read), the data and its task, the vectors
    init = None
    if init_preset is not None:
        init = finetune.load_init_preset(init_preset)
        overrides = finetune.merged_overrides(init, name, overrides)
        embeddings_path = finetune.vectors_source(init, embeddings_path)
    elif embeddings_path == "default":
        from keras_match.training.recipe import default_vectors_path

        embeddings_path = default_vectors_path(data_dir)
    recipe = Recipe.prepare(name, data, data_dir=data_dir, train_split=train_split, embeddings=embeddings_path,
                            seed=seed, max_train_questions=max_train_questions, **overrides)
    settings, task, dataset, mode = recipe.settings, recipe.task, recipe.dataset, recipe.mode
    if recipe.vectors is None:
        embeddings_path = None  # none were read (a backbone's WordPiece ids, or random embeddings asked for)
    if init is not None:
        finetune.check_task(init, task, dataset["train"])
    spec = data if isinstance(data, str) else dataset.name
    files = runs.RunFiles(pathlib.Path(run_dir or f"runs/{name}-{pathlib.Path(str(spec)).name}"))
    config = run_config(recipe, name, spec, train_split, max_train_questions, embeddings_path)
    if init is not None:
        config["init_preset"] = init.record()

    # 2. the run directory
    files.root.mkdir(parents=True, exist_ok=True)
    with runs.locked(files.root):  # one writer per run folder
        resuming = runs.check_resume(files, config)
        keras.utils.set_random_seed(seed)

        # 3. the preprocessor, the model, the encoded splits
        preprocessor = _make_preprocessor(files, resuming, recipe, init)
        runs.write_json(files.config, config)
        runs.record_digests(files.root)
        # with init, the preset's weights move into the model (a resumed run's checkpoint then replaces them)
        adapt = None if init is None else (lambda model: finetune.transfer_weights(init.run.model, model))
        fitting = recipe.fitting(preprocessor, strategy=strategy, adapt=adapt)
        model, coverage = fitting.model, fitting.coverage
        if init is not None:
            init = dataclasses.replace(init, run=None)  # the preset's model is no longer needed

        # 4. fit with dev early stopping; an interrupted run continues from its checkpoint's last epoch
        dev = fitting.dev_callback(files.checkpoints)
        print(
            f"training {name} on {spec} ({task.kind}, {mode} batches"
            f"{', length-bucketed' if settings.training.bucketing else ''}) in "
            f"{precision.describe(recipe.overrides.get('precision', settings.training.precision))}: "
            f"{describe_split('train', recipe.train_split)}, {_describe_vocabulary(preprocessor, coverage)}"
            + (f" (resuming after epoch {dev.completed_epochs})" if resuming else "")
            + (f"; fine-tuning {config['init_preset']['preset']} ({fitting.adapted['new_rows']:,} new embedding "
               "rows)" if "init_preset" in config else "")
            + (f"; data-parallel, {distribution.cluster_description()}" if strategy is not None else ""),
            flush=True,
        )
        for split_name in ("dev", "test"):
            if split_name in dataset:
                print(describe_split(split_name, dataset[split_name]), flush=True)
        fit_start, first_epoch = time.time(), dev.completed_epochs
        try:
            if not dev.stopped and dev.completed_epochs < settings.training.epochs:  # else: killed before the report
                board = RunLogs(str(files.logs), write_graph=False, profile_batch=0)
                fitting.fit(dev, first_epoch=dev.completed_epochs, callbacks=[board], verbose=verbose,
                            strategy=strategy)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted: the last completed epoch is saved in {files.checkpoints}; run the same command "
                "again to resume from it",
                file=sys.stderr,
            )
            raise
        fit_seconds = time.time() - fit_start
        dev.restore_best()

        # 5. evaluate and write the run
        epochs_run = len(dev.state["history"])
        report = {
            "zoo": name,
            "dataset": spec,
            "task": task.kind,
            "loss_mode": mode,
            "precision": settings.training.precision,
            "run_dir": str(files.root),
            "best_epoch": dev.state["best_epoch"],
            "epochs_run": epochs_run,
            "history": dev.state["history"],
            "epoch_seconds": dev.epoch_seconds,
            "embeddings": coverage,
            "counts": {k: s.counts() for k, s in dataset.splits.items()},
            "summary": {},
        }
        if "init_preset" in config:
            report["init_preset"] = config["init_preset"]
        for split_name in ("dev", "test"):
            if split_name in dataset:
                examples = None if split_name == "dev" else task.examples(dataset[split_name])  # dev: encoded once
                report[split_name] = fitting.evaluate(examples)
                report["summary"][split_name] = task.summary(report[split_name])
        report["wall_time_s"] = round(time.time() - start, 1)
        report["provenance"] = provenance.collect(
            start, seed=seed, settings=config["settings"], dataset=spec, train_split=train_split,
            max_train_questions=max_train_questions, data_files=config["data_files"],
            embeddings={"path": config["embeddings"], "sha256": config["embeddings_sha256"]},
            precision=settings.training.precision, resumed_after_epoch=first_epoch or None)
        trained_here = epochs_run - first_epoch  # a resumed run: the epochs of this process only
        report["train_pairs_per_s"] = (round(len(recipe.train_examples) * trained_here / fit_seconds, 1)
                                       if trained_here > 0 and fit_seconds > 0 else None)
        runs.save_model(model, files.model)
        runs.write_json(files.metrics, report)
        runs.record_digests(files.root)
        shutil.rmtree(files.checkpoints, ignore_errors=True)
        return report
