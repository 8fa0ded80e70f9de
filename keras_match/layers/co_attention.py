"""Co-attention (MCAN eq. 2-5): the affinity matrix and its max, mean and alignment poolings.

The module holds plain functions on backend tensors, reusable by any pair model (MCAN, IWAN,
Compare-Aggregate), the `CoAttention` layer that calls them, and `ProjectedAttention`, the base class of
`CoAttention` and `IntraAttention` (the projection `F` of their affinity scores).

Index convention used throughout (eq. 2): `s[b, i, j] = F(q_i)^T F(d_j)`, `i` over the words of q (rows),
`j` over the words of d (columns), so `s` is `[batch, len_q, len_d]`.
"""

import keras
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import masked_max
from keras_match.layers.masked_ops import masked_mean
from keras_match.layers.masked_ops import masked_softmax
from keras_match.layers.masked_ops import pass_pair_masks
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.layers.masked_ops import zero_padded


POOLED_CASTS = ("broadcast", "weighted")
"""How the max and mean co-attention casts reach each word: the pooled vector at every word (eq. 3-4 as
written), or each word scaled by its attention weight (the authors' code)."""


def affinity(q, d, scaled=False):
    """Batched dot products, `s[b, i, j] = q[b, i] . d[b, j]` (eq. 2 once q and d went through F).

    Args:
        q: `[batch, len_q, units]`.
        d: `[batch, len_d, units]`.
        scaled: divide by `sqrt(units)` (the dot attention of the authors' code; the paper's eq. 2 has no
            scale).

    Returns:
        `[batch, len_q, len_d]`.
    """
    s = ops.matmul(q, ops.transpose(d, (0, 2, 1)))
    if scaled:
        s = s / ops.sqrt(ops.cast(ops.shape(q)[-1], s.dtype))
    return s


def soft_align(scores, values, values_mask=None):
    """`out[b, i] = sum_j softmax_j(scores[b, i, :])_j values[b, j]`, over the real `j` only (eq. 5, 6).

    Args:
        scores: `[batch, len_a, len_b]`.
        values: `[batch, len_b, dim]`.
        values_mask: `None` or bool `[batch, len_b]`.

    Returns:
        `[batch, len_a, dim]`; a row whose `values` are all padding gives the zero vector.
    """
    if values_mask is not None:
        values_mask = ops.expand_dims(values_mask, 1)
    weights = masked_softmax(scores, values_mask, axis=-1)
    return ops.matmul(weights, values)


def attentive_pool(scores, values, mask=None):
    """`Soft(scores)^T values`: `[batch, len]` scores, `[batch, len, dim]` values -> `[batch, dim]`."""
    weights = masked_softmax(scores, mask, axis=-1)
    return ops.squeeze(ops.matmul(ops.expand_dims(weights, 1), values), 1)


def attentive_weighting(scores, values, mask=None):
    """`Soft(scores)_i values_i` per word, not summed: `[batch, len]`, `[batch, len, dim]` -> `[batch, len, dim]`.

    The per-word reading of eq. 3-4 in the authors' code: each word scaled by its attention weight."""
    weights = masked_softmax(scores, mask, axis=-1)
    return ops.expand_dims(weights, -1) * values


def _partner_masks(q_mask, d_mask):
    # Masks of the partner axis of s: the d words are the columns (axis 2), the q words the rows (axis 1).
    d_cols = None if d_mask is None else ops.expand_dims(d_mask, 1)
    q_rows = None if q_mask is None else ops.expand_dims(q_mask, 2)
    return q_rows, d_cols


def max_pooling(s, q, d, q_mask=None, d_mask=None, weighted=False):
    """Max-pooling co-attention (eq. 3): `q' = Soft(max_col(s))^T q`, `d' = Soft(max_row(s))^T d`.

    Each q word is scored by its largest affinity with any real d word, the scores are soft-maxed over the
    real q words, and q' is the weighted sum of q; symmetrically for d.

    Args:
        s: affinity `[batch, len_q, len_d]`.
        q: `[batch, len_q, dim]`. d: `[batch, len_d, dim]`.
        q_mask, d_mask: `None` or bool `[batch, len_q]` / `[batch, len_d]`.
        weighted: return each word scaled by its weight (`a_i q_i`, `[batch, len, dim]`) instead of the sum.

    Returns:
        `(q', d')`, each `[batch, dim]` (`[batch, len_q, dim]`, `[batch, len_d, dim]` when `weighted`). An
        empty partner gives scores of 0 (uniform weights over the own real words); an empty own text gives the
        zero vector.
    """
    q_rows, d_cols = _partner_masks(q_mask, d_mask)
    q_scores = masked_max(s, d_cols, axis=2)  # max over the d words, one score per q word
    d_scores = masked_max(s, q_rows, axis=1)  # max over the q words, one score per d word
    pool = attentive_weighting if weighted else attentive_pool
    return pool(q_scores, q, q_mask), pool(d_scores, d, d_mask)


def mean_pooling(s, q, d, q_mask=None, d_mask=None, weighted=False):
    """Mean-pooling co-attention (eq. 4): `q' = Soft(mean_col(s))^T q`, `d' = Soft(mean_row(s))^T d`.

    As `max_pooling`, with the mean over the partner's real words instead of the max.

    Returns:
        `(q', d')`, each `[batch, dim]` (per word, `[batch, len, dim]`, when `weighted`).
    """
    q_rows, d_cols = _partner_masks(q_mask, d_mask)
    q_scores = masked_mean(s, d_cols, axis=2)
    d_scores = masked_mean(s, q_rows, axis=1)
    pool = attentive_weighting if weighted else attentive_pool
    return pool(q_scores, q, q_mask), pool(d_scores, d, d_mask)


def alignment_pooling(s, q, d, q_mask=None, d_mask=None):
    """Soft-alignment pooling (eq. 5).

    `q_aligned_i = sum_j softmax_j(s_ij) d_j` (the part of d aligned to q word i, softmax over the real d
    words) and `d_aligned_j = sum_i softmax_i(s_ij) q_i` (softmax over the real q words).

    Returns:
        `(q_aligned [batch, len_q, dim], d_aligned [batch, len_d, dim])`.
    """
    q_aligned = soft_align(s, d, d_mask)
    d_aligned = soft_align(ops.transpose(s, (0, 2, 1)), q, q_mask)
    return q_aligned, d_aligned


def _per_word(vector, like, mask):
    """Broadcast a pooled `[batch, dim]` vector to every word of `like` `[batch, time, dim]`; 0 at padding."""
    vector = ops.expand_dims(vector, 1)
    if mask is None:
        return ops.zeros_like(like) + vector
    return zero_padded(vector, mask)


class ProjectedAttention(keras.layers.Layer):
    """Base class of `CoAttention` and `IntraAttention`: the projection `F` their affinity scores are made of.

    `F` is one dense layer (`units`, `activation`, `kernel_regularizer`) that the subclass creates in `build`
    with `build_projection`; the scores are dot products of projected words (eq. 2, eq. 6), divided by
    `sqrt(units)` with `scaled_affinity`. This class takes those arguments (`units` must be a positive integer)
    and puts them in the config; the layers are mask-aware.
    """

    def __init__(self, units, activation="relu", kernel_regularizer=None, scaled_affinity=False, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.scaled_affinity = bool(scaled_affinity)
        self.supports_masking = True

    def build_projection(self, input_shape):
        """Create and build `self.projection` (`F`) for inputs of `input_shape` (weights `projection/...`)."""
        self.projection = keras.layers.Dense(
            self.units,
            activation=self.activation,
            kernel_regularizer=self.kernel_regularizer,
            dtype=self.dtype_policy,
            name="projection",
        )
        self.projection.build(input_shape)

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


@keras.saving.register_keras_serializable(package="keras_match")
class CoAttention(ProjectedAttention):
    """Co-attention between a query and a document: affinity matrix plus max, mean and alignment pooling.

    Implements section 2.2 of Tay et al. (2018):

    - eq. 2, affinity: `s_ij = F(q_i)^T F(d_j)`, with `F` one dense layer (`units`, `activation`) shared by
      both sides;
    - eq. 3, max-pooling co-attention: `q' = Soft(max_col(s))^T q`, `d' = Soft(max_row(s))^T d`;
    - eq. 4, mean-pooling co-attention: the same with the mean;
    - eq. 5, alignment pooling: `q_aligned_i = sum_j softmax_j(s_ij) d_j`, `d_aligned_j = sum_i softmax_i(s_ij) q_i`.

    Readings chosen where the flattened paper text is ambiguous:

    - eq. 3-4: `max_col(s)` is read as the max over the columns (the d words) for each row (q word), giving
      one weight per q word; eq. 4 writes `mean(s)` without subscript for q and is read as `mean_col`, the
      mirror of eq. 3. The pooled vectors are single `[batch, dim]` vectors; with `pooled_casts="broadcast"`
      they are returned broadcast to every word so that the casted features of `MultiCastAttention` compare
      each word with them. `pooled_casts="weighted"` instead returns each word scaled by its attention weight,
      `a_i x_i` (the sum of eq. 3-4 left undone), as the authors' public code (`tylib`) does; it fits the
      paper's Figure 4, where the max and mean features differ from word to word.
    - eq. 5 indexes `s_ij` with `i` over d and `j` over q, the transpose of eq. 2. The text's meaning is
      kept ("d'_i is the sub-phrase in q that is softly aligned to d_i", as in Parikh et al.): each word's
      aligned vector is a softmax-weighted sum of the partner's words, normalised over the partner's words.

    Args:
        units: int, output size of `F`.
        activation: activation of `F` (name or callable). Defaults to `"relu"`.
        kernel_regularizer: optional regularizer of `F`'s kernel.
        pooled_casts: `"broadcast"` (default) or `"weighted"`: what the `max` and `mean` outputs hold per word
            (see above).
        scaled_affinity: divide `s` by `sqrt(units)` (the authors' dot attention). Defaults to False (eq. 2).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[q, d]`, float tensors `[batch, len_q, dim]` and `[batch, len_d, dim]` (the same `dim`).
        mask: `None` or `[q_mask, d_mask]`, bool `[batch, len_q]` / `[batch, len_d]` (True = real token);
            picked up automatically from Keras masks (e.g. `Embedding(mask_zero=True)`).

    Returns:
        A dict of float tensors (the layer's compute dtype):
        - `"affinity"`: `s`, `[batch, len_q, len_d]`;
        - `"max"`: `(q_max [batch, len_q, dim], d_max [batch, len_d, dim])`, eq. 3 broadcast to every word (or
          per word weighted, `pooled_casts="weighted"`);
        - `"mean"`: `(q_mean, d_mean)`, eq. 4, same shapes;
        - `"alignment"`: `(q_aligned [batch, len_q, dim], d_aligned [batch, len_d, dim])`, eq. 5.

    Masking:
        Padded words are excluded everywhere: from the max and mean over the partner (means divide by the
        number of real partner words), from both softmaxes (fill -1e9, then weight exactly 0). Every output,
        `affinity` included, is 0 at padded positions. An empty partner text gives zero aligned vectors and
        scores of 0 for eq. 3-4; an empty own text gives zero pooled vectors; all outputs stay finite. The
        outputs `max`, `mean`, `alignment` carry the q / d masks; `affinity` carries none.

    Precision:
        Under `mixed_bfloat16` the projection, the affinity and the weighted sums are bfloat16 matmuls, while the
        softmaxes normalise and the means over the partner's words sum in float32 (`masked_softmax`,
        `masked_mean`), which would otherwise round at every term; the maxima select a value and need no cast.

    Weights:
        `F`: `projection/kernel [dim, units]`, `projection/bias [units]` (2 trainable weights).

    Raises:
        ValueError: at construction if `units` is not a positive integer or `pooled_casts` is unknown; at build
            if the inputs are not a pair of rank-3 tensors with the same defined last dimension; at call if
            `mask` is not a pair.

    Examples:

    ```python
    q_ids = keras.Input((None,), dtype="int32")
    d_ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10000, 50, mask_zero=True)  # masks flow into CoAttention
    out = CoAttention(units=50)([embedding(q_ids), embedding(d_ids)])
    out["affinity"]      # [batch, len_q, len_d]
    out["alignment"][0]  # [batch, len_q, 50]: the part of d aligned to each q word
    out["max"][1]        # [batch, len_d, 50]: d's max-pooled vector at every d word
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.2, eq. 2-5.
        - [Parikh et al. A Decomposable Attention Model for Natural Language Inference. EMNLP 2016](
          https://arxiv.org/abs/1606.01933) (the affinity and alignment of eq. 2 and 5).
    """

    def __init__(self, units, activation="relu", kernel_regularizer=None, pooled_casts="broadcast",
                 scaled_affinity=False, **kwargs):
        super().__init__(units, activation, kernel_regularizer, scaled_affinity, **kwargs)
        one_of("pooled_casts", pooled_casts, POOLED_CASTS)
        self.pooled_casts = pooled_casts

    def build(self, input_shape):
        q_shape, _ = check_pair_shape(input_shape, self.name)
        self.build_projection(q_shape)

    def call(self, inputs, mask=None):
        q, d = inputs
        q_mask, d_mask = split_pair_masks(mask)
        s = affinity(self.projection(q), self.projection(d), scaled=self.scaled_affinity)
        weighted = self.pooled_casts == "weighted"

        def per_word(pooled, x, mask):  # weighted casts are per word already
            return zero_padded(pooled, mask) if weighted else _per_word(pooled, x, mask)

        q_max, d_max = max_pooling(s, q, d, q_mask, d_mask, weighted=weighted)
        q_mean, d_mean = mean_pooling(s, q, d, q_mask, d_mask, weighted=weighted)
        q_aligned, d_aligned = alignment_pooling(s, q, d, q_mask, d_mask)
        if q_mask is not None:
            s = ops.where(ops.expand_dims(q_mask, 2), s, ops.zeros_like(s))
        if d_mask is not None:
            s = ops.where(ops.expand_dims(d_mask, 1), s, ops.zeros_like(s))
        return {
            "affinity": s,
            "max": (per_word(q_max, q, q_mask), per_word(d_max, d, d_mask)),
            "mean": (per_word(q_mean, q, q_mask), per_word(d_mean, d, d_mask)),
            "alignment": (zero_padded(q_aligned, q_mask), zero_padded(d_aligned, d_mask)),
        }

    def compute_mask(self, inputs, mask=None):
        pair = pass_pair_masks(mask)
        if pair is None:
            return None
        return {"affinity": None, "max": pair, "mean": pair, "alignment": pair}

    def compute_output_shape(self, input_shape):
        q_shape, d_shape = (tuple(s) for s in input_shape)
        pair = (q_shape, d_shape)
        return {
            "affinity": (q_shape[0], q_shape[1], d_shape[1]),
            "max": pair,
            "mean": pair,
            "alignment": pair,
        }

    def get_config(self):
        config = super().get_config()
        config.update({"pooled_casts": self.pooled_casts})
        return config
