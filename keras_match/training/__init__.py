"""Training: the zoo's models fitted on benchmarks, fine-tuned from presets and searched with Keras Tuner.

| module | what it holds |
| --- | --- |
| `keras_match.training.trainer` | `train(name, dataset)`: one training run, resumable, written as a run folder |
| `keras_match.training.recipe` | `Recipe`: task, preprocessor, vectors, model, compile and batches of one entry |
| `keras_match.training.callbacks` | the dev-evaluation callback: early stopping, checkpoints, resuming |
| `keras_match.training.finetune` | training further from a trained preset or run |
| `keras_match.training.distribution` | data-parallel training over several devices |
| `keras_match.training.tuning` | Keras Tuner search over a family's space |
| `keras_match.training.spaces` | the search spaces: read, checked against an entry, declared (conditions too) |

`from keras_match import training; training.train(...)` keeps working: this package re-exports the names of
`keras_match.training.trainer`.
"""

from keras_match import _lazy

__getattr__ = _lazy.attribute_getter(__name__, __path__)  # keras_match.PACKAGE.MODULE imports MODULE on first use

from keras_match.training.trainer import *  # noqa: F401,F403  (training.train, training.Run ... read as before)
from keras_match.training.trainer import __all__  # noqa: F401
