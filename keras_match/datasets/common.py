"""Helpers shared by the benchmark loaders: argument checks, locating files, evaluation-set conventions."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from keras_match.datasets.base import Split
from keras_match.datasets.paths import require_file, resolve_data_dir

NO_POSITIVE = "no positive answer"
"""``Split.dropped`` reason: the question has no relevant candidate (its ranking carries no signal;
trec_eval would count it with average precision 0 if it stayed in the qrels)."""

ONLY_POSITIVE = "only positive answers"
"""``Split.dropped`` reason: every candidate is relevant (any ranking is perfect)."""


def choose(kind: str, value, valid: Sequence[str], dataset: str) -> str:
    """Validate an option; ``None`` selects the first (default) choice.

    Args:
        kind: the option's name for the message (``"variant"``, ``"train_split"``).
        value: the requested value or ``None``.
        valid: the valid values, default first.
        dataset: the dataset name for the message.

    Returns:
        ``value``, or ``valid[0]`` when ``value`` is ``None``.

    Raises:
        ValueError: ``value`` is not one of ``valid``; the message lists them.
    """
    if value is None:
        return valid[0]
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r} for dataset {dataset!r}; valid: {list(valid)}")
    return value


def locate(dataset: str, relative_files: Iterable[str], data_dir=None, download: bool = False) -> Path:
    """Resolve the data directory, optionally download missing files, and check the needed files exist.

    Args:
        dataset: the dataset name (a key of :data:`.download.MANIFESTS` when ``download`` is true).
        relative_files: the files the loader will read, relative to the data directory.
        data_dir: explicit data directory or ``None`` (see :func:`.paths.resolve_data_dir`).
        download: fetch the dataset's missing files first (see :func:`.download.download`).

    Returns:
        The resolved data directory.

    Raises:
        FileNotFoundError: a needed file is missing.
        keras_match.datasets.download.DownloadError: downloading failed.
    """
    root = resolve_data_dir(data_dir)
    if download:
        from keras_match.datasets.download import download as fetch

        fetch(dataset, root)
    for relative in relative_files:
        require_file(root, relative, dataset)
    return root


def drop_no_positive(split: Split) -> Split:
    """Drop the questions without a relevant candidate (reason :data:`NO_POSITIVE`).

    Args:
        split: the split.

    Returns:
        A new split without those questions; ``dropped`` counts them.
    """
    return split.filter(lambda q: q.has_positive, NO_POSITIVE)


def drop_only_positive(split: Split) -> Split:
    """Drop the questions whose candidates are all relevant (reason :data:`ONLY_POSITIVE`).

    Args:
        split: the split.

    Returns:
        A new split without those questions; ``dropped`` counts them.
    """
    return split.filter(lambda q: q.has_negative, ONLY_POSITIVE)
