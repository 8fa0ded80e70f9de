"""Compare-Aggregate's preprocessing layer (Wang & Jiang, ICLR 2017, eq. 1)."""

import keras

from keras_match.layers.checks import last_dim, positive_int


# eq. 1 -------------------------------------------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="keras_match")
class GatedPreprocessing(keras.layers.Layer):
    """The preprocessing layer of Compare-Aggregate: an LSTM/GRU input gate without recurrence.

    Implements eq. 1 of Wang & Jiang (2017), for every word `x` (a column of `Q` or `A`):

        x_bar = sigmoid(W^i x + b^i) * tanh(W^u x + b^u),    W^i, W^u in R^{l x d},  b^i, b^u in R^l

    The gate and the candidate read the word alone (the paper keeps "only the input gates"), so the layer is
    position-wise. The paper applies the same `W^i, b^i, W^u, b^u` to the question and to the answer: call one
    instance on both.

    Args:
        units: int, the hidden size `l` (150 in the paper's appendix).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Input shape:
        `[..., d]` float tensor, usually `[batch, time, d]` word embeddings.

    Output shape:
        `[..., units]`, values in (-1, 1), in the layer's compute dtype.

    Masking:
        Position-wise: the input mask (if any) is returned unchanged for the output. Padded positions are not
        zeroed (the layers that reduce over time mask them out).

    Weights (in `get_weights()` order):
        `input_gate/kernel [d, units]` (`W^i` transposed), `input_gate/bias [units]`,
        `update/kernel [d, units]` (`W^u` transposed), `update/bias [units]`: 4 trainable weights, Glorot
        uniform kernels (each drawn independently), zero biases.

    Raises:
        ValueError: at construction if `units` is not a positive integer; at build if the last input dimension
            is undefined.

    Examples:

    ```python
    preprocessing = GatedPreprocessing(units=150)
    q_bar = preprocessing(q_embedded)  # [batch, len_q, 150]
    a_bar = preprocessing(a_embedded)  # [batch, len_a, 150], the same weights
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.2, eq. 1.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units)
        self.units = units
        self.supports_masking = True

    def build(self, input_shape):
        last_dim(self, input_shape)
        # Two Dense layers, each with its own Glorot initializer instance (so W^i and W^u differ).
        self.input_gate = keras.layers.Dense(
            self.units, activation="sigmoid", dtype=self.dtype_policy, name="input_gate"
        )
        self.update = keras.layers.Dense(self.units, activation="tanh", dtype=self.dtype_policy, name="update")
        self.input_gate.build(input_shape)
        self.update.build(input_shape)

    def call(self, inputs):
        return self.input_gate(inputs) * self.update(inputs)  # eq. 1

    # Position-wise: the input mask passes through unchanged (`supports_masking`).

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config
