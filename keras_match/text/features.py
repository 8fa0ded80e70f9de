r"""Word-overlap features of question/answer pairs (Severyn & Moschitti, SIGIR 2015), as TensorFlow ops.

CTRN on TrecQA concatenates "four word overlap features ... before the dense layers following (Severyn and
Moschitti 2015)" (Tay et al. 2018, "Implementation Details"). The four features of a pair, in this order:

1. ``overlap``: ``|Q & A| / (|Q| + |A|)``
2. ``idf_overlap``: ``sum_{w in Q & A} idf(w) / (|Q| + |A|)``
3. ``overlap_no_stop``: feature 1 with stop words removed from both texts first
4. ``idf_overlap_no_stop``: feature 2 with stop words removed from both texts first

where ``Q`` and ``A`` are the *sets* of tokens of the question and the answer (:func:`keras_match.text.tokenize`,
lower-cased), and a pair whose two sets are empty gets 0. The normalisation by ``|Q| + |A|`` and the order
(all words, then without stop words; plain, then IDF-weighted) are those of Severyn & Moschitti's public code
(``compute_overlap_features`` in their deep-qa ``parse.py``); their paper only names the features ("word overlap
and IDF-weighted word overlap computed between all words and only non-stop words").

IDF: ``idf(w) = log(N / df(w))``, with ``df(w)`` the number of documents that contain ``w`` and ``N`` the number
of documents, counted over the *training* texts given to :meth:`OverlapFeatures.build` (Severyn's script passes
every answer plus each distinct question). Their code divides instead, ``df / log(N / df)`` (a bug, see the
project's STACK.md); here the intended ``log(N / df)`` is used. A word never seen in the training documents gets
``log(N)``, as if its df were 1 (the rarest training word's weight); Severyn's script avoided the case by
counting df over train, dev and test together, which leaks test text into a feature.

Stop words (:data:`STOP_WORDS`): NLTK's English list (179 words), adapted to this tokenizer: contracted forms
(``don't``, ``you're``) never appear as tokens, so they are replaced by the pieces the tokenizer makes (``n't``,
``'re``, ``'s``, ``'ve``, ``'ll``, ``'d``, ``'m``, ``ca``, ``wo``); and, as in Severyn's (commented-out) stop list,
every token made only of punctuation or symbols (``. , ? -- ``...) counts as a stop word too.

Everything is TF ops (``tf.strings``, ``tensorflow_text``, lookup tables): :class:`OverlapFeatures` works eagerly,
in ``tf.data`` ``map`` functions and inside a SavedModel signature that takes raw ``tf.string`` texts. Its
document-frequency table is a ``tf.lookup.StaticHashTable`` initialised from a file, so an exported function that
calls it carries the file as a SavedModel asset (track the object: ``ExportArchive.track(features)``).
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
import weakref
from typing import Iterable

import numpy as np
import tensorflow as tf

from keras_match.text import tokenize

__all__ = ["FEATURE_NAMES", "STOP_WORDS", "OverlapFeatures"]

FEATURE_NAMES = ("overlap", "idf_overlap", "overlap_no_stop", "idf_overlap_no_stop")
"""The four features, in output column order."""

# NLTK's English stop words without the contracted forms, plus the tokens this tokenizer makes of them.
STOP_WORDS = (
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself",
    "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they",
    "them", "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "these", "those",
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did",
    "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by",
    "for", "with", "about", "against", "between", "into", "through", "during", "before", "after", "above",
    "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then",
    "once", "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more", "most",
    "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than", "too", "very", "s", "t",
    "can", "will", "just", "don", "should", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "couldn",
    "didn", "doesn", "hadn", "hasn", "haven", "isn", "ma", "mightn", "mustn", "needn", "shan", "shouldn", "wasn",
    "weren", "won", "wouldn",
    # PTB pieces of contractions (don't -> do n't, can't -> ca n't, won't -> wo n't, you're -> you 're ...)
    "n't", "'s", "'re", "'ve", "'ll", "'d", "'m", "ca", "wo",
)

_PUNCTUATION_TOKEN = r"[\p{P}\p{S}]+"
_DOCUMENTS_KEY = "[documents]"  # header line of the file: never a token ("[" is always a token of its own)
_TOKENS_KEY = "[tokens]"  # second line (files since the BM25 feature): the documents' total token count

BM25_K1, BM25_B = 1.5, 0.75
"""BM25's term-frequency saturation and length normalisation (the usual defaults, as `bm25s` and Lucene)."""


def _write_frequencies(document_frequencies, num_documents, path, num_tokens=None):
    ranked = sorted(document_frequencies.items(), key=lambda item: (-item[1], item[0]))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"{_DOCUMENTS_KEY}\t{int(num_documents)}\n")
        if num_tokens is not None:
            f.write(f"{_TOKENS_KEY}\t{int(num_tokens)}\n")
        for word, count in ranked:
            f.write(f"{word}\t{int(count)}\n")


def _read_frequency_file(path):
    """`(N, total tokens or None, number of words)` of a frequency file, whose every line is checked: TensorFlow's
    table reads it later and would report a damaged line as a traceback.

    Raises:
        ValueError: a malformed header or line (names the file and line).
    """
    with open(path, "r", encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    if lines[-1] != "":
        raise ValueError(f"{path}, line {len(lines)}: the file does not end with a line end (cut short?)")
    header = lines[0].split("\t")
    if len(header) != 2 or header[0] != _DOCUMENTS_KEY or not header[1].isdigit() or int(header[1]) < 1:
        raise ValueError(
            f"{path}, line 1: expected the header '{_DOCUMENTS_KEY}<TAB><number of documents>', got {header!r}"
        )
    num_documents, num_tokens, first = int(header[1]), None, 1
    second = lines[1].split("\t") if len(lines) > 2 else [""]
    if second[0] == _TOKENS_KEY:
        if len(second) != 2 or not second[1].isdigit():
            raise ValueError(f"{path}, line 2: expected '{_TOKENS_KEY}<TAB><number of tokens>', got {second!r}")
        num_tokens, first = int(second[1]), 2
    for number, line in enumerate(lines[first:-1], start=first + 1):
        word, sep, count = line.rpartition("\t")
        if not sep or not word or not count.isdigit() or not 1 <= int(count) <= num_documents:
            raise ValueError(f"{path}, line {number}: expected '<word><TAB><document frequency from 1 to "
                             f"{num_documents}>', got {line!r}")
    return num_documents, num_tokens, len(lines) - 1 - first


class OverlapFeatures(tf.Module):
    """The four Severyn & Moschitti word-overlap features of (question, answer) text pairs, in TF ops.

    See the module docstring for the definitions, the IDF and the stop words.

    The document frequencies live in a file (UTF-8; first line ``[documents]<TAB>N``, then
    ``[tokens]<TAB>T``, the documents' total token count, which gives BM25 its average length ``T / N``; then one
    ``word<TAB>df`` line per word; files written before the BM25 feature lack the ``[tokens]`` line), read by a ``tf.lookup.StaticHashTable``, like
    :class:`keras_match.text.TextEncoder`'s vocabulary: an exported function that calls this object copies the
    file into the SavedModel's ``assets/``. :meth:`build` writes the file to a private temporary directory that is
    removed when the object and its table are garbage-collected; :meth:`from_file` reads a file in place.

    Args:
        path: a frequency file as written by :meth:`save`.
        lowercase: lower-case texts before tokenizing (must match how the frequencies were counted).

    Attributes:
        num_documents: int, N.
        num_tokens: int, the documents' total token count (None in files older than the BM25 feature).
        num_words: int, the number of words the file gives a document frequency (its lines after the header).
        path: the file the table reads.
        idf_table: the ``word -> df`` ``StaticHashTable`` (-1 for unseen words); ``stop_table``: the stop words.

    Raises:
        ValueError: the file's header is malformed.

    Examples:
        >>> features = OverlapFeatures.build(["what is a cat ?", "a cat is a small feline ."])
        >>> features(["what is a cat ?"], ["the cat sat ."]).shape
        TensorShape([1, 4])
        >>> ds = tf.data.Dataset.from_tensor_slices((questions, answers)).batch(64)  # doctest: +SKIP
        >>> ds = ds.map(lambda q, a: (q, a, features(q, a)))  # doctest: +SKIP
    """

    def __init__(self, path, lowercase: bool = True):
        super().__init__(name="overlap_features")
        self.path = os.path.abspath(os.fspath(path))
        self.num_documents, self.num_tokens, self.num_words = _read_frequency_file(self.path)
        self.lowercase = bool(lowercase)
        self.idf_table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                filename=self.path,
                key_dtype=tf.string,
                key_index=0,
                value_dtype=tf.int64,
                value_index=1,
                delimiter="\t",
            ),
            default_value=-1,
        )
        self.stop_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(STOP_WORDS, tf.string), tf.ones([len(STOP_WORDS)], tf.int64)
            ),
            default_value=0,
        )

    # ---- construction ----------------------------------------------------------------------------------------

    @classmethod
    def build(cls, texts: Iterable[str], lowercase: bool = True, batch_size: int = 4096) -> "OverlapFeatures":
        """Counts document frequencies over training texts, each text one document.

        Pass the training answers and the distinct training questions (as Severyn & Moschitti do), e.g.
        ``OverlapFeatures.build(list(np.unique(pairs.questions)) + list(pairs.answers))``. Never include dev or
        test texts.

        Args:
            texts: iterable of ``str``; ``N`` is their number (empty texts count as documents).
            lowercase: lower-case before tokenizing (as :func:`keras_match.text.tokenize`).
            batch_size: texts tokenized per eager call.

        Returns:
            An :class:`OverlapFeatures` backed by a temporary file (use :meth:`save` to keep it).

        Raises:
            ValueError: ``texts`` is empty.
            TypeError: ``texts`` is a single string or holds non-strings.
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be an iterable of texts, not a single string")
        texts = list(texts.tolist() if isinstance(texts, np.ndarray) else texts)
        if not texts:
            raise ValueError("texts is empty: document frequencies need at least one document")
        frequencies: collections.Counter = collections.Counter()
        num_tokens = 0
        for start in range(0, len(texts), max(1, int(batch_size))):
            for row in tokenize(texts[start : start + batch_size], lowercase=lowercase).to_list():
                frequencies.update(set(row))
                num_tokens += len(row)
        frequencies = {word.decode("utf-8"): count for word, count in frequencies.items()}
        directory = tempfile.mkdtemp(prefix="keras_match_idf_")
        path = os.path.join(directory, "document_frequencies.tsv")
        _write_frequencies(frequencies, len(texts), path, num_tokens=num_tokens)
        features = cls(path, lowercase=lowercase)
        # The file must outlive the table (it is copied when the table is exported): remove it with the table.
        weakref.finalize(features.idf_table, shutil.rmtree, directory, ignore_errors=True)
        return features

    @classmethod
    def from_file(cls, path, lowercase: bool = True) -> "OverlapFeatures":
        """Loads a frequency file written by :meth:`save` (read in place: keep it until exported).

        Raises:
            ValueError: malformed header. FileNotFoundError: no such file.
        """
        return cls(path, lowercase=lowercase)

    def save(self, path) -> str:
        """Copies the frequency file to ``path`` (parent directory must exist); returns ``path`` as a string."""
        path = os.fspath(path)
        if os.path.abspath(path) != self.path:
            shutil.copyfile(self.path, path)
        return path

    # ---- lookups ---------------------------------------------------------------------------------------------

    def idf(self, tokens) -> tf.Tensor:
        """``log(N / df)`` of string tokens (any shape); unseen words get ``log(N)``. float32."""
        df = self.idf_table.lookup(tf.convert_to_tensor(tokens, tf.string))
        df = tf.where(df > 0, df, tf.ones_like(df))
        return tf.cast(tf.math.log(float(self.num_documents) / tf.cast(df, tf.float64)), tf.float32)

    def is_stop_word(self, tokens) -> tf.Tensor:
        """bool, same shape as ``tokens``: a stop word or a punctuation/symbol-only token."""
        tokens = tf.convert_to_tensor(tokens, tf.string)
        listed = self.stop_table.lookup(tokens) > 0
        return tf.logical_or(listed, tf.strings.regex_full_match(tokens, _PUNCTUATION_TOKEN))

    # ---- features --------------------------------------------------------------------------------------------

    def __call__(self, questions, answers, max_question_length=None, max_answer_length=None) -> tf.Tensor:
        """The four features of each (question, answer) pair.

        Args:
            questions, answers: ``tf.string`` tensors ``[batch]`` (symbolic or eager), lists of ``str`` or 1-D
                numpy arrays of ``str``, of the same length.
            max_question_length, max_answer_length: optional ints; only the first tokens of each text count,
                the tokens a matching model truncated to these lengths sees (the training pipeline and the
                exported signatures pass the model's lengths, so text past them never changes a score and
                the set operations' memory, quadratic in length, stays bounded). None: the whole text.

        Returns:
            float32 ``[batch, 4]``, columns :data:`FEATURE_NAMES`; each in ``[0, 0.5]`` (overlap) or
            ``[0, 0.5 log N]`` (IDF-weighted).

        Raises:
            InvalidArgumentError: the batches differ in size. TypeError / ValueError: see
                :func:`keras_match.text.tokenize`.
        """
        return self.from_tokens(*self.tokens(questions, answers, max_question_length, max_answer_length))

    def tokens(self, questions, answers, max_question_length=None, max_answer_length=None):
        """The tokens the features read: ``(question_tokens, answer_tokens)``, ``tf.RaggedTensor`` of
        ``tf.string`` ``[batch, (n)]``, each text cut to its maximum length (None: whole)."""
        question_tokens = tokenize(questions, lowercase=self.lowercase)
        answer_tokens = tokenize(answers, lowercase=self.lowercase)
        if max_question_length is not None:
            question_tokens = question_tokens[:, : int(max_question_length)]
        if max_answer_length is not None:
            answer_tokens = answer_tokens[:, : int(max_answer_length)]
        return question_tokens, answer_tokens

    def from_tokens(self, question_tokens: tf.RaggedTensor, answer_tokens: tf.RaggedTensor) -> tf.Tensor:
        """The features of already tokenized texts (``tf.RaggedTensor`` of ``tf.string``, ``[batch, (n)]``)."""
        q, a, q_real, a_real = _dense_pair(question_tokens, answer_tokens)

        q_set, a_set = _first_occurrence(q, q_real), _first_occurrence(a, a_real)
        in_answer = tf.reduce_any(
            tf.logical_and(tf.equal(q[:, :, None], a[:, None, :]), a_real[:, None, :]), axis=2
        )
        q_idf = self.idf(q)
        q_content, a_content = tf.logical_not(self.is_stop_word(q)), tf.logical_not(self.is_stop_word(a))

        def count(values):
            return tf.reduce_sum(tf.cast(values, tf.float32), axis=1)

        def pair_features(q_keep, a_keep):
            shared = tf.logical_and(tf.logical_and(q_set, q_keep), in_answer)
            total = count(tf.logical_and(q_set, q_keep)) + count(tf.logical_and(a_set, a_keep))
            total = tf.maximum(total, 1.0)  # both sets empty: 0 / 1 = 0
            idf_sum = tf.reduce_sum(tf.where(shared, q_idf, tf.zeros_like(q_idf)), axis=1)
            return [count(shared) / total, idf_sum / total]

        everything = tf.ones_like(q_real), tf.ones_like(a_real)
        return tf.stack(pair_features(*everything) + pair_features(q_content, a_content), axis=1)

    # ---- BM25 ------------------------------------------------------------------------------------------------

    @property
    def average_length(self):
        """The documents' average length in tokens, ``T / N`` (None for an old file without ``T``)."""
        return None if self.num_tokens is None else self.num_tokens / self.num_documents

    def bm25_idf(self, tokens) -> tf.Tensor:
        """BM25's ``log(1 + (N - df + 0.5) / (df + 0.5))`` of string tokens (unseen words: ``df = 0``). float32."""
        df = tf.cast(tf.maximum(self.idf_table.lookup(tf.convert_to_tensor(tokens, tf.string)), 0), tf.float64)
        n = float(self.num_documents)
        return tf.cast(tf.math.log(1.0 + (n - df + 0.5) / (df + 0.5)), tf.float32)

    def bm25(self, questions, answers, max_question_length=None, max_answer_length=None) -> tf.Tensor:
        """The BM25 score of each answer for its question, with N, df and the average length of the training
        documents: ``sum over the distinct question words t of idf(t) tf / (tf + k1 (1 - b + b |A| / avgdl))``,
        ``tf`` the count of ``t`` in the answer, ``|A|`` the answer's length in tokens, ``k1 = 1.5``,
        ``b = 0.75`` (Robertson et al. 1994; the Lucene form of the IDF and no ``(k1 + 1)`` factor, as
        Lucene 8+ and the ``bm25s`` library compute it).

        Args:
            questions, answers: as :meth:`__call__` (the same truncation applies).

        Returns:
            float32 ``[batch]``, >= 0.

        Raises:
            ValueError: the frequency file predates the BM25 feature (no total token count): rebuild it.
        """
        return self.bm25_from_tokens(*self.tokens(questions, answers, max_question_length, max_answer_length))

    def bm25_from_tokens(self, question_tokens: tf.RaggedTensor, answer_tokens: tf.RaggedTensor) -> tf.Tensor:
        """:meth:`bm25` of already tokenized texts (``tf.RaggedTensor`` of ``tf.string``, ``[batch, (n)]``)."""
        if self.num_tokens is None:
            raise ValueError(f"{self.path} has no '{_TOKENS_KEY}' line (written before the BM25 feature): BM25 "
                             "needs the training documents' average length; retrain the run")
        q, a, q_real, a_real = _dense_pair(question_tokens, answer_tokens)
        q_set = _first_occurrence(q, q_real)
        matches = tf.logical_and(tf.equal(q[:, :, None], a[:, None, :]), a_real[:, None, :])
        tf_counts = tf.reduce_sum(tf.cast(matches, tf.float32), axis=2)  # [batch, len_q]
        length = tf.cast(answer_tokens.row_lengths(), tf.float32)[:, None]
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / float(self.average_length))
        per_word = self.bm25_idf(q) * tf_counts / (tf_counts + norm)
        return tf.reduce_sum(tf.where(q_set, per_word, tf.zeros_like(per_word)), axis=1)

    def __repr__(self) -> str:
        return f"OverlapFeatures(num_documents={self.num_documents}, path={self.path!r})"


def _dense_pair(question_tokens, answer_tokens):
    """Padded token matrices of a batch of pairs and their real-token masks: `(q, a, q_real, a_real)`."""
    tf.debugging.assert_equal(
        question_tokens.nrows(), answer_tokens.nrows(), message="questions and answers differ in batch size"
    )
    q = question_tokens.to_tensor(default_value="")
    a = answer_tokens.to_tensor(default_value="")
    q_real = tf.sequence_mask(question_tokens.row_lengths(), tf.shape(q, out_type=tf.int64)[1])
    a_real = tf.sequence_mask(answer_tokens.row_lengths(), tf.shape(a, out_type=tf.int64)[1])
    return q, a, q_real, a_real


def _first_occurrence(tokens, real):
    """True at the first occurrence of each distinct real token: the text's token *set*."""
    n = tf.shape(tokens)[1]
    earlier = tf.range(n)[None, :] < tf.range(n)[:, None]  # [i, j]: j < i
    repeated = tf.reduce_any(
        tf.logical_and(tf.equal(tokens[:, :, None], tokens[:, None, :]), earlier[None]), axis=2
    )
    return tf.logical_and(real, tf.logical_not(repeated))
