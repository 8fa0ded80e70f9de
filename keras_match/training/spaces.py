"""Search spaces: the JSON files of the `tuning/` folder (installed as `keras_match.tuning_spaces`), or a file of
your own, read, checked against a zoo entry and declared on Keras Tuner's `HyperParameters`
(`keras_match.training.tuning` runs the search).

A space declares each hyperparameter by the zoo setting it sets (`--set` names):

```json
{"family": "ctrn", "source": "...",
 "hyperparameters": {"filters": {"type": "int", "min_value": 128, "max_value": 1024, "step": 128},
                     "learning_rate": {"type": "choice", "values": [0.001, 0.0001]}}}
```

Kinds: `int` (`min_value`, `max_value`, optional `step`), `float` (`min_value`, `max_value`, optional `step`,
`sampling`), `choice` (`values`: JSON values; `null` and mixed kinds allowed), `boolean`, `fixed` (`value`).

A hyperparameter may hold only for some values of another: `"when": {"backbone_trainable": [1, 2]}` names a
hyperparameter declared before it (a choice, boolean or fixed one, itself without `"when"`) and the values under
which it is searched (Keras Tuner's `parent_name` / `parent_values`). In a trial where the condition does not hold,
the setting is left out (the entry's own value holds) and the trial table shows it empty:
`tuning/backbone.json` searches the backbone's own learning rate (`backbone_learning_rate`) only where some of
the backbone's layers train.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import pathlib

from keras_match import zoo
from keras_match.settings import is_int, is_number

__all__ = ["space_for", "read_space", "declare", "as_setting", "check_each_value", "is_json_choice", "condition",
           "SPACE_PACKAGE", "BACKBONE_SPACE"]

SPACE_PACKAGE = "keras_match.tuning_spaces"
_KINDS = {"int": ("min_value", "max_value"), "float": ("min_value", "max_value"), "choice": ("values",),
          "boolean": (), "fixed": ("value",)}


BACKBONE_SPACE = "backbone.json"  # an entry over a backbone whose family's space does not search the backbone


def space_for(name) -> dict:
    """The search space of zoo entry `name`: its family's (`Family.search_space`, a dict or a file of `tuning/`,
    by default `tuning/<family>.json`); for an entry over a pretrained backbone whose family's space does not name
    `backbone_trainable`, `tuning/backbone.json` (`BACKBONE_SPACE`) instead: the body keeps the entry's settings.

    Returns:
        The space's JSON object, with `"file"` (its name) added.

    Raises:
        FileNotFoundError: the family has no search space (the message names the file to add).
        ValueError: the file is malformed, or names a setting the entry does not have.
    """
    family = zoo.family_of(name)
    space = family.search_space
    space = dict(space, file=space.get("file", f"{family.name} (in memory)")) if isinstance(space, dict) \
        else _space_file(name, space or f"{family.name}.json")
    if zoo.describe(name)["model"].get("backbone") and "backbone_trainable" not in space["hyperparameters"]:
        space = _space_file(name, BACKBONE_SPACE)
    _check_space(name, space, space["file"])
    return space


def _space_file(name, file_name) -> dict:
    """The JSON object of `tuning/<file_name>` (its `"hyperparameters"` checked for shape), with `"file"` added."""
    path = importlib.resources.files(SPACE_PACKAGE) / file_name
    if not path.is_file():
        raise FileNotFoundError(f"zoo entry {name!r} has no search space: add tuning/{file_name} with its "
                                "\"hyperparameters\"")
    try:
        space = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"search space {file_name} is not valid JSON: {error}") from None
    if not isinstance(space, dict) or not isinstance(space.get("hyperparameters"), dict):
        raise ValueError(f"search space {file_name}: \"hyperparameters\" must be a non-empty object")
    return dict(space, file=file_name)


def read_space(path, name) -> dict:
    """A search space of your own: the JSON file `path` (the format of `tuning/`), checked against zoo entry `name`.

    Returns:
        The file's JSON object, with `"file"` (its path) added.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is malformed or names a setting the entry does not have (the message names the file).
    """
    path = pathlib.Path(path)
    try:
        space = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"search space {path} is not valid JSON: {error}") from None
    if not isinstance(space, dict):
        raise ValueError(f"search space {path} must hold a JSON object with \"hyperparameters\"")
    _check_space(name, space, str(path))
    return dict(space, file=str(path))


def _check_space(name, space, file):
    values = space.get("hyperparameters")
    if not isinstance(values, dict) or not values:
        raise ValueError(f"search space {file}: \"hyperparameters\" must be a non-empty object")
    for key, spec in values.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind not in _KINDS:
            raise ValueError(f"search space {file}, hyperparameter {key!r}: \"type\" must be one of {list(_KINDS)}")
        missing = [field for field in _KINDS[kind] if field not in spec]
        if missing:
            raise ValueError(f"search space {file}, hyperparameter {key!r}: {kind} needs {missing}")
        if kind == "choice" and (not isinstance(spec["values"], list) or not spec["values"]):
            raise ValueError(f"search space {file}, hyperparameter {key!r}: \"values\" must be a non-empty list")
        number = is_int if kind == "int" else is_number
        bounds = {field: spec.get(field) for field in ("min_value", "max_value", "step")}
        if kind in ("int", "float") and not (all(number(v) for v in bounds.values() if v is not None)
                                             and bounds["min_value"] <= bounds["max_value"]
                                             and (bounds["step"] is None or bounds["step"] > 0)):
            raise ValueError(f"search space {file}, hyperparameter {key!r}: {kind} needs min_value <= max_value and "
                             f"a step > 0, each {'an integer' if kind == 'int' else 'a number'}; got "
                             + json.dumps(bounds))
    for key, spec in values.items():
        _check_condition(values, key, spec, file)
    check_each_value(space, lambda settings: zoo.resolve(name, **settings),
                     f"search space {file} does not fit zoo entry {name!r}")


def _check_condition(specs, key, spec, file):
    """Refuses a `"when"` that is not one earlier, unconditional choice / boolean / fixed hyperparameter and a
    non-empty list of its values."""
    if "when" not in spec:
        return
    when, earlier = spec["when"], list(specs)[:list(specs).index(key)]
    parent = next(iter(when)) if isinstance(when, dict) and len(when) == 1 else None
    problem = None
    if parent is None or parent not in earlier:
        problem = "must be an object naming one hyperparameter declared before it"
    elif specs[parent]["type"] not in ("choice", "boolean", "fixed") or "when" in specs[parent]:
        problem = f"names {parent!r}, which must be a choice, boolean or fixed hyperparameter without \"when\""
    elif not isinstance(when[parent], list) or not when[parent] or any(
            v not in _checked_values(specs[parent]) for v in when[parent]):
        problem = f"must list some of {parent!r}'s values {json.dumps(_checked_values(specs[parent]))}"
    if problem:
        raise ValueError(f"search space {file}, hyperparameter {key!r}: \"when\" {problem}; got {json.dumps(when)}")


def condition(spec):
    """`(parent, values)` of a hyperparameter searched only when another takes one of some values (its `"when"`),
    else None."""
    return next(iter(spec["when"].items())) if "when" in spec else None


def _holds(spec, values) -> bool:
    """Whether the hyperparameter `spec` is searched in a trial of `values`: it has no `"when"`, or its parent's
    value is one of the condition's."""
    parent = condition(spec)
    return parent is None or values[parent[0]] in parent[1]


def _active(specs, values) -> dict:
    """`values` without the hyperparameters whose condition (`"when"`) the parent's value in `values` fails."""
    return {key: value for key, value in values.items() if _holds(specs[key], values)}


def _checked_values(spec) -> list:
    """The values of a hyperparameter that are checked before a search, its first value first: every choice, both
    booleans, the fixed value, and both ends of an int or float range (a numeric setting's rule is a range; the
    upper end is the last one its `step` reaches)."""
    kind = spec["type"]
    if kind == "choice":
        return list(spec["values"])
    if kind == "boolean":
        return [False, True]
    if kind == "fixed":
        return [spec["value"]]
    low, high, step = spec["min_value"], spec["max_value"], spec.get("step")
    if step and kind == "int":
        high = low + (high - low) // step * step
    elif step:
        high = round(low + math.floor(round((high - low) / step, 9)) * step, 12)
    return [low] if high == low else [low, high]


def check_each_value(space, check, where):
    """Calls `check(settings)` on the settings of a trial made of the space's first values, then on each other
    checked value of each hyperparameter (`_checked_values`: every choice, both ends of a range) among the others'
    first values: a value that breaks its setting's rule is found before any trial, not by a trial that fails. A
    hyperparameter with a `"when"` is checked with its parent at the condition's first value, and left out of the
    settings where its parent's value fails the condition.

    Args:
        space: a search space (its `"hyperparameters"`).
        check: a function of the settings by name that raises ValueError for settings that do not fit.
        where: what the message starts with (the space and what it is checked against).

    Raises:
        ValueError: `check` refused a value; the message names the hyperparameter and its value.
    """
    specs = space["hyperparameters"]
    first = {key: _checked_values(spec)[0] for key, spec in specs.items()}
    try:
        check(_active(specs, first))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    # the conditional ones first: a bad value is blamed on its own hyperparameter, not on the parent that enables it
    for key, spec in sorted(specs.items(), key=lambda item: condition(item[1]) is None):
        parent = condition(spec)
        base = first if parent is None else {**first, parent[0]: parent[1][0]}
        # the first value was checked above unless the condition moved the parent away from its first value
        for value in _checked_values(spec)[0 if base != first else 1:]:
            try:
                check(_active(specs, {**base, key: value}))
            except ValueError as error:
                raise ValueError(f"{where}: hyperparameter {key!r} = {json.dumps(value)}: {error}") from None


def is_json_choice(values):
    """Whether a choice's values go to Keras Tuner as JSON text: it takes one kind of value and no null."""
    kinds = {type(v) for v in values}
    return None in values or len(kinds) > 1 or not kinds <= {int, float, str, bool}


def _as_declared(spec, value):
    """`value` of hyperparameter `spec` as Keras Tuner holds it (a choice with `null` or mixed kinds: JSON text)."""
    return json.dumps(value) if spec["type"] == "choice" and is_json_choice(spec["values"]) else value


def as_setting(spec, value):
    """A value Keras Tuner holds for hyperparameter `spec`, as the zoo setting (`_as_declared` undone)."""
    return json.loads(value) if spec["type"] == "choice" and is_json_choice(spec["values"]) else value


def declare(hp, space) -> dict:
    """Declares the space's hyperparameters on `hp` (a `keras_tuner.HyperParameters`) and returns the trial's
    values as zoo settings (a choice with `null` or mixed kinds travels as JSON text and is decoded here; a
    hyperparameter whose `"when"` does not hold in this trial is left out)."""
    specs, values = space["hyperparameters"], {}
    for key, spec in specs.items():
        kind, parent = spec["type"], condition(spec)
        scope = {} if parent is None else {"parent_name": parent[0], "parent_values": [
            _as_declared(specs[parent[0]], v) for v in parent[1]]}
        if kind == "int":
            value = hp.Int(key, spec["min_value"], spec["max_value"], step=spec.get("step", 1), **scope)
        elif kind == "float":
            value = hp.Float(key, spec["min_value"], spec["max_value"], step=spec.get("step"),
                             sampling=spec.get("sampling", "linear"), **scope)
        elif kind == "choice":
            value = hp.Choice(key, [_as_declared(spec, v) for v in spec["values"]], **scope)
        elif kind == "boolean":
            value = hp.Boolean(key, **scope)
        else:
            value = hp.Fixed(key, spec["value"], **scope)
        if parent is None or hp.is_active(key):
            values[key] = as_setting(spec, value)
    return values
