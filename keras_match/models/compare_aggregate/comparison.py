"""Compare-Aggregate's comparison functions `t_j = f(a_bar_j, h_j)` (Wang & Jiang, ICLR 2017, eq. 3-8): one
pluggable set chosen by name from `COMPARISONS` with `get_comparison` (`"nn"`, `"ntn"`, `"euccos"`, `"sub"`,
`"mult"`, `"submult_nn"`). They share the `Comparison` base class (pair input, shape checks, masks) and live in
one module for that reason, as the compression functions of MCAN do. What the six share (the call arguments,
masking, the shape errors, the paper) is stated once, in `Comparison` (and the `units` argument in
`_UnitsComparison`); each class's docstring states its own equation, output shape, weights and errors and points
there for the rest."""

import keras
from keras import ops

from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import (
    check_pair_shape,
    split_pair_masks,
    zero_padded,
)
from keras_match.layers.registry import by_name

EUCCOS_EPSILON = 1e-6
"""Floor of the vector norms in the `"euccos"` comparison (eq. 5), see `EucCosComparison`."""


# eq. 3-8 -----------------------------------------------------------------------------------------------------
class Comparison(keras.layers.Layer):
    """Base class of the comparison functions `t_j = f(a_bar_j, h_j)` (Wang & Jiang 2017, eq. 3-8).

    A subclass implements `compare(a, h) -> t` on `[..., l]` tensors and `output_dim(l)`; if it has weights it
    creates them in `build_comparison(l)`. This base class handles the pair input, the shape checks, the masks
    and the output shape. To add a comparison function: one subclass plus one line in `COMPARISONS`.

    The sections below hold for all six comparison classes; each subclass's docstring gives its own `k`.

    Call arguments:
        inputs: `[a, h]`, float tensors `[batch, len_a, l]` each (the preprocessed answer words `a_bar_j` and
            their attention-weighted question vectors `h_j`).
        mask: `None` or `[a_mask, h_mask]` (bool `[batch, len_a]`, True = real word; `h_mask` is ignored, `h`
            is aligned to `a`); picked up automatically from Keras masks.

    Returns:
        `t`: float `[batch, len_a, k]`, `k = output_dim(l)`, 0 at padded answer positions; carries `a`'s mask.

    Raises:
        ValueError: at build if `a` and `h` are not rank-3 tensors with the same, defined last dimension.

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 3-8 (one equation per subclass).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def output_dim(self, dim):
        raise NotImplementedError

    def build_comparison(self, dim):
        """Create the weights for inputs of size `dim` (nothing by default)."""

    def compare(self, a, h):
        raise NotImplementedError

    def build(self, input_shape):
        a_shape, _ = check_pair_shape(input_shape, self.name)
        self.build_comparison(a_shape[-1])

    def call(self, inputs, mask=None):
        a, h = inputs
        a_mask, _ = split_pair_masks(mask)
        return zero_padded(self.compare(a, h), a_mask)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        return mask[0]

    def compute_output_shape(self, input_shape):
        a_shape = tuple(input_shape[0])
        return a_shape[:-1] + (self.output_dim(a_shape[-1]),)


class _UnitsComparison(Comparison):
    """A comparison with `units` output features: eq. 3 (NN), 4 (NTN) and 8 (SUBMULT+NN).

    Args:
        units: int or None, the number of output features `k` (`None`: the input size `l`, as in the paper).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Raises:
        ValueError: at construction if `units` is not a positive integer or None; at build as `Comparison`.
    """

    def __init__(self, units=None, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units, allow_none=True)
        self.units = units

    def output_dim(self, dim):
        return dim if self.units is None else self.units

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


class _DenseComparison(_UnitsComparison):
    """`ReLU(W [features(a, h)] + b)` with `W in R^{units x 2l}`: eq. 3 and eq. 8."""

    def build_comparison(self, dim):
        self.dense = keras.layers.Dense(
            self.output_dim(dim), activation="relu", dtype=self.dtype_policy, name="dense"
        )
        self.dense.build((None, 2 * dim))

    def features(self, a, h):
        raise NotImplementedError

    def compare(self, a, h):
        return self.dense(self.features(a, h))


class _ElementwiseComparison(Comparison):
    """A comparison without weights giving one feature per input dimension: eq. 6 and eq. 7."""

    def output_dim(self, dim):
        return dim


@keras.saving.register_keras_serializable(package="keras_match")
class NNComparison(_DenseComparison):
    """NEURALNET (NN) comparison: `t_j = ReLU(W [a_j; h_j] + b)`, eq. 3 of Wang & Jiang (2017).

    `W in R^{l x 2l}`, `b in R^l` in the paper; `units` (the output size) may differ from `l`.
    Call arguments (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask), padding and shape errors: as
    `Comparison`; the `units` argument and its error: as `_UnitsComparison`.

    Args:
        units: int or None, the output size (`None`: `l`).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Returns:
        `[batch, len_a, units]`, non-negative (ReLU).

    Weights:
        `dense/kernel [2l, units]` (rows `0..l-1` read `a`, rows `l..2l-1` read `h`), `dense/bias [units]`.

    Examples:
        `t = NNComparison()([a_bar, h])  # [batch, len_a, l]`

    Reference:
        Wang & Jiang (2017), section 2.3, eq. 3 (full citation in `Comparison`).
    """

    def features(self, a, h):
        return ops.concatenate([a, h], axis=-1)


@keras.saving.register_keras_serializable(package="keras_match")
class NTNComparison(_UnitsComparison):
    """NEURALTENSORNET (NTN) comparison: `t_j = ReLU(a_j^T T^[1..k] h_j + b)`, eq. 4 of Wang & Jiang (2017).

    The neural tensor network of Socher et al. (2013), without its linear term, as in the paper: output
    feature `s` is the bilinear form `a_j^T T^[s] h_j` of slice `s`. The paper has `k = l` slices
    (`T in R^{l x l x l}`). Call arguments (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask),
    padding and shape errors: as `Comparison`; the `units` error: as `_UnitsComparison`.

    Args:
        units: int or None, the number of slices `k` (`None`: `l`, as in the paper).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Returns:
        `[batch, len_a, units]`, non-negative (ReLU).

    Weights (in `get_weights()` order):
        `tensor [units, l, l]` (slice `s` is `T^[s]`, indexed `[s, row of a, column of h]`; Glorot uniform),
        `bias [units]` (zeros): 2 trainable weights, `k l^2 + k` parameters (3.4 M for `l = 150`).

    Examples:
        `t = NTNComparison()([a_bar, h])  # [batch, len_a, l]`

    Reference:
        - Wang & Jiang (2017), section 2.3, eq. 4 (full citation in `Comparison`).
        - [Socher et al. Recursive Deep Models for Semantic Compositionality Over a Sentiment Treebank. EMNLP
          2013](https://aclanthology.org/D13-1170/), eq. 2 (the tensor layer).
    """

    def build_comparison(self, dim):
        slices = self.output_dim(dim)
        self.tensor = self.add_weight(name="tensor", shape=(slices, dim, dim), initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(slices,), initializer="zeros")

    def compare(self, a, h):
        # a^T T^[s] for every slice as one matrix product [..., l] x [l, k l]. The einsum "...i,sij->...sj" this
        # replaces let TensorFlow's gradient materialise [batch, len, k l, l] (146 GB for a WikiQA batch at l = 150)
        slices, dim = self.tensor.shape[0], self.tensor.shape[1]
        flat_tensor = ops.reshape(ops.transpose(self.tensor, (1, 0, 2)), (dim, slices * dim))  # [i, (s, j)]
        a_t = ops.reshape(ops.matmul(a, flat_tensor), tuple(ops.shape(a)[:-1]) + (slices, dim))  # [..., k, l]
        return ops.relu(ops.sum(a_t * ops.expand_dims(h, -2), axis=-1) + self.bias)


@keras.saving.register_keras_serializable(package="keras_match")
class EucCosComparison(Comparison):
    """EUCLIDEAN+COSINE (EUCCOS) comparison: `t_j = [||a_j - h_j||_2; cos(a_j, h_j)]`, eq. 5 of Wang & Jiang.

    No weights; the output has 2 features, in the paper's order (distance, then cosine). Call arguments
    (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask), padding and shape errors: as `Comparison`.

    Numerical safety: every norm is computed as `sqrt(max(||x||^2, eps^2))` with `eps = EUCCOS_EPSILON = 1e-6`,
    so the square root never sees 0 (its gradient there is infinite) and no division is by 0:

    - distance: `sqrt(max(||a - h||^2, eps^2))`: exact above `eps`, `eps` (not 0) for `a = h`, with a zero
      gradient below the floor;
    - cosine: `a . h / (max(||a||, eps) max(||h||, eps))`: exact when both norms are at least `eps`, 0 when either
      vector is 0 (the dot product is then 0), with gradients bounded by `1 / eps`.

    Both are computed in float32 (float64 under a float64 policy) whatever the compute dtype, since `eps^2`
    underflows in float16; the result is cast back.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Returns:
        `[batch, len_a, 2]`: `[..., 0]` the distance (>= 1e-6), `[..., 1]` the cosine (in [-1, 1]).

    Examples:
        `t = EucCosComparison()([a_bar, h])  # [batch, len_a, 2]`

    Reference:
        Wang & Jiang (2017), section 2.3, eq. 5 (full citation in `Comparison`).
    """

    def output_dim(self, dim):
        return 2

    def compare(self, a, h):
        work = "float64" if self.compute_dtype == "float64" else "float32"
        a, h = ops.cast(a, work), ops.cast(h, work)

        def safe_norm(x):
            return ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=-1), EUCCOS_EPSILON**2))

        distance = safe_norm(a - h)
        cosine = ops.sum(a * h, axis=-1) / (safe_norm(a) * safe_norm(h))
        return ops.cast(ops.stack([distance, cosine], axis=-1), self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_match")
class SubComparison(_ElementwiseComparison):
    """SUBTRACTION (SUB) comparison: `t_j = (a_j - h_j) * (a_j - h_j)` (element-wise), eq. 6 of Wang & Jiang.

    No weights; summing the features gives the squared Euclidean distance. Output `[batch, len_a, l]`,
    non-negative. Call arguments (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask), padding and
    shape errors: as `Comparison`; `**kwargs`: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Examples:
        `t = SubComparison()([a_bar, h])  # [batch, len_a, l]`

    Reference:
        Wang & Jiang (2017), section 2.3, eq. 6 (full citation in `Comparison`).
    """

    def compare(self, a, h):
        return ops.square(a - h)


@keras.saving.register_keras_serializable(package="keras_match")
class MultComparison(_ElementwiseComparison):
    """MULTIPLICATION (MULT) comparison: `t_j = a_j * h_j` (element-wise), eq. 7 of Wang & Jiang (2017).

    No weights; summing the features gives the dot product `a_j . h_j`. Output `[batch, len_a, l]`, of any
    sign. Call arguments (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask), padding and shape
    errors: as `Comparison`; `**kwargs`: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Examples:
        `t = MultComparison()([a_bar, h])  # [batch, len_a, l]`

    Reference:
        Wang & Jiang (2017), section 2.3, eq. 7 (full citation in `Comparison`).
    """

    def compare(self, a, h):
        return a * h


@keras.saving.register_keras_serializable(package="keras_match")
class SubMultNNComparison(_DenseComparison):
    """SUBMULT+NN comparison: `t_j = ReLU(W [(a_j - h_j) * (a_j - h_j); a_j * h_j] + b)`, eq. 8 of Wang & Jiang.

    `W in R^{l x 2l}`, `b in R^l` in the paper: the SUB (eq. 6) and MULT (eq. 7) features, concatenated in
    that order, through one ReLU layer. The output is `[batch, len_a, units]`, non-negative; the `units`
    argument (`None`: `l`, as in the paper), its error and the standard `**kwargs`: as `_UnitsComparison`.
    Call arguments (`[a, h]`, float `[batch, len_a, l]` each, with `a`'s mask), padding and shape errors: as
    `Comparison`.

    Weights:
        `dense/kernel [2l, units]` (rows `0..l-1` read the SUB features, rows `l..2l-1` the MULT features),
        `dense/bias [units]`.

    Examples:
        `t = SubMultNNComparison()([a_bar, h])  # [batch, len_a, l]`

    Reference:
        Wang & Jiang (2017), section 2.3, eq. 8 (full citation in `Comparison`).
    """

    def features(self, a, h):
        return ops.concatenate([ops.square(a - h), a * h], axis=-1)


COMPARISONS = {
    "nn": NNComparison,  # eq. 3
    "ntn": NTNComparison,  # eq. 4
    "euccos": EucCosComparison,  # eq. 5
    "sub": SubComparison,  # eq. 6
    "mult": MultComparison,  # eq. 7
    "submult_nn": SubMultNNComparison,  # eq. 8
}
"""The comparison functions of Wang & Jiang (2017), by name. Adding one: a `Comparison` subclass and a line."""


def comparison_class(name):
    """The comparison class for `name` (a key of `COMPARISONS`, any case).

    Raises:
        ValueError: for any other name, listing the valid ones.
    """
    return by_name(COMPARISONS, name, "comparison", "Wang & Jiang 2017, eq. 3-8")


def get_comparison(name, **kwargs):
    """A new comparison layer (Compare-Aggregate eq. 3-8) chosen by name.

    Args:
        name: one of `"nn"` (eq. 3), `"ntn"` (eq. 4), `"euccos"` (eq. 5), `"sub"` (eq. 6), `"mult"` (eq. 7),
            `"submult_nn"` (eq. 8); case-insensitive.
        **kwargs: passed to the layer's constructor (`units=` for `"nn"`, `"ntn"`, `"submult_nn"`; `dtype=`).
            To name the layer, use `comparison_class(name)(name=...)`.

    Returns:
        A new, unbuilt `Comparison` layer (every call gives a distinct layer with its own weights).

    Raises:
        ValueError: if `name` is not one of the valid names (the message lists them).

    Examples:

    ```python
    compare = get_comparison("SubMult_NN", units=150)  # a new SubMultNNComparison
    get_comparison("cos")  # ValueError: ... Valid names (case-insensitive): ['euccos', 'mult', 'nn', ...]
    ```
    """
    return comparison_class(name)(**kwargs)
