"""IWAN's inter-weighted layer (Shen, Yang & Deng, EMNLP 2017): one weight per word, computed with the other
sentence in view (Inter-Attention or Inter-Skip), and the weighted composition of the alignment features."""

import keras
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import masked_mean
from keras_match.layers.masked_ops import masked_softmax
from keras_match.layers.masked_ops import zero_padded

WEIGHTINGS = ("inter_attention", "inter_skip", "none")
"""The inter-weighting strategies of `InterWeighting`: the paper's two [R names, I formulas] and `"none"`
(uniform weights, an ablation of ours)."""


@keras.saving.register_keras_serializable(package="keras_match")
class InterWeighting(keras.layers.Layer):
    """IWAN's inter-weighted layer and composition: `v = sum_i w_i f_i`, each word weighted given the other sentence.

    IWAN (Shen et al., 2017) confirms [R] an inter-weighted layer that gives every word an importance weight
    computed with the other sentence in view, and names two efficient strategies, *Inter-Attention* and
    *Inter-Skip*. Their formulas were not retrieved: what follows is our reconstruction [I]
    (`shared/papers/iwan_architecture.md` §2.6-2.7). With `h_i` this sentence's context states, `h-bar` the
    masked mean of the OTHER sentence's states [I] and `f_i` this sentence's alignment features:

    - `"inter_attention"` (default) [I; the shape has secondary support, a public snippet that follows IWAN]:
      `e_i = v^T tanh(W_1 [h_i; h-bar] + b_1)`, `w_i = softmax_i(e_i)` over the real words of this sentence;
    - `"inter_skip"` [I, lowest confidence: reading A of the notes, a keep / skip gate, unnormalised]:
      `w_i = sigmoid(u^T [h_i; h-bar] + c)`;
    - `"none"` [ours, an ablation]: `w_i = 1 / m`, the mean over the `m` real words;
    - composition [I]: `v = sum_i w_i f_i`.

    One instance serves both sentences (called once per side with the roles swapped): the weights are shared,
    as the paper's Figure 1 caption says of blocks of one colour [R].

    Args:
        weighting: `"inter_attention"` (default), `"inter_skip"` or `"none"`.
        units: int or None, the width of Inter-Attention's hidden layer (`W_1`'s rows); None: the width `d` of
            the states. Only `"inter_attention"` uses it.
        return_weights: bool, also return the weights `w`. Defaults to False.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[f, h, h_other]`: float `[batch, m, d_f]` (this sentence's alignment features),
            `[batch, m, d]` (its context states) and `[batch, n, d]` (the other sentence's context states).
        mask: `None` or `[mask_f, mask_h, mask_other]`, bool `[batch, m]`, `[batch, m]`, `[batch, n]` (True =
            real word; any may be `None`, `mask_h` is used where given, else `mask_f`); picked up automatically
            from Keras masks.

    Returns:
        `v`: float `[batch, d_f]`; with `return_weights=True` the pair `(v, w)`, `w` float `[batch, m]`.

    Masking:
        Padded words get weight exactly 0 (masked softmax with fill -1e9 for Inter-Attention, zeroed gates for
        Inter-Skip) and the other sentence's summary is the mean over its real words, so padding changes
        nothing. An empty sentence gives `w = 0` and `v = 0`; an empty other sentence gives `h-bar = 0`. The
        outputs carry no mask.

    Precision:
        Under `mixed_bfloat16` the Dense layers and `v = sum_i w_i f_i` compute in bfloat16 (a matmul accumulates
        in float32), while the softmax and the mean `h-bar` normalise in float32 (`keras_match.layers.masked_ops`):
        a bfloat16 sum over a sentence would round every partial sum to 8 mantissa bits.

    Weights:
        `"inter_attention"`: `attention_hidden/kernel [2d, units]`, `attention_hidden/bias [units]` (`W_1`,
        `b_1`) and `attention_score/kernel [units, 1]` (`v`): 3 trainable weights. `"inter_skip"`:
        `skip_gate/kernel [2d, 1]`, `skip_gate/bias [1]` (`u`, `c`): 2. `"none"`: none.

    Raises:
        ValueError: at construction if `weighting` is unknown or `units` is neither None nor a positive integer;
            at build if the inputs are not three rank-3 tensors, `h` and `h_other` differ in their last
            dimension or a last dimension is undefined; at call if `mask` is not a list of three.

    Examples:

    ```python
    fs, ft = DecompositionAlignment(units=100)([hs, ht])
    weighting = InterWeighting("inter_attention", units=50)
    vs = weighting([fs, hs, ht])   # [batch, 100]: S's words weighted with T in view
    vt = weighting([ft, ht, hs])   # [batch, 100]
    ```

    Reference:
        - Shen, Yang, Deng. "Inter-Weighted Alignment Network for Sentence Pair Modeling." EMNLP 2017 (D17-1122):
          the inter-weighted layer, Inter-Attention and Inter-Skip [R]; the formulas are reconstructed [I].
    """

    def __init__(self, weighting="inter_attention", units=None, return_weights=False, **kwargs):
        super().__init__(**kwargs)
        one_of("weighting", weighting, WEIGHTINGS)
        positive_int("units", units, allow_none=True)
        self.weighting = weighting
        self.units = units
        self.return_weights = bool(return_weights)
        self.supports_masking = True

    def build(self, input_shape):
        if (not isinstance(input_shape, (list, tuple)) or len(input_shape) != 3
                or not all(isinstance(s, (list, tuple)) and len(s) == 3 for s in input_shape)):
            raise ValueError(f"Layer {self.name} expects three rank-3 inputs [f, h, h_other]. "
                             f"Received input_shape={input_shape}")
        f_shape, h_shape, other_shape = (tuple(s) for s in input_shape)
        if f_shape[-1] is None or h_shape[-1] is None or h_shape[-1] != other_shape[-1]:
            raise ValueError(f"Layer {self.name} expects f, h and h_other with defined last dimensions, the same "
                             f"for h and h_other. Received input_shape={input_shape}")
        joint = h_shape[:-1] + (2 * h_shape[-1],)
        if self.weighting == "inter_attention":
            self.attention_hidden = keras.layers.Dense(self.units or h_shape[-1], activation="tanh",
                                                       dtype=self.dtype_policy, name="attention_hidden")
            self.attention_hidden.build(joint)
            self.attention_score = keras.layers.Dense(1, use_bias=False, dtype=self.dtype_policy,
                                                      name="attention_score")
            self.attention_score.build(joint[:-1] + (self.units or h_shape[-1],))
        elif self.weighting == "inter_skip":
            self.skip_gate = keras.layers.Dense(1, dtype=self.dtype_policy, name="skip_gate")
            self.skip_gate.build(joint)

    def weights_of(self, h, h_other, mask=None, other_mask=None):
        """The weights `w` `[batch, m]` of the words of `h` given `h_other` (0 at padding)."""
        mask, other_mask = as_bool_mask(mask), as_bool_mask(other_mask)
        if self.weighting == "none":
            return masked_softmax(ops.zeros_like(h[..., 0]), mask, axis=-1)
        other_words = None if other_mask is None else ops.expand_dims(other_mask, -1)
        summary = masked_mean(h_other, other_words, axis=1)  # h-bar of the other sentence, [batch, d]
        summary = ops.zeros_like(h) + ops.expand_dims(summary, 1)
        joint = ops.concatenate([zero_padded(h, mask), summary], axis=-1)  # [h_i; h-bar]
        if self.weighting == "inter_attention":
            scores = ops.squeeze(self.attention_score(self.attention_hidden(joint)), -1)
            return masked_softmax(scores, mask, axis=-1)
        gates = ops.sigmoid(ops.squeeze(self.skip_gate(joint), -1))
        return gates if mask is None else ops.where(mask, gates, ops.zeros_like(gates))

    def call(self, inputs, mask=None):
        f, h, h_other = inputs
        if mask is None:
            mask = (None, None, None)
        if not isinstance(mask, (list, tuple)) or len(mask) != 3:
            raise ValueError(f"Expected `mask` to be None or [mask_f, mask_h, mask_other]. Received: mask={mask}")
        mask_f, mask_h, mask_other = mask
        words = mask_h if mask_h is not None else mask_f
        weights = self.weights_of(h, h_other, words, mask_other)
        f = zero_padded(f, as_bool_mask(words))
        v = ops.squeeze(ops.matmul(ops.expand_dims(weights, 1), f), 1)  # sum_i w_i f_i
        return (v, weights) if self.return_weights else v

    def compute_mask(self, inputs, mask=None):
        return (None, None) if self.return_weights else None

    def compute_output_shape(self, input_shape):
        f_shape = tuple(input_shape[0])
        v_shape = (f_shape[0], f_shape[-1])
        return (v_shape, f_shape[:2]) if self.return_weights else v_shape

    def get_config(self):
        config = super().get_config()
        config.update({"weighting": self.weighting, "units": self.units, "return_weights": self.return_weights})
        return config
