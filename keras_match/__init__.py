"""keras-match: a Keras 3 model zoo for neural text matching.

Submodules are imported on first use (``keras_match.zoo``, ``keras_match.presets``, ``keras_match.datasets`` ...,
every module of the package), so importing the package itself stays cheap.
"""

import importlib

__version__ = "0.1.0"

_SUBMODULES = (
    "batching",
    "callbacks",
    "cli",
    "datasets",
    "distribution",
    "export",
    "features",
    "finetune",
    "heads",
    "layers",
    "losses",
    "metrics",
    "models",
    "pipeline",
    "preprocessors",
    "presets",
    "provenance",
    "recipe",
    "registries",
    "runs",
    "serving",
    "settings",
    "signatures",
    "storage",
    "tasks",
    "text",
    "training",
    "tuning",
    "vectors",
    "zoo",
)


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
