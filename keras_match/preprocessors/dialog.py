"""The dialog preprocessor: a dialog turn's history and last user utterance in, token ids out, and the task's fixed
candidate set encoded once for the model (Tran et al., NAACL 2018, section 4.1).

`DialogPreprocessor` reads the texts of a response-selection example (`keras_match.tasks.ResponseSelectionTask`):
`{"history": tf.string [batch, turns], "context": tf.string [batch]}`. The history keeps `max_turns` of its turns
(the real ones: a row's padding `""` at its end is not a turn), each cut to `max_turn_length` tokens: the last ones
(`history_cut="oldest"`), or with the utterances first (`history_cut="kb_first"`: the last `max_turns` utterances,
then the latest KB lines that fit, in dialog order; see `kept_turns`); the context (the last user utterance) is
cut to `max_context_length` tokens. The candidate responses are not an input: they are the task's fixed set,
given once to `from_training` (the training texts' `candidates` column, whose rows are all the same set), saved as
the asset `candidates.txt` beside `vocabulary.txt`, and handed to the builder as `candidate_ids` (int32 `[C, Lc]`,
`model_arguments()`), which the model keeps as a constant.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import tempfile
import typing
import weakref

import keras
import numpy as np
import tensorflow as tf

from keras_match import text
from keras_match.artifacts import storage
from keras_match.preprocessors.pair import VocabularyPreprocessor
from keras_match.preprocessors.pair import positive_lengths
from keras_match.settings import POSITIVE_INT
from keras_match.settings import Rule
from keras_match.settings import PreprocessingSettings

__all__ = ["VOCABULARY_FILE", "CANDIDATES_FILE", "HISTORY_CUTS", "DialogSettings", "DialogPreprocessor",
           "check_history_cut", "is_kb_line", "kept_turns", "read_candidates_file"]

VOCABULARY_FILE = "vocabulary.txt"
CANDIDATES_FILE = "candidates.txt"

HISTORY_CUTS = ("oldest", "kb_first")
"""What a history longer than `max_turns` loses first: `"oldest"` its oldest texts (it keeps the last
`max_turns`), `"kb_first"` its oldest KB lines (it keeps every utterance that fits, then the latest KB lines)."""

KB_FACT = r"[^ \t]+ R_[A-Za-z_]+ .*"
"""A dialog bAbI KB fact, `entity R_attribute value` (`keras_match.datasets.dialog_babi`)."""

API_CALL = r"api_call .*"
"""A bot's API call; task 6's calls can hold slot names (`api_call R_cuisine west moderate`), so a text that
matches `KB_FACT` is a KB line only when it does not match this."""

NO_RESULT = "api_call no result"
"""Task 6's KB line for an API call that found nothing."""


@dataclasses.dataclass(frozen=True)
class DialogSettings(PreprocessingSettings):
    """The preprocessing settings of a dialog model (`PreprocessingSettings` plus these).

    Attributes:
        max_turns: history turns kept per example: the last ones (the nearest the response), or, with
            `history_cut="kb_first"`, every utterance that fits and then the latest KB lines.
        history_cut: what a longer history loses first, one of `HISTORY_CUTS`: `"oldest"` (its oldest texts) or
            `"kb_first"` (its oldest KB lines).
        max_turn_length: tokens kept of each history turn (its first ones).
        max_context_length: tokens kept of the last user utterance.
        max_candidate_length: tokens kept of each candidate response.
    """

    RULES: typing.ClassVar[dict] = {
        **PreprocessingSettings.RULES,
        "max_turns": POSITIVE_INT,
        "history_cut": Rule(lambda v: v in HISTORY_CUTS, "one of " + ", ".join(HISTORY_CUTS)),
        "max_turn_length": POSITIVE_INT,
        "max_context_length": POSITIVE_INT,
        "max_candidate_length": POSITIVE_INT,
    }

    max_turns: int = 20
    history_cut: str = "oldest"
    max_turn_length: int = 20
    max_context_length: int = 20
    max_candidate_length: int = 20


def read_candidates_file(path) -> list:
    """The candidate texts of a `candidates.txt` asset: UTF-8, one candidate per line, `"\\n"` line ends.

    Raises:
        ValueError: the file is not UTF-8, is empty, or has an empty line (the message names the file and line).
    """
    data = pathlib.Path(path).read_bytes()
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not valid UTF-8 ({error})") from None
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: no candidate")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            raise ValueError(f"{path}, line {number}: empty candidate")
    return lines


def _check_candidates(candidates) -> list:
    if isinstance(candidates, (str, bytes)):
        raise TypeError("candidates must be a sequence of texts, not a single string")
    texts = [c.decode("utf-8") if isinstance(c, bytes) else c for c in candidates]
    if not texts:
        raise ValueError("the candidate set is empty")
    for i, candidate in enumerate(texts):
        if not isinstance(candidate, str):
            raise TypeError(f"candidates[{i}] is {type(candidate).__name__}, not str")
        if not candidate.strip() or "\n" in candidate or "\r" in candidate:
            raise ValueError(f"candidates[{i}] = {candidate!r}: a candidate is a non-empty text of one line")
    return texts


def check_history_cut(cut):
    """Raises ValueError naming `history_cut` unless `cut` is one of `HISTORY_CUTS`."""
    if cut not in HISTORY_CUTS:
        raise ValueError(f"history_cut={cut!r}: must be one of {', '.join(HISTORY_CUTS)}")


def _padded(history, columns):
    """`history` (`tf.string` `[batch, turns]`) with `columns` more `""` columns, each column's 1-based position
    (`[1, width]`), and each row's count of real turns (the position of its last non-empty text, 0 if none)."""
    history = tf.convert_to_tensor(history, tf.string)
    history = tf.concat([history, tf.fill([tf.shape(history)[0], columns], "")], axis=1)
    positions = tf.range(1, tf.shape(history)[1] + 1)[None, :]
    count = tf.reduce_max(tf.where(tf.strings.length(history) > 0, positions, 0), axis=1)
    return history, positions, count


def last_turns(history, max_turns):
    """The last `max_turns` real turns of each history row, left-aligned and padded with `""`.

    A row's real turns end at its last non-empty text (rows are padded at the end with `""`; an empty text inside
    a row, such as an empty ASR transcript, is a real turn and is kept).

    Args:
        history: `tf.string` `[batch, turns]` (any number of columns, 0 included).
        max_turns: int >= 1.

    Returns:
        `tf.string` `[batch, max_turns]`.
    """
    history, positions, count = _padded(history, 1)
    width = tf.shape(history)[1]
    start = tf.maximum(count - max_turns, 0)
    index = start[:, None] + tf.range(max_turns)[None, :]  # [batch, max_turns]
    real = index < count[:, None]
    taken = tf.gather(history, tf.minimum(index, width - 1), batch_dims=1)
    return tf.where(real, taken, tf.fill(tf.shape(taken), ""))


def is_kb_line(texts):
    """Which texts are dialog bAbI KB lines: a KB fact (`KB_FACT`, `entity R_attribute value`) that is not an API
    call (`API_CALL`), or `NO_RESULT`. On every text of the six tasks' files (every split) this agrees with the
    files' own structure (a line without a tab), which the texts of a history no longer carry. It reads the texts
    as given (before any lower-casing): the `R_` of an attribute is upper-case.

    Args:
        texts: `tf.string` of any shape.

    Returns:
        `tf.bool` of the same shape.
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    fact = tf.strings.regex_full_match(texts, KB_FACT) & tf.logical_not(tf.strings.regex_full_match(texts, API_CALL))
    return fact | tf.equal(texts, NO_RESULT)


def kept_turns(history, max_turns, cut="oldest"):
    """The `max_turns` real turns of each history row a cut keeps, in dialog order, left-aligned and padded with
    `""` (`last_turns` says what a real turn is).

    `cut="oldest"` keeps the last `max_turns` turns (`last_turns`). `cut="kb_first"` keeps the last
    `min(u, max_turns)` of the row's `u` utterances (user and bot texts: every text that is not a KB line,
    `is_kb_line`), and its last `max(max_turns - u, 0)` KB lines: a history loses its oldest KB lines before any
    utterance, and loses an utterance only when it has more than `max_turns` of them.

    Args:
        history: `tf.string` `[batch, turns]` (any number of columns, 0 included).
        max_turns: int >= 1.
        cut: one of `HISTORY_CUTS`.

    Returns:
        `tf.string` `[batch, max_turns]`.

    Raises:
        ValueError: `cut` is not one of `HISTORY_CUTS`.
    """
    check_history_cut(cut)
    if cut == "oldest":
        return last_turns(history, max_turns)
    history, positions, count = _padded(history, max_turns)  # at least max_turns columns
    width = tf.shape(history)[1]
    real = positions <= count[:, None]
    kb = is_kb_line(history) & real
    utterance = real & tf.logical_not(kb)
    later_utterances = tf.cumsum(tf.cast(utterance, tf.int32), axis=1, exclusive=True, reverse=True)
    later_kb_lines = tf.cumsum(tf.cast(kb, tf.int32), axis=1, exclusive=True, reverse=True)
    kb_slots = tf.maximum(max_turns - tf.reduce_sum(tf.cast(utterance, tf.int32), axis=1), 0)
    keep = (utterance & (later_utterances < max_turns)) | (kb & (later_kb_lines < kb_slots[:, None]))
    order = tf.argsort(tf.where(keep, positions, positions + width), axis=1, stable=True)[:, :max_turns]
    taken = tf.gather(history, order, batch_dims=1)
    kept = tf.where(tf.gather(keep, order, batch_dims=1), taken, tf.fill(tf.shape(taken), ""))
    kept.set_shape([None, max_turns])
    return kept


@keras.saving.register_keras_serializable(package="keras_match")
class DialogPreprocessor(VocabularyPreprocessor):
    """Maps dialog turns (history, last user utterance) to a response-selection model's token ids, and holds the
    task's candidate set.

    Tokens come from `keras_match.text` (the GloVe-style tokenizer), ids from the vocabulary (0 = padding, 1 =
    out of vocabulary).

    Call args:
        x: dict `{"history": texts [batch, turns], "context": texts [batch]}` (`tf.string` tensors, nested lists
            or numpy object arrays; history rows padded at the end with `""`).
        y, sample_weight: optional, passed through.

    Returns:
        `keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)` with `inputs`
        `{"history": int32 [batch, max_turns, max_turn_length], "context": int32 [batch, max_context_length]}`:
        the `max_turns` real turns `kept_turns` keeps of each row (its last ones, or with `history_cut="kb_first"`
        its last utterances and then its latest KB lines that fit), in dialog order from the first column (later
        columns padding: all-zero rows), each turn's first `max_turn_length` tokens; the context's first
        `max_context_length`.

    Args:
        vocabulary: a `keras_match.text.TextEncoder`, a list of words, a vocabulary file, or None (`load_assets`).
        candidates: the candidate response texts, in the task's order (the model's output columns), or None
            (`load_assets`).
        max_turns, max_turn_length, max_context_length, max_candidate_length: ints >= 1 (`DialogSettings`).
        history_cut: what a history longer than `max_turns` loses first: `"oldest"` (its oldest texts) or
            `"kb_first"` (its oldest KB lines; `kept_turns`).
        lowercase: lower-case texts before tokenizing.

    Raises:
        ValueError: a length is not a positive integer; `history_cut` is not one of `HISTORY_CUTS`; an empty
            candidate set or an empty / multi-line candidate;
            the layer is used before it has a vocabulary and candidates; `x` lacks `history` or `context`.
    """

    Settings = DialogSettings
    TEXT_INPUTS = {"history": 2, "context": 1}
    SEQUENCE_INPUTS = ("history", "context")
    MODEL_ARGUMENTS = ("vocab_size", "candidate_ids")
    ASSET_FILES = (VOCABULARY_FILE, CANDIDATES_FILE)
    VOCABULARY_FILE = VOCABULARY_FILE

    def __init__(self, vocabulary=None, candidates=None, max_turns=20, max_turn_length=20, max_context_length=20,
                 max_candidate_length=20, lowercase=True, history_cut="oldest", **kwargs):
        super().__init__(**kwargs)
        lengths = positive_lengths(max_turns=max_turns, max_turn_length=max_turn_length,
                                   max_context_length=max_context_length, max_candidate_length=max_candidate_length)
        self.max_turns, self.max_turn_length, self.max_context_length, self.max_candidate_length = lengths
        check_history_cut(history_cut)
        self.history_cut = history_cut
        self.lowercase = bool(lowercase)
        self.encoder = None
        self.candidates = None
        self._candidate_ids = None
        self._asset = None  # the candidates file of an export (`trackables`)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        if candidates is not None:
            self.set_candidates(candidates)

    # ---- state ------------------------------------------------------------------------------------------------

    def set_candidates(self, candidates):
        """Sets the candidate set: a sequence of texts (the model's output columns, in order)."""
        self.candidates = _check_candidates(candidates)
        self._candidate_ids = None
        self._asset = None

    def set_vocabulary(self, vocabulary):
        """`VocabularyPreprocessor.set_vocabulary`; the candidates' ids are encoded again when next asked for."""
        super().set_vocabulary(vocabulary)
        self._candidate_ids = None

    def extend_vocabulary(self, fresh) -> int:
        """`Preprocessor.extend_vocabulary`, and the candidate set becomes `fresh`'s (the new task's responses:
        the model's output columns)."""
        added = super().extend_vocabulary(fresh)
        self.set_candidates(fresh.candidates)
        return added

    def _check_ready(self):
        if self.encoder is None:
            raise ValueError("DialogPreprocessor has no vocabulary: pass vocabulary= or call load_assets()")
        if self.candidates is None:
            raise ValueError("DialogPreprocessor has no candidate set: pass candidates= or call load_assets()")

    @property
    def num_candidates(self) -> int:
        self._check_ready()
        return len(self.candidates)

    @property
    def candidate_ids(self) -> np.ndarray:
        """int32 `[C, Lc]`: every candidate's token ids, cut to `max_candidate_length` and then to the longest
        candidate (at least one column)."""
        self._check_ready()
        if self._candidate_ids is None:
            ids = self.encoder.encode(self.candidates, self.max_candidate_length).numpy().astype(np.int32)
            longest = max(1, int(np.count_nonzero(ids, axis=1).max()))
            self._candidate_ids = ids[:, :longest]
        return self._candidate_ids

    # ---- what the builder receives ----------------------------------------------------------------------------

    @classmethod
    def default_model_arguments(cls, settings) -> dict:
        """`vocab_size` (the settings') and no candidate ids (the builder then makes an empty candidate set of
        `num_classes` rows, for building without data)."""
        return {"vocab_size": settings.vocab_size, "candidate_ids": None}

    def model_arguments(self) -> dict:
        """`vocab_size` and `candidate_ids` (int32 `[C, Lc]`)."""
        return {"vocab_size": self.vocab_size, "candidate_ids": self.candidate_ids}

    @classmethod
    def from_training(cls, texts: dict, settings: DialogSettings, extra_words=None, candidates=None):
        """The preprocessor of a run: the vocabulary of the training texts (every distinct history turn and
        context, and the candidates; then `extra_words`), the settings' lengths and the candidate set.

        Args:
            texts: `{"history": [n, H], "context": [n], "candidates": [n, C]}` of the training split
                (`ResponseSelectionTask.examples`); the candidate set is the first row of `candidates` (every row
                holds the same set) unless `candidates` is given.
            settings: `DialogSettings`.
            extra_words: optional words to add after the training words.
            candidates: optional, the candidate texts `[C]`.

        Raises:
            ValueError: neither `candidates` nor a `candidates` column with a row.
        """
        if candidates is None:
            column = texts.get("candidates")
            if column is None or len(column) == 0:
                raise ValueError("DialogPreprocessor.from_training needs the candidate set: a 'candidates' column "
                                 "in the training texts, or candidates=")
            candidates = np.asarray(column, dtype=object)[0]
        candidates = _check_candidates(list(candidates))
        history = np.asarray(texts["history"], dtype=object).reshape(-1)
        documents = np.concatenate([np.unique(history[history != ""].astype(str)).astype(object),
                                    np.unique(np.asarray(texts["context"], dtype=object).astype(str)).astype(object),
                                    np.asarray(candidates, dtype=object)])
        encoder = text.TextEncoder.build(documents, extra_words=extra_words, lowercase=settings.lowercase)
        return cls(encoder, candidates, max_turns=settings.max_turns, max_turn_length=settings.max_turn_length,
                   max_context_length=settings.max_context_length,
                   max_candidate_length=settings.max_candidate_length, lowercase=settings.lowercase,
                   history_cut=settings.history_cut)

    # ---- the declared schema ----------------------------------------------------------------------------------

    def model_input_specs(self) -> dict:
        return {"history": tf.TensorSpec([None, None, None], tf.int32, name="history"),
                "context": tf.TensorSpec([None, None], tf.int32, name="context")}

    def sequence_lengths(self) -> dict:
        return {"history": self.max_turn_length, "context": self.max_context_length}

    def trackables(self) -> list:
        """The vocabulary's lookup table, and `candidate_table` (whose file an export copies into its assets as
        `candidates.txt`: what maps the model's output columns, and `choice`, to response texts)."""
        self._check_ready()
        return [self.encoder.table, self.candidate_table]

    @property
    def candidate_table(self) -> tf.lookup.StaticHashTable:
        """int64 candidate index -> its text (`""` outside the set), read from a private copy of `candidates.txt`."""
        self._check_ready()
        if self._asset is None:
            private = tempfile.mkdtemp(prefix="keras_match_candidates_")
            path = os.path.join(private, CANDIDATES_FILE)
            self._write_candidates(path)
            table = tf.lookup.StaticHashTable(
                tf.lookup.TextFileInitializer(path, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER, tf.string,
                                              tf.lookup.TextFileIndex.WHOLE_LINE), default_value="")
            weakref.finalize(table, shutil.rmtree, private, ignore_errors=True)
            self._asset = table
        return self._asset

    def describe(self) -> dict:
        self._check_ready()
        return {
            **super().describe(),
            "max_turns": self.max_turns,
            "history_cut": self.history_cut,
            "max_turn_length": self.max_turn_length,
            "max_context_length": self.max_context_length,
            "max_candidate_length": self.max_candidate_length,
            "lowercase": self.lowercase,
            "vocabulary_file": VOCABULARY_FILE,
            "candidates_file": CANDIDATES_FILE,
            "num_candidates": self.num_candidates,
            "ids": {"padding": text.PAD_ID, "unknown": text.OOV_ID, "first_word": 2},
        }

    # ---- the mapping ------------------------------------------------------------------------------------------

    def shown_texts(self, texts) -> dict:
        """The given texts and `candidates` `[n, C]`: the candidate set (the model's own) for every example."""
        self._check_ready()
        shown = dict(texts)
        count = len(np.asarray(texts["context"], dtype=object).reshape(-1))
        shown["candidates"] = np.empty((count, len(self.candidates)), dtype=object)
        shown["candidates"][:] = list(self.candidates)
        return shown

    def call(self, x, y=None, sample_weight=None):
        self._check_ready()
        self.check_texts(x)
        history = kept_turns(text.as_string_batch(x["history"], rank=2, name="history"), self.max_turns,
                             self.history_cut)  # [batch, max_turns]
        ids = self.encoder.encode(tf.reshape(history, [-1]), self.max_turn_length)
        inputs = {
            "history": tf.reshape(ids, [-1, self.max_turns, self.max_turn_length]),
            "context": self.encoder.encode(text.as_string_batch(x["context"], name="context"), self.max_context_length),
        }
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    # ---- saving -----------------------------------------------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(max_turns=self.max_turns, max_turn_length=self.max_turn_length,
                      max_context_length=self.max_context_length, max_candidate_length=self.max_candidate_length,
                      lowercase=self.lowercase, history_cut=self.history_cut, vocabulary=None,
                      candidates=None)  # both are assets
        return config

    def save_assets(self, dir_path):
        """Writes `vocabulary.txt` and `candidates.txt` (one candidate per line, in order) into `dir_path`."""
        self._check_ready()
        directory = pathlib.Path(dir_path)
        storage.atomic_write(directory / VOCABULARY_FILE, self.encoder.save_vocabulary)
        storage.atomic_write(directory / CANDIDATES_FILE, self._write_candidates)

    def _write_candidates(self, path):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(candidate + "\n" for candidate in self.candidates)

    def load_assets(self, dir_path):
        """Reads the files `save_assets` wrote (the vocabulary through a private copy: `dir_path` may be temporary).

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ValueError: a file is malformed (the message names file and line).
        """
        directory = pathlib.Path(dir_path)
        for name, what in ((VOCABULARY_FILE, "vocabulary"), (CANDIDATES_FILE, "candidate set")):
            if not (directory / name).is_file():
                raise FileNotFoundError(f"{directory / name} not found: the preprocessor's {what} must be saved "
                                        "with it")
        candidates = read_candidates_file(directory / CANDIDATES_FILE)
        private = tempfile.mkdtemp(prefix="keras_match_preprocessor_")
        try:
            shutil.copyfile(directory / VOCABULARY_FILE, os.path.join(private, VOCABULARY_FILE))
            self.set_vocabulary(os.path.join(private, VOCABULARY_FILE))
        except ValueError as error:
            shutil.rmtree(private, ignore_errors=True)
            raise ValueError(str(error).replace(os.path.join(private, VOCABULARY_FILE),
                                                str(directory / VOCABULARY_FILE))) from None
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        weakref.finalize(self.encoder.table, shutil.rmtree, private, ignore_errors=True)
        self.set_candidates(candidates)


from keras_match import preprocessors  # noqa: E402  (registers it once the class exists)

preprocessors.register("dialog", DialogPreprocessor)
