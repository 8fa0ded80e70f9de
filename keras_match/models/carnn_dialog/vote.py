"""CARNN voting (Tran et al. 2018, Table 1): the majority choice of several finished runs."""

from __future__ import annotations

import numpy as np

__all__ = ["vote", "majority"]


def majority(choices) -> np.ndarray:
    """The majority candidate of each example among the runs' choices.

    Args:
        choices: int `[runs, n]`, each run's chosen candidate per example.

    Returns:
        int `[n]`: the candidate chosen by the most runs; among candidates chosen equally often (three runs that
        all disagree, say), the first run's choice if it is among them, else the tied candidate the earliest run
        chose. **[I]** the paper does not say how ties are broken.
    """
    choices = np.asarray(choices)
    if choices.ndim != 2 or choices.shape[0] < 1:
        raise ValueError(f"choices must be [runs, examples] with at least one run, got shape {choices.shape}")
    result = np.empty(choices.shape[1], dtype=choices.dtype)
    for i, column in enumerate(choices.T):
        counts = {}
        for c in column:
            counts[c] = counts.get(c, 0) + 1
        best = max(counts.values())
        result[i] = next(c for c in column if counts[c] == best)  # run order: the first run's choice first
    return result


def vote(run_dirs, dataset, split="test", data_dir=None, precision="trained") -> dict:
    """Per-response and per-dialog accuracy of the majority choice of finished runs ("CARNN voting").

    Args:
        run_dirs: the run folders (`keras-match train` outputs) of response-selection models on one candidate
            set; the first run breaks ties (`majority`).
        dataset: a dataset name (`"dialog-babi-task6"`) or a loaded response-selection dataset.
        split: the split to score.
        data_dir: the data folder (for a dataset name).
        precision: what each run computes in (`keras_match.artifacts.runs.load_run`): `"trained"` (the default:
            what the run trained in, so each run's figures are those of its `metrics.json`; a run trained in
            mixed bfloat16 scored in float32 chooses other responses in a few turns), `"float32"` or
            `"mixed_bfloat16"`.

    Returns:
        `{"voting": figures, "runs": [figures of each run], "num_runs"}`, the figures those of
        `keras_match.tasks.response_selection.evaluate_selection`.

    Raises:
        ValueError: no run, or a split the runs' task refuses (another candidate set).
    """
    from keras_match.artifacts import runs
    from keras_match.datasets.catalog import load_by_name
    from keras_match.tasks.response_selection import choose, evaluate_selection

    run_dirs = list(run_dirs)
    if not run_dirs:
        raise ValueError("vote needs at least one run")
    if isinstance(dataset, str):
        dataset = load_by_name(dataset, data_dir=data_dir)
    data = dataset[split]
    choices, each = [], []
    examples = None
    for run_dir in run_dirs:
        run = runs.load_run(run_dir, precision=precision)
        task = run.task
        task.check_split(data)
        examples, outputs = run.outputs(data)
        scores = task.scores(run.head, outputs, len(examples), len(examples.candidates))
        choices.append(choose(scores))
        each.append(evaluate_selection(scores, examples.labels, examples.groups))
    chosen = majority(np.stack(choices))
    one_hot = np.zeros([len(chosen), len(examples.candidates)], np.float32)
    one_hot[np.arange(len(chosen)), chosen] = 1.0
    return {"voting": evaluate_selection(one_hot, examples.labels, examples.groups), "runs": each,
            "num_runs": len(run_dirs)}
