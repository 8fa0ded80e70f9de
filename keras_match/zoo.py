"""The model zoo: named presets (paper settings) behind `keras_match.zoo.load / names / describe`.

Each zoo entry is a JSON preset file under the top-level `zoo/` folder (installed as the package
`keras_match.zoo_presets`), holding:

- `builder`: the builder's name in `BUILDERS` (`"mcan"` -> `keras_match.models.build_mcan`);
- `model`: the builder's keyword arguments, as the paper sets them;
- `training`: optimizer, learning rate, batch size, epochs, early-stopping patience, loss and the
  truncation lengths the training loop uses;
- `dataset`: the benchmark the settings are for; `reported`: the paper's figures on it; `paper`: the citation.

Overrides are given by name: `load("mcan_fm", lstm_units=100, learning_rate=1e-3)`; a name that is neither a
model nor a training setting raises `ValueError` listing the valid ones.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
import pathlib

import keras


BUILDERS = {
    "mcan": "keras_match.models.mcan:build_mcan",
    "ctrn": "keras_match.models.ctrn:build_ctrn",
    "qrnn": "keras_match.models.ctrn:build_qrnn_matcher",
    "compare_aggregate": "keras_match.models.compare_aggregate:build_compare_aggregate",
}

# Arguments the zoo fills in itself; the rest of a builder's arguments come from the preset or overrides.
# `num_features` follows the preset's pair features (the preprocessor makes them).
_DATA_ARGS = ("vocab_size", "embeddings", "num_features")

PAIR_FEATURES = {"overlap_features": 4, "bm25_feature": 1}
"""The pair-feature switches of a preset (top-level keys, default false) and the width each adds to the model's
`features` input: the four word-overlap features of Severyn & Moschitti, the answer's BM25 score."""

TRAINING_DEFAULTS = {"loss": "pointwise", "list_size": None, "bucketing": True, "max_vocabulary": None,
                     "missing_vectors": "random", "lr_decay": None}
"""Training settings every preset has (a preset file may set them): the loss, whose mode chooses the batching
(`keras_match.losses`: `pointwise`, `pairwise_hinge`, `listwise_softmax`), the listwise sample size (None:
every candidate of a question), length bucketing of the training batches (`keras_match.batching`), and how many
words of the pretrained vector file join the training words in the vocabulary of a model with frozen
embeddings (None: all of them; 0: training words only; N: the file's N most frequent), and the initial vector of a
vocabulary word the vector file lacks (`"random"` or `"zero"`, `keras_match.text.load_embeddings`), and the factor
the learning rate is multiplied by after every epoch (None: constant; `keras_match.training.schedule_callbacks`)."""


def _preset_files():
    root = importlib.resources.files("keras_match.zoo_presets")
    return {p.name[: -len(".json")]: p for p in root.iterdir() if p.name.endswith(".json")}


def names():
    """Every zoo entry's name, sorted."""
    return sorted(_preset_files())


def describe(name):
    """The preset of zoo entry `name` as a dict (a deep copy: editing it changes nothing).

    Raises:
        ValueError: `name` is not a zoo entry (the message lists the entries).
    """
    files = _preset_files()
    if name not in files:
        raise ValueError(f"unknown zoo entry {name!r}; the zoo has: {', '.join(sorted(files))}")
    preset = json.loads(files[name].read_text(encoding="utf-8"))
    preset["name"] = name
    preset["training"] = {**TRAINING_DEFAULTS, **preset["training"]}
    for key in PAIR_FEATURES:
        preset.setdefault(key, False)
    return copy.deepcopy(preset)


def resolve(name, **overrides):
    """The preset of `name` with `overrides` applied to its `model` or `training` section by key.

    `overlap_features=True/False` switches the four word-overlap pair features on or off, `bm25_feature` the
    answer's BM25 score (the preprocessor computes them; `build` gives the model a `features` input of their
    width, concatenated before its prediction layers).

    Returns:
        dict with keys `name`, `builder`, `model`, `training`, `dataset`, `reported`, `paper`.

    Raises:
        ValueError: unknown entry, or an override that names no model or training setting.
    """
    preset = describe(name)
    model, training = preset["model"], preset["training"]
    unknown = []
    for key, value in overrides.items():
        if key in PAIR_FEATURES:
            if value and "num_features" not in _builder_arguments(preset["builder"], data_arguments=True):
                raise ValueError(f"zoo entry {name!r}: its builder {preset['builder']!r} takes no pair features, "
                                 f"so {key} cannot be switched on")
            preset[key] = bool(value)
        elif key in training:
            training[key] = value
        elif key in model or key in _builder_arguments(preset["builder"]):
            model[key] = value
        else:
            unknown.append(key)
    if unknown:
        valid = sorted(
            set(model) | set(training) | set(_builder_arguments(preset["builder"])) | set(PAIR_FEATURES)
        )
        raise ValueError(
            f"zoo entry {name!r}: unknown setting(s) {unknown}; valid settings are {valid}"
        )
    defaults = describe(name)
    for key, value in overrides.items():
        check_setting(key, value, defaults)
    return preset


# The rules a setting's value must follow: (test, what it must be). Keys not listed follow their preset value's
# kind (a number stays a number, text stays text, true / false stay booleans).
_POSITIVE_INT = (lambda v: _is_int(v) and v >= 1, "an integer >= 1")
_RULES = {
    "learning_rate": (lambda v: _is_number(v) and v > 0, "a number > 0"),
    "l2": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "clipnorm": (lambda v: v is None or (_is_number(v) and v > 0), "null or a number > 0"),
    "dropout": (lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
    "embedding_dropout": (lambda v: v is None or (_is_number(v) and 0 <= v < 1), "null or a number in [0, 1)"),
    "lstm_dropout": (lambda v: v is None or (_is_number(v) and 0 <= v < 1), "null or a number in [0, 1)"),
    "patience": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "list_size": (lambda v: v is None or (_is_int(v) and v >= 2), "null or an integer >= 2"),
    "max_vocabulary": (lambda v: v is None or (_is_int(v) and v >= 0), "null or an integer >= 0"),
    "missing_vectors": (lambda v: v in ("random", "zero"), '"random" or "zero"'),
    "lr_decay": (lambda v: v is None or (_is_number(v) and 0 < v <= 1), "null or a number in (0, 1]"),
    "projection_dim": (lambda v: v is None or (_is_int(v) and v >= 1), "null or an integer >= 1"),
    "attention_units": (lambda v: v is None or (_is_int(v) and v >= 1), "null or an integer >= 1"),
    **{key: _POSITIVE_INT for key in ("epochs", "batch_size", "max_question_length", "max_answer_length",
                                      "vocab_size", "lstm_units", "highway_units", "fm_factors", "filters",
                                      "dense_units", "kernel_size", "num_dense_layers", "embedding_dim")},
}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_setting(key, value, preset):
    """Raises ValueError naming `key` when `value` breaks its rule (`_RULES`) or, for other settings, is not of
    the kind of the preset's value (number, text, boolean). Pair-feature switches must be booleans."""
    if key in _RULES:
        test, wanted = _RULES[key]
        if not test(value):
            raise ValueError(f"setting {key}={json.dumps(value)}: must be {wanted}")
        return
    default = preset.get(key, preset["model"].get(key, preset["training"].get(key)))
    kinds = ((bool, "true or false"), (str, "text"), ((int, float), "a number"))
    for kind, wanted in kinds:  # bool first: a bool is also an int
        if isinstance(default, kind):
            if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                raise ValueError(f"setting {key}={json.dumps(value)}: must be {wanted}, like the preset's "
                                 f"{json.dumps(default)}")
            return


def get_builder(builder):
    """The builder function registered under `builder` (e.g. `"mcan"`)."""
    if builder not in BUILDERS:
        raise ValueError(f"unknown builder {builder!r}; known builders: {sorted(BUILDERS)}")
    module, attr = BUILDERS[builder].split(":")
    return getattr(importlib.import_module(module), attr)


def _builder_arguments(builder, data_arguments=False):
    import inspect

    params = inspect.signature(get_builder(builder)).parameters
    return [p for p in params if data_arguments or p not in _DATA_ARGS]


def num_features_of(preset):
    """The width of the `features` input a preset's model takes: 4 with `overlap_features`, 1 more with
    `bm25_feature`, else 0."""
    return sum(width for key, width in PAIR_FEATURES.items() if preset.get(key))


def build(preset, vocab_size=None, embeddings=None, num_features=None):
    """Build the (uncompiled) model of a resolved preset (see `resolve`).

    `num_features` (the width of the `features` input) defaults to `num_features_of(preset)`.
    """
    kwargs = dict(preset["model"])
    kwargs.setdefault("name", preset["name"])
    if vocab_size is None:
        vocab_size = embeddings.shape[0] if embeddings is not None else preset["training"]["vocab_size"]
    if num_features is None:
        num_features = num_features_of(preset)
    if num_features:
        kwargs["num_features"] = num_features
    return get_builder(preset["builder"])(vocab_size=vocab_size, embeddings=embeddings, **kwargs)


def optimizer(preset):
    """A new optimizer with the preset's class, learning rate and gradient clipping."""
    training = preset["training"]
    return keras.optimizers.get(
        {
            "class_name": training.get("optimizer", "adam"),
            "config": {
                "learning_rate": training["learning_rate"],
                **({"clipnorm": training["clipnorm"]} if training.get("clipnorm") else {}),
            },
        }
    )


def compile_model(model, preset):
    """Compile `model` with the preset's optimizer and its head's pointwise loss (`keras_match.heads`).

    Pairwise and listwise losses train a wrapper around the model (`keras_match.heads.ListScorer`), which
    `keras_match.train` builds from the preset's `loss`.
    """
    from keras_match import heads

    model.compile(optimizer=optimizer(preset), loss=heads.training_loss(heads.head_of(model), "pointwise"))
    return model


def load(name, *, vocab_size=None, embeddings=None, num_features=None, compile=True, **overrides):
    """Build zoo entry `name` with the paper's settings, compiled unless `compile=False`.

    Args:
        name: a zoo entry, see `names()`.
        vocab_size: int, number of token ids (padding and OOV included); default: the matrix's row count
            when `embeddings` is given, else the preset's `training.vocab_size`.
        embeddings: optional pretrained vectors `[vocab_size, dim]` (`keras_match.text.load_embeddings`).
        num_features: width of the `features` input; default 4 for entries with `"overlap_features": true`.
        compile: compile with the preset's optimizer and its head's pointwise loss.
        **overrides: model or training settings by name (see `describe(name)`).

    Returns:
        A `keras.Model` taking `{"question", "answer"}` int32 token ids (plus `"features"` float32
        `[batch, 4]`, the word-overlap features of `keras_match.features.OverlapFeatures`, for entries with
        `"overlap_features": true`, e.g. `ctrn` and `qrnn`) and returning its head's output (`[batch, 2]`
        probabilities for the papers' softmax head, see `keras_match.heads`).

    Raises:
        ValueError: unknown entry or setting.

    Examples:
    >>> import keras_match as km
    >>> model = km.zoo.load("mcan_fm", vocab_size=5000, lstm_units=64)
    """
    preset = resolve(name, **overrides)
    model = build(preset, vocab_size=vocab_size, embeddings=embeddings, num_features=num_features)
    return compile_model(model, preset) if compile else model


def read_config(path, name) -> dict:
    """The settings of a `best.json` written by `write_results`, for `keras-match train NAME --config FILE`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a best-configuration file, or one of another zoo entry.
    """
    path = pathlib.Path(path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(config, dict) or not isinstance(config.get("settings"), dict):
        raise ValueError(f"{path}: not a best configuration (no \"settings\" object); `keras-match tune` writes one")
    if config.get("zoo") not in (None, name):
        raise ValueError(f"{path} configures zoo entry {config['zoo']!r}, not {name!r}")
    return dict(config["settings"])
