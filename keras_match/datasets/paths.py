"""Where benchmark data lives: data directory resolution and missing-file errors.

The data directory has the layout of the project's shared data folder::

    <data_dir>/trecqa/tsv/{train-all.tsv.gz, train.tsv, clean-dev.tsv, ...}
    <data_dir>/wikiqa/WikiQA-{train,dev,test}.tsv.gz, WikiQA-*.ref
    <data_dir>/semeval2016_task3_cqa/subtaskA/{train-part2,dev}.tsv
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

ENV_DATA = "KERAS_MATCH_DATA"
"""Environment variable naming the data directory."""

ENV_CACHE = "KERAS_MATCH_CACHE"
"""Environment variable naming keras-match's cache root; the data cache is its ``data`` subfolder."""

ENV_DATA_URL = "KERAS_MATCH_DATA_URL"
"""Environment variable naming a base URL that mirrors the data directory (see :mod:`.download`)."""


def env_value(name: str) -> str | None:
    """The value of an environment variable.

    Args:
        name: the variable.

    Returns:
        Its value without surrounding blanks, or ``None`` when unset or blank.
    """
    value = os.environ.get(name, "").strip()
    return value or None


def cache_dir() -> Path:
    """The user data cache: ``$KERAS_MATCH_CACHE/data``, else ``~/.cache/keras_match/data``.

    Returns:
        The directory (it may not exist yet).
    """
    root = env_value(ENV_CACHE)
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "keras_match"
    return base / "data"


def resolve_data_dir(data_dir=None) -> Path:
    """The data directory to read from (and download into).

    Precedence: the ``data_dir`` argument, then the ``KERAS_MATCH_DATA`` environment variable, then the user
    cache (:func:`cache_dir`: ``$KERAS_MATCH_CACHE/data``, else ``~/.cache/keras_match/data``). Empty
    environment variables count as unset.

    Args:
        data_dir: an explicit directory, or ``None``.

    Returns:
        The resolved directory (not checked for existence).
    """
    if data_dir is not None and str(data_dir) != "":
        return Path(data_dir).expanduser()
    env = env_value(ENV_DATA)
    if env:
        return Path(env).expanduser()
    return cache_dir()


def require_file(data_dir: Path, relative: str, dataset: str) -> Path:
    """The path of a data file, which must exist.

    Args:
        data_dir: the resolved data directory.
        relative: the file's path relative to ``data_dir`` (``/``-separated).
        dataset: the dataset name, for the hint in the error message.

    Returns:
        ``data_dir / relative``.

    Raises:
        FileNotFoundError: the file does not exist; the message names it and says how to provide the data.
    """
    path = Path(data_dir) / relative
    if not path.is_file():
        raise FileNotFoundError(
            errno.ENOENT,
            f"{dataset} data file not found. Provide the data directory (it must contain {relative}) with the "
            f"data_dir argument or the {ENV_DATA} environment variable, or fetch the files into it with "
            f"keras_match.datasets.load({dataset!r}, download=True) (mirror URL: ${ENV_DATA_URL})",
            str(path),
        )
    return path
