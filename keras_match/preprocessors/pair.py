"""The pair preprocessor: raw text pairs in, a matching model's inputs out, the same object in training and serving.

`PairPreprocessor` is keras-hub's preprocessor idea for text pairs: a Keras layer that owns the tokenizer and
vocabulary (`keras_match.text.TextEncoder`), the truncation lengths and the optional word-overlap features
(`keras_match.text.features.OverlapFeatures`), and maps `{"question": tf.string [batch], "answer": tf.string [batch]}`
to the model's inputs. Training maps it over a `tf.data` dataset, `Run.score` / `predict` / evaluation call it
eagerly, and the exported SavedModel signatures call it in the graph, so raw text becomes ids one way only.

Its `tokenizer` says which ids it makes: `"words"` (the default), the GloVe-style word tokens and the run's word
vocabulary; or the name of a pretrained encoder (`"minilm-l6"`, `keras_match.encoders.pretrained.names()`), that
encoder's WordPiece ids (`keras_match.text.WordPieceEncoder`: `[CLS] pieces [SEP]`), for a model over a
transformer input encoder. The pair features are word-level with either tokenizer.

Like keras-hub's tokenizers, the vocabulary is not part of `get_config()`: `save_assets` writes it (and the
overlap features' document frequencies) as files, `load_assets` reads them back. `save(directory)` /
`PairPreprocessor.load(directory)` store the config as `preprocessor.json` beside those files, which is how a
run directory carries its preprocessor.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
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
from keras_match.preprocessors.base import Preprocessor
from keras_match.preprocessors.base import vocabulary_encoder
from keras_match.settings import POSITIVE_INT
from keras_match.settings import PreprocessingSettings
from keras_match.settings import Rule
from keras_match.text.wordpiece import WORDS
from keras_match.text.wordpiece import check_tokenizer
from keras_match.text.wordpiece import tokenizer_names

__all__ = ["VOCABULARY_FILE", "FREQUENCIES_FILE", "PAIR_FEATURES", "WORDS", "PairSettings", "PairPreprocessor",
           "tokenizer_names", "check_tokenizer"]

VOCABULARY_FILE = "vocabulary.txt"
FREQUENCIES_FILE = "document_frequencies.tsv"

PAIR_FEATURES = {"overlap_features": 4, "bm25_feature": 1}
"""The pair-feature switches of the preprocessing settings and the width each adds to the model's `features`
input: the four word-overlap features of Severyn & Moschitti, the answer's BM25 score."""

@dataclasses.dataclass(frozen=True)
class PairSettings(PreprocessingSettings):
    """The preprocessing settings of a pair model (`PreprocessingSettings` plus these).

    Attributes:
        max_question_length: tokens kept of each question (first text).
        max_answer_length: tokens kept of each answer (second text).
        overlap_features: compute the four word-overlap features (`keras_match.text.features`).
        bm25_feature: compute the answer's BM25 score for the question.
        tokenizer: `"words"` (the word tokens and the run's vocabulary), or a pretrained encoder's name
            (`"minilm-l6"`): its WordPiece ids, the truncation lengths counting pieces with `[CLS]` and `[SEP]`,
            `vocab_size` the encoder's (`PairPreprocessor`).
    """

    RULES: typing.ClassVar[dict] = {
        **PreprocessingSettings.RULES,
        "max_question_length": POSITIVE_INT,
        "max_answer_length": POSITIVE_INT,
        "overlap_features": Rule(lambda v: isinstance(v, bool), "true or false"),
        "bm25_feature": Rule(lambda v: isinstance(v, bool), "true or false"),
    }

    max_question_length: int = 40
    max_answer_length: int = 60
    overlap_features: bool = False
    bm25_feature: bool = False
    tokenizer: str = WORDS

    def __post_init__(self):
        super().__post_init__()
        if self.tokenizer != WORDS and self.tokenizer not in tokenizer_names():
            raise ValueError(f"setting tokenizer={json.dumps(self.tokenizer)}: must be one of {tokenizer_names()}")


def positive_lengths(**lengths) -> tuple:
    """The truncation lengths given by name (`max_question_length=40, ...`), as ints, in the order given.

    Raises:
        ValueError: one is not a positive integer (a bool is not one); the message names it.
    """
    for name, value in lengths.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return tuple(int(value) for value in lengths.values())


class VocabularyPreprocessor(Preprocessor):
    """A preprocessor whose token ids come from one `keras_match.text.TextEncoder` vocabulary: what
    `PairPreprocessor` and `keras_match.preprocessors.dialog.DialogPreprocessor` share (`set_vocabulary` and
    `encoder`, which `Preprocessor.extend_vocabulary` uses, and `vocab_size`). Not registered: a subclass sets
    `lowercase` and `encoder` in its `__init__` and defines `_check_ready` (ValueError while an asset is missing).
    """

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary: a `TextEncoder`, a list of words or a vocabulary file (read in place)."""
        self.encoder = vocabulary_encoder(vocabulary, self.lowercase)

    @property
    def vocab_size(self) -> int:
        """Number of token ids (the model's embedding rows): the vocabulary plus padding and OOV."""
        self._check_ready()
        return self.encoder.vocab_size


@keras.saving.register_keras_serializable(package="keras_match")
class PairPreprocessor(VocabularyPreprocessor):
    """Maps raw (question, answer) text pairs to a matching model's inputs.

    Inputs are tokenized with the GloVe-style tokenizer of `keras_match.text`, looked up in the vocabulary
    (0 = padding, 1 = out of vocabulary) and truncated / padded to the maximum lengths. With
    `overlap_features=True` it also computes the four word-overlap features of the truncated texts (the tokens
    the model sees), and with `bm25_feature=True` the answer's BM25 score for the question, both from the
    training texts' document frequencies (and, for BM25, their average length).

    With `tokenizer` a pretrained encoder's name (`"minilm-l6"`) the ids are that encoder's WordPiece ids
    instead (`keras_match.text.WordPieceEncoder`, the encoder's `vocab.txt`: 0 = `[PAD]`, 100 = `[UNK]`,
    101 = `[CLS]`, 102 = `[SEP]` for all-MiniLM-L6-v2): `[CLS]`, the text's pieces, `[SEP]`, the maximum lengths
    counting every id, `[CLS]` and `[SEP]` included. The vocabulary is the encoder's, never built from training
    texts, and is saved as the vocabulary asset like a word vocabulary (a run folder and an export tokenize
    without the encoder's folder). The pair features stay word-level: the same GloVe-style tokens, the same
    truncation (the first `max_question_length` / `max_answer_length` words) and so the same values as with
    `tokenizer="words"`, whatever number of pieces the ids keep.

    Call args:
        x: dict `{"question": texts, "answer": texts}`, each a `tf.string` tensor `[batch]` (symbolic or eager),
            a list of `str` or a 1-D numpy array of `str`, of the same length. A dict, never a tuple: `tf.data`
            unpacks tuples and keras-hub reads a 2-tuple as `(x, y)`.
        y: optional labels, passed through.
        sample_weight: optional sample weights, passed through.

    Returns:
        `keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)`: `inputs` alone without `y`, else
        `(inputs, y)` or `(inputs, y, sample_weight)`; `inputs` is
        `{"question": int32 [batch, max_question_length], "answer": int32 [batch, max_answer_length]}` plus
        `"features"`: float32 `[batch, num_features]`, the four overlap features then BM25, each when asked
        (`[batch, 4]`, `[batch, 1]` or `[batch, 5]`). Empty texts give all-padding rows (and zero features);
        texts longer than the maximum keep their first tokens. With WordPiece, every id row starts with `[CLS]`
        and holds `[SEP]` after its last piece (an empty text gives `[CLS] [SEP] 0 ...`), then padding 0.

    Args:
        vocabulary: with `tokenizer="words"`: a `keras_match.text.TextEncoder`, a list of words or a vocabulary
            file path; with WordPiece: a `keras_match.text.WordPieceEncoder` (of that encoder), or the encoder's
            tokens or vocabulary file (`vocab.txt`, checked against its pinned sha256); or None (then
            `load_assets` must provide it before the layer is called).
        max_question_length: int >= 1 (>= 2 with WordPiece), tokens kept of each question.
        max_answer_length: int >= 1 (>= 2 with WordPiece), tokens kept of each answer.
        lowercase: lower-case texts before tokenizing (GloVe 6B is lower-case); with WordPiece, for the pair
            features only (the encoder's `tokenizer_config.json` says how its ids lower-case).
        overlap_features: compute the four word-overlap features (`keras_match.text.features`).
        document_frequencies: with either feature, a `keras_match.text.features.OverlapFeatures` or the path of
            its frequency file (None: `load_assets` provides it).
        bm25_feature: compute the BM25 score of the answer for the question (`OverlapFeatures.bm25`).
        tokenizer: `"words"` or a pretrained encoder's name (`tokenizer_names()`), see above.
        wordpiece: with WordPiece, the encoder's normalisation and special tokens
            (`WordPieceEncoder.get_config()`, which `get_config` stores), or None: those of the given encoder, else
            BERT uncased's (all-MiniLM-L6-v2's). None with `tokenizer="words"`.

    Raises:
        ValueError: a length is not a positive integer (or below 2 with WordPiece); an unknown `tokenizer` (the
            message lists the valid ones); a vocabulary of the other kind, of another encoder or not the pinned
            one; the layer is called before it has a vocabulary (or, with `overlap_features`, document
            frequencies); `x` lacks `question` or `answer`.
        TypeError: `x` is not a dict, or holds non-strings (see `keras_match.text.tokenize`).

    Examples:
    >>> preprocessor = PairPreprocessor(["cat", "sat"], max_question_length=4, max_answer_length=6)
    >>> preprocessor({"question": ["the cat ?"], "answer": ["a cat sat ."]})["answer"].numpy().tolist()
    [[1, 2, 3, 1, 0, 0]]
    >>> ds = tf.data.Dataset.from_tensor_slices(({"question": qs, "answer": as_}, labels))  # doctest: +SKIP
    >>> ds = ds.batch(64).map(preprocessor)  # doctest: +SKIP
    >>> encoder = text.WordPieceEncoder.from_pretrained("minilm-l6")  # doctest: +SKIP
    >>> wordpiece = PairPreprocessor(encoder, 8, 8, tokenizer="minilm-l6")  # doctest: +SKIP
    >>> ids = wordpiece({"question": ["the cat ?"], "answer": ["a cat sat ."]})  # doctest: +SKIP
    >>> ids["answer"].numpy().tolist()  # doctest: +SKIP
    [[101, 1037, 4937, 2938, 1012, 102, 0, 0]]

    Reference:
        keras-hub's `Preprocessor` (`keras_hub/src/models/preprocessor.py`); the overlap features: Severyn &
        Moschitti, SIGIR 2015.
    """

    Settings = PairSettings
    TEXT_INPUTS = {"question": 1, "answer": 1}
    SEQUENCE_INPUTS = ("answer", "question")  # bucketing sorts by the answer first, then the question
    MODEL_ARGUMENTS = ("vocab_size", "num_features")
    ASSET_FILES = (VOCABULARY_FILE, FREQUENCIES_FILE)
    VOCABULARY_FILE = VOCABULARY_FILE
    ranking_inputs = ("question", "answer")

    def __init__(
        self,
        vocabulary=None,
        max_question_length=40,
        max_answer_length=60,
        lowercase=True,
        overlap_features=False,
        document_frequencies=None,
        bm25_feature=False,
        tokenizer=WORDS,
        wordpiece=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_question_length, self.max_answer_length = positive_lengths(
            max_question_length=max_question_length, max_answer_length=max_answer_length)
        self.tokenizer = check_tokenizer(tokenizer)
        if self.tokenizer == WORDS and wordpiece is not None:
            raise ValueError("wordpiece= (WordPiece settings) needs tokenizer= a pretrained encoder's name, "
                             f"{tokenizer_names()[1:]}")
        self.wordpiece = dict(wordpiece) if wordpiece is not None else None
        if self.tokenizer != WORDS:
            for name, length in (("max_question_length", self.max_question_length),
                                 ("max_answer_length", self.max_answer_length)):
                if length < 2:
                    raise ValueError(f"{name} must be at least 2 with the WordPiece tokenizer {self.tokenizer!r} "
                                     f"(room for [CLS] and [SEP]), got {length}")
        self.lowercase = bool(lowercase)
        self.overlap_features = bool(overlap_features)
        self.bm25_feature = bool(bm25_feature)
        self.encoder = None
        self.overlap = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        if document_frequencies is not None:
            self.set_document_frequencies(document_frequencies)

    # ---- state (the vocabulary: `VocabularyPreprocessor`) ------------------------------------------------------

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary. Words: a `TextEncoder`, a list of words or a vocabulary file (read in place).
        WordPiece: a `WordPieceEncoder`, or the tokens or vocabulary file of the encoder (copied), which must be
        the pinned vocabulary of `tokenizer` (its sha256).

        Raises:
            ValueError: an encoder of the other kind or of another pretrained encoder, settings that differ from
                `wordpiece`, or a vocabulary that is not the pinned one (the message names the file).
        """
        if self.tokenizer == WORDS:
            if isinstance(vocabulary, text.WordPieceEncoder):
                raise ValueError("a WordPieceEncoder needs tokenizer= its encoder's name "
                                 f"({vocabulary.name or tokenizer_names()[1:]}), not {WORDS!r}")
            return super().set_vocabulary(vocabulary)
        if isinstance(vocabulary, text.TextEncoder):
            raise ValueError(f"tokenizer {self.tokenizer!r} makes WordPiece ids: pass a WordPieceEncoder, its "
                             "tokens or its vocab.txt, not a word vocabulary (TextEncoder)")
        if isinstance(vocabulary, text.WordPieceEncoder):
            encoder = vocabulary
            if encoder.name not in (None, self.tokenizer):
                raise ValueError(f"the WordPieceEncoder is {encoder.name!r}'s, the tokenizer {self.tokenizer!r}")
            if self.wordpiece is not None and encoder.get_config() != self.wordpiece:
                raise ValueError(f"the WordPieceEncoder's settings {encoder.get_config()} differ from "
                                 f"wordpiece={self.wordpiece}")
        else:
            encoder = text.WordPieceEncoder(vocabulary, **(self.wordpiece or {}), name=self.tokenizer)
        self._check_pinned(encoder, vocabulary)
        self.wordpiece = encoder.get_config()
        self.encoder = encoder

    def _check_pinned(self, encoder, source):
        """Raises ValueError unless `encoder`'s vocabulary file is the pinned `vocab.txt` of `tokenizer`."""
        from keras_match.encoders.pretrained import pretrained

        entry = pretrained(self.tokenizer)
        pinned = next(file for file in entry.files if file.origin_path == "vocab.txt")
        with open(encoder.vocabulary_path, "rb") as f:
            actual = hashlib.sha256(f.read()).hexdigest()
        if actual != pinned.sha256:
            where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "the vocabulary"
            raise ValueError(f"{where} is not the WordPiece vocabulary of {self.tokenizer} ({encoder.vocab_size} "
                             f"tokens, sha256 {actual}; the pinned vocab.txt of {entry.repo} has sha256 "
                             f"{pinned.sha256})")

    def extend_vocabulary(self, fresh) -> int:
        """`Preprocessor.extend_vocabulary` for words. A WordPiece vocabulary is the pretrained encoder's and
        never grows: `fresh` must use the same tokenizer (then 0 words are appended).

        Raises:
            TypeError: `fresh` is of another preprocessor class.
            ValueError: the two use different tokenizers, or (words) lower-case differently.
        """
        if isinstance(fresh, PairPreprocessor) and (self.tokenizer != WORDS or fresh.tokenizer != WORDS):
            if fresh.tokenizer != self.tokenizer:
                raise ValueError(f"cannot extend a {self.tokenizer!r} vocabulary from a {fresh.tokenizer!r} one "
                                 "(the tokenizer setting differs)")
            return 0
        return super().extend_vocabulary(fresh)

    def set_document_frequencies(self, frequencies):
        """Sets the overlap features' document frequencies: an `OverlapFeatures` or its file (read in place)."""
        from keras_match.text.features import OverlapFeatures

        if not isinstance(frequencies, OverlapFeatures):
            frequencies = OverlapFeatures.from_file(frequencies, lowercase=self.lowercase)
        if frequencies.lowercase != self.lowercase:
            raise ValueError(f"the document frequencies have lowercase={frequencies.lowercase}, the preprocessor "
                             f"lowercase={self.lowercase}")
        self.overlap = frequencies

    @property
    def feature_names(self) -> list:
        """The columns of the `features` input it makes: the overlap features, then `"bm25"`, each if asked."""
        from keras_match.text.features import FEATURE_NAMES

        return (list(FEATURE_NAMES) if self.overlap_features else []) + (["bm25"] if self.bm25_feature else [])

    @property
    def num_features(self) -> int:
        """Width of the `features` input it makes (0: none)."""
        return len(self.feature_names)

    def lookup_tables(self):
        """The lookup tables the graph reads (an export must track them). With WordPiece, the encoder's
        token -> id table is not read by the tokenizer (its model is a graph constant); tracked, it carries the
        vocabulary file into the SavedModel's assets."""
        self._check_ready()
        tables = [self.encoder.table]
        if self.overlap is not None:
            tables += [self.overlap.idf_table, self.overlap.stop_table]
        return tables

    def _check_ready(self):
        if self.encoder is None:
            raise ValueError("PairPreprocessor has no vocabulary: pass vocabulary= or call load_assets()")
        if self.num_features and self.overlap is None:
            raise ValueError(f"PairPreprocessor with the features {self.feature_names} has no document "
                             "frequencies: pass document_frequencies= or call load_assets()")

    # ---- signatures -------------------------------------------------------------------------------------------

    def model_input_specs(self) -> dict:
        """The model inputs it makes: int32 ids `[None, None]` (trimmed lengths) and float32 `features`."""
        specs = {key: tf.TensorSpec([None, None], tf.int32, name=key) for key in ("question", "answer")}
        if self.num_features:
            specs["features"] = tf.TensorSpec([None, self.num_features], tf.float32, name="features")
        return specs

    def sequence_lengths(self) -> dict:
        """`{"question": max_question_length, "answer": max_answer_length}`."""
        return {"question": self.max_question_length, "answer": self.max_answer_length}

    def trackables(self) -> list:
        """The lookup tables the graph reads, and the document frequencies (whose file becomes an asset)."""
        return self.lookup_tables() + ([self.overlap] if self.overlap is not None else [])

    def describe(self) -> dict:
        """The export metadata's facts: the tokenizer, truncation lengths, vocabulary (size, file, ids,
        lowercase), with WordPiece its settings (`wordpiece`: `WordPieceEncoder.get_config()` and the suffix
        indicator) and the special ids (`ids`: padding, unknown, cls, sep), and the pair features (names,
        document frequencies file, BM25 parameters)."""
        facts = {
            "tokenizer": self.tokenizer,
            "max_question_length": int(self.max_question_length),
            "max_answer_length": int(self.max_answer_length),
            "vocab_size": int(self.vocab_size),
            "lowercase": bool(self.lowercase),
            "vocabulary_file": os.path.basename(self.encoder.vocabulary_path),
            "ids": {"padding": text.PAD_ID, "unknown": text.OOV_ID, "first_word": 2},
            "num_features": self.num_features,
        }
        if self.tokenizer != WORDS:
            facts["ids"] = self.encoder.special_ids
            facts["wordpiece"] = {**self.encoder.get_config(), "suffix_indicator": text.wordpiece.SUFFIX_INDICATOR}
        if self.num_features:
            from keras_match.text.features import BM25_B, BM25_K1

            facts["overlap_features"] = {  # the pair features (the name predates BM25)
                "names": self.feature_names,
                "document_frequencies_file": os.path.basename(self.overlap.path),
                "num_documents": int(self.overlap.num_documents),
                "lowercase": bool(self.overlap.lowercase),
            }
            if self.bm25_feature:
                facts["overlap_features"]["bm25"] = {"k1": BM25_K1, "b": BM25_B,
                                                     "average_length": self.overlap.average_length}
        return facts

    # ---- made from training texts -------------------------------------------------------------------------

    @classmethod
    def default_model_arguments(cls, settings) -> dict:
        """`vocab_size` (the settings'; with WordPiece the encoder's, read from its pinned `vocab.txt`, which
        `keras_match.encoders.pretrained.locate` finds) and `num_features` (4 with `overlap_features`, 1 more
        with `bm25_feature`)."""
        width = sum(w for key, w in PAIR_FEATURES.items() if getattr(settings, key))
        vocab_size = settings.vocab_size
        if getattr(settings, "tokenizer", WORDS) != WORDS:
            vocab_size = text.wordpiece.pretrained_vocab_size(settings.tokenizer)
        return {"vocab_size": vocab_size, "num_features": width}

    @classmethod
    def describe_argument(cls, argument) -> str:
        return "overlap_features / bm25_feature" if argument == "num_features" else argument

    def model_arguments(self) -> dict:
        """`vocab_size` and `num_features` of this preprocessor (the builder's data arguments)."""
        return {"vocab_size": self.vocab_size, "num_features": self.num_features}

    @classmethod
    def from_training(cls, texts: dict, settings: PairSettings, extra_words=None, encoders_dir=None):
        """The preprocessor of a run: the vocabulary of the training texts (followed by `extra_words`, the
        pretrained vectors' words for frozen embeddings), the settings' truncation lengths and, if they ask,
        the word-overlap features and BM25 with IDF (and average length) from the training texts only.

        The training documents are each distinct question once and every answer, as Severyn & Moschitti count
        them for the overlap features; the vocabulary is built from the same texts. With a WordPiece
        `settings.tokenizer` no vocabulary is built: the encoder's is read from its folder
        (`keras_match.text.WordPieceEncoder.from_pretrained`); the document frequencies are counted as above.

        Args:
            texts: `{"question": texts [n], "answer": texts [n]}` of the training split.
            settings: `PairSettings`.
            extra_words: optional list of words to add after the training words (words only).
            encoders_dir: with WordPiece, the folder holding the pretrained encoders' folders, or None
                (`$KERAS_MATCH_ENCODERS`, else the user cache; see `keras_match.encoders.pretrained.locate`).

        Raises:
            ValueError: `extra_words` with a WordPiece tokenizer (its vocabulary is fixed).
            FileNotFoundError, keras_match.datasets.download.ChecksumError: the encoder's files, as `locate`.
        """
        tokenizer = getattr(settings, "tokenizer", WORDS)
        if tokenizer != WORDS and extra_words is not None and len(extra_words):
            raise ValueError(f"extra_words (the word vectors' words) extend a word vocabulary; the tokenizer "
                             f"{tokenizer!r} has the encoder's fixed WordPiece vocabulary")
        documents = None
        if tokenizer == WORDS or settings.overlap_features or settings.bm25_feature:
            documents = np.concatenate([np.unique(np.asarray(texts["question"], dtype=object)),
                                        np.asarray(texts["answer"], dtype=object)])
        frequencies = None
        if settings.overlap_features or settings.bm25_feature:
            from keras_match.text.features import OverlapFeatures

            # df, N and average length of the training texts, counted in the vocabulary's letter case
            frequencies = OverlapFeatures.build(documents, lowercase=settings.lowercase)
        if tokenizer == WORDS:
            vocabulary = text.TextEncoder.build(documents, extra_words=extra_words, lowercase=settings.lowercase)
        else:
            vocabulary = text.WordPieceEncoder.from_pretrained(tokenizer, encoders_dir)
        return cls(
            vocabulary,
            max_question_length=settings.max_question_length,
            max_answer_length=settings.max_answer_length,
            lowercase=settings.lowercase,
            overlap_features=settings.overlap_features,
            bm25_feature=settings.bm25_feature,
            document_frequencies=frequencies,
            tokenizer=tokenizer,
        )

    @classmethod
    def from_legacy_config(cls, directory, settings: dict):
        """The preprocessor of a run written before `preprocessor.json` existed: its vocabulary and document
        frequencies files in `directory` and the truncation lengths and pair features of its settings
        (`config.json`'s `settings`, `keras_match.artifacts.runs.read_config`).

        Raises:
            FileNotFoundError: the vocabulary, or the document frequencies of a model with pair features, is
                missing (the message names the file).
        """
        directory = pathlib.Path(directory)
        preprocessing = settings["preprocessing"]
        features = bool(preprocessing.get("overlap_features")) or bool(preprocessing.get("bm25_feature"))
        for name, needed, what in ((VOCABULARY_FILE, True, "its vocabulary"),
                                   (FREQUENCIES_FILE, features, "the document frequencies of its pair features")):
            if needed and not (directory / name).exists():
                raise FileNotFoundError(f"{directory / name} not found: the run's model needs {what}")
        return cls(
            vocabulary=directory / VOCABULARY_FILE,
            max_question_length=preprocessing["max_question_length"],
            max_answer_length=preprocessing["max_answer_length"],
            lowercase=preprocessing.get("lowercase", True),
            overlap_features=bool(preprocessing.get("overlap_features")),
            bm25_feature=bool(preprocessing.get("bm25_feature")),
            document_frequencies=directory / FREQUENCIES_FILE if features else None,
        )

    # ---- the mapping ------------------------------------------------------------------------------------------

    def call(self, x, y=None, sample_weight=None):
        self._check_ready()
        self.check_texts(x)
        questions = text.as_string_batch(x["question"])
        answers = text.as_string_batch(x["answer"])
        inputs = {
            "question": self.encoder.encode(questions, self.max_question_length),
            "answer": self.encoder.encode(answers, self.max_answer_length),
        }
        features = []
        if self.num_features:  # the tokens the model sees, tokenized once for every feature
            tokens = self.overlap.tokens(questions, answers, self.max_question_length, self.max_answer_length)
        if self.overlap_features:
            features.append(self.overlap.from_tokens(*tokens))
        if self.bm25_feature:
            features.append(self.overlap.bm25_from_tokens(*tokens)[:, None])
        if features:
            inputs["features"] = tf.concat(features, axis=1) if len(features) > 1 else features[0]
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    # ---- saving -----------------------------------------------------------------------------------------------

    def get_config(self):
        """The layer's config; the vocabulary and document frequencies are assets (`save_assets`). `tokenizer`
        and `wordpiece` are in it only with WordPiece: a word preprocessor's config is the one earlier versions
        of keras-match wrote, which they read too."""
        config = super().get_config()
        config.update(
            max_question_length=self.max_question_length,
            max_answer_length=self.max_answer_length,
            lowercase=self.lowercase,
            overlap_features=self.overlap_features,
            bm25_feature=self.bm25_feature,
            vocabulary=None,  # an asset (save_assets), as keras-hub's tokenizers do
            document_frequencies=None,
        )
        if self.tokenizer != WORDS:  # a word preprocessor's config stays what every earlier version reads
            config.update(tokenizer=self.tokenizer, wordpiece=dict(self.wordpiece))
        return config

    def save_assets(self, dir_path):
        """Writes `vocabulary.txt` (and `document_frequencies.tsv` with features) into `dir_path`; with WordPiece
        `vocabulary.txt` is the encoder's `vocab.txt`, byte for byte."""
        self._check_ready()
        directory = pathlib.Path(dir_path)
        storage.atomic_write(directory / VOCABULARY_FILE, self.encoder.save_vocabulary)
        if self.num_features:
            storage.atomic_write(directory / FREQUENCIES_FILE, self.overlap.save)

    def load_assets(self, dir_path):
        """Reads the files `save_assets` wrote (copied to a private folder: `dir_path` may be temporary).

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ValueError: a file is malformed (the message names file and line), or, with WordPiece, is not the
                pinned vocabulary of the tokenizer's encoder.
        """
        directory = pathlib.Path(dir_path)
        needed = [VOCABULARY_FILE] + ([FREQUENCIES_FILE] if self.num_features else [])
        for name in needed:
            if not (directory / name).is_file():
                raise FileNotFoundError(f"{directory / name} not found: the preprocessor's "
                                        f"{'vocabulary' if name == VOCABULARY_FILE else 'document frequencies'} "
                                        "must be saved with it")
        copies = {}
        try:
            for name in needed:
                copies[name] = tempfile.mkdtemp(prefix="keras_match_preprocessor_")
                shutil.copyfile(directory / name, os.path.join(copies[name], name))
            self.set_vocabulary(os.path.join(copies[VOCABULARY_FILE], VOCABULARY_FILE))
            # each copy must outlive the table that reads it (an export copies the file): removed with that table
            weakref.finalize(self.encoder.table, shutil.rmtree, copies.pop(VOCABULARY_FILE), ignore_errors=True)
            if self.num_features:
                self.set_document_frequencies(os.path.join(copies[FREQUENCIES_FILE], FREQUENCIES_FILE))
                weakref.finalize(self.overlap.idf_table, shutil.rmtree, copies.pop(FREQUENCIES_FILE),
                                 ignore_errors=True)
        except ValueError as error:  # name the file of `dir_path`, not its private copy
            message = str(error)
            for name, private in copies.items():
                message = message.replace(os.path.join(private, name), str(directory / name))
            raise ValueError(message) from None
        finally:  # the copies no table owns: a file failed to copy or to load
            for private in copies.values():
                shutil.rmtree(private, ignore_errors=True)


from keras_match import preprocessors  # noqa: E402  (registers it once the class exists)

preprocessors.register("pair", PairPreprocessor)
