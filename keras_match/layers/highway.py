"""Highway layer (MCAN eq. 1)."""

import keras
from keras import ops

from keras_match.layers.checks import last_dim
from keras_match.layers.checks import positive_int


def _clone_initializer(initializer, offset):
    """A fresh copy of `initializer`, so that weights of one shape do not all get the same values.

    An unseeded Keras 3 initializer instance draws its seed once, so reusing it for two kernels of the same
    shape would initialise them identically. An integer seed is shifted by `offset` for the same reason.
    """
    config = initializer.get_config()
    if isinstance(config.get("seed"), int):
        config["seed"] += offset
    return initializer.__class__.from_config(config)


@keras.saving.register_keras_serializable(package="keras_match")
class Highway(keras.layers.Layer):
    """A single highway layer, `y = H(x) * T(x) + (1 - T(x)) * x`.

    Implements eq. 1 of Tay et al. (2018):

        H(x) = activation(x W_H + b_H)     (transform)
        T(x) = sigmoid(x W_T + b_T)        (gate)
        y    = H(x) * T(x) + (1 - T(x)) * C(x)

    with `W_H, W_T` of shape `[d, units]`. The carry term `C(x)` is `x` itself when `units == d`. When
    `units != d` the paper says "an additional nonlinear transform is used to project x to the same
    dimensionality": then `C(x) = activation(x W_C + b_C)` with `W_C` of shape `[d, units]`.

    Reading chosen: the paper gives `W_H, W_T` in R^{r x d}, i.e. H and T read the original `x`; only the carry
    term is replaced by the projection (H and T do not read the projection). The projection uses the same
    `activation` as H. All biases start at zero (the paper gives no gate-bias initialisation).

    The layer works position-wise on any rank >= 2 input (`[batch, d]`, `[batch, time, d]`, ...).

    Args:
        units: int or None. Output size. `None` means the input size `d` (no projection).
        activation: activation of H and of the carry projection (name or callable). Defaults to `"relu"`.
        kernel_initializer: initializer of the kernels (each kernel gets its own copy). Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: optional regularizer applied to every kernel (not to the biases).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Input shape:
        `[..., d]` float tensor (float32 unless the dtype policy says otherwise).

    Output shape:
        `[..., units]` (`units=None`: `[..., d]`), in the layer's compute dtype.

    Masking:
        Position-wise, so the input mask (if any) is returned unchanged for the output (`supports_masking`).

    Precision:
        Under `mixed_bfloat16` everything runs in bfloat16 (no cast to float32): the layer is position-wise, with
        no sum over time and no state, so each output carries only a few roundings of relative size 2^-8.

    Weights (in `get_weights()` order):
        `transform_kernel [d, units]`, `transform_bias [units]`, `gate_kernel [d, units]`,
        `gate_bias [units]`, and when `units != d`: `carry_kernel [d, units]`, `carry_bias [units]`.
        So 4 trainable weights, or 6 with the projection.

    Raises:
        ValueError: at construction if `units` is not a positive integer or None; at build if the last
            input dimension is undefined.

    Examples:

    ```python
    Highway()(np.ones((2, 7, 50), "float32"))          # [2, 7, 50], 4 weights
    Highway(units=20)(np.ones((2, 50), "float32"))     # [2, 20], 6 weights (carry projection)

    # Siamese word filter over masked embeddings (the mask passes through):
    embedded = keras.layers.Embedding(10000, 300, mask_zero=True)(keras.Input((None,), dtype="int32"))
    filtered = Highway(units=50)(embedded)             # [batch, time, 50], mask unchanged
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.1.1, eq. 1 (and eq. 15, where two highway layers form the prediction head).
        - [Srivastava, Greff, Schmidhuber. Highway Networks. 2015](https://arxiv.org/abs/1505.00387).
    """

    def __init__(
        self,
        units=None,
        activation="relu",
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        positive_int("units", units, allow_none=True)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        input_dim = last_dim(self, input_shape)
        units = input_dim if self.units is None else self.units
        self.output_units = units
        self.has_projection = units != input_dim

        def dense_weights(prefix, offset):
            kernel = self.add_weight(
                name=f"{prefix}_kernel",
                shape=(input_dim, units),
                initializer=_clone_initializer(self.kernel_initializer, offset),
                regularizer=self.kernel_regularizer,
            )
            bias = self.add_weight(name=f"{prefix}_bias", shape=(units,), initializer="zeros")
            return kernel, bias

        self.transform_kernel, self.transform_bias = dense_weights("transform", 0)
        self.gate_kernel, self.gate_bias = dense_weights("gate", 1)
        if self.has_projection:
            self.carry_kernel, self.carry_bias = dense_weights("carry", 2)

    def call(self, inputs):
        transform = self.activation(ops.matmul(inputs, self.transform_kernel) + self.transform_bias)
        gate = ops.sigmoid(ops.matmul(inputs, self.gate_kernel) + self.gate_bias)
        if self.has_projection:
            carry = self.activation(ops.matmul(inputs, self.carry_kernel) + self.carry_bias)
        else:
            carry = inputs
        return transform * gate + (1.0 - gate) * carry

    # Position-wise: the input mask passes through unchanged (`supports_masking`).

    def compute_output_shape(self, input_shape):
        units = input_shape[-1] if self.units is None else self.units
        return tuple(input_shape[:-1]) + (units,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config
