"""MCAN compression functions F_c: `[..., n] -> [..., 1]` (eq. 10-12), and `get_compression`.

The three classes live in one file on purpose: they are one pluggable family chosen by name (`"sm"`, `"nn"`,
`"fm"`, the MCAN (SM) / (NN) / (FM) variants of the paper), in the way TF Model Garden passes `attention_cls=`.
Each is a few lines, and the name -> class table `get_compression` reads sits next to them, so adding a
compression function is one edit in one place.

All three work position-wise on any rank >= 2 input, so they carry the input mask through unchanged; padding is
handled by the caller (`MultiCastAttention` zeroes the features of padded positions). These shared sections (input
and output shape, masking) are written once, in `_Compression`; each class states its own equation, weights and
errors.
"""

import keras
from keras import ops

from keras_match.layers.checks import last_dim, positive_int
from keras_match.layers.registry import by_name


class _Compression(keras.layers.Layer):
    """Shared plumbing of the three compression functions: position-wise, mask passes through, output `[..., 1]`.

    Input shape:
        `[..., n]` float tensor (any rank >= 2).

    Output shape:
        `[..., 1]`, same dtype.

    Masking:
        Position-wise; the input mask is passed through unchanged.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (1,)


@keras.saving.register_keras_serializable(package="keras_match")
class SumCompression(_Compression):
    """Sum compression (SM): `F(x) = sum_i x_i`.

    Implements eq. 10 of Tay et al. (2018). No weights. Maps float `[..., n]` to `[..., 1]` of the same dtype,
    position by position (masking: as `_Compression`, the mask passes through).

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Examples:

    ```python
    SumCompression()(np.ones((2, 7, 50), "float32"))  # [2, 7, 1], every value 50.0
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.3.2, eq. 10.
    """

    def call(self, inputs):
        return ops.sum(inputs, axis=-1, keepdims=True)

    def get_config(self):
        return super().get_config()


@keras.saving.register_keras_serializable(package="keras_match")
class DenseCompression(_Compression):
    """Neural-network compression (NN): `F(x) = ReLU(x W_c + b_c)`.

    Implements eq. 11 of Tay et al. (2018). The flattened paper text writes `W_c x R^{n x 1}`; read as
    `W_c in R^{n x 1}`, `b_c in R`. Float `[..., n]` in, `[..., 1]` out (same dtype), non-negative (ReLU);
    shapes and masking: as `_Compression`.

    Args:
        kernel_regularizer: optional regularizer of `W_c`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Weights (in `get_weights()` order):
        `kernel [n, 1]` (Glorot uniform), `bias [1]` (zeros): 2 trainable weights.

    Raises:
        ValueError: at build if the last input dimension is undefined.

    Examples:

    ```python
    DenseCompression(kernel_regularizer="l2")(np.ones((2, 7, 50), "float32"))  # [2, 7, 1]
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.3.2, eq. 11.
    """

    def __init__(self, kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, input_shape):
        dim = last_dim(self, input_shape)
        self.kernel = self.add_weight(
            name="kernel", shape=(dim, 1), initializer="glorot_uniform", regularizer=self.kernel_regularizer
        )
        self.bias = self.add_weight(name="bias", shape=(1,), initializer="zeros")

    def call(self, inputs):
        return ops.relu(ops.matmul(inputs, self.kernel) + self.bias)

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer)})
        return config


@keras.saving.register_keras_serializable(package="keras_match")
class FactorizationMachine(_Compression):
    """Factorization-machine compression (FM).

    Implements eq. 12 of Tay et al. (2018) (Rendle, 2010):

        F(x) = w0 + sum_i w_i x_i + sum_i sum_{j>i} <v_i, v_j> x_i x_j

    with `w0` a scalar, `w in R^n`, `V = [v_1 ... v_n] in R^{n x k}` (`k = factors`), for each position's
    features `x in R^n`: float `[..., n]` in, `[..., 1]` out, same dtype (shapes and masking: as `_Compression`).
    The flattened paper text writes `w_i in R^n`; read as the vector `w in R^n` (each `w_i` a scalar). The
    pairwise term is computed in O(n k) with Rendle's identity

        sum_i sum_{j>i} <v_i, v_j> x_i x_j = 0.5 * sum_f [ (sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2 ].

    Precision: under a bfloat16 (or float16) policy the whole of eq. 12 runs in float32, from the input and the
    unrounded float32 weights, and the output is rounded once: the identity subtracts two sums of squares, and
    bfloat16's 8-bit mantissa would leave their difference an error of 2^-8 of those sums, which dwarfs the
    pairwise term when one feature dominates (e.g. x_1 = 10, the others ~0.1: sums ~100, the term ~1).

    Args:
        factors: int >= 1, the number of factors `k`. Defaults to 10.
        kernel_regularizer: optional regularizer of `w` and `V` (not of `w0`).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Weights (in `get_weights()` order):
        `bias [1]` (w0, zeros), `linear [n, 1]` (w, Glorot uniform), `factors [n, k]` (V, normal with
        stddev 0.1, libFM's default `init_stdev`): 3 trainable weights, `1 + n + n k` parameters.

    Raises:
        ValueError: at construction if `factors` is not a positive integer; at build if the last input
            dimension is undefined.

    Examples:

    ```python
    FactorizationMachine(factors=10)(np.ones((2, 7, 50), "float32"))  # [2, 7, 1]
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.3.2, eq. 12.
        - [Rendle. Factorization Machines. ICDM 2010](https://doi.org/10.1109/ICDM.2010.127), eq. 1 and
          lemma 3.1.
    """

    def __init__(self, factors=10, kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        positive_int("factors", factors)
        self.factors = factors
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, input_shape):
        dim = last_dim(self, input_shape)
        # autocast=False: the weights are read as stored (float32 under a mixed policy); `call` computes in float32.
        self.bias = self.add_weight(name="bias", shape=(1,), initializer="zeros", autocast=False)
        self.linear = self.add_weight(
            name="linear", shape=(dim, 1), initializer="glorot_uniform", regularizer=self.kernel_regularizer,
            autocast=False,
        )
        self.factor_matrix = self.add_weight(
            name="factors",
            shape=(dim, self.factors),
            initializer=keras.initializers.RandomNormal(stddev=0.1),
            regularizer=self.kernel_regularizer,
            autocast=False,
        )

    def call(self, inputs):
        # float32 under bfloat16 / float16 (see the class docstring); both casts are no-ops in float32 and float64.
        work = "float64" if self.compute_dtype == "float64" else "float32"
        inputs = ops.cast(inputs, work)
        linear = ops.matmul(inputs, self.linear) + self.bias
        summed = ops.matmul(inputs, self.factor_matrix)  # sum_i v_if x_i           [..., k]
        summed_squares = ops.matmul(ops.square(inputs), ops.square(self.factor_matrix))  # sum_i v_if^2 x_i^2
        pairwise = 0.5 * ops.sum(ops.square(summed) - summed_squares, axis=-1, keepdims=True)
        return ops.cast(linear + pairwise, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "factors": self.factors,
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config


COMPRESSIONS = {
    "sm": SumCompression,
    "nn": DenseCompression,
    "fm": FactorizationMachine,
}


def compression_class(name):
    """The compression class for `name` (`"sm"`, `"nn"` or `"fm"`, any case).

    Raises:
        ValueError: for any other name, listing the valid ones.
    """
    return by_name(COMPRESSIONS, name, "compression",
                   "sm = sum, eq. 10; nn = dense ReLU, eq. 11; fm = factorization machine, eq. 12")


def get_compression(name, **kwargs):
    """A new compression layer (MCAN eq. 10-12) chosen by name.

    Args:
        name: `"sm"` (`SumCompression`), `"nn"` (`DenseCompression`) or `"fm"` (`FactorizationMachine`);
            case-insensitive.
        **kwargs: passed to the layer's constructor (e.g. `factors=10`, `kernel_regularizer=...`, `dtype=...`).
            `name` is taken by the compression name; to name the layer, use `compression_class(name)(name=...)`.

    Returns:
        A new, unbuilt layer instance (every call gives a distinct layer with its own weights).

    Raises:
        ValueError: if `name` is not one of the valid names (the message lists them).

    Examples:

    ```python
    layer = get_compression("FM", factors=4)  # a new FactorizationMachine
    get_compression("max")                    # ValueError: ... Valid names (case-insensitive): ['fm', 'nn', 'sm']
    ```
    """
    return compression_class(name)(**kwargs)
