"""Dynamic pooling of an interaction grid to a fixed `p x q` size (Liu et al., EMNLP 2016, section 4.3)."""

import keras
import tensorflow as tf

from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import masked_max


def region_bounds(length, parts):
    """The `parts` regions `[start, end)` of the positions `0 ... length - 1` (per example).

    Region r is `[floor(r * length / parts), max(floor((r + 1) * length / parts), start + 1))`. With
    `length >= parts` the regions are a partition into nearly equal, non-overlapping parts (sizes differ by at
    most one, the larger ones last); with `length < parts` each region is the single position
    `floor(r * length / parts)`, so positions repeat and every position is used at least once.

    Args:
        length: int32 `[batch]`, the true lengths.
        parts: int, the number of regions.

    Returns:
        A list of `parts` pairs `(start, end)`, each int32 `[batch]`.
    """
    bounds = []
    for r in range(parts):
        start = (r * length) // parts
        end = tf.maximum(((r + 1) * length) // parts, start + 1)
        bounds.append((start, end))
    return bounds


@keras.saving.register_keras_serializable(package="keras_match")
class DynamicPooling2D(keras.layers.Layer):
    """Max pooling of an `n x m` grid over a `p x q` partition into nearly equal regions, `n`, `m` per example.

    Implements the pooling layer of Liu et al. (2016), section 4.3 (after Socher et al. 2011): "for each slice
    matrix H_i, we partition the rows and columns of H_i into p x q roughly equal grids. These grid are
    non-overlapping. Then we select the maximum value within each grid thereby obtaining a p x q x d tensor."
    The rows `0 ... n - 1` of an example (its true length n, from the mask) are cut into p regions and its
    columns into q (`region_bounds`): region r of `n` positions is
    `[floor(r n / p), max(floor((r + 1) n / p), floor(r n / p) + 1))`.

    Grids smaller than `p x q` (the paper does not say; Socher et al. duplicate cells "until it is large
    enough"): when `n < p`, region r is the single row `floor(r n / p)`, so rows repeat (each row is used at
    least once) and every output is defined; the same for columns. With `n >= p` the regions are
    non-overlapping, as in the paper.

    Args:
        p: int, the number of row regions (the paper's Table 1: 2 for MQA, 1 for RTE).
        q: int, the number of column regions (1 in both of the paper's settings).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: float grid `[batch, n, m, channels]` (`n`, `m` may be unknown).
        mask: optional bool `[batch, n, m]` (True = real cell), the outer product of two right-padding masks
            (as `CoupledLSTM2D` returns); the true lengths are the numbers of rows and of columns holding a real
            cell. Without a mask every cell is real.

    Output shape:
        `[batch, p, q, channels]`, same dtype: the maximum of each channel over each region. Masked cells never
        win (they belong to no region); an example without any real cell gives zeros. The output has no mask.

    Precision:
        Computed in the compute dtype, bfloat16 under `mixed_bfloat16`, with no cast: a maximum selects one of
        its inputs and rounds nothing, and the masked cells' fill (-1e9) is within bfloat16's (float32's) range.

    Raises:
        ValueError: at construction if `p` or `q` is not a positive integer; at build if the input is not rank 4
            with a defined last dimension.

    Examples:

    ```python
    grid = np.random.rand(2, 5, 7, 50).astype("float32")
    DynamicPooling2D(2, 1)(grid)                   # [2, 2, 1, 50]: max over rows 0-1 and rows 2-4
    DynamicPooling2D(3, 3)(grid[:, :2, :2])        # [2, 3, 3, 50]: rows/columns 0, 0, 1 (repeated)
    ```

    Reference:
        - [Liu, Qiu, Zhou, Chen, Huang. Modelling Interaction of Sentence Pair with Coupled-LSTMs. EMNLP 2016](
          https://arxiv.org/abs/1605.05573), section 4.3 and Table 1.
        - [Socher, Huang, Pennington, Manning, Ng. Dynamic Pooling and Unfolding Recursive Autoencoders for
          Paraphrase Detection. NIPS 2011](https://papers.nips.cc/paper/4204), section 3.
    """

    def __init__(self, p, q, **kwargs):
        super().__init__(**kwargs)
        positive_int("p", p)
        positive_int("q", q)
        self.p = p
        self.q = q
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ValueError(
                f"Layer {self.name} expects a rank-4 grid [batch, n, m, channels] with a defined last dimension. "
                f"Received input_shape={input_shape}"
            )

    def call(self, inputs, mask=None):
        grid = tf.convert_to_tensor(inputs)
        shape = tf.shape(grid)
        batch, n, m = shape[0], shape[1], shape[2]
        if mask is None:
            len_x, len_y = tf.fill([batch], n), tf.fill([batch], m)
        else:
            mask = tf.cast(mask, tf.bool)
            len_x = tf.reduce_sum(tf.cast(tf.reduce_any(mask, axis=2), tf.int32), axis=1)
            len_y = tf.reduce_sum(tf.cast(tf.reduce_any(mask, axis=1), tf.int32), axis=1)
        rows = tf.range(n)[None, :]
        columns = tf.range(m)[None, :]

        def members(positions, length, start, end):
            # [batch, t]: the region [start, end), and within the true length (an empty example has no cell).
            inside = tf.logical_and(positions >= start[:, None], positions < end[:, None])
            return tf.logical_and(inside, positions < length[:, None])

        # Max over each column region, then over each row region (the max over a product of two sets).
        by_column = [
            masked_max(grid, members(columns, len_y, start, end)[:, None, :, None], axis=2)  # [batch, n, ch]
            for start, end in region_bounds(len_y, self.q)
        ]
        by_column = tf.stack(by_column, axis=2)  # [batch, n, q, ch]
        pooled = [
            masked_max(by_column, members(rows, len_x, start, end)[:, :, None, None], axis=1)  # [batch, q, ch]
            for start, end in region_bounds(len_x, self.p)
        ]
        return tf.stack(pooled, axis=1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.p, self.q, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"p": self.p, "q": self.q})
        return config
