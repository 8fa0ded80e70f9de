"""The MCAN family: Multi-Cast Attention Networks (Tay, Luu & Hui, KDD 2018).

- `SumCompression`, `DenseCompression`, `FactorizationMachine` and `get_compression`: the compression functions
  SM / NN / FM (eq. 10-12);
- `MultiCastAttention` (eq. 7-9, section 2.3.3): co-attention (max, mean, alignment) and intra-attention casts,
  each compared with its word and compressed to scalars (the shared `CoAttention` and `IntraAttention` of
  `keras_match.layers` compute the casts);
- `build_mcan`: the whole model (highway encoder, casts, siamese LSTM, MeanMax pooling, highway prediction layers).

Zoo entries `mcan_sm`, `mcan_nn`, `mcan_fm` (`zoo/mcan/`), search space `tuning/mcan.json`.
"""

from keras_match import families
from keras_match.models.mcan.builder import build_mcan
from keras_match.models.mcan.compression import DenseCompression
from keras_match.models.mcan.compression import FactorizationMachine
from keras_match.models.mcan.compression import SumCompression
from keras_match.models.mcan.compression import compression_class
from keras_match.models.mcan.compression import get_compression
from keras_match.models.mcan.multi_cast_attention import MultiCastAttention
from keras_match.settings import OPTIONAL_POSITIVE_INT
from keras_match.settings import OPTIONAL_RATE
from keras_match.settings import POSITIVE_INT

__all__ = ["build_mcan", "DenseCompression", "FactorizationMachine", "SumCompression", "compression_class",
           "get_compression", "MultiCastAttention", "FAMILY"]

FAMILY = families.register(families.Family(
    name="mcan",
    builders={"mcan": build_mcan},
    rules={"lstm_units": POSITIVE_INT, "highway_units": POSITIVE_INT, "fm_factors": POSITIVE_INT,
           "attention_units": OPTIONAL_POSITIVE_INT, "lstm_dropout": OPTIONAL_RATE},
))
