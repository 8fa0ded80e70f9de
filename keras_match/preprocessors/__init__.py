"""Preprocessors: what turns raw texts into a model's inputs, each declaring its input schema.

- `Preprocessor` (`base.py`): the base class and the declaration every preprocessor makes (raw-text inputs,
  model inputs, token-id inputs and their truncation lengths, settings, builder arguments).
- `PairPreprocessor` (`pair.py`, registered as `"pair"`): `{"question", "answer"}` texts to token ids and the
  optional pair features; the preprocessor of every pair-matching family.

A family names its preprocessor (`keras_match.zoo.Family.preprocessor`). A module of this package registers its
preprocessor with `register(name, cls)` when imported; `get(name)` imports every module of the package first,
so a new preprocessor is a new module here and no other line.
"""

from __future__ import annotations

from keras_match.registries import Registry

__all__ = ["register", "unregister", "get", "get_all", "Preprocessor", "PairPreprocessor", "DialogPreprocessor",
           "trim_padding"]

_REGISTRY = Registry(__name__, "preprocessor")


def register(name, cls):
    """Registers preprocessor class `cls` under `name` (a registered name is replaced). Returns `cls`.

    Raises:
        ValueError: `cls` is not a subclass of `Preprocessor`.
    """
    from keras_match.preprocessors.base import Preprocessor

    if not (isinstance(cls, type) and issubclass(cls, Preprocessor)):
        raise ValueError(f"preprocessor {name!r} must be a subclass of keras_match.preprocessors.Preprocessor")
    return _REGISTRY.register(name, cls)


unregister = _REGISTRY.unregister
get_all = _REGISTRY.all
get = _REGISTRY.get


def __getattr__(name):
    if name in ("Preprocessor", "trim_padding"):
        from keras_match.preprocessors import base

        return getattr(base, name)
    if name == "PairPreprocessor":
        from keras_match.preprocessors.pair import PairPreprocessor

        return PairPreprocessor
    if name == "DialogPreprocessor":
        from keras_match.preprocessors.dialog import DialogPreprocessor

        return DialogPreprocessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
