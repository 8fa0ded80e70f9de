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

The vocabulary and ids (`TextEncoder`) and GloVe vectors (`load_embeddings`) are in
`keras_match.text.vocabulary`.
"""

from __future__ import annotations

import threading

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
    "clear_token_cache",
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
    Eager calls keep each text's tokens (`TOKEN_CACHE_TEXTS`) and run the ops only on texts not met before.

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
    batch, lowercase = as_string_batch(texts), bool(lowercase)
    if not tf.executing_eagerly() or not hasattr(batch, "numpy") or batch.shape.rank != 1:
        return _regex_tokenize(batch, lowercase=lowercase)  # a graph (tf.function, tf.data, SavedModel)
    return _cached_tokenize(batch.numpy().tolist(), lowercase)


TOKEN_CACHE_TEXTS = 200_000
"""How many distinct texts eager :func:`tokenize` calls keep the tokens of (per ``lowercase`` setting, per
process); past it the cache is emptied and filled again. A text's tokens depend on nothing but the text and
``lowercase``, so a text met again (the same training, dev and test texts read by every tuning trial, every
evaluation and every test of a suite) is not run through the regular expressions a second time: measured here
on 20,000 TrecQA answers (588,004 tokens), the TF ops took 1.40 s, the cached path 0.05 s. The tokens are
interned (each distinct token string stored once); a text takes about 660 bytes: TrecQA's 51,784 distinct texts
34 MB (`tracemalloc`), a full cache about 130 MB. `clear_token_cache()` frees it."""

_TOKENS: dict = {}  # (lowercase, UTF-8 text) -> tuple of tokens (bytes)
_INTERNED: dict = {}  # token -> the one stored copy of it
_LOCK = threading.Lock()


def clear_token_cache() -> None:
    """Empties the cache of eager :func:`tokenize` calls (`TOKEN_CACHE_TEXTS`)."""
    with _LOCK:
        _TOKENS.clear()
        _INTERNED.clear()


def _cached_tokenize(values: list, lowercase: bool) -> tf.RaggedTensor:
    """:func:`_regex_tokenize` of the UTF-8 texts `values` (a list of bytes), running the ops only on the texts
    the cache does not hold; the same ``tf.RaggedTensor`` (``tf.string`` values, int64 row splits)."""
    found = {}
    with _LOCK:
        for value in values:
            tokens = _TOKENS.get((lowercase, value))
            if tokens is not None:
                found[value] = tokens
    missing = [value for value in dict.fromkeys(values) if value not in found]
    if missing:
        rows = _regex_tokenize(tf.constant(missing, tf.string), lowercase=lowercase).to_list()
        with _LOCK:
            if len(_TOKENS) + len(missing) > TOKEN_CACHE_TEXTS:
                _TOKENS.clear()
                _INTERNED.clear()
            if len(missing) > TOKEN_CACHE_TEXTS:  # more than fit: answered, not kept
                found.update((value, tuple(row)) for value, row in zip(missing, rows))
            else:
                for value, row in zip(missing, rows):
                    found[value] = _TOKENS[(lowercase, value)] = tuple(_INTERNED.setdefault(t, t) for t in row)
    rows = [found[value] for value in values]
    flat = [token for row in rows for token in row]
    return tf.RaggedTensor.from_row_lengths(tf.constant(flat, tf.string, shape=[len(flat)]),
                                            tf.constant([len(row) for row in rows], tf.int64, shape=[len(rows)]),
                                            validate=False)


