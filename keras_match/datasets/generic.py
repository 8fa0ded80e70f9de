"""User data in TSV or JSONL files.

Formats (UTF-8, LF or CRLF, optionally gzip-compressed with a ``.gz`` name; empty lines are skipped):

* TSV (``*.tsv``): a header line naming at least the columns ``qid``, ``question``, ``answer`` and ``label``
  (any order; ``aid`` optional; other columns ignored), then one tab-separated row per (question, candidate).
  No quoting.
* JSONL (``*.jsonl``): one JSON object per line with the keys ``qid``, ``question``, ``answer``, ``label``
  and optionally ``aid`` (other keys ignored).

``label`` is an integer ``>= 0`` (``0`` = not relevant, ``>= 1`` relevant, graded labels allowed); ``qid`` and
``aid`` are non-empty strings (numbers are accepted and converted). Without ``aid``, candidates are numbered
``"0"``, ``"1"``, ... within their question in file order. Rows of a question need not be contiguous, but all
carry the same question text. Questions and answers may be empty strings. Nothing is dropped: filter a split
with :meth:`~keras_match.datasets.base.Split.filter` if your evaluation needs it.
"""

from __future__ import annotations

from pathlib import Path

from keras_match.datasets.base import MatchingDataset
from keras_match.datasets.reader import FORMATS, file_format, read_split

SPLITS = ("train", "dev", "test")
COLUMNS = {name: name for name in ("qid", "aid", "question", "answer", "label")}


def load_files(train=None, dev=None, test=None, name: str = "custom") -> MatchingDataset:
    """Load user split files.

    Args:
        train: path of the training file, or ``None``.
        dev: path of the development file, or ``None``.
        test: path of the test file, or ``None``.
        name: the dataset's name.

    Returns:
        A dataset with one split per file given (``"train"``, ``"dev"``, ``"test"``); ``metadata["files"]``
        maps split names to paths.

    Raises:
        ValueError: no file given, or a file name is neither ``.tsv`` nor ``.jsonl`` (optionally ``.gz``).
        FileNotFoundError: a file does not exist.
        keras_match.datasets.base.DataFormatError: a file is malformed or has no data row.
    """
    files = {split: Path(path) for split, path in zip(SPLITS, (train, dev, test)) if path is not None}
    if not files:
        raise ValueError("load_files() needs at least one of train, dev, test")
    for path in files.values():
        file_format(path)
        if not path.is_file():
            raise FileNotFoundError(f"data file not found: {path}")
    splits = {split: read_split(split, path, COLUMNS, optional=("aid",)) for split, path in files.items()}
    return MatchingDataset(name, splits, metadata={"files": {split: str(path) for split, path in files.items()}})


def find_split_files(directory) -> dict[str, Path]:
    """The split files of a directory: ``train``, ``dev`` and ``test`` with a ``.tsv`` or ``.jsonl`` suffix,
    optionally followed by ``.gz``.

    Args:
        directory: the directory.

    Returns:
        Split name -> file, for the splits found.

    Raises:
        FileNotFoundError: none of the split files exists.
        ValueError: a split has several files (e.g. ``train.tsv`` and ``train.jsonl``).
    """
    directory = Path(directory)
    found = {}
    for split in SPLITS:
        matches = [
            directory / f"{split}.{fmt}{gz}"
            for fmt in FORMATS
            for gz in ("", ".gz")
            if (directory / f"{split}.{fmt}{gz}").is_file()
        ]
        if len(matches) > 1:
            raise ValueError(f"{directory}: several files for split {split!r}: {[m.name for m in matches]}")
        if matches:
            found[split] = matches[0]
    if not found:
        raise FileNotFoundError(
            f"no split files in {directory}: expected some of "
            f"{[f'{s}.{f}[.gz]' for s in SPLITS for f in FORMATS]}"
        )
    return found


def load_path(path, name: str | None = None) -> MatchingDataset:
    """Load a directory of split files (see :func:`find_split_files`) or a single file as the ``"test"`` split.

    Args:
        path: a directory or a file.
        name: the dataset's name; default the directory's or file's name.

    Returns:
        The dataset (see :func:`load_files`).

    Raises:
        FileNotFoundError: ``path`` does not exist or a directory holds no split file.
        ValueError: unsupported file name, or several files for one split.
        keras_match.datasets.base.DataFormatError: a file is malformed.
    """
    path = Path(path)
    if path.is_dir():
        return load_files(**find_split_files(path), name=name or path.resolve().name)
    if path.is_file():
        return load_files(test=path, name=name or path.name)
    raise FileNotFoundError(f"no such file or directory: {path}")
