"""Keras layers of keras-match, one public layer per module (highway.py -> Highway).

MCAN (Tay et al., KDD 2018):

- `Highway` (eq. 1, 15), `MeanMaxPooling` (eq. 14)
- `CoAttention` (eq. 2-5), `IntraAttention` (eq. 6); the plain functions behind them (`affinity`,
  `soft_align`, `max_pooling`, `mean_pooling`, `alignment_pooling`) live in `keras_match.layers.co_attention`
- `SumCompression`, `DenseCompression`, `FactorizationMachine` and `get_compression` (eq. 10-12)
- `MultiCastAttention` (eq. 7-9, section 2.3.3)

CTRN (Tay, Luu & Hui, AAAI 2018) and every recurrence whose gates are computed before the loop:

- `gated_linear_recurrence` (function) / `GatedLinearRecurrence` (layer): `h_t = a_t * h_{t-1} + b_t` with masks,
  the one recurrence primitive (tf.scan) behind QRNN, CTRN and iCARNN / sCARNN
- `QRNN` (eq. 1 and fo-pooling), `CTRN` (the CTRN-Q / CTRN-A cells, lightweight temporal crossing),
  `TemporalMeanPooling` (masked mean over time)

Compare-Aggregate (Wang & Jiang, ICLR 2017), all in `keras_match.layers.compare_aggregate`:

- `GatedPreprocessing` (eq. 1), `CompareAttention` (eq. 2), `CNNAggregation` (eq. 9), and `CompareAggregate`
  (eq. 1-9 end to end, optionally returning the per-word convolution features of Figure 2)
- the comparison functions (eq. 3-8) `NNComparison`, `NTNComparison`, `EucCosComparison`, `SubComparison`,
  `MultComparison`, `SubMultNNComparison`, chosen by name with `get_comparison` ("nn", "ntn", "euccos", "sub",
  "mult", "submult_nn")

Mask-aware reductions shared by all layers are in `keras_match.layers.masked_ops`.
"""

from keras_match.layers.co_attention import CoAttention
from keras_match.layers.compare_aggregate import CNNAggregation
from keras_match.layers.compare_aggregate import CompareAggregate
from keras_match.layers.compare_aggregate import CompareAttention
from keras_match.layers.compare_aggregate import EucCosComparison
from keras_match.layers.compare_aggregate import GatedPreprocessing
from keras_match.layers.compare_aggregate import MultComparison
from keras_match.layers.compare_aggregate import NNComparison
from keras_match.layers.compare_aggregate import NTNComparison
from keras_match.layers.compare_aggregate import SubComparison
from keras_match.layers.compare_aggregate import SubMultNNComparison
from keras_match.layers.compare_aggregate import get_comparison
from keras_match.layers.compression import DenseCompression
from keras_match.layers.compression import FactorizationMachine
from keras_match.layers.compression import SumCompression
from keras_match.layers.compression import get_compression
from keras_match.layers.ctrn import CTRN
from keras_match.layers.gated_recurrence import GatedLinearRecurrence
from keras_match.layers.gated_recurrence import gated_linear_recurrence
from keras_match.layers.highway import Highway
from keras_match.layers.intra_attention import IntraAttention
from keras_match.layers.mean_max_pooling import MeanMaxPooling
from keras_match.layers.multi_cast_attention import MultiCastAttention
from keras_match.layers.qrnn import QRNN
from keras_match.layers.temporal_mean_pooling import TemporalMeanPooling

__all__ = [
    "CNNAggregation",
    "CTRN",
    "CoAttention",
    "CompareAggregate",
    "CompareAttention",
    "DenseCompression",
    "EucCosComparison",
    "FactorizationMachine",
    "GatedLinearRecurrence",
    "GatedPreprocessing",
    "Highway",
    "IntraAttention",
    "MeanMaxPooling",
    "MultComparison",
    "MultiCastAttention",
    "NNComparison",
    "NTNComparison",
    "QRNN",
    "SubComparison",
    "SubMultNNComparison",
    "SumCompression",
    "TemporalMeanPooling",
    "gated_linear_recurrence",
    "get_comparison",
    "get_compression",
]
