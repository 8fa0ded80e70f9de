"""Compare-Aggregate (Wang & Jiang, ICLR 2017), section 2, eq. 1-9.

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
The classification head of section 3.1 (eq. 10) is not part of this module.
"""

import keras
from keras import ops

from keras_match.layers.checks import last_dim
from keras_match.layers.checks import positive_int
from keras_match.layers.co_attention import affinity
from keras_match.layers.co_attention import soft_align
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import masked_max
from keras_match.layers.masked_ops import masked_softmax
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.layers.masked_ops import zero_padded
from keras_match.layers.registry import by_name

CONV_PADDINGS = ("valid", "same")
"""How `CNNAggregation` places its windows: Kim's narrow convolution (`"valid"`) or one window centred on every
word (`"same"`)."""

EUCCOS_EPSILON = 1e-6
"""Floor of the vector norms in the `"euccos"` comparison (eq. 5), see `EucCosComparison`."""


def _check_windows(windows):
    """`windows` as a tuple of distinct positive ints; ValueError otherwise."""
    if isinstance(windows, (str, bytes)) or not isinstance(windows, (list, tuple)) or not windows:
        raise ValueError(
            f"`windows` must be a non-empty list of positive integers (window sizes). Received: windows={windows!r}"
        )
    for window in windows:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"Every window size must be a positive integer. Received: windows={windows!r}")
    if len(set(windows)) != len(windows):
        raise ValueError(f"Window sizes must be distinct. Received: windows={windows!r}")
    return tuple(windows)


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

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


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


# eq. 3-8 -----------------------------------------------------------------------------------------------------
class Comparison(keras.layers.Layer):
    """Base class of the comparison functions `t_j = f(a_bar_j, h_j)` (Wang & Jiang 2017, eq. 3-8).

    A subclass implements `compare(a, h) -> t` on `[..., l]` tensors and `output_dim(l)`; if it has weights it
    creates them in `build_comparison(l)`. This base class handles the pair input, the shape checks, the masks
    and the output shape. To add a comparison function: one subclass plus one line in `COMPARISONS`.

    Call arguments:
        inputs: `[a, h]`, float tensors `[batch, len_a, l]` each (the preprocessed answer words `a_bar_j` and
            their attention-weighted question vectors `h_j`).
        mask: `None` or `[a_mask, h_mask]` (bool `[batch, len_a]`, True = real word; `h_mask` is ignored, `h`
            is aligned to `a`); picked up automatically from Keras masks.

    Returns:
        `t`: float `[batch, len_a, k]`, `k = output_dim(l)`, 0 at padded answer positions; it carries `a`'s mask.
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


class _DenseComparison(Comparison):
    """`ReLU(W [features(a, h)] + b)` with `W in R^{units x 2l}`: eq. 3 and eq. 8."""

    def __init__(self, units=None, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units, allow_none=True)
        self.units = units

    def output_dim(self, dim):
        return dim if self.units is None else self.units

    def build_comparison(self, dim):
        self.dense = keras.layers.Dense(
            self.output_dim(dim), activation="relu", dtype=self.dtype_policy, name="dense"
        )
        self.dense.build((None, 2 * dim))

    def features(self, a, h):
        raise NotImplementedError

    def compare(self, a, h):
        return self.dense(self.features(a, h))

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


@keras.saving.register_keras_serializable(package="keras_match")
class NNComparison(_DenseComparison):
    """NEURALNET (NN) comparison: `t_j = ReLU(W [a_j; h_j] + b)`.

    Implements eq. 3 of Wang & Jiang (2017), `W in R^{l x 2l}`, `b in R^l`.

    Args:
        units: int or None, the output size (`None`: the input size `l`, as in the paper).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, units]` (non-negative), 0 at padded answer positions; carries `a`'s mask.

    Weights:
        `dense/kernel [2l, units]` (rows `0..l-1` read `a`, rows `l..2l-1` read `h`), `dense/bias [units]`.

    Raises:
        ValueError: at construction if `units` is not a positive integer or None; at build if `a` and `h` are not
            rank-3 tensors with the same, defined last dimension.

    Examples:

    ```python
    t = NNComparison()([a_bar, h])  # [batch, len_a, l]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 3.
    """

    def features(self, a, h):
        return ops.concatenate([a, h], axis=-1)


@keras.saving.register_keras_serializable(package="keras_match")
class NTNComparison(Comparison):
    """NEURALTENSORNET (NTN) comparison: `t_j = ReLU(a_j^T T^[1..k] h_j + b)`.

    Implements eq. 4 of Wang & Jiang (2017) (the neural tensor network of Socher et al., 2013, without its
    linear term, as in the paper): output feature `s` is the bilinear form `a_j^T T^[s] h_j` of slice `s`.
    The paper has `k = l` slices (`T in R^{l x l x l}`).

    Args:
        units: int or None, the number of slices `k` (`None`: the input size `l`, as in the paper).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, units]` (non-negative), 0 at padded answer positions; carries `a`'s mask.

    Weights (in `get_weights()` order):
        `tensor [units, l, l]` (slice `s` is `T^[s]`, indexed `[s, row of a, column of h]`; Glorot uniform),
        `bias [units]` (zeros): 2 trainable weights, `k l^2 + k` parameters (3.4 M for `l = 150`).

    Raises:
        ValueError: as `NNComparison`.

    Examples:

    ```python
    t = NTNComparison()([a_bar, h])  # [batch, len_a, l]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 4.
        - [Socher et al. Recursive Deep Models for Semantic Compositionality Over a Sentiment Treebank. EMNLP
          2013](https://aclanthology.org/D13-1170/), eq. 2 (the tensor layer).
    """

    def __init__(self, units=None, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units, allow_none=True)
        self.units = units

    def output_dim(self, dim):
        return dim if self.units is None else self.units

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

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


@keras.saving.register_keras_serializable(package="keras_match")
class EucCosComparison(Comparison):
    """EUCLIDEAN+COSINE (EUCCOS) comparison: `t_j = [||a_j - h_j||_2; cos(a_j, h_j)]`.

    Implements eq. 5 of Wang & Jiang (2017). No weights; the output has 2 features, in the paper's order
    (distance, then cosine).

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

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, 2]`: `[..., 0]` the distance (>= 1e-6), `[..., 1]` the cosine (in [-1, 1]); 0 at padded
        answer positions; carries `a`'s mask.

    Raises:
        ValueError: at build if `a` and `h` are not rank-3 tensors with the same, defined last dimension.

    Examples:

    ```python
    t = EucCosComparison()([a_bar, h])  # [batch, len_a, 2]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 5.
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
class SubComparison(Comparison):
    """SUBTRACTION (SUB) comparison: `t_j = (a_j - h_j) * (a_j - h_j)` (element-wise).

    Implements eq. 6 of Wang & Jiang (2017). No weights; summing the features gives the squared Euclidean
    distance.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, l]` (non-negative), 0 at padded answer positions; carries `a`'s mask.

    Raises:
        ValueError: at build if `a` and `h` are not rank-3 tensors with the same, defined last dimension.

    Examples:

    ```python
    t = SubComparison()([a_bar, h])  # [batch, len_a, l]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 6.
    """

    def output_dim(self, dim):
        return dim

    def compare(self, a, h):
        return ops.square(a - h)



@keras.saving.register_keras_serializable(package="keras_match")
class MultComparison(Comparison):
    """MULTIPLICATION (MULT) comparison: `t_j = a_j * h_j` (element-wise).

    Implements eq. 7 of Wang & Jiang (2017). No weights; summing the features gives the dot product.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, l]`, 0 at padded answer positions; carries `a`'s mask.

    Raises:
        ValueError: at build if `a` and `h` are not rank-3 tensors with the same, defined last dimension.

    Examples:

    ```python
    t = MultComparison()([a_bar, h])  # [batch, len_a, l]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 7.
    """

    def output_dim(self, dim):
        return dim

    def compare(self, a, h):
        return a * h



@keras.saving.register_keras_serializable(package="keras_match")
class SubMultNNComparison(_DenseComparison):
    """SUBMULT+NN comparison: `t_j = ReLU(W [(a_j - h_j) * (a_j - h_j); a_j * h_j] + b)`.

    Implements eq. 8 of Wang & Jiang (2017), `W in R^{l x 2l}`, `b in R^l`: the SUB (eq. 6) and MULT (eq. 7)
    features, concatenated in that order, through one ReLU layer.

    Args:
        units: int or None, the output size (`None`: the input size `l`, as in the paper).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[a, h]`, float `[batch, len_a, l]` each. mask: `None` or `[a_mask, h_mask]`, see `Comparison`.

    Returns:
        `[batch, len_a, units]` (non-negative), 0 at padded answer positions; carries `a`'s mask.

    Weights:
        `dense/kernel [2l, units]` (rows `0..l-1` read the SUB features, rows `l..2l-1` the MULT features),
        `dense/bias [units]`.

    Raises:
        ValueError: as `NNComparison`.

    Examples:

    ```python
    t = SubMultNNComparison()([a_bar, h])  # [batch, len_a, l]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.3, eq. 8.
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


# eq. 9 -------------------------------------------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="keras_match")
class CNNAggregation(keras.layers.Layer):
    """The aggregation layer of Compare-Aggregate: a one-layer CNN with max-pooling over time.

    Implements eq. 9 of Wang & Jiang (2017), `r = CNN([t_1, ..., t_A])`, the CNN of Kim (2014): for each window
    size `w` in `windows`, one convolution with `filters` filters and a ReLU,

        c^w_p = ReLU(sum_{o=0}^{w-1} t_{p+o} K^w_o + b^w)

    max-pooled over the positions `p`, and the pooled vectors concatenated in the order of `windows`, so
    `r in R^{n filters}` (`n` windows; the paper has `filters = l`, so `r in R^{nl}`).

    Positions (`conv_padding`):

    - `"valid"` (default, Kim's narrow convolution, the feature map `c_1 ... c_{A-w+1}`): window `p` covers
      `t_p ... t_{p+w-1}` and counts if it lies inside the answer, `p <= A - w`. An answer shorter than the
      window (`A < w`) is extended with zero vectors to length `w` and gives exactly one window (`p = 0`), so
      every non-empty answer has at least one position for every window size.
    - `"same"`: window `p` is centred on word `p` (`(w - 1) // 2` words before it, `w // 2` after, zero vectors
      outside the answer), and every real word counts.

    Args:
        filters: int, filters per window size.
        windows: non-empty list of distinct positive ints, the window sizes. Defaults to `(1, 2, 3, 4, 5)`
            (the paper's WikiQA and SNLI setting; MovieQA used `[1, 3, 5]`, InsuranceQA `[1, 2, 3]`).
        conv_padding: `"valid"` (default) or `"same"`, see above.
        return_word_features: bool. If True, also return the per-position convolution outputs before the max
            (for plots like the paper's Figure 2). Defaults to False.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `t`, float `[batch, len_a, k]`.
        mask: `None` or bool `[batch, len_a]` (True = real word), right-padded (real words first, as from
            `Embedding(mask_zero=True)` on right-padded ids); picked up automatically from Keras masks.

    Returns:
        `r`: float `[batch, len(windows) * filters]`, features `i * filters ... (i + 1) * filters - 1` from
        `windows[i]`. With `return_word_features=True`, a dict: `"aggregate"`: `r`; `"word_features"`:
        `[batch, len_a, len(windows) * filters]`, the ReLU output `c^w_p` of window `p` at position `p`, in the
        same feature order, 0 at positions that do not count; `r` is its maximum over `len_a`.

    Masking:
        `t` is zeroed at padded positions before the convolutions, and the max runs over counting positions
        only, so values at padded positions never change `r` and never win the max, however many padded
        positions follow. An all-padding row (empty answer) gives `r = 0`, the smallest value a ReLU can
        give. No mask means every position is real. The outputs carry no mask.

    Weights (in `get_weights()` order):
        per window `w`: `conv_{w}/kernel [w, k, filters]`, `conv_{w}/bias [filters]`: `2 len(windows)` trainable
        weights.

    Raises:
        ValueError: at construction if `filters` is not a positive integer, `windows` is empty or holds anything
            but distinct positive integers, or `conv_padding` is unknown; at build if the input is not rank 3
            or its last dimension is undefined.

    Examples:

    ```python
    t = SubMultNNComparison()([a_bar, h])                                  # [batch, len_a, 150]
    r = CNNAggregation(filters=150, windows=[1, 2, 3, 4, 5])(t)            # [batch, 750]
    out = CNNAggregation(filters=150, return_word_features=True)(t)
    out["word_features"]                                                   # [batch, len_a, 750]
    ```

    Reference:
        - [Wang, Jiang. A Compare-Aggregate Model for Matching Text Sequences. ICLR 2017](
          https://arxiv.org/abs/1611.01747), section 2.4, eq. 9, and the appendix (window sizes).
        - [Kim. Convolutional Neural Networks for Sentence Classification. EMNLP 2014](
          https://aclanthology.org/D14-1181/), section 2.
    """

    def __init__(self, filters, windows=(1, 2, 3, 4, 5), conv_padding="valid", return_word_features=False,
                 **kwargs):
        super().__init__(**kwargs)
        positive_int("filters", filters)
        self.windows = _check_windows(windows)
        if conv_padding not in CONV_PADDINGS:
            raise ValueError(
                f"`conv_padding` must be one of {CONV_PADDINGS}. Received: conv_padding={conv_padding!r}"
            )
        self.filters = filters
        self.conv_padding = conv_padding
        self.return_word_features = bool(return_word_features)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                f"Layer {self.name} expects inputs of rank 3 ([batch, time, dim]). Received input_shape={input_shape}"
            )
        dim = last_dim(self, input_shape)
        self.convolutions = []
        for window in self.windows:
            conv = keras.layers.Conv1D(
                self.filters, window, activation="relu", dtype=self.dtype_policy, name=f"conv_{window}"
            )
            conv.build((input_shape[0], None, dim))
            self.convolutions.append(conv)

    def _counting_positions(self, window, mask, lengths, time):
        """Bool `[batch, time]`: the positions whose window takes part in the max."""
        if self.conv_padding == "same":
            return mask
        positions = ops.expand_dims(ops.arange(time, dtype="int32"), 0)
        last_start = ops.maximum(lengths - window, 0)  # p <= A - w; p = 0 alone when A < w
        inside = ops.less_equal(positions, ops.expand_dims(last_start, 1))
        return ops.logical_and(inside, ops.expand_dims(lengths > 0, 1))

    def call(self, inputs, mask=None):
        time = ops.shape(inputs)[1]
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        mask = as_bool_mask(mask)
        # A batch of no rows (an export's `serve_ids` gets them): TF's convolution returns its input unchanged for
        # it and Keras' max refuses an empty tensor. One all-padding row more is scored (its r is 0; no other row
        # changes) and dropped at the end.
        inputs = ops.pad(inputs, [[0, 1], [0, 0], [0, 0]])
        mask = ops.pad(mask, [[0, 1], [0, 0]], constant_values=False)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        t = zero_padded(inputs, mask)
        pooled, features = [], []
        for window, conv in zip(self.windows, self.convolutions):
            before = (window - 1) // 2 if self.conv_padding == "same" else 0
            after = window - 1 - before
            c = conv(ops.pad(t, [[0, 0], [before, after], [0, 0]]))  # [batch, time, filters], c_p at p
            counting = self._counting_positions(window, mask, lengths, time)
            pooled.append(masked_max(c, ops.expand_dims(counting, -1), axis=1))
            if self.return_word_features:
                features.append(zero_padded(c, counting))
        r = ops.concatenate(pooled, axis=-1)[:-1]
        if not self.return_word_features:
            return r
        return {"aggregate": r, "word_features": ops.concatenate(features, axis=-1)[:-1]}

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        width = len(self.windows) * self.filters
        r_shape = (input_shape[0], width)
        if not self.return_word_features:
            return r_shape
        return {"aggregate": r_shape, "word_features": (input_shape[0], input_shape[1], width)}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "windows": list(self.windows),
                "conv_padding": self.conv_padding,
                "return_word_features": self.return_word_features,
            }
        )
        return config


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
        positive_int("units", units)
        positive_int("filters", filters, allow_none=True)
        comparison_class(comparison)  # raises ValueError for an unknown name
        self.windows = _check_windows(windows)
        if conv_padding not in CONV_PADDINGS:
            raise ValueError(
                f"`conv_padding` must be one of {CONV_PADDINGS}. Received: conv_padding={conv_padding!r}"
            )
        self.units = units
        self.comparison = comparison
        self.filters = filters
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
