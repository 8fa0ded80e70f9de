"""Position Encoder: a position-weighted sum of word vectors (Sukhbaatar et al. 2015, section 4.1)."""

import keras
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import as_bool_mask

VARIANTS = ("paper", "memn2n_code")
"""The weighting formulas: as printed in the End-To-End Memory Networks paper, or as in Facebook's MATLAB code."""


def position_weights(positions, lengths, dim, variant="paper"):
    """The Position Encoder weights `l_kj`, broadcast over positions and coordinates.

    Args:
        positions: float tensor `[..., time, 1]`, the 1-based word position `j`.
        lengths: float tensor `[..., 1, 1]`, the sentence length `J` (>= 1).
        dim: int, the embedding width `d`.
        variant: `"paper"`: `l_kj = (1 - j/J) - (k/d)(1 - 2j/J)`; `"memn2n_code"`:
            `l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (dJ)`.

    Returns:
        Float tensor `[..., time, dim]` of `l_kj` with `k = 1 .. d` on the last axis.
    """
    k = ops.cast(ops.arange(1, dim + 1), positions.dtype)
    if variant == "paper":
        # l_kj = (1 - j/J) - (k/d)(1 - 2j/J)   (Sukhbaatar et al. 2015, section 4.1; CARNN paper section 4.1)
        ratio = positions / lengths
        return (1.0 - ratio) - (k / dim) * (1.0 - 2.0 * ratio)
    # l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (dJ)   (facebook/MemNN, MemN2N-babi-matlab/build_model.m)
    return 1.0 + 4.0 * (k - (dim + 1) / 2.0) * (positions - (lengths + 1.0) / 2.0) / (dim * lengths)


@keras.saving.register_keras_serializable(package="keras_match")
class PositionEncoder(keras.layers.Layer):
    """Position Encoder: one vector per text, `m = sum_j l_j * x_j`, weighting word `j` by its position.

    The sentence encoding of End-To-End Memory Networks (Sukhbaatar et al. 2015, section 4.1), used by the CARNN
    paper (Tran et al. 2018) to summarise each dialog utterance (section 4.1) and, in its IWAN encoder
    (section 4.3), the partner sentence that serves as the CARNN's context:

        m = sum_{j=1}^{J} l_j * x_j,      l_j in R^d,
        l_kj = (1 - j/J) - (k/d)(1 - 2j/J)                         (variant "paper", the printed formula)
        l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (dJ)             (variant "memn2n_code")

    with `j = 1 .. J` the word position and `k = 1 .. d` the coordinate, both 1-based, and `*` the element-wise
    product. `J` is each example's **true** (unpadded) length. Checks of the printed formula: for `J = 1`,
    `l_k1 = k/d`; for `j = J`, `l_kJ = k/d`; near `j = J/2` the weights are near 1/2 whatever `k`.

    Readings **[I]**: the CARNN paper cites Sukhbaatar et al. without saying which variant it used; the default is
    the printed formula (what the citation points to). `"memn2n_code"` is the formula of Facebook's official
    MATLAB MemN2N code (`facebook/MemNN`, `MemN2N-babi-matlab/build_model.m`), roughly twice the printed one and
    less flat (`memn2n_code - 2 * paper = (d + J + 1 - 2j - 2k) / (dJ)`); here it too uses the true length `J`
    (the MATLAB code uses the padded sentence size). With a mask that is not a prefix (gaps), `j` counts real
    tokens only (`j` of a real token = the number of real tokens up to and including it).

    The layer has no weights; it reads the vectors it is given (the CARNN paper uses the model's word
    embeddings).

    Args:
        variant: `"paper"` (default) or `"memn2n_code"`, the weighting formula above.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: float tensor `[batch, time, d]` (one text per example) or `[batch, turns, time, d]` (a list of
            texts per example, e.g. the utterances of a dialog history). `time` (and `turns`) may be unknown.
        mask: optional mask of the words, `[batch, time]` or `[batch, turns, time]` (True = real word), e.g. from
            `Embedding(mask_zero=True)`. Without a mask every position is a word and `J = time`.

    Returns:
        `[batch, d]` (or `[batch, turns, d]`), in the input's dtype (the layer's compute dtype).

    Precision:
        Under a half-precision policy (`mixed_bfloat16`) the positions, the weights and the sum run in float32 and
        the result is rounded to the compute dtype once: bfloat16 counts exactly only up to 256 (the position `j`
        of a longer text's later words would be wrong), and the sum over the `J` words would round at every term.

    Masking:
        Padded positions contribute exactly zero whatever they hold (finite or not: they are selected away, not
        multiplied), and extra padding changes nothing. A text without any real word gives zeros (no NaN). For
        `[batch, turns, time, d]` inputs with a mask, the output mask is `[batch, turns]`, True for turns with at
        least one real word (so a following recurrence skips padded turns); for rank-3 inputs the output
        carries no mask.

    Raises:
        ValueError: at construction if `variant` is not "paper" or "memn2n_code"; at build if `inputs` is not of
            rank 3 or 4 or its last dimension is undefined; in call if the mask's rank is not the input's rank
            minus one.

    Examples:

    ```python
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    PositionEncoder()(x, mask=mask)                           # [2, 8]; row 0 with J = 3

    # One vector per utterance of a dialog history [batch, turns, words]:
    words = keras.layers.Embedding(5000, 64, mask_zero=True)(history_ids)    # [batch, turns, words, 64]
    utterances = PositionEncoder()(words)                     # [batch, turns, 64], mask [batch, turns]
    ```

    Reference:
        - [Sukhbaatar, Szlam, Weston, Fergus. End-To-End Memory Networks. NeurIPS 2015](
          https://arxiv.org/abs/1503.08895), section 4.1 (position encoding).
        - Tran, Lai, Haffari, Zukerman, Bui, Bui. The Context-dependent Additive Recurrent Neural Net. NAACL-HLT
          2018, pp. 1274-1283, section 4.1 (utterances) and 4.3 (the context of the cross-context CARNN encoder).
    """

    def __init__(self, variant="paper", **kwargs):
        super().__init__(**kwargs)
        one_of("variant", variant, VARIANTS)
        self.variant = variant
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) not in (3, 4) or input_shape[-1] is None:
            raise ValueError(
                f"Layer {self.name} expects `inputs` of rank 3 ([batch, time, d]) or 4 ([batch, turns, time, d]) "
                f"with a defined d. Received input_shape={input_shape}"
            )

    def call(self, inputs, mask=None):
        if mask is None:
            real = ops.ones_like(inputs[..., 0], dtype="bool")
        else:
            real = as_bool_mask(mask)
            if len(real.shape) != len(inputs.shape) - 1:
                raise ValueError(
                    f"Layer {self.name} expects a `mask` of rank {len(inputs.shape) - 1} (the input's without d). "
                    f"Received mask shape {real.shape} for input shape {inputs.shape}"
                )
        dtype = inputs.dtype
        inputs = ops.cast(inputs, accumulation_dtype(dtype))  # float32 for bfloat16 (a no-op in float32)
        counted = ops.cast(real, inputs.dtype)
        positions = ops.cumsum(counted, axis=-1)  # j: 1-based position among the real words
        lengths = ops.sum(counted, axis=-1, keepdims=True)  # J: the true length
        lengths = ops.maximum(lengths, ops.ones_like(lengths))  # J = 0 (no word): all terms are masked anyway
        weights = position_weights(
            ops.expand_dims(positions, -1), ops.expand_dims(lengths, -1), inputs.shape[-1], self.variant
        )
        terms = ops.where(ops.expand_dims(real, -1), weights * inputs, ops.zeros_like(inputs))
        return ops.cast(ops.sum(terms, axis=-2), dtype)  # m = sum_j l_j * x_j

    def compute_mask(self, inputs, mask=None):
        if mask is None or len(inputs.shape) != 4:
            return None
        return ops.any(as_bool_mask(mask), axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-2]) + (input_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update({"variant": self.variant})
        return config
