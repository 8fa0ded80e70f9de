"""The Compare-Aggregate family (Wang & Jiang, ICLR 2017): section 2 (eq. 1-9) as layers, eq. 10 in the builder.

The layers, in the order of the model:

- `GatedPreprocessing` (eq. 1): `X_bar = sigma(W^i X + b^i) * tanh(W^u X + b^u)`, per word, one instance shared by
  the question and the answer;
- `CompareAttention` (eq. 2): `G = softmax((W^g Q_bar + b^g)^T A_bar)`, `H = Q_bar G`: each answer word's
  attention-weighted sum of the question words;
- the comparison functions `t_j = f(a_bar_j, h_j)` (eq. 3-8), one pluggable family chosen by name from
  `COMPARISONS` with `get_comparison`: `"nn"`, `"ntn"`, `"euccos"`, `"sub"`, `"mult"`, `"submult_nn"`;
- `CNNAggregation` (eq. 9): `r = CNN([t_1, ..., t_A])`, one ReLU convolution per window size, each max-pooled
  over time;
- `CompareAggregate`: the whole of eq. 1-9 from the embedded question and answer to `r`.

Notation: the paper stores words as columns (`Q in R^{d x Q}`); here tensors are batch-first with words as rows,
`[batch, time, dim]`, and a Keras `Dense` kernel `[in, out]` is the transpose of the paper's `W [out, in]`.
`build_compare_aggregate` adds the prediction layers of section 3.1 (eq. 10); `explain` draws the paper's Figure 2
(`keras-match explain`). Zoo entries `compare_aggregate_*` (`zoo/compare_aggregate/`), search space
`tuning/compare_aggregate.json`.
"""

from keras_match import families
from keras_match.models.compare_aggregate.builder import build_compare_aggregate
from keras_match.models.compare_aggregate.cnn_aggregation import CNNAggregation
from keras_match.models.compare_aggregate.compare_aggregate import CompareAggregate
from keras_match.models.compare_aggregate.compare_attention import CompareAttention
from keras_match.models.compare_aggregate.comparison import COMPARISONS
from keras_match.models.compare_aggregate.comparison import Comparison
from keras_match.models.compare_aggregate.comparison import EucCosComparison
from keras_match.models.compare_aggregate.comparison import MultComparison
from keras_match.models.compare_aggregate.comparison import NNComparison
from keras_match.models.compare_aggregate.comparison import NTNComparison
from keras_match.models.compare_aggregate.comparison import SubComparison
from keras_match.models.compare_aggregate.comparison import SubMultNNComparison
from keras_match.models.compare_aggregate.comparison import comparison_class
from keras_match.models.compare_aggregate.comparison import get_comparison
from keras_match.models.compare_aggregate.explain import plot_explanation
from keras_match.models.compare_aggregate.gated_preprocessing import GatedPreprocessing
from keras_match.settings import OPTIONAL_POSITIVE_INT
from keras_match.settings import POSITIVE_INT

__all__ = ["build_compare_aggregate", "CNNAggregation", "CompareAggregate", "CompareAttention", "COMPARISONS",
           "Comparison", "EucCosComparison", "MultComparison", "NNComparison", "NTNComparison", "SubComparison",
           "SubMultNNComparison", "comparison_class", "get_comparison", "GatedPreprocessing", "FAMILY"]

FAMILY = families.register(families.Family(
    name="compare_aggregate",
    builders={"compare_aggregate": build_compare_aggregate},
    rules={"units": POSITIVE_INT, "filters": OPTIONAL_POSITIVE_INT, "dense_units": OPTIONAL_POSITIVE_INT},
    explain=plot_explanation,
    explain_options={"window": {"type": int, "metavar": "SIZE",
                                "help": "the CNN window size to show (default: the largest)"}},
))
