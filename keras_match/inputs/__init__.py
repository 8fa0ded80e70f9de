"""Inputs: preprocessed examples turned into the batches training and scoring feed the model.

| module | what it holds |
| --- | --- |
| `keras_match.inputs.pipeline` | `Examples`, encoding texts to ids, `tf.data` batches, scoring in batches |
| `keras_match.inputs.batching` | length bucketing and the pointwise / pairwise / listwise batch layouts |
"""

from keras_match import _lazy

__getattr__ = _lazy.attribute_getter(__name__, __path__)  # keras_match.PACKAGE.MODULE imports MODULE on first use
