"""Serving: SavedModel and ONNX exports, their signatures, and TensorFlow Serving's requests and config.

| module | what it holds |
| --- | --- |
| `keras_match.serving.clients` | REST / gRPC requests and responses, warmup records, the model config file |
| `keras_match.serving.signatures` | the names of an export's signatures |
| `keras_match.serving.export` | `saved_model(run, base_dir)` and `to_onnx(version_dir)` |

Importing this package loads only `clients` and `signatures` (pure Python, no TensorFlow): a client or a
model server's side needs nothing of the layers, models or training. It re-exports the names of
`keras_match.serving.clients`, so `keras_match.serving.rest_body` reads as before.
"""

from keras_match import _lazy

__getattr__ = _lazy.attribute_getter(__name__, __path__)  # keras_match.PACKAGE.MODULE imports MODULE on first use

from keras_match.serving.clients import *  # noqa: F401,F403  (serving.rest_body ... read as before)
from keras_match.serving.clients import __all__  # noqa: F401
