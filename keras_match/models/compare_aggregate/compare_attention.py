"""Compare-Aggregate's attention layer (Wang & Jiang, ICLR 2017, eq. 2)."""

import keras
from keras import ops

from keras_match.layers.co_attention import affinity, soft_align
from keras_match.layers.masked_ops import (
    check_pair_shape,
    masked_softmax,
    split_pair_masks,
    zero_padded,
)


# eq. 2 -------------------------------------------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="keras_match")
class CompareAttention(keras.layers.Layer):
    """One-directional attention from each answer word to the question words.

    Implements eq. 2 of Wang & Jiang (2017):

        G = softmax((W^g Q_bar + b^g (x) e_Q)^T A_bar),    H = Q_bar G

    with `W^g in R^{l x l}`, `b^g in R^l`, `G in R^{Q x A}` normalised over the question words (each column
    `g_j` sums to 1, so that `h_j = Q_bar g_j` is a weighted sum of the question words), `H in R^{l x A}`.

    Batch-first, the logits are `s[b, j, i] = a_bar_j . (W^g q_bar_i + b^g)`, computed with
    `co_attention.affinity(a_bar, W^g q_bar + b^g)` (rows = answer words, so `s` is `G`'s logits transposed),
    and `h_j = sum_i softmax_i(s[b, j, :]) q_bar_i` with `co_attention.soft_align`.

    Args:
        return_attention: bool. If True, also return the attention weights. Defaults to False.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[q_bar, a_bar]`, float tensors `[batch, len_q, l]` and `[batch, len_a, l]` (the same `l`;
            usually the outputs of one `GatedPreprocessing`). The question comes first.
        mask: `None` or `[q_mask, a_mask]`, bool `[batch, len_q]` / `[batch, len_a]` (True = real token),
            either may be `None`; picked up automatically from Keras masks.

    Returns:
        `h`: float `[batch, len_a, l]`, row `j` is `h_j` (the columns of `H`, as rows). With
        `return_attention=True`, the pair `(h, weights)` with `weights [batch, len_a, len_q]` = `G^T`.

    Masking:
        The softmax runs over the real question words only (fill -1e9, weight exactly 0 at padding), so
        garbage at padded question positions cannot leak. `h` and `weights` are 0 at padded answer positions.
        An empty question (no real word) gives `h = 0` and zero weights; outputs stay finite. `h` (and
        `weights`) carry the answer mask.

    Precision:
        Under `mixed_bfloat16` the projection and both matmuls run in bfloat16; the softmax normalises in
        float32 (`masked_softmax`), rounding each weight once, so a real row's weights sum to 1 within 2^-8.

    Weights:
        `W^g`: `projection/kernel [l, l]` (the transpose of `W^g`), `projection/bias [l]`: 2 trainable weights.

    Raises:
        ValueError: at build if the inputs are not a pair of rank-3 tensors with the same, defined last
            dimension; at call if `mask` is not a pair.

    Examples:

    ```python
    preprocessing = GatedPreprocessing(units=150)
    q_bar, a_bar = preprocessing(q_embedded), preprocessing(a_embedded)
    h = CompareAttention()([q_bar, a_bar])  # [batch, len_a, 150]; masks flow in from the embeddings
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.2, eq. 2.
    """

    def __init__(self, return_attention=False, **kwargs):
        super().__init__(**kwargs)
        self.return_attention = bool(return_attention)
        self.supports_masking = True

    def build(self, input_shape):
        q_shape, _ = check_pair_shape(input_shape, self.name)
        self.projection = keras.layers.Dense(q_shape[-1], dtype=self.dtype_policy, name="projection")  # W^g, b^g
        self.projection.build(q_shape)

    def call(self, inputs, mask=None):
        q_bar, a_bar = inputs
        q_mask, a_mask = split_pair_masks(mask)
        scores = affinity(a_bar, self.projection(q_bar))  # [batch, len_a, len_q], eq. 2 logits transposed
        h = zero_padded(soft_align(scores, q_bar, q_mask), a_mask)  # h_j = Q_bar g_j
        if not self.return_attention:
            return h
        q_cols = None if q_mask is None else ops.expand_dims(q_mask, 1)
        weights = zero_padded(masked_softmax(scores, q_cols, axis=-1), a_mask)  # G^T
        return h, weights

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        a_mask = mask[1]
        return (a_mask, a_mask) if self.return_attention else a_mask

    def compute_output_shape(self, input_shape):
        q_shape, a_shape = (tuple(s) for s in input_shape)
        h_shape = a_shape[:-1] + (q_shape[-1],)
        if self.return_attention:
            return h_shape, (a_shape[0], a_shape[1], q_shape[1])
        return h_shape

    def get_config(self):
        config = super().get_config()
        config.update({"return_attention": self.return_attention})
        return config
