"""The module paths of release 0.1.0 that moved into packages (issue 56), kept importable for one release.

`import keras_match.runs`, `from keras_match import presets` and `from keras_match.recipe import Recipe` give the
module at its new path (the same module object: patching one patches the other). `MOVED` is the table; the
package installs `MovedModules` on `sys.meta_path` when it is imported. New code imports the new paths; these
aliases go in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util

MOVED = {
    "keras_match.recipe": "keras_match.training.recipe",
    "keras_match.finetune": "keras_match.training.finetune",
    "keras_match.callbacks": "keras_match.training.callbacks",
    "keras_match.distribution": "keras_match.training.distribution",
    "keras_match.tuning": "keras_match.training.tuning",
    "keras_match.pipeline": "keras_match.inputs.pipeline",
    "keras_match.batching": "keras_match.inputs.batching",
    "keras_match.export": "keras_match.serving.export",
    "keras_match.signatures": "keras_match.serving.signatures",
    "keras_match.presets": "keras_match.artifacts.presets",
    "keras_match.runs": "keras_match.artifacts.runs",
    "keras_match.storage": "keras_match.artifacts.storage",
    "keras_match.provenance": "keras_match.artifacts.provenance",
    "keras_match.vectors": "keras_match.text.vectors",
    "keras_match.features": "keras_match.text.features",
}
"""Old dotted path -> new dotted path. (`keras_match.training`, `keras_match.serving` and `keras_match.text` kept
their paths: they are now packages re-exporting the old modules' names.)"""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of `MOVED` and loads it as the module at its new path."""

    def __init__(self):
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system gave the module the alias's spec: it gets its own back (its real name and file)
        module.__spec__ = self._specs[module.__spec__.name]


def install(meta_path) -> None:
    """Puts one `MovedModules` first on `meta_path` (`sys.meta_path`) unless one is there: first, because the path
    finder would take `keras_match/presets/` (the shipped presets' folder) for a namespace package."""
    if not any(isinstance(finder, MovedModules) for finder in meta_path):
        meta_path.insert(0, MovedModules())
