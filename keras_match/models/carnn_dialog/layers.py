"""The layers of the CARNN dialog model (Tran et al., NAACL 2018, section 4.1): the residual attention over the
history (eq. 8), the candidate scorer (eq. 10) and the constant holding the candidate set's token ids."""

from __future__ import annotations

import keras
from keras import ops

from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import masked_softmax

__all__ = ["HistoryAttention", "CandidateScorer", "CandidateIds", "EMPTY_HISTORY"]

EMPTY_HISTORY = ("context", "zeros")
"""What `h_his` is for an example without any history turn: the context `c`, or zeros."""


def _first_mask(mask):
    """The first non-None mask of a list of input masks (or the mask itself)."""
    if isinstance(mask, (list, tuple)):
        for item in mask:
            if item is not None:
                return as_bool_mask(item)
        return None
    return as_bool_mask(mask)


class _ConfigLayer(keras.layers.Layer):
    """A layer whose config adds the constructor arguments named in `CONFIG_KEYS`, each kept as an attribute of
    the same name (the three layers below share this `get_config`)."""

    CONFIG_KEYS = ()

    def get_config(self):
        config = super().get_config()
        config.update({key: getattr(self, key) for key in self.CONFIG_KEYS})
        return config


@keras.saving.register_keras_serializable(package="keras_match")
class HistoryAttention(_ConfigLayer):
    """The summary of a dialog history, eq. 8 of Tran et al. (2018): a residual connection from each history
    utterance's encoding to the CARNN's output at its turn, then attention over the turns with the context:

        h~_m = h_m + e_m                                   m = 1 .. M-1
        alpha_1 .. alpha_{M-1} = softmax(h~_1^T c, ..., h~_{M-1}^T c)
        h_his = sum_m alpha_m h~_m

    with `h_m` the m-th output of the CARNN over the history encodings `e_1 .. e_{M-1}`, `e_m` the Position
    Encoder vector of the m-th history utterance and `c = e_M` the encoded last user utterance (the CARNN's
    controlling context).

    Readings **[I]**: the softmax runs over the real turns only (padded turns get weight 0); the paper does not
    define `h_his` for an empty history (a dialog's first response has no earlier turn): `empty_history="context"`
    (default) makes it `c`, the only text the turn has, so eq. 10 still scores the candidates against the user's
    utterance; `"zeros"` gives a zero vector (every candidate then scores 0).

    Args:
        empty_history: `"context"` or `"zeros"` (above).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `[h, e, c]`: `h` float `[batch, turns, d]` (CARNN outputs), `e` float `[batch, turns, d]` (the
            turn encodings), `c` float `[batch, d]` (the context). The three widths must be equal (the residual
            `h_m + e_m` and the dot products `h~_m^T c` need one width).
        mask: optional turn mask `[batch, turns]` (True = real turn), or a list of the inputs' masks (the first
            one that is not None is used).

    Returns:
        `h_his`, float `[batch, d]` in the compute dtype. Padded turns change nothing, whatever they hold.

    Precision:
        Under `mixed_bfloat16` the whole of eq. 8 (residual, dot products, softmax over the turns, weighted sum) is
        computed in float32 from the bfloat16 inputs and only `h_his` is rounded: the residual `h_m + e_m`, the
        logits `h~_m^T c` (unnormalised dot products, which can be large) and the weighted sum would each add a
        rounding of up to 2^-8 of themselves, and a logit's error moves its attention weight by as much. The layer
        has no weights, so this costs `turns x d` float32 operations per example.

    Raises:
        ValueError: at construction, an unknown `empty_history`; at build, inputs that are not three tensors of
            ranks 3, 3, 2 with one defined width.
    """

    CONFIG_KEYS = ("empty_history",)

    def __init__(self, empty_history="context", **kwargs):
        super().__init__(**kwargs)
        if empty_history not in EMPTY_HISTORY:
            raise ValueError(f"empty_history must be one of {EMPTY_HISTORY}, got {empty_history!r}")
        self.empty_history = empty_history
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 3:
            raise ValueError(f"Layer {self.name} expects [h, e, c]. Received input_shape={input_shape}")
        h, e, c = (tuple(s) for s in input_shape)
        if len(h) != 3 or len(e) != 3 or len(c) != 2:
            raise ValueError(f"Layer {self.name} expects h, e of rank 3 and c of rank 2. Received {h}, {e}, {c}")
        widths = {h[-1], e[-1], c[-1]}
        if None in widths or len(widths) != 1:
            raise ValueError(f"Layer {self.name}: h, e and c need one defined width (eq. 8's h_m + e_m and "
                             f"h~_m^T c). Received {h}, {e}, {c}")

    def call(self, inputs, mask=None):
        h, e, c = inputs
        h = ops.cast(h, accumulation_dtype(self.compute_dtype))  # float32 under bfloat16; a no-op in float32
        c = ops.cast(c, h.dtype)
        real = _first_mask(mask)
        residual = h + ops.cast(e, h.dtype)  # h~_m = h_m + e_m
        if real is not None:
            residual = ops.where(ops.expand_dims(real, -1), residual, ops.zeros_like(residual))
        logits = ops.sum(residual * ops.expand_dims(c, 1), axis=-1)  # h~_m^T c   [batch, turns]
        alpha = masked_softmax(logits, real)
        summary = ops.sum(ops.expand_dims(alpha, -1) * residual, axis=1)  # sum_m alpha_m h~_m
        if self.empty_history == "context" and real is not None:
            summary = ops.where(ops.any(real, axis=1, keepdims=True), summary, c)
        return ops.cast(summary, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], input_shape[0][-1])


@keras.saving.register_keras_serializable(package="keras_match")
class CandidateScorer(_ConfigLayer):
    """The score of every candidate response for a dialog summary, eq. 10 of Tran et al. (2018) before its
    softmax: `s_l = h_his^T e_{y_l}`, with `e_{y_l}` the Position Encoder vector of candidate `l` (eq. 9).

    With `projection=True` the summary is first mapped by a learned square matrix, `s_l = (W h_his)^T e_{y_l}`
    (a bilinear score **[I]**: not in the paper's eq. 10; the memory networks it compares with score candidates
    through such a matrix).

    Args:
        projection: bool, learn `W` (`[d, d]`, no bias, initialised to the identity so training starts from the
            paper's dot product). Defaults to False (eq. 10 as printed).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `[h_his, candidates]`: float `[batch, d]` and float `[C, d]` (one row per candidate, shared by the
            batch).

    Returns:
        float `[batch, C]`, the logits of eq. 10: in the compute dtype, but float32 under `mixed_bfloat16`.

    Precision:
        The scores are the logits of the model's softmax over the candidates (its head), so under
        `mixed_bfloat16` they are computed in float32 from the bfloat16 inputs and the float32 `W` and returned
        in float32: rounded to bfloat16's 8-bit mantissa, close candidates would tie.
    """

    CONFIG_KEYS = ("projection",)

    def __init__(self, projection=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(projection, bool):
            raise ValueError(f"projection must be true or false, got {projection!r}")
        self.projection = projection

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2:
            raise ValueError(f"Layer {self.name} expects [h_his, candidates]. Received input_shape={input_shape}")
        summary, candidates = (tuple(s) for s in input_shape)
        if len(summary) != 2 or len(candidates) != 2 or summary[-1] is None or summary[-1] != candidates[-1]:
            raise ValueError(f"Layer {self.name} expects h_his [batch, d] and candidates [C, d] of one defined d. "
                             f"Received {summary}, {candidates}")
        self.kernel = None
        if self.projection:
            # Not autocast: read as float32 under mixed_bfloat16 (the variable's dtype; no effect in float32).
            self.kernel = self.add_weight(name="kernel", shape=(summary[-1], summary[-1]), initializer="identity",
                                          autocast=False)

    def call(self, inputs):
        summary, candidates = inputs
        summary = ops.cast(summary, accumulation_dtype(self.compute_dtype))  # float32 under bfloat16, else a no-op
        if self.kernel is not None:
            summary = ops.matmul(summary, ops.cast(self.kernel, summary.dtype))
        return ops.matmul(summary, ops.transpose(ops.cast(candidates, summary.dtype)))  # h_his^T e_{y_l}

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], input_shape[1][0])


@keras.saving.register_keras_serializable(package="keras_match")
class CandidateIds(_ConfigLayer):
    """The task's fixed candidate set as token ids inside the model: a non-trainable int32 weight `[C, length]`,
    so `.keras`, SavedModel and ONNX exports carry it (the config holds only its shape).

    Args:
        num_candidates: int >= 1, `C`.
        length: int >= 1, the token ids per candidate.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: any tensor (the layer needs one to sit in a functional graph; it is not read).

    Returns:
        int32 `[C, length]`, the ids (set them with `set_ids` or `set_weights` once built).
    """

    CONFIG_KEYS = ("num_candidates", "length")

    def __init__(self, num_candidates, length, **kwargs):
        super().__init__(**kwargs)
        for key, value in (("num_candidates", num_candidates), ("length", length)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        self.num_candidates = num_candidates
        self.length = length

    def build(self, input_shape):
        self.ids = self.add_weight(name="ids", shape=(self.num_candidates, self.length), dtype="int32",
                                   initializer="zeros", trainable=False)

    def set_ids(self, ids):
        """Assigns the candidate ids, int `[C, length]`."""
        if tuple(ids.shape) != (self.num_candidates, self.length):
            raise ValueError(f"candidate ids of shape {tuple(ids.shape)}; layer {self.name} holds "
                             f"[{self.num_candidates}, {self.length}]")
        self.ids.assign(ops.cast(ids, "int32"))

    def call(self, inputs):
        return ops.convert_to_tensor(self.ids)

    def compute_output_shape(self, input_shape):
        return (self.num_candidates, self.length)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((self.num_candidates, self.length), dtype="int32")
