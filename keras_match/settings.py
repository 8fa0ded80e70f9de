"""Typed settings of a zoo entry: one object with a model, a training and a preprocessing section.

`Settings` is what `keras_match.zoo.resolve` returns and what the recipe (`keras_match.training.recipe`), training,
tuning, export and a run's `config.json` use:

- `model`: the builder's keyword arguments (a dict: each family's builder has its own; the family's rules and
  the kind of the preset's value check them);
- `training`: `TrainingSettings` (optimizer, learning rate, loss, batches, epochs, early stopping);
- `preprocessing`: the settings of the family's preprocessor (`keras_match.preprocessors`), a dataclass such as
  `keras_match.preprocessors.pair.PairSettings` (truncation lengths, pair features, vocabulary).

Every setting has one name across the three sections, which is the name `--set NAME=VALUE`, a search space and
`zoo.load(name, NAME=VALUE)` use. `config.json` writes each setting once, in its section (`Settings.to_dict`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing

__all__ = ["Rule", "TrainingSettings", "PreprocessingSettings", "Settings", "check_value", "section_fields",
           "POSITIVE_INT", "NON_NEGATIVE_INT", "RATE", "OPTIONAL_RATE", "OPTIONAL_POSITIVE_INT", "is_int",
           "is_number", "model_for_vectors"]


PRECISION_CHOICES = ("float32", "mixed_bfloat16", "auto")
"""The values of the `precision` training setting (`keras_match.precision`)."""

SEED_MAX = 2**32 - 1
"""The largest seed Keras and NumPy accept (a seed is an integer from 0 to this)."""


def is_int(value) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite int or float that is not a bool (an integer is a valid number: `learning_rate=1`)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_optimizer(value) -> bool:
    """The name of a Keras optimizer class (`adam`, `RMSprop`, ...), as `keras.optimizers.get` takes it. Nothing is
    created: an optimizer's variables would start TensorFlow's runtime, which a multi-worker strategy must come
    before."""
    if not isinstance(value, str) or not value:
        return False
    import keras

    names = {name.lower() for name, obj in vars(keras.optimizers).items()
             if isinstance(obj, type) and issubclass(obj, keras.optimizers.Optimizer)}
    return value.lower() in names


def _is_loss(value) -> bool:
    """A name of `keras_match.losses.names()` (`pointwise`, `pairwise_hinge`, `listwise_softmax`, ...)."""
    from keras_match import losses

    return isinstance(value, str) and value in losses.names()


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a setting's value must be: `test(value)` is true, described to the user as `wanted`."""

    test: typing.Callable
    wanted: str


POSITIVE_INT = Rule(lambda v: is_int(v) and v >= 1, "an integer >= 1")
NON_NEGATIVE_INT = Rule(lambda v: is_int(v) and v >= 0, "an integer >= 0")
OPTIONAL_POSITIVE_INT = Rule(lambda v: v is None or (is_int(v) and v >= 1), "null or an integer >= 1")
RATE = Rule(lambda v: is_number(v) and 0 <= v < 1, "a number in [0, 1)")
OPTIONAL_RATE = Rule(lambda v: v is None or (is_number(v) and 0 <= v < 1), "null or a number in [0, 1)")
POSITIVE_NUMBER = Rule(lambda v: is_number(v) and v > 0, "a number > 0")
NON_NEGATIVE_NUMBER = Rule(lambda v: is_number(v) and v >= 0, "a number >= 0")


def check_value(key, value, rule: Rule | None = None, example=None):
    """Raises ValueError naming `key` when `value` breaks `rule`, or, without a rule, is not of the kind of
    `example` (a number stays a number, text stays text, true / false stay booleans; None accepts anything)."""
    if rule is not None:
        if not rule.test(value):
            raise ValueError(f"setting {key}={json.dumps(value)}: must be {rule.wanted}")
        return
    kinds = ((bool, "true or false"), (str, "text"), ((int, float), "a number"))
    for kind, wanted in kinds:  # bool first: a bool is also an int
        if isinstance(example, kind):
            if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                raise ValueError(f"setting {key}={json.dumps(value)}: must be {wanted}, like the preset's "
                                 f"{json.dumps(example)}")
            if kind is not bool and kind is not str and not math.isfinite(value):
                raise ValueError(f"setting {key}={json.dumps(value)}: must be a finite number")
            return


class _Section:
    """A dataclass section whose fields are checked by `RULES` (field name -> `Rule`)."""

    RULES: typing.ClassVar[dict] = {}

    def __post_init__(self):
        for field in dataclasses.fields(self):
            check_value(field.name, getattr(self, field.name), self.RULES.get(field.name),
                        _example(field))

    @classmethod
    def from_dict(cls, values: dict, where: str):
        """The section from a dict; unknown keys raise ValueError naming `where` and the valid keys."""
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"{where}: unknown {cls.SECTION} setting(s) {unknown}; valid: {sorted(names)}")
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _example(field):
    """A value of the field's kind for `check_value` (its default, when that says the kind)."""
    if field.default is not dataclasses.MISSING and field.default is not None:
        return field.default
    return None


def section_fields(section) -> list:
    """The setting names of a dataclass section (an instance or its class)."""
    return [field.name for field in dataclasses.fields(section)]


@dataclasses.dataclass(frozen=True)
class TrainingSettings(_Section):
    """How a model is trained.

    Attributes:
        optimizer: a Keras optimizer name (`"adam"`, `"adamax"`, `"adagrad"` ...).
        learning_rate: the optimizer's learning rate (> 0).
        clipnorm: None, or the gradient norm clip (> 0).
        loss: the loss (`keras_match.losses`): `"pointwise"` (the head's own), `"pairwise_hinge"` or
            `"listwise_softmax"`; its mode chooses the batching (`keras_match.inputs.batching`).
        list_size: listwise only: candidates sampled per question (None: all of them).
        batch_size: pairs (pointwise), pairs of pairs (pairwise) or candidates (listwise) per batch.
        epochs: the most epochs to train.
        patience: epochs without a better dev figure before training stops (0: stop at the first).
        bucketing: batch examples of similar length together.
        lr_decay: None, or the factor the learning rate is multiplied by after every epoch (0 < d <= 1).
        backbone_learning_rate: None (the backbone's layers that train use `learning_rate`), or the learning rate
            (> 0) of a pretrained backbone's layers that train with the body (`backbone_trainable` all or k >= 1);
            the body keeps `learning_rate`, and `lr_decay` scales both (`keras_match.optimizers`).
        precision: what the model computes in while it trains (`keras_match.precision`): `"float32"`,
            `"mixed_bfloat16"` (float32 variables, bfloat16 computation) or `"auto"` (bfloat16 where the CPU has
            bfloat16 units); `keras_match.zoo.resolve` replaces `"auto"` by what it picked.
        state_cache: with a frozen pretrained backbone (or the frozen lower layers of a top-k fine-tuning),
            compute the frozen part's states once per distinct training and dev text and look them up in every
            epoch (`keras_match.encoders.state_cache`); the model and its figures are the same either way.
    """

    SECTION: typing.ClassVar[str] = "training"
    RULES: typing.ClassVar[dict] = {
        "learning_rate": POSITIVE_NUMBER,
        "clipnorm": Rule(lambda v: v is None or (is_number(v) and v > 0), "null or a number > 0"),
        "loss": Rule(lambda v: _is_loss(v), "a loss name (pointwise, pairwise_hinge, listwise_softmax; "
                     "keras_match.losses.names())"),
        "list_size": Rule(lambda v: v is None or (is_int(v) and v >= 2), "null or an integer >= 2"),
        "batch_size": POSITIVE_INT,
        "epochs": POSITIVE_INT,
        "patience": NON_NEGATIVE_INT,
        "lr_decay": Rule(lambda v: v is None or (is_number(v) and 0 < v <= 1), "null or a number in (0, 1]"),
        "backbone_learning_rate": Rule(lambda v: v is None or (is_number(v) and v > 0), "null or a number > 0"),
        "optimizer": Rule(lambda v: _is_optimizer(v), "a Keras optimizer name (adam, rmsprop, sgd, adagrad, ...)"),
        "bucketing": Rule(lambda v: isinstance(v, bool), "true or false"),
        "precision": Rule(lambda v: v in PRECISION_CHOICES, "one of " + ", ".join(PRECISION_CHOICES)),
        "state_cache": Rule(lambda v: isinstance(v, bool), "true or false"),
    }

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    clipnorm: float | None = None
    loss: str = "pointwise"
    list_size: int | None = None
    batch_size: int = 64
    epochs: int = 10
    patience: int = 3
    bucketing: bool = True
    lr_decay: float | None = None
    backbone_learning_rate: float | None = None
    precision: str = "float32"
    state_cache: bool = True


@dataclasses.dataclass(frozen=True)
class PreprocessingSettings(_Section):
    """What every preprocessor's settings hold: the vocabulary and how it meets the pretrained vectors.

    Attributes:
        lowercase: lower-case texts before tokenizing (GloVe 6B is lower-case).
        max_vocabulary: with frozen pretrained vectors, how many words of the vector file join the training words
            (None: all; 0: none; N: the file's N most frequent).
        missing_vectors: the initial vector of a vocabulary word the vector file lacks, `"random"` or `"zero"`
            (`keras_match.text.load_embeddings`).
        vocab_size: the number of token ids of a model built without a preprocessor (`keras_match.zoo.load`);
            a trained model's comes from its vocabulary.
    """

    SECTION: typing.ClassVar[str] = "preprocessing"
    RULES: typing.ClassVar[dict] = {
        "max_vocabulary": Rule(lambda v: v is None or (is_int(v) and v >= 0), "null or an integer >= 0"),
        "missing_vectors": Rule(lambda v: v in ("random", "zero"), '"random" or "zero"'),
        "vocab_size": POSITIVE_INT,
        "lowercase": Rule(lambda v: isinstance(v, bool), "true or false"),
    }

    lowercase: bool = True
    max_vocabulary: int | None = None
    missing_vectors: str = "random"
    vocab_size: int = 20000


@dataclasses.dataclass(frozen=True)
class Settings:
    """A zoo entry's resolved settings (see the module docstring).

    Attributes:
        name: the zoo entry.
        family: its model family (`keras_match.models.<family>`).
        builder: the builder's name within the family.
        model: the builder's keyword arguments.
        training: `TrainingSettings`.
        preprocessing: the preprocessor's settings dataclass.
    """

    name: str
    family: str
    builder: str
    model: dict
    training: TrainingSettings
    preprocessing: PreprocessingSettings

    def to_dict(self) -> dict:
        """`{"model": ..., "training": ..., "preprocessing": ...}`: each setting once, in its section."""
        return {"model": dict(self.model), "training": self.training.to_dict(),
                "preprocessing": self.preprocessing.to_dict()}

    def flat(self) -> dict:
        """Every setting by its name."""
        return {**self.model, **self.training.to_dict(), **self.preprocessing.to_dict()}

    def with_model(self, **values) -> Settings:
        """A copy with model settings replaced (unchecked: for what the task or the recipe decides)."""
        return dataclasses.replace(self, model={**self.model, **values})

    def for_vectors(self, width: int | None, given=(), vectors="the pretrained vectors") -> Settings:
        """These settings as the model built over the run's word vectors has them (what a run's `config.json`
        records), checked against the settings the user gave:

        - over pretrained vectors `width` wide, the word embedding takes their width whatever `embedding_dim` says
          (`keras_match.encoders.WordVectorEncoder`): `embedding_dim` becomes `width`; a preset's other width is
          replaced, a width the user gave is refused;
        - without pretrained vectors (`width` None) the word embedding starts random and trains whatever
          `trainable_embeddings` says: it becomes true; a `false` the user gave is refused.

        Settings of a model over a pretrained transformer (`backbone`) have no word embedding: they are returned as
        they are.

        Args:
            width: the vectors' width (their second dimension), or None without pretrained vectors.
            given: the names of the settings the user gave (`--set`, `--config`, a search space's values, keyword
                arguments).
            vectors: the vectors' file or name, for the message.

        Returns:
            The settings, `embedding_dim` and `trainable_embeddings` as the model has them.

        Raises:
            ValueError: a setting in `given` that the vectors contradict (the message names both values).
        """
        model = model_for_vectors(self.model, width, given, vectors)
        return self if model is self.model else dataclasses.replace(self, model=model)


def model_for_vectors(model: dict, width: int | None, given=(), vectors="the pretrained vectors") -> dict:
    """The model settings `model` as the model built over word vectors `width` wide (None: no pretrained vectors)
    has them, checked against the settings the user gave (`given`): the rules of `Settings.for_vectors`, which
    says them. Returns `model` itself when nothing changes, else a new dict.

    Raises:
        ValueError: a setting in `given` that the vectors contradict (the message names both values).
    """
    if model.get("backbone") is not None:
        return model
    if width is None:
        if "trainable_embeddings" not in model or model["trainable_embeddings"] is True:
            return model
        if model["trainable_embeddings"] is False and "trainable_embeddings" in given:
            raise ValueError("setting trainable_embeddings=false: without pretrained vectors the word embedding "
                             "starts random and must train; drop the setting, or give --embeddings")
        return {**model, "trainable_embeddings": True}
    dim = model.get("embedding_dim")
    if dim is None or dim == width:
        return model
    if "embedding_dim" in given:
        raise ValueError(f"setting embedding_dim={json.dumps(dim)}: the vectors {vectors} are {width} wide, and a "
                         f"model over pretrained vectors takes their width; drop the setting, or give vectors "
                         f"{dim} wide (or --embeddings none: trained embeddings of that width)")
    return {**model, "embedding_dim": int(width)}
