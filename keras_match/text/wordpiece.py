r"""WordPiece token ids for a pretrained BERT-family encoder, in TensorFlow ops: `WordPieceEncoder`.

A transformer input encoder (`keras_match.encoders.TransformerEncoder`, all-MiniLM-L6-v2 for `"minilm-l6"`) reads
the ids of the WordPiece vocabulary it was trained with, made the way its own tokenizer makes them.
`WordPieceEncoder` makes those ids from raw text with TensorFlow and tensorflow-text ops only, so the same object
tokenizes eagerly, in `tf.data` `map` functions, in `tf.function` graphs and inside an exported SavedModel that a
process importing only `tensorflow` and `tensorflow_text` (TF Serving) runs.

The rule (Hugging Face's `BertNormalizer` + `BertPreTokenizer` + `WordPiece`, configured by the encoder's
`tokenizer_config.json`; all-MiniLM-L6-v2: `do_lower_case` true, `strip_accents` null, `tokenize_chinese_chars`
true):

1. invalid UTF-8 bytes become U+FFFD;
2. clean: U+0000, U+FFFD and every character of Unicode category C (control, format, private use: `\x0b`,
   `\x0c`, U+0085, soft hyphen, zero-width space, BOM ...) except tab, newline and carriage return are deleted,
   without a space (`"a\x0bb"` is one word, `ab`);
3. strip accents (when `strip_accents`, by default whenever `lowercase`): Unicode NFD, then every non-spacing mark
   (category Mn) deleted (`"Zürich"` -> `"Zurich"`);
4. lower-case (`lowercase`): Unicode, character by character (a capital sigma becomes `σ` wherever it stands);
5. split into words on whitespace (tab, newline, carriage return and categories Zs, Zl, Zp), and make every
   punctuation character a word of its own: ASCII punctuation and symbols (`!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~`)
   and Unicode categories Pc, Pd, Pe, Pf, Pi, Po, Ps; with `split_cjk`, every CJK ideograph a word too
   (`CJK_RANGES`);
6. a word of more than `max_chars_per_word` (100) characters becomes `[UNK]`; any other word becomes its greedy
   longest-match-first WordPiece pieces (`"teapot"` -> `tea ##pot`), or `[UNK]` when it cannot be spelled with
   the vocabulary;
7. `encode` adds `[CLS]` before and `[SEP]` after the pieces, dropping the last pieces so that the whole fits
   `max_length`, and pads with 0 (`[PAD]`).

Agreement with the reference (Hugging Face `tokenizers`, `Tokenizer.from_file(<folder>/tokenizer.json)`, which
sentence-transformers uses): the ids are identical on every one of the 75,890 distinct question and answer texts
of TrecQA (clean, all splits) and WikiQA (all splits), untruncated and cut to 2, 16 and 64 ids, and the words are
identical for every code point of Latin, Greek, Cyrillic, Hebrew, the general punctuation and symbols, CJK, kana,
Hangul, the full-width forms and the emoji (`tests/test_wordpiece.py`). Known differences, none of which occurs in
those texts:

- a text holding the literal strings `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` or `[MASK]`: the reference reads them as
  the special tokens (a user's text could then fake a segment boundary); here they are text (`[`, `sep`, `]`);
- invalid UTF-8: the reference takes only valid Unicode strings; here the bytes are replaced by U+FFFD first (and
  U+FFFD is deleted by step 2), which equals the reference fed `bytes.decode("utf-8", "replace")`;
- characters that Unicode added or re-categorised after the reference's character tables (its mark,
  punctuation and control classes stop at Unicode 8 or 9; RE2 and ICU know newer versions): 684 code points in
  146 ranges, none below U+0600, found by comparing the words of `"A" + c + "b"` for every code point (Quranic
  annotation marks U+08CA-U+08E2, Latin Extended-D U+A7C0-U+A7DC, Supplemental Punctuation U+2E43-U+2E5D, recent
  Indic signs, scripts of the supplementary planes): a mark deleted here is kept there, a punctuation mark split
  here is not there, a capital lower-cased here is not there.

keras-hub's `BertTokenizer` was measured and not used: it case-folds with NFKC, as tensorflow-text's
`BertTokenizer(lower_case=True)` does (`"ﬁ"` -> `fi`, `"²"` -> `2`, full-width letters -> ASCII, `"ß"` -> `ss`,
where the reference only lower-cases), which changes the ids of 381 of the 75,890 texts (99.50% agree).

The vocabulary lives in a file (UTF-8, one token per line, ids = line numbers from 0), which
:meth:`WordPieceEncoder.save_vocabulary` writes byte for byte as the encoder's `vocab.txt` (so its sha256 is
the pinned one). The WordPiece model itself is compiled into the graph as a constant (tensorflow-text's
`FastWordpieceTokenizer`, 1.3 MB for 30,522 tokens): tokenizing needs no file. The encoder also holds a lookup
table read from its own copy of the vocabulary file, :attr:`WordPieceEncoder.table`; an export tracks it, so the
SavedModel carries the vocabulary as `assets/vocabulary.txt` for clients that make ids themselves (ONNX).

Reference:
    Wu et al., Google's Neural Machine Translation System, 2016 (WordPiece); Devlin et al., BERT, NAACL 2019
    (the basic tokenizer); Song et al., Fast WordPiece Tokenization, EMNLP 2021 (`FastWordpieceTokenizer`).
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re
import shutil
import tempfile
import weakref

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_match.text.tokenizer import as_string_batch
from keras_match.text.vocabulary import VocabularyFile, read_lines, write_lines

__all__ = ["WordPieceEncoder", "WORDS", "tokenizer_names", "check_tokenizer", "VOCABULARY_FILE", "SUFFIX_INDICATOR", "MAX_CHARS_PER_WORD", "CJK_RANGES",
           "pretrained_vocab_size"]

VOCABULARY_FILE = "vocabulary.txt"
"""The name of the encoder's own copy of its vocabulary (and of the SavedModel asset)."""

SUFFIX_INDICATOR = "##"
"""What a piece that continues a word starts with (`tea ##pot`)."""

MAX_CHARS_PER_WORD = 100
"""Words longer than this many characters become `[UNK]` (the reference's `max_input_chars_per_word`)."""

CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
"""The code point ranges of the CJK ideographs that become words of their own (BERT's "Chinese characters": the
CJK Unified Ideographs block, extensions A-E and the compatibility ideographs). As the reference has them:
extension E starts at U+2B920, not U+2B820 (probed: U+2B820-U+2B91F stay inside their word there)."""

_CJK = "".join(rf"\x{{{low:X}}}-\x{{{high:X}}}" for low, high in CJK_RANGES)
_PUNCTUATION = r"!-/:-@\[-`{-~\p{P}"  # ASCII punctuation and symbols, Unicode punctuation (P*)
_WHITESPACE = r"[\t\n\r\p{Z}]+"
_DELETED = r"[\x00\x{FFFD}]|[^\PC\t\n\r]"  # NUL, U+FFFD, category C but tab, newline and carriage return

_TOKENIZER_CLASSES = ("BertTokenizer", "BertTokenizerFast")
"""The `tokenizer_class` values of a `tokenizer_config.json` this rule reproduces."""


# --------------------------------------------------------------------------------------------------------------
# The vocabulary file
# --------------------------------------------------------------------------------------------------------------


WORDS = "words"
"""The word tokenizer (`keras_match.text.tokenize` and the run's own vocabulary), the `tokenizer` setting's
default."""


def tokenizer_names() -> list:
    """The valid `tokenizer` values: `"words"`, then every pretrained encoder's name (WordPiece ids)."""
    from keras_match.encoders.pretrained import names

    return [WORDS, *names()]


def check_tokenizer(name) -> str:
    """`name` if it is a valid `tokenizer` value.

    Raises:
        ValueError: it is not; one line listing the valid ones.
    """
    if name == WORDS:  # the word tokenizer needs no look-up of the pretrained encoders
        return name
    valid = tokenizer_names()
    if not isinstance(name, str) or name not in valid:
        raise ValueError(f"unknown tokenizer {name!r}; valid: {valid} ({WORDS!r}: word tokens and the run's own "
                         "vocabulary; a pretrained encoder's name: its WordPiece ids)")
    return name


def _check_tokens(tokens, source) -> list[str]:
    """The tokens as a list of `str`, checked: non-empty, no whitespace or control characters, each once."""

    def where(i):
        return f"{source}, line {i + 1}" if source != "vocabulary" else f"vocabulary[{i}]"

    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{source} is empty")
    first = {}
    for i, token in enumerate(tokens):
        if isinstance(token, bytes):
            token = tokens[i] = token.decode("utf-8")
        if not isinstance(token, str):
            raise ValueError(f"{where(i)} is {type(token).__name__}, not str")
        if not token:
            raise ValueError(f"{where(i)} is empty")
        bad = re.search(r"[\s\x00-\x1f\x7f-\x9f]", token)
        if bad is not None:
            raise ValueError(f"{where(i)} = {token!r} contains whitespace or a control character "
                             f"({bad.group()!r})" + (" (CRLF line endings?)" if bad.group() == "\r" else ""))
        if token in first:
            raise ValueError(f"{where(i)} = {token!r} duplicates line {first[token] + 1}")
        first[token] = i
    return tokens


def _read_tokens(path) -> list[str]:
    """The tokens of a vocabulary file (UTF-8, one a line, `\\n` line ends), checked."""
    return _check_tokens(read_lines(path), str(path))


def _special_token(config, key, default):
    """A special token of a `tokenizer_config.json`: a string, or `{"content": ...}` in newer files."""
    value = config.get(key, default)
    return value.get("content", default) if isinstance(value, dict) else value


# --------------------------------------------------------------------------------------------------------------
# WordPieceEncoder
# --------------------------------------------------------------------------------------------------------------


class WordPieceEncoder(VocabularyFile):
    """Maps texts to fixed-length int32 WordPiece-id matrices `[CLS] pieces [SEP] 0 ...` in TensorFlow ops.

    The rule, and how it compares with the reference tokenizer, is in the module docstring. Ids are the
    vocabulary's line numbers: for all-MiniLM-L6-v2 (BERT uncased) `[PAD]` 0, `[UNK]` 100, `[CLS]` 101,
    `[SEP]` 102, `vocab_size` 30,522. It stands where the pair preprocessor holds a `keras_match.text.TextEncoder`
    (`PairPreprocessor(tokenizer="minilm-l6")`): `encode`, `vocab_size`, `vocabulary`, `vocabulary_path`,
    `save_vocabulary`, `table`, `lowercase`, `get_config`.

    Where the vocabulary lives: the encoder writes its tokens to a file in a private temporary folder
    (:attr:`vocabulary_path`, `vocabulary.txt`), removed once the encoder and its table are garbage-collected;
    :attr:`table` (token -> id, a `tf.lookup.StaticHashTable`) is read from that file, so an export that tracks the
    table carries the file as an asset. Tokenizing reads the compiled WordPiece model, a graph constant.

    Args:
        vocabulary: the tokens in id order (a list of `str`), or the path of a vocabulary file (UTF-8, one token
            a line, as `vocab.txt` and :meth:`save_vocabulary`). Each token non-empty, without whitespace or
            control characters, once; `pad_token` must be the first (id 0, the padding id), and `unknown_token`,
            `cls_token`, `sep_token` must be among them.
        lowercase: lower-case texts (an uncased vocabulary).
        strip_accents: delete accents (NFD, then the non-spacing marks); None (default): as `lowercase`, as
            `tokenizer_config.json`'s `strip_accents: null` means.
        split_cjk: make every CJK ideograph a word of its own (`tokenize_chinese_chars`).
        unknown_token: the piece of a word that cannot be spelled, and of a too long word.
        cls_token: the token `encode` puts first.
        sep_token: the token `encode` puts last.
        pad_token: the token of id 0, which `encode` pads with.
        max_chars_per_word: int >= 1, longer words become `unknown_token`.
        name: the pretrained encoder's name (`"minilm-l6"`), or None; informative (`from_pretrained` sets it).

    Attributes:
        token_counts, num_training_words: always None (a pretrained vocabulary is not built from training texts;
            `keras_match.text.TextEncoder` has the same attributes).

    Raises:
        ValueError: an invalid vocabulary (the message names the line), `pad_token` not first, a special token
            missing, or `max_chars_per_word` not a positive integer.
        FileNotFoundError: `vocabulary` names a file that does not exist.
        TypeError: `vocabulary` is `bytes` (neither a list of tokens nor a path).

    Examples:
    >>> encoder = WordPieceEncoder.from_pretrained("minilm-l6")  # doctest: +SKIP
    >>> encoder.encode(["Who built the Teapot Dome?", ""], max_length=8).numpy().tolist()  # doctest: +SKIP
    [[101, 2040, 2328, 1996, 5572, 11008, 8514, 102], [101, 102, 0, 0, 0, 0, 0, 0]]
    >>> encoder.vocab_size, encoder.cls_id, encoder.sep_id  # doctest: +SKIP
    (30522, 101, 102)
    """

    def __init__(self, vocabulary, lowercase: bool = True, strip_accents: bool | None = None,
                 split_cjk: bool = True, unknown_token: str = "[UNK]", cls_token: str = "[CLS]",
                 sep_token: str = "[SEP]", pad_token: str = "[PAD]", max_chars_per_word: int = MAX_CHARS_PER_WORD,
                 name: str | None = None):
        if isinstance(vocabulary, (str, os.PathLike)):
            tokens = _read_tokens(vocabulary)
        elif isinstance(vocabulary, bytes):
            raise TypeError("vocabulary must be a list of tokens or a file path, not bytes")
        else:
            tokens = _check_tokens(vocabulary, "vocabulary")
        integer = isinstance(max_chars_per_word, (int, np.integer)) and not isinstance(max_chars_per_word, bool)
        if not integer or max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be a positive integer, got {max_chars_per_word!r}")
        self._tokens = tokens
        self._lowercase = bool(lowercase)
        self._strip_accents = self._lowercase if strip_accents is None else bool(strip_accents)
        self._split_cjk = bool(split_cjk)
        self._max_chars = int(max_chars_per_word)
        self._special = {"unknown_token": unknown_token, "cls_token": cls_token, "sep_token": sep_token,
                         "pad_token": pad_token}
        ids = {token: i for i, token in enumerate(tokens)}
        for key, token in self._special.items():
            if token not in ids:
                raise ValueError(f"the vocabulary lacks the {key} {token!r}")
        if ids[pad_token] != 0:
            raise ValueError(f"the pad_token {pad_token!r} has id {ids[pad_token]}; it must be the first token "
                             "(id 0, the padding id)")
        self._ids = {key: ids[token] for key, token in self._special.items()}
        self.name = name
        self.token_counts = None
        self.num_training_words = None
        directory = tempfile.mkdtemp(prefix="keras_match_wordpiece_")
        self._path = os.path.join(directory, VOCABULARY_FILE)
        write_lines(tokens, self._path)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(self._path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                                          tf.lookup.TextFileIndex.LINE_NUMBER),
            default_value=-1)
        # the file must outlive the table (an export copies it): removed with the table
        weakref.finalize(self._table, shutil.rmtree, directory, ignore_errors=True)
        # A word of at most max_chars characters has at most 4 bytes a character; longer words never reach it.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            tokens, suffix_indicator=SUFFIX_INDICATOR, max_bytes_per_word=4 * self._max_chars,
            token_out_type=tf.int32, unknown_token=unknown_token, no_pretokenization=True)

    # ---- construction ----------------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path, **config) -> "WordPieceEncoder":
        """The encoder of a vocabulary file (copied: the file may be removed afterwards).

        Args:
            path: UTF-8, one token a line, ids = line numbers from 0 (`vocab.txt`, :meth:`save_vocabulary`).
            **config: the other arguments of `WordPieceEncoder` (:meth:`get_config`).

        Raises:
            ValueError: see `WordPieceEncoder`; the message names the file and line.
            FileNotFoundError: `path` does not exist.
        """
        return cls(os.fspath(path), **config)

    @classmethod
    def from_folder(cls, folder, name=None) -> "WordPieceEncoder":
        """The encoder of a Hugging Face BERT tokenizer folder: its `vocab.txt` and the normalisation and special
        tokens of its `tokenizer_config.json` (`do_lower_case`, `strip_accents`, `tokenize_chinese_chars`,
        `unk_token`, `cls_token`, `sep_token`, `pad_token`; missing keys take BERT's defaults).

        Args:
            folder: the folder holding `vocab.txt` and `tokenizer_config.json`.
            name: the pretrained encoder's name, kept as `name`.

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ValueError: the configuration asks for what this rule does not do (another tokenizer class,
                `do_basic_tokenize: false`, `never_split`), or the vocabulary is invalid.
        """
        folder = pathlib.Path(folder)
        for file in ("vocab.txt", "tokenizer_config.json"):
            if not (folder / file).is_file():
                raise FileNotFoundError(f"{folder / file} not found: a WordPiece tokenizer folder holds vocab.txt "
                                        "and tokenizer_config.json")
        path = folder / "tokenizer_config.json"
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
        kind = config.get("tokenizer_class")
        if kind is not None and kind not in _TOKENIZER_CLASSES:
            raise ValueError(f"{path}: tokenizer_class {kind!r}; WordPieceEncoder reproduces "
                             f"{list(_TOKENIZER_CLASSES)}")
        if config.get("do_basic_tokenize", True) is not True:
            raise ValueError(f"{path}: do_basic_tokenize {config['do_basic_tokenize']!r}; WordPieceEncoder always "
                             "splits on whitespace and punctuation first")
        if config.get("never_split"):
            raise ValueError(f"{path}: never_split is not supported (WordPieceEncoder splits every word)")
        return cls(folder / "vocab.txt",
                   lowercase=bool(config.get("do_lower_case", True)),
                   strip_accents=config.get("strip_accents"),
                   split_cjk=bool(config.get("tokenize_chinese_chars", True)),
                   unknown_token=_special_token(config, "unk_token", "[UNK]"),
                   cls_token=_special_token(config, "cls_token", "[CLS]"),
                   sep_token=_special_token(config, "sep_token", "[SEP]"),
                   pad_token=_special_token(config, "pad_token", "[PAD]"),
                   name=name)

    @classmethod
    def from_pretrained(cls, name: str, encoders_dir=None, download_missing=None) -> "WordPieceEncoder":
        """The encoder of a named, pinned pretrained encoder (`keras_match.encoders.pretrained.locate`).

        Args:
            name: a name of `keras_match.encoders.pretrained.names()` (`"minilm-l6"`).
            encoders_dir: the folder holding the encoders' folders, or None (`$KERAS_MATCH_ENCODERS`, else the user
                cache); see `locate`.
            download_missing: as `locate`'s.

        Raises:
            ValueError: unknown name (the message lists the valid ones).
            FileNotFoundError, keras_match.datasets.download.ChecksumError: as `locate` raises them.
        """
        from keras_match.encoders.pretrained import locate

        return cls.from_folder(locate(name, encoders_dir, download_missing), name=name)

    def get_config(self) -> dict:
        """The settings that are not in the vocabulary file (the keyword arguments of `from_file`)."""
        return {"lowercase": self._lowercase, "strip_accents": self._strip_accents, "split_cjk": self._split_cjk,
                **self._special, "max_chars_per_word": self._max_chars}

    @classmethod
    def from_config(cls, config: dict, vocabulary_path) -> "WordPieceEncoder":
        """The encoder of :meth:`get_config` output and a vocabulary file (the same ids as the saved one)."""
        return cls.from_file(vocabulary_path, **config)

    def save_vocabulary(self, path) -> str:
        """Writes the vocabulary (UTF-8, one token a line, each ended by `"\\n"`: `vocab.txt`'s bytes); returns
        `path` as a string."""
        return write_lines(self._tokens, path)

    # ---- properties -------------------------------------------------------------------------------------------

    vocabulary = property(lambda self: list(self._tokens), doc="The tokens (a new list); `vocabulary[i]` has id `i`.")
    vocab_size = property(lambda self: len(self._tokens),
                          doc="The number of ids (the embedding rows): `len(vocabulary)`.")
    lowercase = property(lambda self: self._lowercase, doc="Whether texts are lower-cased.")
    strip_accents = property(lambda self: self._strip_accents, doc="Whether accents are deleted.")
    split_cjk = property(lambda self: self._split_cjk, doc="Whether each CJK ideograph is a word of its own.")
    pad_id = property(lambda self: self._ids["pad_token"], doc="The padding id (0).")
    unknown_id = property(lambda self: self._ids["unknown_token"],
                          doc="The id of `unknown_token` (100 for BERT uncased).")
    cls_id = property(lambda self: self._ids["cls_token"], doc="The id of `cls_token` (101 for BERT uncased).")
    sep_id = property(lambda self: self._ids["sep_token"], doc="The id of `sep_token` (102 for BERT uncased).")

    @property
    def special_ids(self) -> dict:
        """`{"padding": pad_id, "unknown": unknown_id, "cls": cls_id, "sep": sep_id}`."""
        return {"padding": self.pad_id, "unknown": self.unknown_id, "cls": self.cls_id, "sep": self.sep_id}

    def __repr__(self) -> str:
        return (f"WordPieceEncoder(name={self.name!r}, vocab_size={self.vocab_size}, lowercase={self._lowercase}, "
                f"strip_accents={self._strip_accents}, split_cjk={self._split_cjk})")

    # ---- tokenizing -------------------------------------------------------------------------------------------

    def normalize(self, texts) -> tf.Tensor:
        """Steps 1-4 of the rule (module docstring): valid UTF-8, cleaned, accents stripped, lower-cased.

        Args:
            texts: `tf.string` tensor `[batch]`, list of `str` / UTF-8 `bytes`, or 1-D numpy array of them.

        Returns:
            `tf.string` tensor `[batch]`.

        Raises:
            TypeError, ValueError: see `keras_match.text.as_string_batch`.
        """
        texts = tf.strings.unicode_transcode(as_string_batch(texts), "UTF-8", "UTF-8", errors="replace",
                                             replacement_char=0xFFFD)
        texts = tf.strings.regex_replace(texts, _DELETED, "")
        if self._strip_accents:
            texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFD"), r"\p{Mn}", "")
        if self._lowercase:
            # ICU lower-cases a capital sigma by its context (a final one to ς); the reference maps each character
            # alone (always σ): lower it first, so that ICU sees no capital sigma
            texts = tf.strings.lower(tf.strings.regex_replace(texts, "Σ", "σ"), encoding="utf-8")
        return texts

    def words(self, texts) -> tf.RaggedTensor:
        """Steps 1-5 of the rule: the words WordPiece splits into pieces.

        Args:
            texts: as `normalize`.

        Returns:
            `tf.RaggedTensor` of `tf.string`, `[batch, (words)]`; an empty or blank text gives an empty row.
        """
        kept = f"[{_PUNCTUATION}{_CJK if self._split_cjk else ''}]"
        return tf_text.regex_split(self.normalize(texts), f"{_WHITESPACE}|{kept}", kept)

    def tokenize(self, texts) -> tf.RaggedTensor:
        """The WordPiece ids of each text, without `[CLS]` / `[SEP]` and untruncated.

        Args:
            texts: as `normalize`.

        Returns:
            `tf.RaggedTensor` of int32, `[batch, (pieces)]`; an empty or blank text gives an empty row.
        """
        words = self.words(texts)
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > self._max_chars
        words = words.with_flat_values(tf.where(too_long, self._special["unknown_token"], words.flat_values))
        # a word that is the unknown token itself (only a too long word: text never keeps brackets on a word)
        # is spelled as that one token
        return self._wordpiece.tokenize(words).merge_dims(1, 2)

    def lookup(self, tokens) -> tf.Tensor | tf.RaggedTensor:
        """The ids of string tokens (pieces, `"##pot"`) of any shape, ragged or not; unknown ones get
        `unknown_id`."""
        if isinstance(tokens, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.lookup, tokens)
        ids = self._table.lookup(tf.convert_to_tensor(tokens, dtype=tf.string))
        return tf.cast(tf.where(ids < 0, tf.constant(self.unknown_id, tf.int64), ids), tf.int32)

    def encode(self, texts, max_length: int) -> tf.Tensor:
        """`[CLS]`, the text's WordPiece ids, `[SEP]`, cut to `max_length` and padded with 0.

        Usable eagerly, in `tf.data` `map` and in `tf.function` (`max_length` must be a Python int).

        Args:
            texts: `tf.string` tensor `[batch]`, list of `str` / UTF-8 `bytes`, or 1-D numpy array of them.
            max_length: int >= 2, ids per row, `[CLS]` and `[SEP]` included: a text of more than
                `max_length - 2` pieces keeps its first `max_length - 2`, then `[SEP]`.

        Returns:
            int32 `tf.Tensor` `[batch, max_length]`: `cls_id`, the pieces, `sep_id`, then `pad_id` (0) to the
            end. An empty or blank text gives `[cls_id, sep_id, 0, ...]`, never an all-padding row.

        Raises:
            ValueError: `max_length` is not an integer >= 2, or `texts` is not one-dimensional.
            TypeError: see `keras_match.text.as_string_batch`.

        Examples:
        >>> encoder.encode(["the cat"], max_length=3).numpy().tolist()  # doctest: +SKIP
        [[101, 1996, 102]]
        """
        if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or max_length < 2:
            raise ValueError(f"max_length must be an integer >= 2 (room for [CLS] and [SEP]), got {max_length!r}")
        max_length = int(max_length)
        pieces = self.tokenize(texts)[:, : max_length - 2]
        edge = tf.ones([pieces.nrows(), 1], tf.int32)
        ids = tf.concat([edge * self.cls_id, pieces, edge * self.sep_id], axis=1)
        return ids.to_tensor(default_value=self.pad_id, shape=[None, max_length])


@functools.lru_cache(maxsize=None)
def _vocab_size(folder: str, size: int, mtime: float) -> int:
    return len(_read_tokens(os.path.join(folder, "vocab.txt")))


def pretrained_vocab_size(name: str, encoders_dir=None) -> int:
    """The WordPiece vocabulary size of a pretrained encoder (`"minilm-l6"`: 30,522): the lines of its pinned
    `vocab.txt`, read once a process.

    Raises:
        ValueError: unknown name.
        FileNotFoundError: the encoder is missing (as `WordPieceEncoder.from_pretrained`).
    """
    from keras_match.encoders.pretrained import locate

    folder = locate(name, encoders_dir)
    stat = (folder / "vocab.txt").stat()
    return _vocab_size(str(folder), stat.st_size, stat.st_mtime)
