"""keras-match: a Keras 3 model zoo for neural text matching.

Submodules are imported on first use (``keras_match.zoo``, ``keras_match.presets``, ``keras_match.datasets`` ...,
every module of the package), so importing the package itself stays cheap.
"""

import importlib
import pkgutil

__version__ = "0.1.0"

_SUBMODULES = tuple(sorted(module.name for module in pkgutil.iter_modules(__path__)
                           if not module.name.startswith("_")))
"""Every module and subpackage of the package, found on its path (so a new module needs no entry here)."""


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module(f"keras_match.{name}")
        globals()[name] = module
        return module
    if name == "train":
        from keras_match.training import train

        globals()["train"] = train
        return train
    raise AttributeError(f"module 'keras_match' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES) + ["train"])
