"""Training callbacks: dev-set evaluation with early stopping and best-weight restoring, and the run's checkpoint,
kept across resumes."""

from __future__ import annotations

import json
import pathlib
import time

import keras
import numpy as np
import tensorflow as tf

from keras_match import metrics
from keras_match.artifacts import storage
from keras_match.artifacts.storage import _RESTART, STATE_FILE, read_state  # noqa: F401  (re-exported)

__all__ = ["DevEvaluationCallback", "RunLogs", "STATE_FILE", "read_state"]

class DevEvaluationCallback(keras.callbacks.Callback):
    """Evaluate the dev split after every epoch, keep the best weights by the task's figure, stop early, and
    checkpoint the run so that a killed training resumes from its last complete epoch.

    Adds `val_<figure>` (`val_map`, `val_mrr`, `val_p@1` for ranking; `val_accuracy`, `val_macro_f1` for
    classification) to the epoch logs, so the progress bar, TensorBoard and the history show them.

    After each epoch the callback writes, in this order, each to a temporary name renamed when complete: the
    scorer's weights if the dev figure improved (`best-epoch-K.weights.h5`), the fit model's weights with its
    optimizer state (`epoch-N.weights.h5`), then `state.json` naming those two files, with the dropout layers'
    random-seed states (which Keras' weight files leave out) and the early-stopping state (best figure, its
    epoch, epochs without improvement, the history). Files that `state.json` no longer names are removed
    afterwards. A process killed at any point (mid-epoch, mid-write) therefore leaves a `state.json` that names
    complete files of one epoch. (Keras' `BackupAndRestore` writes its weights and its epoch counter as two
    steps, and this callback's dev state would be a third: a kill between them leaves them out of step; it also
    restarts the dropout masks.) `completed_epochs` is read at construction, so the input pipeline can continue
    its epoch sequence; `on_train_begin` loads the weights and the seed states and sets the epoch to start from.

    Args:
        evaluate: a function `() -> dict` that scores the dev split with the current weights.
        monitor: the report key that chooses the model (higher is better), e.g. `"map"` or `"accuracy"`.
        figures: the report keys to log.
        scorer: the matching model whose weights are kept (the model being fit may wrap it, see
            `keras_match.heads.ListScorer`).
        state_dir: the checkpoint folder (created when the first epoch ends); None keeps the best weights in
            memory and writes nothing (tuning trials: Keras Tuner keeps their state).
        patience: epochs without a better dev figure before training stops.

    Raises:
        keras_match.artifacts.storage.DamagedRunError: `state.json` or a weight file it names is damaged or missing (at
            construction, or in `on_train_begin`); the message names the file.
        keras_match.artifacts.storage.WriteError: a checkpoint file could not be written (full disk, read-only
            folder); the previous checkpoint is intact.
    """

    def __init__(self, evaluate, monitor, figures, scorer, state_dir, patience=3):
        super().__init__()
        self.evaluate = evaluate
        self.monitor = monitor
        self.figures = tuple(figures)
        self.scorer = scorer
        self.state_dir = None if state_dir is None else pathlib.Path(state_dir)
        self.patience = patience
        self.state = {"monitor": monitor, "best": -1.0, "best_epoch": -1, "wait": 0, "history": [], "epoch": 0,
                      "weights": None, "best_weights": None, "epoch_seconds": []}
        self._epoch_start = None
        self._best_in_memory = None
        if self.state_dir is not None:
            self.state.update(read_state(self.state_dir))

    @property
    def _state_path(self):
        return self.state_dir / STATE_FILE

    @property
    def completed_epochs(self) -> int:
        """The number of epochs the checkpoint holds (0 for a new run)."""
        return int(self.state["epoch"])

    @property
    def stopped(self) -> bool:
        """Whether early stopping already ended the checkpointed run (a kill came before its report was written)."""
        return self.completed_epochs > 0 and self.state["wait"] >= self.patience

    def on_train_begin(self, logs=None):
        if not self.state["weights"]:
            return
        path = self.state_dir / self.state["weights"]
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)  # its variables must exist to be loaded
        _load_weights(self.model, path)
        states = self.state.get("seed_states") or []
        generators = _seed_generators(self.model)
        if len(states) != len(generators):
            raise storage.DamagedRunError(f"{self._state_path} holds {len(states)} random-seed states for a model with "
                                  f"{len(generators)}; {_RESTART}")
        for generator, value in zip(generators, states):
            generator.state.assign(np.asarray(value, dtype=keras.backend.standardize_dtype(generator.state.dtype)))
        self.model._initial_epoch = self.completed_epochs  # read by fit after on_train_begin, as BackupAndRestore does

    @property
    def epoch_seconds(self) -> list:
        """Seconds of each completed epoch (its training and its dev evaluation), kept across resumes; None for an
        epoch checkpointed before epochs were timed."""
        seconds = list(self.state.get("epoch_seconds") or [])
        return (seconds + [None] * self.completed_epochs)[:self.completed_epochs]

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.monotonic()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        report = self.evaluate()
        seconds = None if self._epoch_start is None else round(time.monotonic() - self._epoch_start, 1)
        for key in self.figures:
            logs[f"val_{key}"] = report[key]
        entry = {"epoch": epoch + 1, "loss": float(logs.get("loss", float("nan")))}
        entry.update({f"dev_{key}": report[key] for key in self.figures})
        self.state["history"] = [h for h in self.state["history"] if h["epoch"] < epoch + 1] + [entry]
        improved = report[self.monitor] > self.state["best"]
        if improved:
            self.state.update(best=report[self.monitor], best_epoch=epoch + 1, wait=0)
        else:
            self.state["wait"] += 1
            if self.state["wait"] >= self.patience:
                self.model.stop_training = True
        self.state["epoch_seconds"] = self.epoch_seconds[:epoch] + [seconds]  # the checkpoint's epochs, then this one
        self.state["epoch"] = epoch + 1
        if self.state_dir is None:  # a tuning trial: the best weights stay in memory, nothing is checkpointed
            if improved:
                self._best_in_memory = [np.array(w) for w in self.scorer.get_weights()]
        else:
            self._checkpoint(epoch, improved)
        figures = " ".join(f"{metrics.figure_name(key)} {report[key]:.4f}" for key in self.figures)
        print(f"epoch {epoch + 1}: dev {figures} (best {self.monitor} {self.state['best']:.4f} at epoch "
              f"{self.state['best_epoch']})", flush=True)

    def _checkpoint(self, epoch, improved):
        """Writes the epoch's checkpoint: best weights (if improved), the fit model's weights, then the commit."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if improved:
            self.state["best_weights"] = f"best-epoch-{epoch + 1}.weights.h5"
            _save_weights(self.scorer, self.state_dir / self.state["best_weights"])
        self.state.update(weights=f"epoch-{epoch + 1}.weights.h5",
                          seed_states=[np.asarray(g.state).tolist() for g in _seed_generators(self.model)])
        _save_weights(self.model, self.state_dir / self.state["weights"])
        # the commit: from here on the new files are the checkpoint
        storage.write_text(self._state_path, json.dumps(self.state, indent=2) + "\n")
        keep = {STATE_FILE, self.state["weights"], self.state["best_weights"]}
        for path in self.state_dir.iterdir():
            if path.name not in keep and path.is_file():
                path.unlink(missing_ok=True)

    def restore_best(self):
        """Load the best weights into the scorer (no-op before the first epoch finished)."""
        if self._best_in_memory is not None:
            self.scorer.set_weights(self._best_in_memory)
        elif self.state["best_weights"]:
            _load_weights(self.scorer, self.state_dir / self.state["best_weights"])


def _writing_logs(name):
    """The hook `name` of Keras's TensorBoard callback (looked up when called), its failed writes one `WriteError`
    naming the logs folder."""

    def guarded(self, *args, **kwargs):
        with storage.writing(self.log_dir, also=(tf.errors.OpError,)):
            return getattr(super(RunLogs, self), name)(*args, **kwargs)

    guarded.__name__ = name
    return guarded


class RunLogs(keras.callbacks.TensorBoard):
    """Keras's TensorBoard callback writing a run's `logs/`, whose failed writes (a full disk) are one
    `keras_match.artifacts.storage.WriteError` naming the folder (exit status 1), not TensorFlow's `OpError`
    traceback. The logs are not part of the checkpoint: the run resumes from its last complete epoch.

    Args:
        log_dir: the folder of the event files; other keyword arguments are `keras.callbacks.TensorBoard`'s.
    """

    on_train_begin = _writing_logs("on_train_begin")
    on_train_batch_end = _writing_logs("on_train_batch_end")
    on_test_end = _writing_logs("on_test_end")
    on_epoch_end = _writing_logs("on_epoch_end")
    on_train_end = _writing_logs("on_train_end")


def _seed_generators(model):
    """The model's random-seed generators (dropout masks), in layer order: Keras' weight files leave them out, so a
    resumed run would otherwise draw the masks of its first epoch again."""
    generators, seen = [], set()
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for generator in getattr(layer, "_seed_generators", []):
            if id(generator) not in seen:
                seen.add(id(generator))
                generators.append(generator)
    return generators


def _save_weights(model, path):
    storage.write_hdf5(path, model.save_weights)


def _load_weights(model, path):
    if not path.is_file():
        raise storage.DamagedRunError(f"{path} is missing although {path.parent / STATE_FILE} names it; {_RESTART}")
    try:
        model.load_weights(path)
    except (OSError, ValueError, KeyError) as error:
        raise storage.DamagedRunError(f"{path} is damaged ({str(error).splitlines()[0] if str(error) else type(error).__name__}); "
                              f"{_RESTART}") from None
