"""IWAN's context layer: a shared BiLSTM (Shen, Yang & Deng, EMNLP 2017) or the cross-context CARNN encoder that
replaces it (Tran et al., NAACL 2018, section 4.3, Figure 4)."""

import keras
from keras import ops

from keras_match.layers.carnn import CARNN
from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import pass_pair_masks
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.layers.masked_ops import zero_padded
from keras_match.layers.position_encoder import PositionEncoder

ENCODERS = ("bilstm", "ncarnn", "icarnn", "scarnn")
"""The context encoders of `ContextEncoder`: IWAN's BiLSTM and the three cross-context CARNNs."""

CARNN_VARIANTS = {"ncarnn": "n", "icarnn": "i", "scarnn": "s"}
"""`keras_match.layers.CARNN`'s `variant` of each CARNN encoder."""


@keras.saving.register_keras_serializable(package="keras_match")
class ContextEncoder(keras.layers.Layer):
    """The context layer of IWAN: one shared bidirectional encoder for both sentences, optionally cross-context.

    - `encoder="bilstm"`: IWAN's context layer [R that it is a (bi)LSTM; S bidirectional, CARNN paper §4.3]: one
      `Bidirectional(LSTM(units))` shared by both sentences, `h_i = [h_i^fw; h_i^bw]`. Each sentence is encoded
      without seeing the other one.
    - `encoder="ncarnn" | "icarnn" | "scarnn"`: the "cross context CARNN-based sentence encoder" that replaces
      the BiLSTM (Tran et al., 2018, §4.3 [R]): each sentence is encoded by a CARNN (eq. 3, 5 or 6 of that
      paper, `keras_match.layers.CARNN`) whose controlling context `c` summarises the OTHER sentence, made by a
      Position Encoder (`keras_match.layers.PositionEncoder`, Sukhbaatar et al. 2015 §4.1) of its word vectors:
      `h^s = CARNN(e^s; c = PE(e^t))`, `h^t = CARNN(e^t; c = PE(e^s))`. What the paper leaves open is ours [I]
      (`shared/papers/iwan_architecture.md` §6.3): one CARNN per direction sharing `c`, concatenated (the
      backward one runs from each sentence's last real word), so the width matches the BiLSTM's; the Position
      Encoder reads the same (embedded) inputs as the encoder and has no weights; both sentences share every
      weight (siamese).

    Args:
        encoder: `"bilstm"` (default), `"ncarnn"`, `"icarnn"` or `"scarnn"`.
        units: int or None, the hidden size per direction (the output is `2 * units` wide); None: the input width
            `d`. sCARNN has no input projection (eq. 6), so its hidden size is `d`: `units` must be None or `d`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[x_s, x_t]`, float `[batch, m, d]` and `[batch, n, d]` (the same `d`): the embedded words of the
            two sentences.
        mask: `None` or `[mask_s, mask_t]`, bool `[batch, m]` / `[batch, n]` (True = real word), either may be
            `None`; picked up automatically from Keras masks (`Embedding(mask_zero=True)`).

    Returns:
        `(h_s, h_t)`: float `[batch, m, 2 * units]` and `[batch, n, 2 * units]`, carrying the input masks.

    Masking:
        The recurrences skip padded words (the backward direction starts at the last real word), the Position
        Encoder sums over the other sentence's real words with its true length, and the outputs are 0 at padded
        positions, so padding changes nothing. An empty other sentence gives the context `c = 0`.

    Precision:
        Under `mixed_bfloat16` the BiLSTM runs in float32 (its outputs are rounded to bfloat16 once): an LSTM
        cell state rounded to bfloat16's 8-bit mantissa at every step drifts over a sentence. The CARNNs keep
        their gates and states above bfloat16's precision themselves (`keras_match.layers.CARNN`, Precision).

    Weights:
        `"bilstm"`: the forward and backward LSTMs' kernels, recurrent kernels and biases (6 trainable weights);
        CARNN encoders: the weights of the two `CARNN` layers `forward` and `backward` (the Position Encoder has
        none).

    Raises:
        ValueError: at construction if `encoder` is unknown or `units` is neither None nor a positive integer; at
            build if the inputs are not a pair of rank-3 tensors with the same defined last dimension, or if
            `encoder="scarnn"` and `units` is not the input width; at call if `mask` is not a pair.

    Examples:

    ```python
    embedding = keras.layers.Embedding(20000, 50, mask_zero=True)
    xs, xt = embedding(question_ids), embedding(answer_ids)
    hs, ht = ContextEncoder("icarnn", units=100)([xs, xt])   # [batch, m, 200], [batch, n, 200]
    hs, ht = ContextEncoder("scarnn")([xs, xt])              # [batch, m, 100], [batch, n, 100]
    ```

    Reference:
        - Shen, Yang, Deng. "Inter-Weighted Alignment Network for Sentence Pair Modeling." EMNLP 2017 (D17-1122).
        - Tran, Lai, Haffari, Zukerman, Bui, Bui. "Context-Aware Recurrent Neural Networks" (CARNN). NAACL 2018,
          §3 (eq. 3, 5, 6), §4.3 and Figure 4 (the cross-context encoder), §5.3 (TrecQA clean).
        - Sukhbaatar, Szlam, Weston, Fergus. "End-To-End Memory Networks." NIPS 2015, §4.1 (Position Encoder).
    """

    def __init__(self, encoder="bilstm", units=None, **kwargs):
        super().__init__(**kwargs)
        one_of("encoder", encoder, ENCODERS)
        positive_int("units", units, allow_none=True)
        self.encoder = encoder
        self.units = units
        self.supports_masking = True

    def build(self, input_shape):
        s_shape, _ = check_pair_shape(input_shape, self.name)
        dim = s_shape[-1]
        units = self.units or dim
        if self.encoder == "bilstm":
            # float32 under bfloat16 / float16 (the docstring's "Precision"); the layer's own policy otherwise
            policy = "float32" if accumulation_dtype(self.compute_dtype) != self.compute_dtype else self.dtype_policy
            self.bilstm = keras.layers.Bidirectional(
                keras.layers.LSTM(units, return_sequences=True, dtype=policy), dtype=policy, name="bilstm")
            self.bilstm.build(s_shape)
            return
        if self.encoder == "scarnn" and units != dim:
            raise ValueError(f"Layer {self.name}: sCARNN's hidden size is its input width (eq. 6 has no input "
                             f"projection); units must be None or {dim}. Received: units={self.units}")
        variant = CARNN_VARIANTS[self.encoder]
        self.position_encoder = PositionEncoder(dtype=self.dtype_policy, name="position_encoder")
        self.position_encoder.build(s_shape)
        self.forward = CARNN(units, variant=variant, dtype=self.dtype_policy, name="forward")
        self.backward = CARNN(units, variant=variant, go_backwards=True, dtype=self.dtype_policy, name="backward")
        for layer in (self.forward, self.backward):
            layer.build([s_shape, (s_shape[0], dim)])

    def _cross_context(self, x, mask, context):
        forward = self.forward([x, context], mask=[mask, None])
        backward = self.backward([x, context], mask=[mask, None])
        return ops.concatenate([forward, backward], axis=-1)

    def call(self, inputs, mask=None):
        xs, xt = inputs
        mask_s, mask_t = split_pair_masks(mask)
        if self.encoder == "bilstm":
            hs, ht = self.bilstm(xs, mask=mask_s), self.bilstm(xt, mask=mask_t)
            hs, ht = ops.cast(hs, self.compute_dtype), ops.cast(ht, self.compute_dtype)  # no-ops in float32
        else:
            context_s = self.position_encoder(xt, mask=mask_t)  # S is read with T's summary, and vice versa
            context_t = self.position_encoder(xs, mask=mask_s)
            hs = self._cross_context(xs, mask_s, context_s)
            ht = self._cross_context(xt, mask_t, context_t)
        return zero_padded(hs, mask_s), zero_padded(ht, mask_t)

    def compute_mask(self, inputs, mask=None):
        return pass_pair_masks(mask)

    def output_width(self, input_dim):
        """The width of `h_s` and `h_t` for inputs `input_dim` wide: `2 * (units or input_dim)`."""
        return 2 * (self.units or input_dim)

    def compute_output_shape(self, input_shape):
        s_shape, t_shape = (tuple(s) for s in input_shape)
        width = self.output_width(s_shape[-1])
        return s_shape[:-1] + (width,), t_shape[:-1] + (width,)

    def get_config(self):
        config = super().get_config()
        config.update({"encoder": self.encoder, "units": self.units})
        return config
