"""One registry mechanism for the zoo's families, the preprocessors and the tasks.

A `Registry` maps names to what a package's modules register when they are imported. Its first lookup imports
every module (or, with `packages_only`, every subpackage) of its package, so a new model family, preprocessor or
task is a new module or folder there and no line elsewhere; code outside the package (a test, a user's plugin)
registers its own with `register` and may remove it with `unregister`.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["Registry"]


class Registry:
    """Names -> registered objects, filled by the modules of `package` (see the module docstring).

    Args:
        package: the dotted name of the package whose modules register themselves (`"keras_match.tasks"`).
        what: what the registry holds, for error messages (`"task"`).
        packages_only: import only the package's subpackages (the model families' folders).
    """

    def __init__(self, package, what, packages_only=False):
        self.package, self.what, self.packages_only = package, what, packages_only
        self._items = {}
        self._discovered = False

    def register(self, name, item):
        """Adds `item` under `name` (an item of that name is replaced). Returns `item`."""
        self._items[name] = item
        return item

    def unregister(self, name):
        """Removes the item `name`. Returns it, or None."""
        return self._items.pop(name, None)

    def so_far(self) -> dict:
        """`{name: item}` registered so far, without importing the package's modules."""
        return dict(self._items)

    def all(self) -> dict:
        """`{name: item}` of everything registered (the package's modules are imported on the first call)."""
        if not self._discovered:
            self._discovered = True
            package = importlib.import_module(self.package)
            for module in pkgutil.iter_modules(package.__path__):
                if module.ispkg or not self.packages_only:
                    importlib.import_module(f"{self.package}.{module.name}")
        return dict(self._items)

    def get(self, name):
        """The item registered as `name`.

        Raises:
            ValueError: nothing is registered under `name` (the message lists what is).
        """
        items = self.all()
        if name not in items:
            raise ValueError(f"unknown {self.what} {name!r}; registered: {sorted(items)}")
        return items[name]
