"""keras-match: a Keras 3 model zoo for neural text matching.

Submodules are imported on first use (``keras_match.zoo``, ``keras_match.artifacts``, ``keras_match.datasets``
..., every module and package of it), so importing the package itself stays cheap. The module paths of 0.1.0
that moved into packages (``keras_match.runs``, ``keras_match.presets``, ``keras_match.export`` ...) still import,
for one release: ``keras_match._moved.MOVED`` lists them with their new paths.
"""

import sys

from keras_match import _lazy, _moved

__version__ = "0.1.0"

_moved.install(sys.meta_path)

_SUBMODULES = _lazy.submodules(__path__)
"""Every module and subpackage of the package, found on its path (so a new module needs no entry here)."""

_submodule = _lazy.attribute_getter(__name__, __path__, extra=[old.rpartition(".")[2] for old in _moved.MOVED])


def __getattr__(name):
    if name == "train":
        from keras_match.training.trainer import train

        globals()["train"] = train
        return train
    return _submodule(name)


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES) + ["train"])
