"""Artifacts: what training leaves on disk and what loads it back.

| module | what it holds |
| --- | --- |
| `keras_match.artifacts.runs` | the run folder (`Run`, `load_run`): config, vocabulary, weights, metrics |
| `keras_match.artifacts.presets` | trained presets: writing, checking, loading and the shipped ones |
| `keras_match.artifacts.storage` | atomic writes, digests and the damaged-folder error |
| `keras_match.artifacts.provenance` | the code, data and machine a figure came from |
"""

from keras_match import _lazy

__getattr__ = _lazy.attribute_getter(__name__, __path__)  # keras_match.PACKAGE.MODULE imports MODULE on first use
