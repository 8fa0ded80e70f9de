"""Keras layers shared by several model families, one public layer per module (highway.py -> Highway).

A family's own layers live in its folder (`keras_match.models.<family>`); these are the primitives several
families use:

- `Highway` (MCAN eq. 1, 15)
- `CoAttention` (MCAN eq. 2-5; the affinity and alignment of Compare-Aggregate and IWAN) and `IntraAttention`
  (MCAN eq. 6); the plain functions behind them (`affinity`, `soft_align`, `max_pooling`, `mean_pooling`,
  `alignment_pooling`) live in `keras_match.layers.co_attention`
- `gated_linear_recurrence` (function) / `GatedLinearRecurrence` (layer): `h_t = a_t * h_{t-1} + b_t` with masks,
  the one recurrence primitive (tf.scan) behind QRNN, CTRN and iCARNN / sCARNN
- pooling over time: `TemporalMeanPooling` (masked mean, CTRN), `MeanMaxPooling` (MCAN eq. 14)
- `CARNNCell` / `CARNN` (CARNN paper eq. 3, 5, 6: nCARNN stepped by `keras.layers.RNN`, iCARNN / sCARNN on the
  gated linear recurrence) and `PositionEncoder` (End-To-End Memory Networks section 4.1), for IWAN + CARNN and
  the CARNN dialog model

Mask-aware reductions shared by all layers are in `keras_match.layers.masked_ops`; argument checks in
`keras_match.layers.checks`; choosing a pluggable layer by name in `keras_match.layers.registry`.
"""

from keras_match.layers.carnn import CARNN
from keras_match.layers.carnn import CARNNCell
from keras_match.layers.co_attention import CoAttention
from keras_match.layers.gated_recurrence import GatedLinearRecurrence
from keras_match.layers.gated_recurrence import gated_linear_recurrence
from keras_match.layers.highway import Highway
from keras_match.layers.intra_attention import IntraAttention
from keras_match.layers.mean_max_pooling import MeanMaxPooling
from keras_match.layers.position_encoder import PositionEncoder
from keras_match.layers.temporal_mean_pooling import TemporalMeanPooling

__all__ = [
    "CARNN",
    "CARNNCell",
    "CoAttention",
    "GatedLinearRecurrence",
    "Highway",
    "IntraAttention",
    "MeanMaxPooling",
    "PositionEncoder",
    "TemporalMeanPooling",
    "gated_linear_recurrence",
]
