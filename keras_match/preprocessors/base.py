"""The preprocessor base class: the declared input schema shared by training, evaluation, export and serving.

A preprocessor is keras-hub's idea (`keras_hub/src/models/preprocessor.py`): a Keras layer that owns the
tokenizer, the vocabulary and the truncation lengths, is mapped over a `tf.data` dataset in training and called
inside the exported SavedModel, so raw text becomes model inputs one way only. Each subclass declares:

- `TEXT_INPUTS`: its raw-text inputs, `{name: rank}` (rank 1: one text per example, `tf.string [batch]`;
  rank 2: several, `[batch, n]`). A task's examples (`keras_match.tasks`) give texts under these names;
- `model_input_specs()`: the model inputs it makes (token ids, features), as `tf.TensorSpec`s;
- `SEQUENCE_INPUTS`: the token-id inputs, in the order batches are bucketed by (the first is the longest text)
  and `sequence_lengths()`, their truncation lengths;
- `Settings`: its preprocessing settings (a dataclass of `keras_match.settings`), `MODEL_ARGUMENTS` (what it
  gives the builder: `vocab_size`, ...), and `from_training(texts, settings, extra_words)`, which makes it from a
  training split's texts;
- `ASSET_FILES`: the files `save_assets` may write beside `preprocessor.json` (`VOCABULARY_FILE` among them);
- `ranking_inputs`: for ranking tasks, the names of the query input and the candidate input (`("question",
  "answer")`), which the export's `rank` signature uses; None when its examples carry their own candidates.

Like keras-hub's tokenizers, a vocabulary is not part of `get_config()`: `save_assets` writes it as files and
`load_assets` reads them. `save(directory)` / `Preprocessor.load(directory)` store the config as
`preprocessor.json` beside those files, which is how a run directory carries its preprocessor.
"""

from __future__ import annotations

import json
import pathlib
import typing

import keras
import tensorflow as tf

from keras_match.artifacts import storage
from keras_match.settings import PreprocessingSettings

__all__ = ["CONFIG_FILE", "Preprocessor", "trim_padding"]

CONFIG_FILE = "preprocessor.json"


def trim_padding(inputs, sequence_inputs):
    """Cuts the padding columns every row shares from the token-id inputs; other inputs are kept whole.

    Batches then cost what their longest text costs; padding never changes a model's output.

    Args:
        inputs: dict of model inputs; the `sequence_inputs` are int32 ids `[..., length]` (padding 0 only at
            the end of a row).
        sequence_inputs: the names of the token-id inputs.

    Returns:
        The same dict with each id tensor cut to its longest row (at least one column, so an empty batch or
        all-padding rows keep a valid shape).
    """
    trimmed = dict(inputs)
    for key in sequence_inputs:
        ids = tf.convert_to_tensor(inputs[key])
        length = tf.reduce_max(tf.math.count_nonzero(ids, axis=-1, dtype=tf.int32))  # int32 min when empty
        trimmed[key] = ids[..., : tf.maximum(length, 1)]
    return trimmed


def vocabulary_encoder(vocabulary, lowercase):
    """The `keras_match.text.TextEncoder` of `vocabulary`: a `TextEncoder` (kept), a list of words, or a vocabulary
    file (read in place); its lowercasing must be `lowercase`.

    Raises:
        ValueError: an encoder given with other lowercasing.
    """
    import os

    from keras_match import text

    if isinstance(vocabulary, text.TextEncoder):
        encoder = vocabulary
    elif isinstance(vocabulary, (str, os.PathLike)):
        encoder = text.TextEncoder.from_file(vocabulary, lowercase=lowercase)
    else:
        encoder = text.TextEncoder(list(vocabulary), lowercase=lowercase)
    if encoder.lowercase != lowercase:
        raise ValueError(f"the vocabulary's encoder has lowercase={encoder.lowercase}, the preprocessor "
                         f"lowercase={lowercase}")
    return encoder


class Preprocessor(keras.layers.Layer):
    """Base class of the preprocessors (see the module docstring for what a subclass declares).

    Call args (of every subclass):
        x: dict `{name: texts}` with one entry per `TEXT_INPUTS` name: `tf.string` tensors, lists of `str` or
            numpy object arrays. A dict, never a tuple: `tf.data` unpacks tuples and keras-hub reads a 2-tuple
            as `(x, y)`.
        y, sample_weight: optional, passed through.

    Returns:
        `keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)`, `inputs` the dict of model inputs.
    """

    Settings: typing.ClassVar[type] = PreprocessingSettings
    TEXT_INPUTS: typing.ClassVar[dict] = {}
    SEQUENCE_INPUTS: typing.ClassVar[tuple] = ()
    MODEL_ARGUMENTS: typing.ClassVar[tuple] = ("vocab_size",)
    ASSET_FILES: typing.ClassVar[tuple] = ()
    VOCABULARY_FILE: typing.ClassVar[str] = "vocabulary.txt"
    ranking_inputs: typing.ClassVar[tuple | None] = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # as keras-hub's preprocessing layers: string inputs, no conversion to float tensors, nothing to build
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    # ---- what the builder receives ----------------------------------------------------------------------------

    @classmethod
    def default_model_arguments(cls, settings) -> dict:
        """The builder's data arguments for a model made without a preprocessor (`keras_match.zoo.load`)."""
        return {"vocab_size": settings.vocab_size}

    @classmethod
    def describe_argument(cls, argument) -> str:
        """Which preprocessing settings give the builder `argument` (for error messages)."""
        return argument

    def model_arguments(self) -> dict:
        """The builder's data arguments for this preprocessor's inputs (`vocab_size`, ...)."""
        return {"vocab_size": self.vocab_size}

    @classmethod
    def from_training(cls, texts: dict, settings, extra_words=None):
        """The preprocessor of a run, made from its training texts (`{name: texts}`) and settings.

        `extra_words`: words that join the training words in the vocabulary (the pretrained vectors' words).
        """
        raise NotImplementedError

    def extend_vocabulary(self, fresh) -> int:
        """Appends the words of `fresh` (a preprocessor of the same class, made from other training texts) that
        this vocabulary lacks, in `fresh`'s order; every word already here keeps its id. Truncation lengths and
        other assets stay this preprocessor's (fine-tuning a preset, `keras_match.training.finetune`).

        Returns:
            The number of words appended.

        Raises:
            TypeError: `fresh` is of another preprocessor class.
            ValueError: they lower-case texts differently.
        """
        if type(fresh) is not type(self):
            raise TypeError(f"cannot extend a {type(self).__name__} vocabulary from a {type(fresh).__name__}")
        if fresh.encoder.lowercase != self.encoder.lowercase:
            raise ValueError(f"the vocabularies lower-case differently ({self.encoder.lowercase} here, "
                             f"{fresh.encoder.lowercase} in the new one)")
        words = self.encoder.vocabulary
        known = set(words)
        added = [word for word in fresh.encoder.vocabulary if word not in known]
        if added:
            self.set_vocabulary(words + added)
        return len(added)

    # ---- the declared schema ----------------------------------------------------------------------------------

    def text_input_specs(self) -> dict:
        """The raw-text inputs: `{name: tf.TensorSpec([None] * rank, tf.string)}`."""
        return {name: tf.TensorSpec([None] * rank, tf.string, name=name) for name, rank in self.TEXT_INPUTS.items()}

    def model_input_specs(self) -> dict:
        """The model inputs it makes, `{name: tf.TensorSpec}` (any batch size and text lengths)."""
        raise NotImplementedError

    def sequence_lengths(self) -> dict:
        """`{token-id input: truncation length}`."""
        raise NotImplementedError

    def trim_padding(self, inputs):
        """`trim_padding` over this preprocessor's token-id inputs."""
        return trim_padding(inputs, self.SEQUENCE_INPUTS)

    def check_texts(self, x):
        """Raises TypeError / ValueError unless `x` is a dict holding every text input."""
        name = type(self).__name__
        if not isinstance(x, dict):
            raise TypeError(f"{name} takes a dict {{{', '.join(repr(k) + ': texts' for k in self.TEXT_INPUTS)}}}, "
                            f"got {type(x).__name__}")
        missing = [key for key in self.TEXT_INPUTS if key not in x]
        if missing:
            raise ValueError(f"{name} input lacks {missing}; it takes {list(self.TEXT_INPUTS)}")

    def shown_texts(self, texts) -> dict:
        """The texts a prediction is printed with (`Task.predictions`): the given ones, and what the model keeps
        of its own (a fixed candidate set); here the given ones."""
        return dict(texts)

    def trackables(self) -> list:
        """What an export must track for the graph to run (lookup tables, objects holding asset files)."""
        raise NotImplementedError

    def describe(self) -> dict:
        """The preprocessor's facts for the export metadata (truncation lengths, vocabulary size, ...)."""
        return {"preprocessor": type(self).__name__, "sequence_lengths": self.sequence_lengths(),
                "vocab_size": int(self.vocab_size)}

    # ---- saving -----------------------------------------------------------------------------------------------

    def save(self, directory):
        """Writes `preprocessor.json` (the config) and the assets into `directory` (created if needed)."""
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.save_assets(directory)
        config = keras.saving.serialize_keras_object(self)
        storage.write_text(directory / CONFIG_FILE, json.dumps(config, indent=2) + "\n")

    @classmethod
    def load(cls, directory):
        """Reads a preprocessor written by `save` (of this class or a subclass).

        Raises:
            FileNotFoundError: `preprocessor.json` or an asset is missing.
            ValueError: `preprocessor.json` is not a valid preprocessor config (the message names the file).
        """
        from keras_match import preprocessors

        preprocessors.get_all()  # every registered preprocessor class, for deserialisation
        directory = pathlib.Path(directory)
        path = directory / CONFIG_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found")
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
            preprocessor = keras.saving.deserialize_keras_object(config)
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"{path}: not a valid preprocessor config ({error})") from None
        if not isinstance(preprocessor, cls):
            raise ValueError(f"{path}: holds a {type(preprocessor).__name__}, not a {cls.__name__}")
        preprocessor.load_assets(directory)
        return preprocessor
