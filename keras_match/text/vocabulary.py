"""Vocabularies and token ids: `TextEncoder` (its embedding matrix from GloVe:
`keras_match.text.vectors.load_embeddings`).

Ids
---
A :class:`TextEncoder` maps tokens to ``int32`` ids: ``0`` = padding (:data:`PAD_ID`), ``1`` = out of
vocabulary (:data:`OOV_ID`), vocabulary words from ``2`` in vocabulary order. Its lookup table is a
``tf.lookup.StaticHashTable`` initialized from the vocabulary *file* (one token per line), so exporting a
function that calls :meth:`TextEncoder.encode` copies the file into the SavedModel's ``assets/``.

Tokens come from `keras_match.text.tokenizer.tokenize` (the rule is described there).
"""


from __future__ import annotations

import collections
import os
import re
import shutil
import tempfile
import warnings
import weakref
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf

from keras_match.text.tokenizer import _NUM_RESERVED, OOV_ID, PAD_ID, RESERVED_TOKENS, tokenize

__all__ = [
    "TextEncoder",
    "with_vector_words",
    "vector_words_start",
]


# --------------------------------------------------------------------------------------------------------------
# Vocabulary validation and files
# --------------------------------------------------------------------------------------------------------------


_WHITESPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
"""A character no vocabulary word may hold: whitespace (`\\s` is `str.isspace`) or a control character (Unicode
category Cc, exactly U+0000-U+001F and U+007F-U+009F); one regex search a word, where a loop over the characters
made checking GloVe's 400,000 words take 3.5 s."""


def _validate_vocabulary(tokens: Sequence, source: str = "vocabulary") -> list[str]:
    """Checks a vocabulary list; returns it as a list of ``str``. Errors name the offending index."""

    def where(i):
        if source == "vocabulary":
            return f"vocabulary[{i}]"
        return f"{source}, line {i + 1} (vocabulary[{i}])"

    words = []
    first_index = {}
    for i, token in enumerate(tokens):
        if isinstance(token, bytes):
            token = token.decode("utf-8")
        if not isinstance(token, str):
            raise ValueError(f"{where(i)} is {type(token).__name__}, not str")
        if not token:
            raise ValueError(f"{where(i)} is an empty string")
        if token in RESERVED_TOKENS:
            raise ValueError(f"{where(i)} is the reserved token {token!r} (ids {PAD_ID} and {OOV_ID} are "
                             f"reserved; leave them out of the vocabulary)")
        found = _WHITESPACE_OR_CONTROL.search(token)
        if found is not None:
            bad = found.group()
            raise ValueError(f"{where(i)} = {token!r} contains whitespace or a control character ({bad!r})"
                             + (" (CRLF line endings?)" if bad == "\r" else ""))
        if token in first_index:
            raise ValueError(f"{where(i)} = {token!r} duplicates {where(first_index[token])}")
        first_index[token] = i
        words.append(token)
    return words


def write_lines(lines: Sequence[str], path) -> str:
    """Writes `lines` to `path` (UTF-8, each ended by `"\\n"`, the layout of every vocabulary file here and of
    `vocab.txt`); returns `path` as a string."""
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
    return path


def read_lines(path) -> list[str]:
    """The lines of a vocabulary file (UTF-8, `"\\n"` line ends, a last empty line dropped), unchecked.

    Raises:
        ValueError: a line is not valid UTF-8 (the file and line are named).
    """
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    decoded = []
    for i, line in enumerate(lines):
        try:
            decoded.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}, line {i + 1}: not valid UTF-8 ({e})") from None
    return decoded


def _read_vocabulary(path) -> list[str]:
    return _validate_vocabulary(read_lines(path), source=str(path))


def _make_table(path: str) -> tf.lookup.StaticHashTable:
    initializer = tf.lookup.TextFileInitializer(
        filename=path,
        key_dtype=tf.string,
        key_index=tf.lookup.TextFileIndex.WHOLE_LINE,
        value_dtype=tf.int64,
        value_index=tf.lookup.TextFileIndex.LINE_NUMBER,
    )
    return tf.lookup.StaticHashTable(initializer, default_value=-1)


# --------------------------------------------------------------------------------------------------------------
# TextEncoder
# --------------------------------------------------------------------------------------------------------------


class VocabularyFile:
    """What a token-id encoder read from a vocabulary file has (`TextEncoder`, `keras_match.text.WordPieceEncoder`):
    the file (`_path`), its token -> id lookup table (`_table`) and `vocab_size`."""

    @property
    def table(self) -> tf.lookup.StaticHashTable:
        """The token -> id lookup table read from `vocabulary_path`; an export tracks it
        (``ExportArchive.track(table)``), which puts the file among the SavedModel's assets."""
        return self._table

    @property
    def vocabulary_path(self) -> str:
        """The file the table is initialized from (the encoder's own copy)."""
        return self._path

    def __len__(self) -> int:
        return self.vocab_size


class TextEncoder(VocabularyFile):
    """Maps texts to fixed-length ``int32`` token-id matrices with a file-backed lookup table.

    Ids: ``0`` = padding, ``1`` = out-of-vocabulary, ``vocabulary[i]`` -> ``i + 2``; ``vocab_size`` is
    ``len(vocabulary) + 2`` (the input dimension of an ``Embedding`` layer).

    Where the vocabulary lives: the lookup table (:attr:`table`, a ``tf.lookup.StaticHashTable`` initialized
    with ``tf.lookup.TextFileInitializer``: key = whole line, value = line number) is always read from a file,
    :attr:`vocabulary_path`, so that a SavedModel exported from a function calling :meth:`encode` carries the
    vocabulary as an asset (``assets/<file name>``) and no longer needs the original file once saved.

    * ``TextEncoder(words)`` (and :meth:`build`) writes ``words`` to a file in a private temporary directory
      owned by the encoder; it is deleted when both the encoder and its table have been garbage-collected
      (so export before dropping them). Use :meth:`save_vocabulary` to keep a copy.
    * :meth:`from_file` uses the given file in place (no copy): keep it there until the encoder is exported.

    Models must accept all-padding rows: ``encode([""], n)`` is a row of ``n`` zeros (mask padding, and make
    pooling over zero valid positions return zeros rather than NaN).

    Args:
        vocabulary: the words, most useful first (order fixes the ids). Each must be a non-empty ``str`` without
            whitespace or control characters, unique, and not one of :data:`RESERVED_TOKENS`. With
            ``lowercase=True`` upper-case words can never match and trigger a warning.
        lowercase: lower-case texts before tokenizing (match GloVe 6B). Stored in :meth:`get_config`.

    Attributes:
        token_counts: ``collections.Counter`` of every token of the training texts (kept or not) when the encoder
            was made by :meth:`build`, else ``None``; not saved with the vocabulary.

    Raises:
        ValueError: the vocabulary is empty or a word is invalid (the message names its index).
        TypeError: ``vocabulary`` is a single string.

    Examples:
        >>> encoder = TextEncoder(["the", "cat", "sat"])
        >>> encoder.vocab_size
        5
        >>> encoder.encode(["The cat sat on the mat", ""], max_length=4).numpy().tolist()
        [[2, 3, 4, 1], [0, 0, 0, 0]]
    """

    def __init__(self, vocabulary: Sequence[str], lowercase: bool = True, *, _path: str | None = None):
        if isinstance(vocabulary, (str, bytes)):
            raise TypeError("vocabulary must be a sequence of words, not a single string; "
                            "use TextEncoder.from_file(path) to read a vocabulary file")
        if _path is None:
            words = _validate_vocabulary(list(vocabulary))
        else:
            words = list(vocabulary)  # validated by from_file
        if not words:
            raise ValueError("the vocabulary is empty")
        self._vocabulary = words
        self._lowercase = bool(lowercase)
        self.token_counts: collections.Counter | None = None
        self.num_training_words: int | None = None
        if self._lowercase:
            upper = next((i for i, w in enumerate(words) if w != w.lower()), None)
            if upper is not None:
                warnings.warn(f"vocabulary[{upper}] = {words[upper]!r} is not lower-case but lowercase=True: "
                              "such words never match", stacklevel=2)
        if _path is None:
            directory = tempfile.mkdtemp(prefix="keras_match_vocab_")
            _path = os.path.join(directory, "vocabulary.txt")
            write_lines(words, _path)
            owned_directory = directory
        else:
            owned_directory = None
        self._path = os.fspath(_path)
        self._table = _make_table(self._path)
        if owned_directory is not None:
            # The file must outlive the table (it is copied when the table is exported): remove it with the table.
            weakref.finalize(self._table, shutil.rmtree, owned_directory, ignore_errors=True)

    # ---- construction ----------------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path, lowercase: bool = True) -> "TextEncoder":
        """Loads a vocabulary file: UTF-8, one word per line, ``"\\n"`` line ends, ids from 2 in line order.

        The table reads the file in place; keep it until the encoder has been exported.

        Args:
            path: the vocabulary file (as written by :meth:`save_vocabulary`).
            lowercase: see :class:`TextEncoder`.

        Returns:
            A :class:`TextEncoder`.

        Raises:
            ValueError: the file is empty, not UTF-8, or has an invalid word (message: file, line, index).
            FileNotFoundError: ``path`` does not exist.
        """
        path = os.fspath(path)
        words = _read_vocabulary(path)
        return cls(words, lowercase=lowercase, _path=os.path.abspath(path))

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        min_count: int = 1,
        max_tokens: int | None = None,
        lowercase: bool = True,
        batch_size: int = 4096,
        extra_words: Iterable[str] | None = None,
    ) -> "TextEncoder":
        """Builds a vocabulary from training texts with the encoder's own tokenizer.

        Words are ordered by count (descending), then by token (ascending code points), which makes the ids
        deterministic; words with ``count >= min_count`` are kept, at most ``max_tokens`` of them. Every text is
        counted as often as it appears (pass distinct texts to avoid weighting repeated questions). The counts of
        all tokens are kept in :attr:`token_counts` (used for ``token_coverage`` by
        `keras_match.text.vectors.load_embeddings`).

        ``extra_words`` (the words of a pretrained vector file, say) follow the training words in their given
        order; an extra word is kept only if the tokenizer can produce it (it tokenizes to exactly itself, so
        ``"New"`` or ``"hello world"`` are left out of a lower-casing encoder) and is not already in the vocabulary.

        Args:
            texts: iterable of ``str`` (list, generator, numpy array).
            min_count: minimum count of a kept word, ``>= 1``.
            max_tokens: maximum number of words (reserved ids not included), ``None`` for no limit.
            lowercase: see :class:`TextEncoder`.
            batch_size: texts tokenized per eager call.
            extra_words: words appended after the training words (see above); not counted in ``token_counts``.

        Returns:
            A :class:`TextEncoder` backed by a temporary vocabulary file; :attr:`num_training_words` says how many
            of its words came from the texts.

        Raises:
            ValueError: ``min_count < 1``, ``max_tokens < 1``, or no word is left.
            TypeError: an item of ``texts`` is not a string.

        Examples:
            >>> enc = TextEncoder.build(["a b b", "c b a"], min_count=2)
            >>> enc.vocabulary
            ['b', 'a']
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be an iterable of texts, not a single string")
        if int(min_count) != min_count or min_count < 1:
            raise ValueError(f"min_count must be an integer >= 1, got {min_count!r}")
        if max_tokens is not None and (int(max_tokens) != max_tokens or max_tokens < 1):
            raise ValueError(f"max_tokens must be None or an integer >= 1, got {max_tokens!r}")
        counts = _count_tokens(texts, lowercase=lowercase, batch_size=batch_size)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        words = [word for word, count in ranked if count >= min_count]
        if max_tokens is not None:
            words = words[: int(max_tokens)]
        if not words:
            raise ValueError(f"no token occurs at least min_count={min_count} times in the texts")
        num_training_words = len(words)
        if extra_words is not None:
            words = words + _producible_words(extra_words, set(words), lowercase)
        encoder = cls(words, lowercase=lowercase)
        encoder.token_counts = counts
        encoder.num_training_words = num_training_words
        return encoder

    def get_config(self) -> dict:
        """Returns the settings that are not in the vocabulary file: ``{"lowercase": bool}``."""
        return {"lowercase": self._lowercase}

    @classmethod
    def from_config(cls, config: dict, vocabulary_path) -> "TextEncoder":
        """Rebuilds an encoder from :meth:`get_config` output and a vocabulary file.

        Args:
            config: a dict from :meth:`get_config`.
            vocabulary_path: the file written by :meth:`save_vocabulary`.

        Returns:
            A :class:`TextEncoder` equal to the saved one (same ids).
        """
        return cls.from_file(vocabulary_path, **config)

    def save_vocabulary(self, path) -> str:
        """Writes the vocabulary: UTF-8, one word per line, each line ended by ``"\\n"``.

        Args:
            path: destination file (parent directory must exist).

        Returns:
            ``path`` as a string.
        """
        return write_lines(self._vocabulary, path)

    # ---- properties -------------------------------------------------------------------------------------------

    @property
    def vocabulary(self) -> list[str]:
        """The words (without the reserved tokens); ``vocabulary[i]`` has id ``i + 2``."""
        return list(self._vocabulary)

    @property
    def vocab_size(self) -> int:
        """Number of ids: ``len(vocabulary) + 2``."""
        return len(self._vocabulary) + _NUM_RESERVED

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    def __repr__(self) -> str:
        return (f"TextEncoder(vocab_size={self.vocab_size}, lowercase={self._lowercase}, "
                f"vocabulary_path={self._path!r})")

    # ---- encoding ---------------------------------------------------------------------------------------------

    def tokenize(self, texts) -> tf.RaggedTensor:
        """Tokenizes with this encoder's settings; see :func:`tokenize`.

        Args:
            texts: ``tf.string`` tensor ``[batch]``, list of ``str`` or 1-D numpy array of ``str``.

        Returns:
            ``tf.RaggedTensor`` of ``tf.string``, ``[batch, (tokens)]``.
        """
        return tokenize(texts, lowercase=self._lowercase)

    def lookup(self, tokens):
        """Maps string tokens (tensor or ragged tensor of any shape) to ``int32`` ids (OOV -> 1, no padding)."""
        if isinstance(tokens, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.lookup, tokens)
        line = self._table.lookup(tf.convert_to_tensor(tokens, dtype=tf.string))
        ids = tf.where(line < 0, tf.constant(OOV_ID, tf.int64), line + _NUM_RESERVED)
        return tf.cast(ids, tf.int32)

    def encode(self, texts, max_length: int) -> tf.Tensor:
        """Tokenizes and maps texts to a padded/truncated id matrix.

        Usable eagerly, in ``tf.data`` ``map`` and in ``tf.function`` (e.g. with
        ``input_signature=[tf.TensorSpec([None], tf.string)]``); ``max_length`` must be a Python int.

        Args:
            texts: ``tf.string`` tensor ``[batch]``, list of ``str`` or 1-D numpy array of ``str``.
            max_length: number of ids per row, ``>= 1``. Longer texts keep their first ``max_length`` tokens;
                shorter ones are padded with ``0`` at the end.

        Returns:
            ``tf.Tensor`` of dtype ``int32``, shape ``[batch, max_length]``. Unknown tokens are ``1``; an empty
            or blank text gives an all-zero row (models must handle rows that are all padding).

        Raises:
            ValueError: ``max_length < 1`` (or not an integer), or ``texts`` not one-dimensional.
            TypeError: see :func:`tokenize`.

        Examples:
            >>> TextEncoder(["cat"]).encode(["a cat", "cat cat cat"], max_length=2).numpy().tolist()
            [[1, 2], [2, 2]]
        """
        if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or max_length < 1:
            raise ValueError(f"max_length must be an integer >= 1, got {max_length!r}")
        max_length = int(max_length)
        ids = self.lookup(self.tokenize(texts))
        ids = ids[:, :max_length]
        return ids.to_tensor(default_value=PAD_ID, shape=[None, max_length])


_PRODUCIBLE_CACHE: collections.OrderedDict = collections.OrderedDict()
_PRODUCIBLE_CACHE_SIZE = 4
"""The producible words of the last few word lists (`_producible_words`), by their words and `lowercase`: a
frozen-vector run tokenizes the vectors' 400,000 words once a process, not at every `TextEncoder.build` or
trained-preset load (5-6 s each on this project's 2-core machine)."""


def _tokenized_alone(words: Sequence[str], lowercase: bool, batch_size: int) -> list[str]:
    """The words (distinct, none reserved) that the tokenizer produces as one token, unchanged, in order."""
    kept = []
    for start in range(0, len(words), batch_size):
        batch = words[start:start + batch_size]
        tokens = tokenize(batch, lowercase=lowercase)
        lengths, starts = tokens.row_lengths().numpy(), tokens.row_starts().numpy()
        flat = tokens.flat_values.numpy()
        kept.extend(word for word, n, start in zip(batch, lengths, starts)
                    if n == 1 and flat[start].decode("utf-8") == word)
    return kept


def _producible_words(words: Iterable[str], known: set, lowercase: bool, batch_size: int = 65536) -> list[str]:
    """The words, in order and once each, that the tokenizer produces as one token and `known` lacks.

    The producible words of a whole list do not depend on `known`, so they are computed once per list and
    `lowercase` (kept for the last `_PRODUCIBLE_CACHE_SIZE` lists, compared word for word) and `known` is taken
    out afterwards: the same words in the same order as testing only the words `known` lacks."""
    words = tuple(words)
    try:
        key = (bool(lowercase), len(words), hash(words))
    except TypeError:  # an unhashable item (skipped below, as every item that is not a text): no caching
        key = None
    cached = _PRODUCIBLE_CACHE.get(key) if key is not None else None
    if cached is None or cached[0] != words:
        seen, candidates = set(), []
        for word in words:
            if isinstance(word, str) and word and word not in seen and word not in RESERVED_TOKENS:
                seen.add(word)
                candidates.append(word)
        cached = (words, tuple(_tokenized_alone(candidates, lowercase, batch_size)))
        if key is not None:
            _PRODUCIBLE_CACHE[key] = cached
            while len(_PRODUCIBLE_CACHE) > _PRODUCIBLE_CACHE_SIZE:
                _PRODUCIBLE_CACHE.popitem(last=False)
    elif key is not None:
        _PRODUCIBLE_CACHE.move_to_end(key)
    return [word for word in cached[1] if word not in known]


def with_vector_words(words: Sequence[str], vector_words: Iterable[str], lowercase: bool = True) -> list[str]:
    """A vocabulary's words followed by the vector words `TextEncoder.build(..., extra_words=vector_words)` appends
    to them: those the tokenizer produces as one token and `words` lacks, in the vectors' order, once each.

    Args:
        words: the leading words (a vocabulary's training words).
        vector_words: the pretrained vectors' words in their file's order (`keras_match.text.vectors.WordVectors.words`,
            or its first `max_vocabulary`).
        lowercase: the encoder's lower-casing (an upper-case word is not producible by a lower-casing encoder).

    Returns:
        `list(words)` followed by the appended vector words.
    """
    words = list(words)
    return words + _producible_words(vector_words, set(words), lowercase)


def vector_words_start(vocabulary: Sequence[str], vector_words: Iterable[str], lowercase: bool = True) -> int | None:
    """Where the vector words of a vocabulary begin: the least `k >= 1` with
    `with_vector_words(vocabulary[:k], vector_words, lowercase) == vocabulary`, so that a vocabulary of 400,000
    GloVe words after a few thousand training words is kept as those few thousand (trained presets,
    `keras_match.artifacts.presets`).

    Args:
        vocabulary: the words of an encoder (`TextEncoder.vocabulary`).
        vector_words, lowercase: as for `with_vector_words`.

    Returns:
        `k`, or None when the vocabulary does not end with the vector words so appended (made without them, or
        from other vectors).
    """
    vocabulary = list(vocabulary)
    producible = _producible_words(vector_words, set(), lowercase)
    rank = {word: i for i, word in enumerate(producible)}
    # the appended words follow the vectors' order: walk back while the words before keep increasing in it
    start = len(vocabulary)
    while start > 1 and vocabulary[start - 1] in rank and \
            (start == len(vocabulary) or rank[vocabulary[start - 1]] < rank[vocabulary[start]]):
        start -= 1
    leading = set(vocabulary[:start])
    # every producible word not among the leading ones must follow them, in order (else the tail is another list)
    if vocabulary[start:] != [word for word in producible if word not in leading]:
        return None
    return start


def _count_tokens(texts: Iterable[str], lowercase: bool = True, batch_size: int = 4096) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    batch_size = max(1, int(batch_size))
    if isinstance(texts, np.ndarray):
        texts = texts.tolist()

    def flush(batch):
        tokens = tokenize(batch, lowercase=lowercase).flat_values.numpy()
        counts.update(tokens.tolist())

    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) >= batch_size:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    return collections.Counter({token.decode("utf-8"): n for token, n in counts.items()})


# --------------------------------------------------------------------------------------------------------------
# GloVe
# --------------------------------------------------------------------------------------------------------------
