"""Mask-aware primitives shared by the keras-match layers.

Plain functions on backend tensors (they use `keras.ops` only), so every layer that takes padded sequences
reduces them the same way:

- `masked_softmax`: padded positions get a large negative logit before the softmax and an exact zero weight
  after it, so a row with no real position gives all-zero weights (not a uniform distribution, not NaN).
- `masked_mean` / `masked_max`: reductions over real positions only; a reduction over an empty set is 0.
- `zero_padded`: zero the vectors at padded positions.
- pair layers (inputs `[q, d]`): `split_pair_masks` in `call`, `pass_pair_masks` in `compute_mask`,
  `check_pair_shape` (or, for other pairs, `is_shape_pair`) in `build`.

Masks follow the Keras convention: boolean, `True` marks a real token. Integer or float masks are accepted and
cast to bool (non-zero = real). A mask may have fewer dimensions than the values as long as it broadcasts
against them (e.g. a `[batch, 1, time]` mask against `[batch, time_q, time]` scores).

Values at padded positions may be anything finite (they get exact-zero weights, so garbage cannot leak);
they must not be inf or NaN, since `0 * inf` is NaN in the attention matmuls (embedding outputs never are).

Precision: `masked_softmax` and `masked_mean` of a half-precision input (`bfloat16`, `float16`, e.g. under Keras's
`mixed_bfloat16` policy) compute in float32 (`accumulation_dtype`) and return the input's dtype: bfloat16 keeps 8
significant bits (unit roundoff 2^-8), so a softmax's row sum or a mean's sum and count (counts above 256 are not
even representable) would round at every term. Float32 and float64 inputs are computed as they are (the casts are
no-ops), so their results do not change.
"""

import keras
from keras import ops


HALF_DTYPES = ("bfloat16", "float16")
"""The floating dtypes whose sums and states the layers keep in float32 (`accumulation_dtype`)."""


def accumulation_dtype(dtype):
    """The dtype to sum, normalise or carry a state in for values of `dtype`: float32 for `HALF_DTYPES`, else
    `dtype` itself (standardized, e.g. `"float32"`, `"float64"`).

    bfloat16 has float32's exponent range but only 8 significant bits (unit roundoff 2^-8 ~ 0.0039), so a quantity
    built by many additions (a softmax's normaliser, a sum over time, a recurrence's state) would round at every
    step; float32 (unit roundoff 2^-24) does not lose it.
    """
    dtype = keras.backend.standardize_dtype(dtype)
    return "float32" if dtype in HALF_DTYPES else dtype


def mask_fill_value(dtype):
    """The logit given to padded positions: -1e9, or -3e4 for float16 (as `keras.layers.Softmax`)."""
    if keras.backend.standardize_dtype(dtype) == "float16":
        return -3e4
    return -1e9


def as_bool_mask(mask):
    """Cast a mask to bool (`None` stays `None`)."""
    if mask is None:
        return None
    return ops.cast(mask, "bool")


def _broadcast_mask(mask, values):
    """A bool mask broadcast to the full shape of `values`."""
    return ops.logical_and(ops.ones_like(values, dtype="bool"), as_bool_mask(mask))


def masked_softmax(logits, mask=None, axis=-1):
    """Softmax over `axis` restricted to the positions where `mask` is True.

    Args:
        logits: float tensor.
        mask: `None` or a bool tensor broadcastable to `logits`.
        axis: the axis to normalise over.

    Returns:
        Weights of the shape and dtype of `logits`: they sum to 1 over the real positions of each row, are exactly
        0 at padded positions, and are 0 everywhere in a row without any real position.

    Precision: half-precision logits (bfloat16, float16) are normalised in float32 and the weights rounded to the
    input dtype once at the end, so a long row's normaliser does not round at every term (the only error left is
    that final rounding, relative 2^-8 per weight in bfloat16).
    """
    dtype = keras.backend.standardize_dtype(logits.dtype)
    logits = ops.cast(logits, accumulation_dtype(dtype))
    if mask is None:
        return ops.cast(ops.softmax(logits, axis=axis), dtype)
    mask = _broadcast_mask(mask, logits)
    filled = ops.where(mask, logits, mask_fill_value(logits.dtype))
    weights = ops.softmax(filled, axis=axis)
    return ops.cast(ops.where(mask, weights, ops.zeros_like(weights)), dtype)


def masked_mean(values, mask=None, axis=-1, keepdims=False):
    """Mean of `values` over `axis` counting only real positions; 0 where there is none. In the dtype of `values`.

    Precision: for half-precision values (bfloat16, float16) the sum, the count and the division are float32 and
    the mean is rounded to the input dtype once, at the end (a bfloat16 sum would round at every term, and a
    bfloat16 count is exact only up to 256).
    """
    dtype = keras.backend.standardize_dtype(values.dtype)
    values = ops.cast(values, accumulation_dtype(dtype))
    if mask is None:
        return ops.cast(ops.mean(values, axis=axis, keepdims=keepdims), dtype)
    mask = _broadcast_mask(mask, values)
    total = ops.sum(ops.where(mask, values, ops.zeros_like(values)), axis=axis, keepdims=keepdims)
    count = ops.sum(ops.cast(mask, values.dtype), axis=axis, keepdims=keepdims)
    return ops.cast(total / ops.maximum(count, ops.ones_like(count)), dtype)


def masked_max(values, mask=None, axis=-1, keepdims=False):
    """Maximum of `values` over `axis` among real positions only; 0 where there is none.

    Real values must be larger than `mask_fill_value(dtype)` (-1e9 in float32 and bfloat16).

    Precision: computed in the dtype of `values`, half precision included: a maximum selects one of the values,
    so it rounds nothing, and bfloat16 has float32's exponent range, so the -1e9 fill fits.
    """
    if mask is None:
        return ops.max(values, axis=axis, keepdims=keepdims)
    mask = _broadcast_mask(mask, values)
    filled = ops.where(mask, values, mask_fill_value(values.dtype))
    result = ops.max(filled, axis=axis, keepdims=keepdims)
    has_real = ops.any(mask, axis=axis, keepdims=keepdims)
    return ops.where(has_real, result, ops.zeros_like(result))


def zero_padded(values, mask=None):
    """`values` [batch, time, ...] with the vectors at padded positions of `mask` [batch, time] set to 0.

    The result has the broadcast shape of `values` and the mask (so a `[batch, 1, dim]` vector and a
    `[batch, time]` mask give `[batch, time, dim]`). Uses `where`, so whatever sits at padded positions is
    replaced, not multiplied.
    """
    if mask is None:
        return values
    mask = ops.expand_dims(as_bool_mask(mask), -1)
    return ops.where(mask, values, ops.zeros_like(values))


def split_pair_masks(mask):
    """`None` or a pair `[q_mask, d_mask]` (either may be `None`) -> `(q_mask, d_mask)` as bool tensors."""
    if mask is None:
        return None, None
    if not isinstance(mask, (list, tuple)) or len(mask) != 2:
        raise ValueError(
            f"Expected `mask` to be None or a pair [q_mask, d_mask]. Received: mask={mask}"
        )
    return as_bool_mask(mask[0]), as_bool_mask(mask[1])


def pass_pair_masks(mask):
    """`compute_mask` of a pair layer whose two outputs keep the masks of its two inputs `[q, d]`.

    Returns:
        `None` without a mask, else the pair `(q_mask, d_mask)` as a tuple (either may be `None`).
    """
    if mask is None:
        return None
    q_mask, d_mask = mask
    return (q_mask, d_mask)


def is_shape_pair(input_shape):
    """Whether `input_shape` is a pair of shapes (a list or tuple of two lists or tuples), as a layer taking two
    inputs gets it in `build`; the ranks are not checked."""
    return (
        isinstance(input_shape, (list, tuple))
        and len(input_shape) == 2
        and all(isinstance(s, (list, tuple)) for s in input_shape)
    )


def check_pair_shape(input_shape, layer_name):
    """Validate the `[q_shape, d_shape]` of a pair layer and return them as tuples.

    Both must be rank 3 (`[batch, time, dim]`) with the same, known `dim`.

    Raises:
        ValueError: if `input_shape` is not a pair of rank-3 shapes with equal, defined last dimensions.
    """
    if not is_shape_pair(input_shape):
        raise ValueError(
            f"Layer {layer_name} expects a pair of inputs [q, d]. Received input_shape={input_shape}"
        )
    q_shape, d_shape = (tuple(s) for s in input_shape)
    if len(q_shape) != 3 or len(d_shape) != 3:
        raise ValueError(
            f"Layer {layer_name} expects q and d of rank 3 ([batch, time, dim]). "
            f"Received q shape {q_shape} and d shape {d_shape}."
        )
    if q_shape[-1] is None or q_shape[-1] != d_shape[-1]:
        raise ValueError(
            f"Layer {layer_name} expects q and d with the same, defined last dimension. "
            f"Received q shape {q_shape} and d shape {d_shape}."
        )
    return q_shape, d_shape

