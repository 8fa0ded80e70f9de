"""`CompareAggregate`: the whole of Compare-Aggregate's eq. 1-9 (Wang & Jiang, ICLR 2017, section 2) as one layer."""

import keras

from keras_match.layers.checks import one_of, positive_int
from keras_match.layers.masked_ops import (
    check_pair_shape,
    split_pair_masks,
)
from keras_match.models.compare_aggregate.cnn_aggregation import (
    CONV_PADDINGS,
    CNNAggregation,
    check_windows,
)
from keras_match.models.compare_aggregate.compare_attention import CompareAttention
from keras_match.models.compare_aggregate.comparison import comparison_class
from keras_match.models.compare_aggregate.gated_preprocessing import GatedPreprocessing


# eq. 1-9 -----------------------------------------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="keras_match")
class CompareAggregate(keras.layers.Layer):
    """The Compare-Aggregate model from embedded question and answer to the answer's vector `r`.

    Implements section 2 of Wang & Jiang (2017), eq. 1-9:

    1. preprocessing (eq. 1): `q_bar = GatedPreprocessing(q)`, `a_bar = GatedPreprocessing(a)`, one instance
       (shared weights) for both;
    2. attention (eq. 2): `h_j`, the attention-weighted sum of the question words for answer word `j`
       (`CompareAttention`);
    3. comparison (eq. 3-8): `t_j = f(a_bar_j, h_j)`, `f` chosen by name (`get_comparison`);
    4. aggregation (eq. 9): `r = CNN([t_1 ... t_A])` (`CNNAggregation`).

    The attention is one-directional (answer words attend to the question), so the roles are not symmetric:
    the question (premise) comes first, and `r` describes the answer (hypothesis). The prediction head (eq. 10
    for ranking, a softmax for SNLI) is left to the caller.

    Readings chosen:

    - the comparison functions with weights (`nn`, `ntn`, `submult_nn`) output `l = units` features, as in
      the paper (`W in R^{l x 2l}`, `T in R^{l x l x l}`);
    - `filters=None` gives `l` filters per window, so `r in R^{nl}` as in section 2.4;
    - eq. 9 is Kim's narrow convolution (`conv_padding="valid"`); answers shorter than a window are extended with
      zero vectors (the authors' public code pads them with a word instead). The authors' WikiQA code also
      drops `W^g` and lets each answer word attend to an extra zero question vector; neither is in the paper,
      and neither is done here.

    Args:
        units: int, the hidden size `l` (150 in the paper's appendix).
        comparison: str, the comparison function: `"nn"`, `"ntn"`, `"euccos"`, `"sub"`, `"mult"` or
            `"submult_nn"` (case-insensitive). Defaults to `"submult_nn"`, the paper's best overall.
        windows: non-empty list of distinct positive ints, the CNN window sizes. Defaults to `(1, 2, 3, 4, 5)`
            (WikiQA).
        filters: int or None, filters per window (`None`: `units`).
        conv_padding: `"valid"` (default) or `"same"`, see `CNNAggregation`.
        return_word_features: bool. If True, return a dict with the intermediate results for visualisation
            (Figure 2 of the paper). Defaults to False.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[q, a]`, float tensors `[batch, len_q, d]` and `[batch, len_a, d]` (embedded question and
            answer, the same `d`).
        mask: `None` or `[q_mask, a_mask]`, bool `[batch, len_q]` / `[batch, len_a]` (True = real token; the
            answer mask right-padded), either may be `None`; picked up automatically from Keras masks (e.g.
            `Embedding(mask_zero=True)`).

    Returns:
        `r`: float `[batch, len(windows) * filters]`. With `return_word_features=True`, a dict:
        - `"aggregate"`: `r`;
        - `"word_features"`: `[batch, len_a, len(windows) * filters]`, the convolution outputs per answer
          position before the max (see `CNNAggregation`; `r` is their maximum over time);
        - `"attention"`: `[batch, len_a, len_q]`, `G^T` of eq. 2 (row `j`: answer word `j`'s weights over the
          question words).

    Masking:
        Padded question words get zero attention weight; padded answer positions are zeroed before the CNN and
        never counted in its max; so garbage at padded positions, or more padding, does not change `r`. An
        empty answer gives `r = 0`; an empty question gives `h = 0` for every answer word; all finite. The
        outputs carry no mask.

    Weights:
        `preprocessing` (4) + `attention` (2) + `comparison` (2 for `nn`, `ntn`, `submult_nn`, else 0) +
        `aggregation` (2 per window): for 5 windows, 16 or 18 trainable weights.

    Raises:
        ValueError: at construction if `units` or `filters` is not a positive integer, `comparison` is unknown
            (the message lists the valid names), `windows` is empty or invalid, or `conv_padding` is unknown; at
            build if the inputs are not a pair of rank-3 tensors with the same, defined last dimension; at call
            if `mask` is not a pair.

    Examples:

    ```python
    q_ids = keras.Input((None,), dtype="int32")
    a_ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10000, 300, mask_zero=True, trainable=False)  # masks flow on
    r = CompareAggregate(units=150, comparison="submult_nn")([embedding(q_ids), embedding(a_ids)])  # [batch, 750]

    # Figure 2: the largest value of each convolution dimension per answer word
    out = CompareAggregate(units=150, windows=[3], return_word_features=True)([q, a])
    out["word_features"]  # [batch, len_a, 150]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2, eq. 1-9, and the appendix.
    """

    def __init__(
        self,
        units,
        comparison="submult_nn",
        windows=(1, 2, 3, 4, 5),
        filters=None,
        conv_padding="valid",
        return_word_features=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # Each argument checked (ValueError) where it is kept.
        positive_int("units", units)
        self.units = units
        positive_int("filters", filters, allow_none=True)
        self.filters = filters
        comparison_class(comparison)  # raises ValueError for an unknown name
        self.comparison = comparison
        self.windows = check_windows(windows)
        one_of("conv_padding", conv_padding, CONV_PADDINGS)
        self.conv_padding = conv_padding
        self.return_word_features = bool(return_word_features)
        self.supports_masking = True

    def build(self, input_shape):
        q_shape, a_shape = check_pair_shape(input_shape, self.name)
        l_q, l_a = q_shape[:-1] + (self.units,), a_shape[:-1] + (self.units,)
        self.preprocessing = GatedPreprocessing(self.units, dtype=self.dtype_policy, name="preprocessing")
        self.preprocessing.build(q_shape)
        self.attention = CompareAttention(
            return_attention=self.return_word_features, dtype=self.dtype_policy, name="attention"
        )
        self.attention.build([l_q, l_a])
        self.comparator = comparison_class(self.comparison)(dtype=self.dtype_policy, name="comparison")
        self.comparator.build([l_a, l_a])
        self.aggregation = CNNAggregation(
            filters=self.units if self.filters is None else self.filters,
            windows=self.windows,
            conv_padding=self.conv_padding,
            return_word_features=self.return_word_features,
            dtype=self.dtype_policy,
            name="aggregation",
        )
        self.aggregation.build(self.comparator.compute_output_shape([l_a, l_a]))

    def call(self, inputs, mask=None):
        q, a = inputs
        q_mask, a_mask = split_pair_masks(mask)
        q_bar, a_bar = self.preprocessing(q), self.preprocessing(a)  # eq. 1, shared weights
        h = self.attention([q_bar, a_bar], mask=[q_mask, a_mask])  # eq. 2
        if self.return_word_features:
            h, attention = h
        t = self.comparator([a_bar, h], mask=[a_mask, a_mask])  # eq. 3-8
        aggregated = self.aggregation(t, mask=a_mask)  # eq. 9
        if not self.return_word_features:
            return aggregated
        return {**aggregated, "attention": attention}

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        q_shape, a_shape = (tuple(s) for s in input_shape)
        width = len(self.windows) * (self.units if self.filters is None else self.filters)
        r_shape = (a_shape[0], width)
        if not self.return_word_features:
            return r_shape
        return {
            "aggregate": r_shape,
            "word_features": (a_shape[0], a_shape[1], width),
            "attention": (a_shape[0], a_shape[1], q_shape[1]),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "comparison": self.comparison,
                "windows": list(self.windows),
                "filters": self.filters,
                "conv_padding": self.conv_padding,
                "return_word_features": self.return_word_features,
            }
        )
        return config
