"""Keras Tuner over the papers' hyperparameter grids.

A search space is a JSON file of the `tuning/` folder (installed as `keras_match.tuning_spaces`), one per model
family (`tuning/<family>.json`, or the family's own `search_space`), or a file of your own; its format, the checks
made before a search and `declare` are in `keras_match.training.spaces` (re-exported here: `space_for`,
`read_space`, `declare`).

`MatchHyperModel` is a `keras_tuner.HyperModel` of a zoo entry on a dataset, made with the recipe of a training
run (`keras_match.training.recipe.Recipe`): the data, the preprocessor (whose vocabulary does not depend on the
hyperparameters) and the embedding matrix are made once; `build(hp)` builds the entry's model with the trial's
settings and `fit(hp, model)` trains it with the run's batches (the loss mode's) and the dev evaluation of
`keras_match.training.callbacks.DevEvaluationCallback`, which puts the dataset's own figure over the whole dev split
into the epoch logs (`val_map` for ranking, `val_accuracy` for classification): that is the objective the oracle
receives, not a per-batch Keras metric. `make_tuner` wraps it in one of Keras Tuner's tuners; `write_results`
writes the trial table (CSV, JSON), the best configuration (`best.json`, which `keras-match train NAME --config
best.json` retrains) and a plot of the dev figure per trial.

Keras Tuner keeps the search in `DIR/PROJECT/`: the same command run again after an interruption reloads it, so
finished trials are not repeated; a trial that fails is recorded with its error and the search goes on.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pathlib
import time

import keras
import numpy as np

try:
    import keras_tuner as kt
    from keras_tuner.src import utils as kt_utils
    from keras_tuner.src.engine import tuner_utils
except ImportError as error:  # pragma: no cover - the `tune` extra installs it
    raise ImportError("keras_match.training.tuning needs keras-tuner: pip install 'keras-match[tune]'") from error

from keras_match import zoo
from keras_match.artifacts import storage
from keras_match.metrics import figure_name
from keras_match.training.recipe import Recipe
from keras_match.training.spaces import as_setting, check_each_value, declare, read_space, space_for

__all__ = ["space_for", "read_space", "declare", "MatchHyperModel", "make_tuner", "trial_rows", "write_results",
           "distributed_role", "SearchWriteError", "TUNERS"]

TUNERS = ("grid", "random", "hyperband", "bayesian")


def _with_trial_totals(history, seconds):
    """`history` with the fit's totals added as per-epoch series of one value: `epochs_run` (epochs this fit ran,
    early stopping included) and `trial_seconds` (its wall time). Keras Tuner keeps every metric's value at the
    trial's best epoch; a series that is the same at every epoch reaches the oracle as the total."""
    count = len(history.epoch)
    history.history["epochs_run"] = [float(count)] * count
    history.history["trial_seconds"] = [float(seconds)] * count
    return history


class MatchHyperModel(kt.HyperModel):
    """A `keras_tuner.HyperModel` of a zoo entry on a dataset (see the module docstring).

    Args:
        name: zoo entry.
        data: dataset name or path (as `keras_match.train`).
        space: the search space (default `space_for(name)`).
        data_dir, train_split, embeddings_path, seed, max_train_questions: as `keras_match.train`.
        verbose: Keras' progress display inside a trial (`"auto"`, 0, 1, 2).
        **overrides: fixed settings for every trial (`epochs=10`, `loss="listwise_softmax"`); a key of the space
            cannot be fixed here.

    Raises:
        ValueError: unknown entry, setting or dataset; a dataset without train and dev; an override that the
            space also tunes.
        keras_match.datasets.base.DataFormatError: a malformed data file, or a ranking dev split without any
            relevant answer.
        FileNotFoundError: no search space for the entry.
    """

    def __init__(self, name, data="trecqa-clean", *, space=None, data_dir=None, train_split=None,
                 embeddings_path="default", seed=1234, max_train_questions=None, verbose="auto", **overrides):
        super().__init__(name=f"{name}_search")
        self.zoo_name, self.seed, self.verbose = name, seed, verbose
        self.space = space if space is not None else space_for(name)
        tuned = sorted(set(overrides) & set(self.space["hyperparameters"]))
        if tuned:
            raise ValueError(f"{tuned} are searched by {self.space.get('file', 'the space')}; do not fix them")
        self.overrides = dict(overrides)
        self.train_split = train_split
        self.recipe = Recipe.prepare(name, data, data_dir=data_dir, train_split=train_split,
                                     embeddings=embeddings_path, seed=seed, max_train_questions=max_train_questions,
                                     **overrides)
        self.dataset_name = data if isinstance(data, str) else self.recipe.dataset.name
        # the task and the vectors may refuse a value too (a loss the task cannot train with, another width)
        check_each_value(self.space, lambda values: self.recipe.with_settings(**values),
                         f"search space {self.space.get('file', '')} on {self.dataset_name}")
        self.task = self.recipe.task
        self.preprocessor = self.recipe.preprocessor()
        self.recipe.encoded(self.preprocessor)  # the splits are encoded once, for every trial
        self.embeddings, _ = self.recipe.embeddings(self.preprocessor)

    @property
    def train_inputs(self):
        """The training split encoded by the search's preprocessor (once, for every trial)."""
        return self.recipe.encoded(self.preprocessor)[0]

    @property
    def dev_inputs(self):
        """The dev split encoded by the search's preprocessor (once, for every trial)."""
        return self.recipe.encoded(self.preprocessor)[1]

    @property
    def objective(self):
        """The oracle's objective: the dev figure the task chooses models by, from the epoch logs."""
        return kt.Objective(f"val_{self.task.monitor}", direction="max")

    def settings(self, hp) -> dict:
        """The trial's settings by name: the fixed overrides and the space's values."""
        return {**self.overrides, **declare(hp, self.space)}

    def trial_settings(self, hp):
        """The trial's `keras_match.settings.Settings` (a space may search the loss too)."""
        return self.recipe.with_settings(**declare(hp, self.space))

    def build(self, hp):
        """The entry's model with the trial's settings, compiled for the loss's batching mode."""
        settings = self.trial_settings(hp)
        keras.utils.set_random_seed(self.seed)
        return self.recipe.fitting(self.preprocessor, settings=settings, embeddings=self.embeddings).fit_model

    def fit(self, hp, model, *args, callbacks=None, epochs=None, initial_epoch=0, **kwargs):
        """Trains `model` on the training split and evaluates the dev split after every epoch.

        Keras Tuner passes its callbacks (and, for Hyperband, `epochs` and `initial_epoch`); other arguments are
        not used: the data is the hypermodel's.

        Returns:
            The Keras `History`, whose `val_<figure>` the tuner reads as the objective, with the fit's
            `epochs_run` and `trial_seconds` (see `_with_trial_totals`).
        """
        fitting = self.recipe.fitting_of(model, self.preprocessor, self.trial_settings(hp))
        start = time.time()
        callbacks = [_SaveBestEpoch.of(c) if isinstance(c, tuner_utils.SaveBestEpoch) else c for c in callbacks or ()]
        history = fitting.fit(fitting.dev_callback(), first_epoch=initial_epoch, epochs=epochs, callbacks=callbacks,
                              verbose=self.verbose)
        return _with_trial_totals(history, time.time() - start)


def make_tuner(hypermodel, kind, directory, *, max_trials=None, project="search", seed=1234, max_epochs=None):
    """A Keras Tuner tuner over `hypermodel` that prints one line per finished trial.

    In a distributed search (`distributed_role`), the chief's tuner serves the oracle from `search` and runs no
    trial; a worker's asks the chief for trials. Every process keeps its own `directory` (Hyperband's workers
    share one, as they load each other's weights).

    Args:
        hypermodel: a `MatchHyperModel`.
        kind: `"grid"`, `"random"`, `"hyperband"` or `"bayesian"`.
        directory: the search folder; the same folder and project continue an interrupted search.
        max_trials: trials to run (grid: default every combination; random and bayesian: default 10; Hyperband
            decides its own count).
        project: the project name inside `directory`.
        seed: the oracle's seed.
        max_epochs: Hyperband's largest epoch budget (default the preset's epochs).

    Raises:
        ValueError: unknown kind, `max_trials` that is not a positive integer, or an incomplete set of Keras
            Tuner's distribution variables.
    """
    if kind not in TUNERS:
        raise ValueError(f"unknown tuner {kind!r}; valid: {list(TUNERS)}")
    if max_trials is not None and (isinstance(max_trials, bool) or not isinstance(max_trials, int)
                                   or max_trials < 1):
        raise ValueError(f"max_trials must be a positive integer, got {max_trials!r}")
    role = distributed_role()  # checks Keras Tuner's variables before any connection is made
    common = dict(objective=hypermodel.objective, seed=seed, max_consecutive_failed_trials=10)
    if kind == "hyperband":  # Keras Tuner's Hyperband tuner: it carries weights from one bracket round to the next
        epochs = max_epochs or hypermodel.recipe.settings.training.epochs
        tuner = _HyperbandTuner(hypermodel=hypermodel, max_epochs=int(epochs), directory=str(directory),
                                project_name=project, overwrite=False, **common)
    else:
        if kind == "grid":
            oracle = _ResumableGridSearchOracle(max_trials=max_trials, **common)
        elif kind == "random":
            oracle = kt.oracles.RandomSearchOracle(max_trials=max_trials or 10, **common)
        else:
            oracle = kt.oracles.BayesianOptimizationOracle(max_trials=max_trials or 10, **common)
        tuner = _Tuner(oracle=oracle, hypermodel=hypermodel, directory=str(directory), project_name=project,
                       overwrite=False)
    if role == "chief":
        _announce_trial_ends(tuner)
    return tuner


class _ResumableGridSearchOracle(kt.oracles.GridSearchOracle):
    """Keras Tuner 1.4.8's grid oracle keeps the order of the combinations it tried, and the queue of trials to
    continue from, in memory only: reloaded after an interruption, its next `create_trial` fails with a
    `KeyError` on a trial id. This oracle saves both with its state (the search folder's `oracle.json`)."""

    def get_state(self):
        state = super().get_state()
        ordered, index = [], 0 if self._ordered_ids._memory else None
        while index is not None:  # the list's head is its first insertion: the first trial
            ordered.append(self._ordered_ids._memory[index])
            index = self._ordered_ids._next_index[index]
        state.update(grid_order=ordered, grid_populate_next=list(self._populate_next))
        return state

    def set_state(self, state):
        super().set_state(state)
        self._ordered_ids = _grid_linked_list()
        for trial_id in state.get("grid_order", []):
            self._ordered_ids.insert(trial_id)
        self._populate_next = list(state.get("grid_populate_next", []))


def _grid_linked_list():
    from keras_tuner.src.tuners import gridsearch

    return gridsearch.LinkedList()


class SearchWriteError(storage.WriteError, kt.errors.FatalError):
    """A file of the search could not be written (a full disk): Keras Tuner ends the search on it (a `FatalError`)
    rather than recording a failed trial and going on to the next, which would fail the same way."""


@contextlib.contextmanager
def _ending_the_search_on_failed_writes():
    """Turns a `keras_match.artifacts.storage.WriteError` raised in the block into a `SearchWriteError`."""
    try:
        yield
    except storage.WriteError as error:
        raise SearchWriteError(str(error)) from None


def _save_json(path, obj):
    """Keras Tuner's writer of its state files (`utils.save_json`: `tuner0.json`, `oracle.json`, each
    `trial.json`, a trial's build config), which writes in place: a full disk leaves a 0-byte `tuner0.json` that the
    next `tune` cannot read. Here the file is written atomically (`keras_match.artifacts.storage.write_text`), and a
    failed write ends the search (`SearchWriteError`).

    Returns:
        The JSON text written, as Keras Tuner's returns it.
    """
    text = json.dumps(obj)
    with _ending_the_search_on_failed_writes():
        storage.write_text(path, text)
    return text


class _SaveBestEpoch(tuner_utils.SaveBestEpoch):
    """Keras Tuner's checkpoint of a trial's best epoch (the weights Hyperband carries to the next round), written
    by `keras_match.artifacts.storage.write_hdf5` (made in memory, renamed into place when complete); a failed write
    ends the search (`SearchWriteError`)."""

    @classmethod
    def of(cls, checkpoint):
        """The same checkpoint (objective, file, best value so far) as Keras Tuner's `checkpoint`."""
        copy = cls(objective=checkpoint.objective, filepath=checkpoint.filepath)
        copy.best_value = checkpoint.best_value
        return copy

    def _save_model(self):
        with _ending_the_search_on_failed_writes():
            storage.write_hdf5(self.filepath, self.model.save_weights)


class _TrialLines:
    """Prints one line per finished trial: its number, settings, dev figure, epochs and seconds.

    The line comes from the oracle's record of the trial, which on a distributed worker is the chief's (the
    worker's own copy of the trial does not receive the metrics it reports)."""

    def search(self, *args, **kwargs):
        """Keras Tuner's search, its state files written by `_save_json` (atomically; a failed write ends it)."""
        written_by = kt_utils.save_json
        kt_utils.save_json = _save_json
        try:
            return super().search(*args, **kwargs)
        finally:
            kt_utils.save_json = written_by

    def on_trial_end(self, trial):
        super().on_trial_end(trial)
        prefix = f"{self.tuner_id}: " if distributed_role() == "worker" else ""
        print(prefix + _trial_line(self.oracle, self.oracle.get_trial(trial.trial_id), self.hypermodel.space),
              flush=True)


def _trial_line(oracle, trial, space):
    row = _row(oracle, trial, space)
    settings = ", ".join(f"{k}={json.dumps(v)}" for k, v in row["hyperparameters"].items())
    result = (f"{row['objective']} {row['dev']:.4f}" if row["dev"] is not None
              else f"failed: {row['error'] or row['status']}")
    return f"trial {row['trial']} ({settings}): {result}, {row['epochs']} epochs, {row['seconds']} s"


def distributed_role():
    """`"chief"`, `"worker"` or `None`: this process's part in Keras Tuner's distributed search.

    Keras Tuner reads three variables: `KERASTUNER_ORACLE_IP` and `KERASTUNER_ORACLE_PORT`, the chief's address,
    and `KERASTUNER_TUNER_ID`, `chief` for the process that holds the oracle and any other name (`tuner0`,
    `tuner1`, ...) for a worker that runs trials. Without `KERASTUNER_ORACLE_IP` the search is local.

    Raises:
        ValueError: `KERASTUNER_ORACLE_IP` is set without the port or the tuner id (the message names the variable).
    """
    if "KERASTUNER_ORACLE_IP" not in os.environ:
        return None
    missing = [v for v in ("KERASTUNER_ORACLE_PORT", "KERASTUNER_TUNER_ID") if not os.environ.get(v)]
    if missing:
        raise ValueError(f"KERASTUNER_ORACLE_IP is set (a distributed search) but {' and '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} not: set both on every process")
    return "chief" if "chief" in os.environ["KERASTUNER_TUNER_ID"] else "worker"


def _announce_trial_ends(tuner):
    """On the chief of a distributed search, which runs no trial itself: one line per trial as workers end them."""
    oracle, space = tuner.oracle, tuner.hypermodel.space
    end_trial = oracle.end_trial

    def announced(trial):
        end_trial(trial)
        print(_trial_line(oracle, oracle.get_trial(trial.trial_id), space), flush=True)

    oracle.end_trial = announced


class _Tuner(_TrialLines, kt.Tuner):
    pass


class _HyperbandTuner(_TrialLines, kt.Hyperband):
    pass


def _row(oracle, trial, space):
    objective = oracle.objective.name
    metrics = trial.metrics
    dev = metrics.get_best_value(objective) if metrics.exists(objective) else None
    epochs = int(metrics.get_last_value("epochs_run")) if metrics.exists("epochs_run") else 0
    seconds = metrics.get_last_value("trial_seconds") if metrics.exists("trial_seconds") else None
    specs = space["hyperparameters"]
    hps = trial.hyperparameters  # a hyperparameter whose "when" fails in this trial is left out
    values = {k: as_setting(specs[k], v) for k, v in hps.values.items() if k in specs and hps.is_active(k)}
    return {"trial": trial.trial_id, "status": str(trial.status), "hyperparameters": values, "objective": objective,
            "dev": None if dev is None else float(dev), "epochs": epochs,
            "seconds": None if seconds is None else round(float(seconds), 1),
            "error": (trial.message or "").strip().splitlines()[-1] if getattr(trial, "message", None) else None}


def trial_rows(tuner) -> list[dict]:
    """One dict per trial of the search (finished, failed or running), in trial order."""
    trials = tuner.oracle.trials
    return [_row(tuner.oracle, trials[key], tuner.hypermodel.space) for key in sorted(trials, key=lambda k: (len(k), k))]


def write_results(tuner, hypermodel, directory) -> dict:
    """Writes the trial table (`trials.csv`, `trials.json`), the best configuration (`best.json`) and the plot
    of the dev figure per trial (`trials.png`) into `directory`.

    Returns:
        `{"trials": rows, "best": best configuration or None, "files": {...}}`.

    Raises:
        keras_match.artifacts.storage.WriteError: a file could not be written.
    """
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rows = trial_rows(tuner)
    done = [r for r in rows if r["dev"] is not None]
    best = None
    if done:
        top = max(done, key=lambda r: r["dev"])
        best = {"zoo": hypermodel.zoo_name, "dataset": hypermodel.dataset_name,
                "train_split": hypermodel.train_split, "trial": top["trial"],
                "objective": top["objective"], "dev": top["dev"], "space": hypermodel.space.get("file"),
                "settings": {**hypermodel.overrides, **top["hyperparameters"]}}
    keys = list(hypermodel.space["hyperparameters"])
    files = {"csv": directory / "trials.csv", "json": directory / "trials.json", "best": directory / "best.json",
             "plot": directory / "trials.png"}

    def write_csv(path):
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["trial", "status", *keys, rows[0]["objective"] if rows else "dev", "epochs", "seconds",
                             "error"])
            for r in rows:  # a hyperparameter whose "when" failed in the trial: an empty cell
                cells = [json.dumps(r["hyperparameters"][k]) if k in r["hyperparameters"] else "" for k in keys]
                writer.writerow([r["trial"], r["status"], *cells, r["dev"], r["epochs"], r["seconds"], r["error"] or ""])

    storage.atomic_write(files["csv"], write_csv)
    storage.write_text(files["json"], json.dumps(rows, indent=2) + "\n")
    if best is not None:
        storage.write_text(files["best"], json.dumps(best, indent=2) + "\n")
    storage.atomic_write(files["plot"], lambda path: _plot(rows, path, hypermodel.zoo_name))
    return {"trials": rows, "best": best, "files": {k: str(v) for k, v in files.items()}}


def _plot(rows, path, name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(max(4.0, 0.35 * len(rows) + 2), 3.2))
    done = [(i, r) for i, r in enumerate(rows) if r["dev"] is not None]
    xs, ys = [i for i, _ in done], [r["dev"] for _, r in done]
    axis.bar(xs, ys, color="#4c72b0")
    if ys:
        best = int(np.argmax(ys))
        axis.bar([xs[best]], [ys[best]], color="#dd8452", label=f"best: trial {done[best][1]['trial']}")
        axis.set_ylim(max(0.0, min(ys) - 0.05), min(1.0, max(ys) + 0.03))
        axis.legend(loc="lower right")
    for i in [i for i, r in enumerate(rows) if r["dev"] is None]:  # failed trials
        axis.annotate("failed", (i, axis.get_ylim()[0]), rotation=90, ha="center", va="bottom", fontsize=7)
    axis.set_xticks(range(len(rows)), [r["trial"] for r in rows], rotation=90, fontsize=7)
    axis.set_xlabel("trial")
    axis.set_ylabel(f"dev {figure_name(rows[0]['objective'][4:]) if rows else ''}")
    axis.set_title(f"{name}: dev figure per trial")
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=120)
    plt.close(figure)
