"""Training callbacks: dev-set evaluation with early stopping and best-weight restoring, kept across resumes."""

from __future__ import annotations

import json
import os
import pathlib

import keras

__all__ = ["DevEvaluationCallback"]


class DevEvaluationCallback(keras.callbacks.Callback):
    """Evaluate the dev split after every epoch, keep the best weights by the task's figure, stop early.

    Adds `val_<figure>` (`val_map`, `val_mrr`, `val_p@1` for ranking; `val_accuracy`, `val_macro_f1` for
    classification) to the epoch logs, so the progress bar, TensorBoard and the history show them. The best
    weights and the early-stopping state (best figure, its epoch, epochs without improvement, the history) are
    written to `state_dir` after each epoch, so a resumed run continues the same search instead of starting its
    patience and best weights over. `restore_best()` puts the best weights back into the scorer.

    Args:
        evaluate: a function `() -> dict` that scores the dev split with the current weights.
        monitor: the report key that chooses the model (higher is better), e.g. `"map"` or `"accuracy"`.
        figures: the report keys to log.
        scorer: the matching model whose weights are kept (the model being fit may wrap it, see
            `keras_match.heads.ListScorer`).
        state_dir: folder for `best.weights.h5` and `dev_state.json`.
        patience: epochs without a better dev figure before training stops.
    """

    def __init__(self, evaluate, monitor, figures, scorer, state_dir, patience=3):
        super().__init__()
        self.evaluate = evaluate
        self.monitor = monitor
        self.figures = tuple(figures)
        self.scorer = scorer
        self.state_dir = pathlib.Path(state_dir)
        self.patience = patience
        self.state = {"monitor": monitor, "best": -1.0, "best_epoch": -1, "wait": 0, "history": []}

    @property
    def _state_path(self):
        return self.state_dir / "dev_state.json"

    @property
    def _weights_path(self):
        return self.state_dir / "best.weights.h5"

    def on_train_begin(self, logs=None):
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self._state_path.exists():
            from keras_match.runs import read_json

            self.state = read_json(self._state_path, "delete the run folder's checkpoints/ to restart the run")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        report = self.evaluate()
        for key in self.figures:
            logs[f"val_{key}"] = report[key]
        entry = {"epoch": epoch + 1, "loss": float(logs.get("loss", float("nan")))}
        entry.update({f"dev_{key}": report[key] for key in self.figures})
        # A run resumed after a crash between this callback and the backup repeats an epoch: keep the newest.
        self.state["history"] = [h for h in self.state["history"] if h["epoch"] < epoch + 1] + [entry]
        if report[self.monitor] > self.state["best"]:
            self.state.update(best=report[self.monitor], best_epoch=epoch + 1, wait=0)
            staged = self._weights_path.with_name("staged.weights.h5")
            self.scorer.save_weights(staged)
            os.replace(staged, self._weights_path)
        else:
            self.state["wait"] += 1
            if self.state["wait"] >= self.patience:
                self.model.stop_training = True
        staged = self._state_path.with_suffix(".tmp")
        staged.write_text(json.dumps(self.state, indent=2))
        os.replace(staged, self._state_path)
        figures = " ".join(f"{key.upper() if key != 'accuracy' else 'accuracy'} {report[key]:.4f}"
                           for key in self.figures)
        print(f"epoch {epoch + 1}: dev {figures} (best {self.monitor} {self.state['best']:.4f} at epoch "
              f"{self.state['best_epoch']})", flush=True)

    def restore_best(self):
        """Load the best weights into the scorer (no-op before the first epoch finished)."""
        if self._weights_path.exists():
            self.scorer.load_weights(self._weights_path)
