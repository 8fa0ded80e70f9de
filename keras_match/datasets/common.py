"""Helpers shared by the benchmark loaders: argument checks, locating and reading files, evaluation-set
conventions, and building the loaded dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from keras_match.datasets.base import MatchingDataset, Split
from keras_match.datasets.classification import ClassificationDataset, PairSplit

NO_POSITIVE = "no positive answer"
"""``Split.dropped`` reason: the question has no relevant candidate (its ranking carries no signal;
trec_eval would count it with average precision 0 if it stayed in the qrels)."""

ONLY_POSITIVE = "only positive answers"
"""``Split.dropped`` reason: every candidate is relevant (any ranking is perfect)."""

KEEP = {NO_POSITIVE: lambda q: q.has_positive, ONLY_POSITIVE: lambda q: q.has_negative}
"""``Split.dropped`` reason -> the test a question must pass to be kept (see :func:`drop_questions`)."""


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


def choose_options(dataset: str, variant, variants: Sequence, train_split, train_splits: Sequence) -> tuple:
    """Validate a loader's ``variant``, then its ``train_split`` (see :func:`choose`).

    Args:
        dataset: the dataset name for the messages.
        variant: the requested variant or ``None``.
        variants: the valid variants, default first.
        train_split: the requested training split or ``None``.
        train_splits: the valid training splits, default first.

    Returns:
        ``(variant, train_split)``, each ``None`` replaced by its default.

    Raises:
        ValueError: unknown variant (checked first) or training split; the message lists the valid values.
    """
    return choose("variant", variant, variants, dataset), choose("train_split", train_split, train_splits, dataset)


def locate(dataset: str, relative_files: Iterable[str], data_dir=None, download=None) -> Path:
    """Resolve the data directory and make sure the files a loader reads are there (:func:`.download.ensure`: on
    first use they are fetched and built into the user cache); once read, :func:`check_intact` checks them.

    Args:
        dataset: the dataset name (a key of :data:`.sources.SOURCES`).
        relative_files: the files the loader will read, relative to the data directory (plain names; the data
            folder's ``.gz`` copy of a file is found too, see :func:`data_path`).
        data_dir: explicit data directory or ``None`` (see :func:`.paths.resolve_data_dir`).
        download: fetch and build missing or damaged files first: ``None`` (default) only into the user cache,
            ``True`` into any data directory, ``False`` never.

    Returns:
        The resolved data directory.

    Raises:
        keras_match.datasets.download.MissingDataError: a needed file is missing (a ``FileNotFoundError``).
        keras_match.datasets.download.DownloadError: fetching failed.
    """
    from keras_match.datasets.download import ensure

    return ensure(dataset, list(relative_files), data_dir, download)


def check_intact(dataset: str, root: Path, relative_files: Iterable[str]) -> None:
    """After a loader has read its files: each one's sha256 is the pinned one (:func:`.download.check_intact`).

    Raises:
        keras_match.datasets.download.ChecksumError: a file is damaged (names it and the command that restores it).
    """
    from keras_match.datasets.download import check_intact as check

    check(dataset, root, list(relative_files))


def data_path(root: Path, relative: str) -> Path:
    """The file holding ``relative``: ``root / relative``, else the data folder's gzip'd copy
    ``root / (relative + ".gz")`` (both read the same, see :func:`.reader.iter_lines`).

    Args:
        root: the data directory.
        relative: the file's plain name relative to ``root``.

    Returns:
        The present form (the plain path when neither is present).
    """
    plain = Path(root) / relative
    packed = Path(root) / f"{relative}.gz"
    return packed if not plain.is_file() and packed.is_file() else plain


def file_paths(root: Path, files: Mapping[str, str]) -> dict[str, str]:
    """The full paths of files given relative to the data directory, for ``metadata``.

    Args:
        root: the data directory.
        files: key (split name, file name) -> path relative to ``root``.

    Returns:
        The same keys, in the same order -> the present file (:func:`data_path`) as a string.
    """
    return {key: str(data_path(root, relative)) for key, relative in files.items()}


def read_benchmark(
    dataset: str, files: Mapping[str, str], read: Callable[[str, Path], tuple], data_dir=None, download=None
) -> tuple[Path, dict, dict]:
    """Locate a benchmark's split files (see :func:`locate`), read each one with a ``(split, facts)`` reader, then
    check them against their pinned digests (:func:`check_intact`).

    Args:
        dataset: the dataset name.
        files: split name -> file relative to the data directory; read in this order.
        read: ``read(name, path) -> (split, facts)``, e.g. :func:`.sick.read_sick_split` (facts: the
            relatedness scores of the split's pairs).
        data_dir: explicit data directory or ``None`` (see :func:`.paths.resolve_data_dir`).
        download: fetch the dataset's missing files first (see :func:`.download.download`).

    Returns:
        ``(root, splits, facts)``: the data directory, split name -> split and split name -> its facts, both
        in ``files`` order.

    Raises:
        FileNotFoundError: a split file is missing (checked before any is read).
        keras_match.datasets.download.DownloadError: downloading failed.
        keras_match.datasets.base.DataFormatError: a file is malformed (raised by ``read``; it names the file,
            the line and the field).
    """
    root = locate(dataset, files.values(), data_dir, download)
    splits, facts = {}, {}
    for name, relative in files.items():
        splits[name], facts[name] = read(name, data_path(root, relative))
    check_intact(dataset, root, files.values())
    return root, splits, facts


def drop_questions(split: Split, *reasons: str) -> Split:
    """Drop the questions an evaluation convention excludes, one reason after the other.

    Args:
        split: the split.
        *reasons: keys of :data:`KEEP`: :data:`NO_POSITIVE` (questions without a relevant candidate),
            :data:`ONLY_POSITIVE` (questions whose candidates are all relevant). Each applies to the questions
            the previous ones kept.

    Returns:
        A new split without those questions; ``dropped`` counts them by reason (reasons that drop nothing are
        not listed).

    Raises:
        KeyError: a reason is not a key of :data:`KEEP`.
    """
    for reason in reasons:
        split = split.filter(KEEP[reason], reason)
    return split


def ranking_dataset(
    dataset: str, splits: dict[str, Split], variant: str | None, root: Path, **metadata
) -> MatchingDataset:
    """A loaded answer-selection benchmark.

    Args:
        dataset: the dataset name.
        splits: split name -> :class:`~.base.Split`.
        variant: the variant loaded.
        root: the data directory the files were read from.
        **metadata: the loader's own facts (qrels paths, evaluation convention, ...).

    Returns:
        The :class:`~.base.MatchingDataset`; its ``metadata`` is ``data_dir`` (``str(root)``), then
        ``metadata`` in the order given.
    """
    return MatchingDataset(dataset, splits, variant=variant, metadata={"data_dir": str(root), **metadata})


def classification_dataset(
    dataset: str,
    splits: dict[str, PairSplit],
    label_names: Sequence[str],
    variant: str | None,
    root: Path,
    files: Mapping[str, str],
    **metadata,
) -> ClassificationDataset:
    """A loaded sentence-pair classification benchmark.

    Args:
        dataset: the dataset name.
        splits: split name -> :class:`~.classification.PairSplit`.
        label_names: the class names, index order.
        variant: the variant loaded.
        root: the data directory the files were read from.
        files: the files read (split or file name -> path relative to ``root``).
        **metadata: the loader's own facts (evaluation convention, ...).

    Returns:
        The :class:`~.classification.ClassificationDataset`; its ``metadata`` is ``data_dir`` (``str(root)``),
        ``files`` (the same keys -> full paths, see :func:`file_paths`), then ``metadata`` in the order given.

    Raises:
        ValueError: a split's ``label_names`` differ from ``label_names``.
    """
    metadata = {"data_dir": str(root), "files": file_paths(root, files), **metadata}
    return ClassificationDataset(dataset, splits, label_names, variant=variant, metadata=metadata)
