"""Tasks: what a dataset asks of a model, and how its figures are computed (a registry keyed by the dataset's
`task`).

- `RankingTask` (`"ranking"`: answer selection, community QA): MAP / MRR / P@1 per question; dev MAP chooses the
  model; any ranking head and any loss mode.
- `ClassificationTask` (`"classification"`: entailment, paraphrase): accuracy, macro-F1 and per-class F1; dev
  accuracy chooses the model; a classification head, trained pointwise.
- `ResponseSelectionTask` (`"response_selection"`: dialog bAbI): per-response and per-dialog accuracy over all
  candidate responses of a dialog turn; dev per-response accuracy chooses the model.

Each task owns its examples, evaluation, summary line, config and serving signatures (`keras_match.tasks.base`).
A module of this package registers its task with `register(cls)` when imported; `task_for` and
`task_from_config` import every module of the package first, so a new kind of data (multi-turn response
selection) adds a module here, a preprocessor and a family, and nothing in training, tuning or export.
"""

from __future__ import annotations

from keras_match.registries import Registry
from keras_match.tasks.base import Task
from keras_match.tasks.classification import ClassificationTask
from keras_match.tasks.ranking import RankingTask
from keras_match.tasks.response_selection import ResponseSelectionTask

__all__ = ["Task", "RankingTask", "ClassificationTask", "ResponseSelectionTask", "register", "unregister",
           "registered", "task_for", "task_from_config"]

_REGISTRY = Registry(__name__, "task")


def register(cls):
    """Registers task class `cls` under its `kind` (a registered kind is replaced). Returns `cls`.

    Raises:
        ValueError: `cls` is not a subclass of `Task` with a `kind`.
    """
    if not (isinstance(cls, type) and issubclass(cls, Task)) or not cls.kind:
        raise ValueError("a task must be a subclass of keras_match.tasks.Task with a `kind`")
    return _REGISTRY.register(cls.kind, cls)


unregister = _REGISTRY.unregister
registered = _REGISTRY.all
register(RankingTask)
register(ClassificationTask)
register(ResponseSelectionTask)


def task_for(dataset) -> Task:
    """The task of a loaded dataset, by its `task` attribute (`"ranking"` when it has none)."""
    return _REGISTRY.get(getattr(dataset, "task", "ranking")).for_dataset(dataset)


def task_from_config(config: dict) -> Task:
    """The task a run was trained for, from its `config.json`: `{"task": {"kind": ..., ...}}`, or the older
    layout (`"task": "classification"` with `label_names` at the top level, `no_positive_rule`)."""
    task = config.get("task")
    if isinstance(task, dict):
        return _REGISTRY.get(task["kind"]).from_config(task)
    kind = task or "ranking"
    return _REGISTRY.get(kind).from_config({**config, "kind": kind})
