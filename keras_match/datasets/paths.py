"""Where benchmark data lives: the data directory (argument, then `$KERAS_MATCH_DATA`, then the user cache).

The data directory has the layout of the project's shared data folder (`keras_match.datasets.sources` lists every
file; a build from the public originals writes the plain form of the files the data folder gzip'd)::

    <data_dir>/trecqa/tsv/{train-all.tsv[.gz], train.tsv, clean-dev.tsv, ...}
    <data_dir>/wikiqa/WikiQA-{train,dev,test}.tsv.gz, WikiQA-*.ref
    <data_dir>/semeval2016_task3_cqa/subtaskA/{train-part2,dev}.tsv
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_DATA = "KERAS_MATCH_DATA"
"""Environment variable naming the data directory."""

ENV_CACHE = "KERAS_MATCH_CACHE"
"""Environment variable naming keras-match's cache root; the data cache is its ``data`` subfolder."""

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
        The resolved directory (it may not exist yet: a download makes it).

    Raises:
        ValueError: the directory, or the folder it would be made in, is a file (a usage error: the message names
            it and where it came from), where every file of every benchmark would otherwise be reported missing.
    """
    if data_dir is not None and str(data_dir) != "":
        root, given = Path(data_dir).expanduser(), "the data folder (--data-dir)"
    elif env_value(ENV_DATA):
        root, given = Path(env_value(ENV_DATA)).expanduser(), f"the data folder (${ENV_DATA})"
    else:
        root, given = cache_dir(), "the data cache" + (f" (${ENV_CACHE})" if env_value(ENV_CACHE) else "")
    existing = next((folder for folder in (root, *root.parents) if folder.exists()), root)
    if existing.exists() and not existing.is_dir():
        where = f"{root} is a file" if existing == root else f"{root} cannot be made: {existing} is a file"
        raise ValueError(f"{given} {where}, not a folder: give the folder that holds the benchmarks (or a new one to "
                         "fetch them into)")
    return root


def file_identity(path) -> tuple:
    """What tells a file's content apart without reading it, for this process's caches (a digest, a parsed split):
    `(resolved path, inode, size, modification time in ns)`; a rewritten file gets another.

    Raises:
        OSError: the file cannot be stat'ed.
    """
    resolved = os.path.realpath(path)
    stat = os.stat(resolved)
    return resolved, stat.st_ino, stat.st_size, stat.st_mtime_ns
