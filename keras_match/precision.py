"""The numeric precision a model trains and scores in: `float32`, or Keras mixed `mixed_bfloat16`.

`mixed_bfloat16` is Keras's mixed-precision policy: every variable stays float32 (the optimizer updates float32
weights, the L2 terms are summed in float32), the layers compute in bfloat16. CPUs with bfloat16 units (Intel
AMX `amx_bf16`, AVX-512 `avx512_bf16` in `/proc/cpuinfo`) multiply bfloat16 matrices several times faster than
float32; on a CPU without them TensorFlow emulates bfloat16 and it is slower (measured on this project's 2-core
Xeon without the units: a 2048 x 2048 matmul 156 GFLOP/s float32 against 50 bfloat16;
`benchmarks/precision.py` measures the zoo's training steps).

Where bfloat16's 8-bit mantissa would lose a quantity the layers compute it in float32 and say so in their
docstrings (softmax normalisation, masked means, the recurrences' states); every head computes in float32, so a
model's output is float32 whatever its precision (`keras_match.models.common.output_head`).

A precision is a training setting (`precision`, `keras-match train --precision`): `float32` (every entry's default),
`mixed_bfloat16`, or `auto`, which picks `mixed_bfloat16` on a CPU with bfloat16 units and `float32` elsewhere and
is resolved before the run's `config.json` is written (the run records what it trained in). Scoring and export
take their own precision, `float32` unless asked (`SERVING_DEFAULT`): a run trained in bfloat16 is converted
(`convert`: the same float32 weights, every layer computing in the asked precision).
"""

from __future__ import annotations

import contextlib
import functools
import pathlib

from keras_match.settings import PRECISION_CHOICES

__all__ = ["PRECISIONS", "CHOICES", "SERVING_DEFAULT", "BFLOAT16_FLAGS", "bfloat16_units", "check", "check_resolved", "resolve",
           "describe", "scope", "of_model", "convert"]

PRECISIONS = ("float32", "mixed_bfloat16")
"""What a model computes in."""

CHOICES = PRECISION_CHOICES
"""What a user may ask for: a precision, or `auto` (by the CPU's flags, `resolve`)."""

SERVING_DEFAULT = "float32"
"""The precision of evaluation, prediction and export unless asked otherwise."""

BFLOAT16_FLAGS = ("amx_bf16", "avx512_bf16")
"""The `/proc/cpuinfo` flags of the CPU units that multiply bfloat16 natively."""

CPUINFO = pathlib.Path("/proc/cpuinfo")


@functools.lru_cache(maxsize=None)
def _cpu_flags(path) -> frozenset:
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux, or no /proc: no flags known
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def bfloat16_units(cpuinfo=CPUINFO) -> list:
    """The flags of `BFLOAT16_FLAGS` this CPU has (an empty list without bfloat16 units, or where the CPU's flags
    cannot be read)."""
    flags = _cpu_flags(str(cpuinfo))
    return [flag for flag in BFLOAT16_FLAGS if flag in flags]


def check(value) -> str:
    """`value` if it is one of `CHOICES`.

    Raises:
        ValueError: naming the setting, the value and the valid ones (the `precision` setting's rule).
    """
    from keras_match.settings import TrainingSettings, check_value

    check_value("precision", value, TrainingSettings.RULES["precision"])
    return value


def resolve(value, cpuinfo=CPUINFO) -> str:
    """The precision to compute in: `value` itself, or for `auto` `mixed_bfloat16` where the CPU has bfloat16
    units (`bfloat16_units`) and `float32` elsewhere.

    Raises:
        ValueError: `value` is not one of `CHOICES`.
    """
    check(value)
    if value != "auto":
        return value
    return "mixed_bfloat16" if bfloat16_units(cpuinfo) else "float32"


def describe(requested, cpuinfo=CPUINFO) -> str:
    """One line for a run's first output: the precision and, for `auto`, why it was picked."""
    resolved = resolve(requested, cpuinfo)
    if requested != "auto":
        return f"precision {resolved}"
    units = bfloat16_units(cpuinfo)
    why = f"this CPU has {', '.join(units)}" if units else f"this CPU has no bfloat16 units ({', '.join(BFLOAT16_FLAGS)})"
    return f"precision {resolved} (auto: {why})"


def check_resolved(precision) -> str:
    """`precision` if it is one of `PRECISIONS` (what a model computes in; `auto` is resolved before).

    Raises:
        ValueError: naming the value and the valid ones.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: must be one of {', '.join(PRECISIONS)} (resolve 'auto' first)")
    return precision


@contextlib.contextmanager
def scope(precision):
    """Layers created inside compute in `precision` (Keras's global dtype policy, restored on exit).

    Raises:
        ValueError: `precision` is not one of `PRECISIONS` (resolve `auto` first).
    """
    import keras

    check_resolved(precision)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def of_model(model) -> str:
    """`"mixed_bfloat16"` when any layer of `model` computes under that policy, else `"float32"`."""
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if getattr(layer, "dtype_policy", None) is not None and layer.dtype_policy.name == "mixed_bfloat16":
            return "mixed_bfloat16"
    return "float32"


def _replace_policies(config, source, target, keep):
    """`config` (a model's nested config) with every dtype policy named `source` renamed `target`, except in the
    layers named in `keep`."""
    if isinstance(config, list):
        return [_replace_policies(item, source, target, keep) for item in config]
    if not isinstance(config, dict):
        return config
    if config.get("class_name") in ("DTypePolicy", "FloatDTypePolicy") and \
            config.get("config", {}).get("name") == source:
        return {**config, "config": {**config["config"], "name": target}}
    if isinstance(config.get("config"), dict) and config["config"].get("name") in keep:
        return config
    return {key: _replace_policies(value, source, target, keep) for key, value in config.items()}


def convert(model, precision):
    """`model` computing in `precision`: the model itself when it already does, else a copy built from its config
    with every layer's policy replaced and the same (float32) weights.

    From `mixed_bfloat16` to `float32` every layer becomes float32; from `float32` to `mixed_bfloat16` every layer
    does but the output head (`keras_match.heads.OUTPUT_LAYERS`), which computes in float32 in either.

    Raises:
        ValueError: `precision` is not one of `PRECISIONS`.
    """
    from keras_match import heads

    check_resolved(precision)
    current = of_model(model)
    if current == precision:
        return model
    keep = set(heads.OUTPUT_LAYERS.values()) if precision == "mixed_bfloat16" else set()
    config = _replace_policies(model.get_config(), current, precision, keep)
    with scope(precision):
        copy = model.__class__.from_config(config)
    copy.set_weights(model.get_weights())
    return copy
