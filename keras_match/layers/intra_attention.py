"""Intra-attention (MCAN eq. 6)."""

import keras

from keras_match.layers.co_attention import affinity
from keras_match.layers.co_attention import soft_align
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import zero_padded


@keras.saving.register_keras_serializable(package="keras_match")
class IntraAttention(keras.layers.Layer):
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

    def __init__(self, units, activation="relu", kernel_regularizer=None, scaled_affinity=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, int) or units < 1:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        self.units = units
        self.activation = keras.activations.get(activation)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.scaled_affinity = bool(scaled_affinity)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                f"Layer {self.name} expects a rank-3 input [batch, time, dim] with a defined dim. "
                f"Received input_shape={input_shape}"
            )
        self.projection = keras.layers.Dense(
            self.units,
            activation=self.activation,
            kernel_regularizer=self.kernel_regularizer,
            dtype=self.dtype_policy,
            name="projection",
        )
        self.projection.build(input_shape)

    def call(self, inputs, mask=None):
        mask = as_bool_mask(mask)
        projected = self.projection(inputs)
        s = affinity(projected, projected, scaled=self.scaled_affinity)
        return zero_padded(soft_align(s, inputs, mask), mask)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "scaled_affinity": self.scaled_affinity,
            }
        )
        return config
