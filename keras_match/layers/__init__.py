"""Keras layers of keras-match, one public layer per module (highway.py -> Highway).

MCAN (Tay et al., KDD 2018):

- `Highway` (eq. 1, 15), `MeanMaxPooling` (eq. 14)
- `CoAttention` (eq. 2-5), `IntraAttention` (eq. 6); the plain functions behind them (`affinity`,
  `soft_align`, `max_pooling`, `mean_pooling`, `alignment_pooling`) live in `keras_match.layers.co_attention`
- `SumCompression`, `DenseCompression`, `FactorizationMachine` and `get_compression` (eq. 10-12)
- `MultiCastAttention` (eq. 7-9, section 2.3.3)

Mask-aware reductions shared by all layers are in `keras_match.layers.masked_ops`.
"""

from keras_match.layers.co_attention import CoAttention
from keras_match.layers.compression import DenseCompression
from keras_match.layers.compression import FactorizationMachine
from keras_match.layers.compression import SumCompression
from keras_match.layers.compression import get_compression
from keras_match.layers.highway import Highway
from keras_match.layers.intra_attention import IntraAttention
from keras_match.layers.mean_max_pooling import MeanMaxPooling
from keras_match.layers.multi_cast_attention import MultiCastAttention

__all__ = [
    "CoAttention",
    "DenseCompression",
    "FactorizationMachine",
    "Highway",
    "IntraAttention",
    "MeanMaxPooling",
    "MultiCastAttention",
    "SumCompression",
    "get_compression",
]
