"""Compare-Aggregate's aggregation layer (Wang & Jiang, ICLR 2017, eq. 9)."""

import keras
from keras import ops

from keras_match.layers.checks import last_dim, one_of, positive_int
from keras_match.layers.masked_ops import (
    as_bool_mask,
    masked_max,
    zero_padded,
)

CONV_PADDINGS = ("valid", "same")
"""How `CNNAggregation` places its windows: Kim's narrow convolution (`"valid"`) or one window centred on every
word (`"same"`)."""


def check_windows(windows):
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

    Precision:
        Under `mixed_bfloat16` everything runs in bfloat16 with no cast: the max selects a value (rounds
        nothing), and the -1e9 fill of the non-counting positions is a bfloat16 number (float32's exponent range).

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
        self.windows = check_windows(windows)
        one_of("conv_padding", conv_padding, CONV_PADDINGS)
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
