"""Intra-attention (MCAN eq. 6)."""

import keras

from keras_match.layers.checks import sequence_shape
from keras_match.layers.co_attention import ProjectedAttention
from keras_match.layers.co_attention import affinity
from keras_match.layers.co_attention import soft_align
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import zero_padded


@keras.saving.register_keras_serializable(package="keras_match")
class IntraAttention(ProjectedAttention):
    """Intra-attention (self-alignment) of one sequence.

    Implements eq. 6 of Tay et al. (2018):

        s_ij = F(x_i)^T F(x_j),    x'_i = sum_j softmax_j(s_ij) x_j

    with `F` one dense layer (`units`, `activation`) owned by this layer (not shared with `CoAttention`).
    Applying one instance to q and to d gives the siamese intra-attention of MCAN.

    Reading chosen: the sum of eq. 6 runs over every word `j = 1..l`, the word itself (`j = i`) included; no
    distance bias or self-exclusion is added (the paper mentions none).

    Args:
        units: int, output size of `F`.
        activation: activation of `F` (name or callable). Defaults to `"relu"`.
        kernel_regularizer: optional regularizer of `F`'s kernel.
        scaled_affinity: divide `s` by `sqrt(units)` (the authors' dot attention). Defaults to False (eq. 6).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Input shape:
        `[batch, time, dim]` float tensor.

    Output shape:
        `[batch, time, dim]`, the layer's compute dtype.

    Masking:
        With a mask `[batch, time]` (True = real token), the softmax runs over real words only (fill -1e9,
        weight exactly 0 at padding), and the output is 0 at padded positions. A fully padded row gives
        zeros. The input mask is returned unchanged for the output.

    Precision:
        Under `mixed_bfloat16` the projection, the affinity and the weighted sum are bfloat16 matmuls; the softmax
        normalises in float32 (`masked_softmax`), whose row sum would otherwise round at every term.

    Weights:
        `F`: `projection/kernel [dim, units]`, `projection/bias [units]` (2 trainable weights).

    Raises:
        ValueError: at construction if `units` is not a positive integer; at build if the input is not rank 3
            or its last dimension is undefined.

    Examples:

    ```python
    x = np.random.rand(2, 7, 8).astype("float32")
    mask = np.array([[True] * 7, [True] * 3 + [False] * 4])
    IntraAttention(units=8)(x, mask=mask)  # [2, 7, 8], zeros at the 4 padded positions of row 1
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.2.3, eq. 6.
    """

    # The arguments (`units`, `activation`, `kernel_regularizer`, `scaled_affinity`), their checks and config,
    # and the projection `F` come from `ProjectedAttention`; the mask passes through (`supports_masking`).

    def build(self, input_shape):
        sequence_shape(self, input_shape)
        self.build_projection(input_shape)

    def call(self, inputs, mask=None):
        mask = as_bool_mask(mask)
        projected = self.projection(inputs)
        s = affinity(projected, projected, scaled=self.scaled_affinity)
        return zero_padded(soft_align(s, inputs, mask), mask)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)
