"""The CTRN family: Cross Temporal Recurrent Networks and their QRNN baseline (Tay, Luu & Hui, AAAI 2018).

- `QRNN` (eq. 1 and fo-pooling), its gates computed by causal convolutions before the shared gated linear
  recurrence (`keras_match.layers.gated_linear_recurrence`);
- `CTRN`: the CTRN-Q / CTRN-A cells (lightweight temporal crossing: each text's cell also runs with the
  partner's gates, and the two hidden states are multiplied per step);
- `build_ctrn` and `build_qrnn_matcher`: the same matching model (`build_recurrent_matcher`) around either encoder
  (projection, temporal mean pooling, dense layers, the four word-overlap features on TrecQA).

Zoo entries `ctrn*` and `qrnn*` (`zoo/ctrn/`), search space `tuning/ctrn.json` (the paper's grid).
"""

from keras_match import families
from keras_match.models.ctrn.builder import build_ctrn
from keras_match.models.ctrn.builder import build_qrnn_matcher
from keras_match.models.ctrn.builder import build_recurrent_matcher
from keras_match.models.ctrn.ctrn import CTRN
from keras_match.models.ctrn.qrnn import QRNN
from keras_match.settings import POSITIVE_INT
from keras_match.settings import Rule

__all__ = ["build_ctrn", "build_qrnn_matcher", "build_recurrent_matcher", "CTRN", "QRNN", "FAMILY"]

FAMILY = families.register(families.Family(
    name="ctrn",
    builders={"ctrn": build_ctrn, "qrnn": build_qrnn_matcher},
    rules={"filters": POSITIVE_INT, "dense_units": POSITIVE_INT, "kernel_size": POSITIVE_INT,
           "num_dense_layers": POSITIVE_INT,
           "sentence_cosine": Rule(lambda v: isinstance(v, bool) or v == "start", "true, false or \"start\"")},
))
