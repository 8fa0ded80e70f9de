"""Submodules reached as attributes on first use: `keras_match.artifacts.presets` after `import keras_match` alone
imports `keras_match.artifacts` and then its `presets`, so importing a package itself stays cheap."""

from __future__ import annotations

import importlib
import pkgutil
import sys


def submodules(path) -> tuple[str, ...]:
    """The modules and subpackages found on a package's `__path__` (a new module needs no entry anywhere)."""
    return tuple(sorted(module.name for module in pkgutil.iter_modules(path) if not module.name.startswith("_")))


def attribute_getter(package: str, path, extra=()):
    """A module `__getattr__` (PEP 562) for `package` (its `__path__` is `path`) that imports a submodule on first
    use; `extra`: more names imported as `package.NAME` (the moved paths of `keras_match._moved`)."""
    names = (*submodules(path), *extra)

    def __getattr__(name):
        if name in names:
            module = importlib.import_module(f"{package}.{name}")
            setattr(sys.modules[package], name, module)
            return module
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
