"""The IWAN family: Inter-Weighted Alignment Network (Shen, Yang & Deng, EMNLP 2017), with IWAN's BiLSTM or the
cross-context CARNN encoders of Tran et al. (NAACL 2018).

No full text of IWAN exists here (only its abstract, introduction and Figure 1 caption): the layer names and what
they are for are the paper's [R]; their equations are a reconstruction [I], documented as such in every layer
(`shared/papers/iwan_architecture.md`).

- `ContextEncoder`: the shared context layer, a BiLSTM [R], or the cross-context nCARNN / iCARNN / sCARNN that
  reads each sentence with the Position Encoder summary of the other one (CARNN paper §4.3, Figure 4 [R]; one
  CARNN per direction [I]);
- `DecompositionAlignment`: the word-level similarity matrix [R] (dot product [I]), masked soft alignment [I], the
  orthogonal decomposition of each word against its aligned vector and `f = ReLU(W_a [p; o] + b_a)` [I];
- `InterWeighting`: the inter-weighted layer [R], Inter-Attention or Inter-Skip (formulas [I]), and the weighted
  composition `v = sum_i w_i f_i` [I];
- `build_iwan`: embeddings, those three layers, the pair vector `[v_s; v_t; v_s * v_t; |v_s - v_t|]`, a hidden
  ReLU layer and the head.

Zoo entries `iwan`, `iwan_ncarnn`, `iwan_icarnn`, `iwan_scarnn` (`zoo/iwan/`, TrecQA clean), search space
`tuning/iwan.json`.
"""

from keras_match import families
from keras_match.models.iwan.alignment import COMPARES
from keras_match.models.iwan.alignment import SIMILARITIES
from keras_match.models.iwan.alignment import DecompositionAlignment
from keras_match.models.iwan.builder import build_iwan
from keras_match.models.iwan.context_encoder import ENCODERS
from keras_match.models.iwan.context_encoder import ContextEncoder
from keras_match.models.iwan.inter_weighting import WEIGHTINGS
from keras_match.models.iwan.inter_weighting import InterWeighting
from keras_match.settings import OPTIONAL_POSITIVE_INT
from keras_match.settings import POSITIVE_INT
from keras_match.settings import Rule

__all__ = ["build_iwan", "ContextEncoder", "DecompositionAlignment", "InterWeighting", "ENCODERS", "WEIGHTINGS",
           "SIMILARITIES", "COMPARES", "FAMILY"]


def _one_of(choices):
    return Rule(lambda v: v in choices, "one of " + ", ".join(choices))


FAMILY = families.register(families.Family(
    name="iwan",
    builders={"iwan": build_iwan},
    rules={
        "encoder": _one_of(ENCODERS),
        "weighting": _one_of(WEIGHTINGS),
        "similarity": _one_of(SIMILARITIES),
        "compare": _one_of(COMPARES),
        "hidden_units": OPTIONAL_POSITIVE_INT,
        "alignment_units": POSITIVE_INT,
        "attention_units": POSITIVE_INT,
        "dense_units": POSITIVE_INT,
    },
))
