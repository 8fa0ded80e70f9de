"""Context-dependent Additive Recurrent Neural Net: `CARNNCell` (eq. 3, 5, 6) and the `CARNN` layer (Tran et al. 2018).

nCARNN's gates read the previous state, so it is a true RNN cell stepped by `keras.layers.RNN`. iCARNN's and
sCARNN's gates read only the context and the current input (eq. 5, 6), so `CARNN` computes them for every step at
once and runs the gated linear recurrence `h_m = (1 - g_u^m) * h_{m-1} + g_u^m * g_f^m * e_bar_m`
(`keras_match.layers.gated_linear_recurrence`), the unrolled form of eq. 4 and 7.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_match.layers.checks import last_dim
from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.gated_recurrence import gated_linear_recurrence
from keras_match.layers.highway import _clone_initializer
from keras_match.layers.masked_ops import HALF_DTYPES
from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import as_bool_mask
from keras_match.layers.masked_ops import is_shape_pair
from keras_match.layers.masked_ops import zero_padded
from keras_match.layers.weight_settings import set_weight_settings
from keras_match.layers.weight_settings import weight_setting
from keras_match.layers.weight_settings import weight_settings
from keras_match.layers.weight_settings import weight_settings_config

VARIANTS = ("n", "i", "s")
"""The CARNN units: "n" non-independent gates (eq. 3), "i" independent gates (eq. 5), "s" simplified candidate
(eq. 6)."""


def _check_units_for_variant(layer, variant, units, input_dim):
    """sCARNN has no input projection: raise ValueError naming `units` unless `units == input_dim`."""
    if variant == "s" and units != input_dim:
        raise ValueError(
            f"Layer {layer.name}: sCARNN (variant='s', eq. 6) keeps the input width, so `units` must equal the "
            f"input width {input_dim} (or be None in `CARNN`). Received: units={units}"
        )


@keras.saving.register_keras_serializable(package="keras_match")
class CARNNCell(keras.layers.Layer):
    """One step of a Context-dependent Additive Recurrent Neural Net unit, for `keras.layers.RNN`.

    Implements eq. 3 (nCARNN), eq. 5 (iCARNN) and eq. 6 (sCARNN) of Tran et al. (2018), with `c` the global
    (controlling) context, `e_m` the m-th input, `sigmoid` the logistic function and `*` the element-wise product:

        g_u^m = sigmoid(W_cu c + W_hu h_{m-1} + W_eu e_m + b_u)       (eq. 3; eq. 5, 6: no W_h term)
        g_f^m = sigmoid(W_cf c + W_hf h_{m-1} + W_ef e_m + b_f)       (eq. 3; eq. 5, 6: no W_h term)
        e_bar_m = W_e_bar e_m + b_e_bar                               (eq. 3, 5; eq. 6: e_bar_m = e_m)
        h_m = g_u^m * (g_f^m * e_bar_m) + (1 - g_u^m) * h_{m-1}      (eq. 3, 5, 6)

    The unit is linear in its inputs apart from the gates; `h_M` is a gate-weighted sum of the `e_bar_i` (eq. 4, 7).

    How the context reaches the cell **[I]**: Keras 3's `RNN` takes no `constants`, so the cell's input at every
    step is the concatenation `[e_m; c]` (input first, context last, width `d + context_dim`), and the cell splits
    it with `context_dim`. `CARNN` does the concatenation for you (and, for "i" and "s", does not need this cell's
    loop at all); use the cell directly only to build your own `keras.layers.RNN`. The initial state is zero
    (`h_0 = 0` **[I]**: the paper does not state it).

    Args:
        units: int, the hidden size `u` (the paper uses 1024 for dialog). For "s" it must equal `d`.
        variant: `"n"` (nCARNN, eq. 3: the gates read `h_{m-1}`), `"i"` (iCARNN, eq. 5: the gates read
            only `c` and `e_m`) or `"s"` (sCARNN, eq. 6: iCARNN's gates and no input projection, `e_bar_m = e_m`, so
            `units` must equal the input width `d`). Defaults to `"n"`.
        context_dim: int, keyword-only and required: the width `dc` of the context `c`, the trailing part of each
            step's input.
        kernel_initializer: initializer of the input, context and projection kernels (each kernel gets
            its own copy). Defaults to `"glorot_uniform"`.
        recurrent_initializer: initializer of the recurrent kernel (nCARNN only). Defaults to `"orthogonal"`.
        bias_initializer: initializer of the gate and projection biases. Defaults to `"zeros"` (the paper gives none).
        kernel_regularizer: optional regularizer of the input, context and projection kernels.
        recurrent_regularizer: optional regularizer of the recurrent kernel.
        bias_regularizer: optional regularizer of the biases.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: float tensor `[batch, d + context_dim]`, the step input `[e_m; c]`.
        states: `[h_{m-1}]`, a list holding one `[batch, units]` tensor (a bare tensor is accepted too); under a
            half-precision policy `[h_hi, h_lo]` (a single `[h_{m-1}]` is accepted too, as `h_lo = 0`).
        training: unused (no dropout); accepted for `keras.layers.RNN`.

    Returns:
        `(h_m, [h_m])`: the output `[batch, units]` and the new states, in the layer's compute dtype; under a
        half-precision policy `(h_hi, [h_hi, h_lo])`.

    State:
        `state_size = output_size = units`; `get_initial_state(batch_size)` gives `[zeros([batch_size, units])]`.
        Under a half-precision policy (`mixed_bfloat16`) the state is `h_m` split in two compute-dtype tensors,
        `[h_hi, h_lo]` (`state_size = [units, units]`, two zero tensors initially), see Precision.

    Precision:
        Under `mixed_bfloat16` the matmuls run in bfloat16, but the gates (sigmoid, `1 - g_u`) and the update of
        `h_m` run in float32: in bfloat16 a gate within 2^-9 of 1 rounds to 1, and a bfloat16 state would round
        (relative 2^-8) at every step and drift over long texts. `keras.layers.RNN` carries states in the compute
        dtype, so the float32 state travels as `h_hi = bfloat16(h_m)` plus `h_lo = bfloat16(h_m - h_hi)` (16
        significant bits, not float32's 24, but no per-step rounding of the order of bfloat16's); the output is
        `h_hi`, `h_m` rounded once. Under float32 the state is `h_m` itself.

    Masking:
        Done by `keras.layers.RNN` (a masked step keeps the previous state); the cell itself sees no mask.

    Weights (in `get_weights()` order; `u` = units, `d` = input width, `dc` = context width):
        `input_kernel [d, 2u]` (`W_eu | W_ef`), `context_kernel [dc, 2u]` (`W_cu | W_cf`), for "n"
        `recurrent_kernel [u, 2u]` (`W_hu | W_hf`), `gate_bias [2u]` (`b_u | b_f`), and for "n" and "i"
        `projection_kernel [d, u]` (`W_e_bar`), `projection_bias [u]` (`b_e_bar`). So 6 ("n"), 5 ("i") or 3 ("s")
        trainable weights. The update-gate columns come first in every fused kernel.

    Raises:
        ValueError: at construction if `units` or `context_dim` is not a positive integer or `variant` is not
            "n", "i" or "s"; at build if the input width is undefined or not larger than `context_dim`, or if
            `variant="s"` and `units` differs from the input width `d`.

    Examples:

    ```python
    e = np.random.rand(2, 7, 50).astype("float32")          # [batch, time, d]
    c = np.random.rand(2, 30).astype("float32")             # [batch, dc]
    steps = np.concatenate([e, np.repeat(c[:, None], 7, axis=1)], axis=-1)   # [e_m; c] at every step
    rnn = keras.layers.RNN(CARNNCell(64, context_dim=30), return_sequences=True)
    rnn(steps)                                              # [2, 7, 64]
    keras.layers.RNN(CARNNCell(50, "s", context_dim=30))(steps)   # [2, 50], the last state
    ```

    Reference:
        - Tran, Lai, Haffari, Zukerman, Bui, Bui. The Context-dependent Additive Recurrent Neural Net. NAACL-HLT
          2018, pp. 1274-1283, section 3: one step of the units nCARNN (eq. 3), iCARNN (eq. 5) and sCARNN (eq. 6);
          eq. 4 and 7 are their unrolled forms (`CARNN` computes them).
    """

    def __init__(
        self,
        units,
        variant="n",
        *,
        context_dim,
        kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
        kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        positive_int("units", units)
        one_of("variant", variant, VARIANTS)
        positive_int("context_dim", context_dim)
        self.units = units
        self.variant = variant
        self.context_dim = context_dim
        set_weight_settings(
            self,
            (kernel_initializer, recurrent_initializer, bias_initializer),
            (kernel_regularizer, recurrent_regularizer, bias_regularizer),
        )
        self.output_size = units

    @property
    def _split_state(self):
        """Whether the state is carried as a pair `[h_hi, h_lo]` (half-precision compute dtypes)."""
        return keras.backend.standardize_dtype(self.compute_dtype) in HALF_DTYPES

    @property
    def state_size(self):
        return [self.units, self.units] if self._split_state else self.units

    def build(self, input_shape):
        width = last_dim(self, input_shape)
        input_dim = width - self.context_dim
        if input_dim < 1:
            raise ValueError(
                f"Layer {self.name}: each step's input is [e_m; c], wider than the context, so its width must "
                f"exceed `context_dim`. Received: context_dim={self.context_dim}, input width {width}"
            )
        _check_units_for_variant(self, self.variant, self.units, input_dim)
        self.input_dim = input_dim
        units = self.units

        def weight(name, shape, kind, offset):
            # Each weight gets its own copy of the initializer (an unseeded one would repeat its values).
            initializer, regularizer = weight_setting(self, kind)
            return self.add_weight(
                name=name,
                shape=shape,
                initializer=_clone_initializer(initializer, offset),
                regularizer=regularizer,
            )

        self.input_kernel = weight("input_kernel", (input_dim, 2 * units), "kernel", 0)  # W_eu | W_ef
        self.context_kernel = weight("context_kernel", (self.context_dim, 2 * units), "kernel", 1)  # W_cu | W_cf
        self.recurrent_kernel = None
        if self.variant == "n":
            self.recurrent_kernel = weight("recurrent_kernel", (units, 2 * units), "recurrent", 2)  # W_hu | W_hf
        self.gate_bias = weight("gate_bias", (2 * units,), "bias", 3)  # b_u | b_f
        self.projection_kernel = self.projection_bias = None
        if self.variant != "s":
            self.projection_kernel = weight("projection_kernel", (input_dim, units), "kernel", 4)  # W_e_bar
            self.projection_bias = weight("projection_bias", (units,), "bias", 5)  # b_e_bar

    def call(self, inputs, states, training=False):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        h_prev = states[0]  # h_{m-1}, or its high part h_hi under a half-precision policy
        wide = accumulation_dtype(self.compute_dtype)  # the gates' and the state's dtype (float32 for bfloat16)
        e, c = inputs[..., : self.input_dim], inputs[..., self.input_dim :]
        # Gate pre-activations W_c c + W_e e_m + b (eq. 3, 5, 6), update-gate columns first.
        logits = ops.matmul(e, self.input_kernel) + ops.matmul(c, self.context_kernel) + self.gate_bias
        if self.variant == "n":
            logits = logits + ops.matmul(h_prev, self.recurrent_kernel)  # W_h h_{m-1}: nCARNN only (eq. 3)
        logits = ops.cast(logits, wide)
        g_u = ops.sigmoid(logits[..., : self.units])
        g_f = ops.sigmoid(logits[..., self.units :])
        if self.variant == "s":
            e_bar = e  # sCARNN: no projection (eq. 6)
        else:
            e_bar = ops.matmul(e, self.projection_kernel) + self.projection_bias  # e_bar_m (eq. 3, 5)
        e_bar = ops.cast(e_bar, wide)
        if len(states) > 1:  # [h_hi, h_lo]: h_{m-1} = h_hi + h_lo in float32
            h_prev = ops.cast(states[0], wide) + ops.cast(states[1], wide)
        else:
            h_prev = ops.cast(h_prev, wide)
        h = g_u * (g_f * e_bar) + (1.0 - g_u) * h_prev  # h_m (eq. 3, 5, 6)
        if not self._split_state:
            return h, [h]
        high = ops.cast(h, self.compute_dtype)  # h_m rounded once: the output
        return high, [high, ops.cast(h - ops.cast(high, wide), self.compute_dtype)]

    def get_initial_state(self, batch_size=None):
        zeros = ops.zeros((batch_size, self.units), dtype=self.compute_dtype)  # h_0 = 0 [I]
        return [zeros, zeros] if self._split_state else [zeros]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "variant": self.variant,
                "context_dim": self.context_dim,
                **weight_settings_config(self),
            }
        )
        return config


def _time_major_dense(x, kernel, bias=None):
    """`x [time, batch, m] @ kernel [m, n] (+ bias)` as one 2-D matmul -> `[time, batch, n]`."""
    shape = tf.shape(x)
    y = tf.matmul(tf.reshape(x, [-1, x.shape[-1]]), kernel)
    if bias is not None:
        y = tf.nn.bias_add(y, bias)
    return tf.reshape(y, tf.concat([shape[:2], [kernel.shape[-1]]], axis=0))


@keras.saving.register_keras_serializable(package="keras_match")
class CARNN(keras.layers.Layer):
    """A Context-dependent Additive Recurrent Neural Net over a sequence, controlled by a context vector.

    Runs the nCARNN, iCARNN or sCARNN unit of Tran et al. (2018) (eq. 3, 5, 6; its update gate `g_u^m`, reset
    gate `g_f^m` and projected input `e_bar_m` are written out in `CARNNCell`) over a sequence `e_1 .. e_M` with
    one global context `c` per example, each step's update written as

        h_m = a_m * h_{m-1} + b_m,    a_m = 1 - g_u^m,    b_m = g_u^m * g_f^m * e_bar_m     (eq. 3, 5, 6)

    with `h_0 = 0` **[I]** (the paper does not state the initial state).

    - `"n"` runs a `CARNNCell` in `keras.layers.RNN`; the context reaches every step concatenated to its input
      (`[e_m; c]`) **[I]**: Keras 3's RNN takes no `constants`.
    - `"i"` and `"s"`: the gates depend only on `c` and `e_m`, so they are computed for all steps at once and the
      state runs through `keras_match.layers.gated_linear_recurrence` with these `a_m` and `b_m` (the unrolled
      eq. 4 / 7). This is exactly the `CARNNCell` of the same variant and weights stepped by `keras.layers.RNN`
      (the tests check it), only parallel over time before the scan.

    Bidirectional use **[I]**: the paper says only that a CARNN replaces IWAN's BiLSTM. Two layers, one with
    `go_backwards=True`, sharing the context and concatenated on the last axis, give a bidirectional encoder
    (`[batch, time, 2 * units]`), as in the example below.

    Args:
        units: int or None, the hidden size `u` (the paper uses 1024 for dialog). `None` means the input width `d`
            (required for "s", where `units` must be `None` or `d`).
        variant: the unit, as in `CARNNCell`: `"n"` (nCARNN, eq. 3), `"i"` (iCARNN, eq. 5) or `"s"` (sCARNN,
            eq. 6, no input projection: `units` must be None or `d`). Defaults to `"n"`.
        go_backwards: bool. If True the unit runs from the last real token of each example back to the first
            (a reversal within the true length, like `tf.reverse_sequence`); the outputs stay in the input's time
            order, so position `m` holds the state after reading `e_M .. e_m`. Defaults to False.
        return_sequences: bool. True: every state `[batch, time, units]`; False: the last state `[batch, units]`
            (the state after the last real token, or after the first real token with `go_backwards`).
            Defaults to True.
        kernel_initializer: initializer of the input weights, default `"glorot_uniform"` (the paper gives no
            initialization). This and the five below are handed to the `CARNNCell` that holds the weights (its
            docstring says which weight each one sets).
        recurrent_initializer: initializer of the recurrent weights, default `"orthogonal"`.
        bias_initializer: initializer of the biases, default `"zeros"`.
        kernel_regularizer: regularizer of the input weights, default none.
        recurrent_regularizer: regularizer of the recurrent weights, default none.
        bias_regularizer: regularizer of the biases, default none.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: a pair `[sequence, context]`: `sequence` a float tensor `[batch, time, d]` (`time` may be unknown),
            `context` a float tensor `[batch, dc]` (e.g. a `PositionEncoder` of the partner text).
        mask: optional mask of the sequence, `[batch, time]` (True = real token): a pair `[sequence_mask, None]`
            (what Keras passes when the sequence comes from `Embedding(mask_zero=True)`) or the sequence mask
            alone. The context takes no mask.
        training: unused (no dropout).

    Returns:
        `[batch, time, units]` with `return_sequences=True`, else `[batch, units]`; the layer's compute dtype.

    Masking:
        A padded step is skipped: the state is carried through unchanged (padding anywhere, not only at the end),
        and **the outputs at padded positions are 0** (for every variant), so extra padding never changes the
        real outputs. An example without any real token gives zeros. With `return_sequences=True` the sequence
        mask is propagated to the output; the last state carries no mask.

    Weights:
        Those of the sublayer `cell`, a `CARNNCell` built for inputs `[e_m; c]`, in its order (listed in its
        docstring: 6 for "n", 5 for "i", 3 for "s", `input_kernel [d, 2u]` first), so they can be copied into a
        `keras.layers.RNN(CARNNCell(...))` with `set_weights`.

    Precision:
        Under `mixed_bfloat16` the matmuls run in bfloat16, but the gates (sigmoid, `a_m = 1 - g_u^m`), `b_m` and
        the state run in float32 and the outputs are rounded to bfloat16 once: in bfloat16 an update gate below
        2^-9 makes `a_m` exactly 1 (the state never decays), and a bfloat16 state rounds (relative 2^-8) at every
        step and drifts over long texts. nCARNN carries its state as two bfloat16 parts (see `CARNNCell`).

    Raises:
        ValueError: at construction if `units` is not a positive integer or None, or `variant` is not "n", "i"
            or "s"; at build if `inputs` is not a pair `[sequence, context]` with `sequence` of rank 3 and
            `context` of rank 2, both with a defined last dimension, or if `variant="s"` and `units` is neither
            None nor `d`.

    Examples:

    ```python
    e = np.random.rand(2, 7, 50).astype("float32")            # [batch, time, d]
    c = np.random.rand(2, 50).astype("float32")               # [batch, dc]
    CARNN(64, "i")([e, c])                                    # [2, 7, 64]
    CARNN(None, "s", return_sequences=False)([e, c])          # [2, 50]

    # Cross-context bidirectional encoder (the CARNN paper's IWAN encoder): each text read under the other's
    # Position Encoder summary; masks come along from the embedding.
    embed = keras.layers.Embedding(10000, 300, mask_zero=True)
    s, t = embed(s_ids), embed(t_ids)
    c_t, c_s = PositionEncoder()(t), PositionEncoder()(s)
    forward, backward = CARNN(128, "i"), CARNN(128, "i", go_backwards=True)
    h_s = keras.layers.Concatenate()([forward([s, c_t]), backward([s, c_t])])   # [batch, time_s, 256]
    ```

    Reference:
        - Tran, Lai, Haffari, Zukerman, Bui, Bui. The Context-dependent Additive Recurrent Neural Net. NAACL-HLT
          2018, pp. 1274-1283, section 3: the units of eq. 3, 5 and 6 (see `CARNNCell`) run over a sequence,
          iCARNN and sCARNN through the unrolled forms of eq. 4 and 7.
    """

    def __init__(
        self,
        units,
        variant="n",
        go_backwards=False,
        return_sequences=True,
        kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
        kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        positive_int("units", units, allow_none=True)
        one_of("variant", variant, VARIANTS)
        self.units = units
        self.variant = variant
        self.go_backwards = bool(go_backwards)
        self.return_sequences = bool(return_sequences)
        set_weight_settings(
            self,
            (kernel_initializer, recurrent_initializer, bias_initializer),
            (kernel_regularizer, recurrent_regularizer, bias_regularizer),
        )
        self.supports_masking = True

    def _check_input_shape(self, input_shape):
        """`(sequence_shape, context_shape)`, or ValueError naming what is wrong."""
        if not is_shape_pair(input_shape):
            raise ValueError(
                f"Layer {self.name} expects `inputs` to be a pair [sequence, context] ([batch, time, d] and "
                f"[batch, dc]). Received input_shape={input_shape}"
            )
        sequence_shape, context_shape = (tuple(s) for s in input_shape)
        if len(sequence_shape) != 3 or sequence_shape[-1] is None:
            raise ValueError(
                f"Layer {self.name} expects the `sequence` input of rank 3 ([batch, time, d]) with a defined d. "
                f"Received sequence shape {sequence_shape}"
            )
        if len(context_shape) != 2 or context_shape[-1] is None:
            raise ValueError(
                f"Layer {self.name} expects the `context` input of rank 2 ([batch, dc]) with a defined dc. "
                f"Received context shape {context_shape}"
            )
        return sequence_shape, context_shape

    def build(self, input_shape):
        sequence_shape, context_shape = self._check_input_shape(input_shape)
        input_dim, context_dim = sequence_shape[-1], context_shape[-1]
        units = input_dim if self.units is None else self.units
        _check_units_for_variant(self, self.variant, units, input_dim)
        self.output_units = units
        self.cell = CARNNCell(
            units,
            self.variant,
            context_dim=context_dim,
            **weight_settings(self),
            dtype=self.dtype_policy,
            name="cell",
        )
        step_shape = (sequence_shape[0], input_dim + context_dim)
        self.rnn = None
        if self.variant == "n":
            # The stepped path: [e_m; c] at every step through keras.layers.RNN (eq. 3). Masked steps keep the state.
            self.rnn = keras.layers.RNN(
                self.cell,
                return_sequences=True,
                return_state=True,
                go_backwards=self.go_backwards,
                dtype=self.dtype_policy,
                name="rnn",
            )
            self.rnn.build(sequence_shape[:2] + step_shape[1:])
        else:
            self.cell.build(step_shape)

    @staticmethod
    def _sequence_mask(mask):
        """The sequence's bool mask from `None`, `[sequence_mask, context_mask]` or a bare sequence mask."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        return as_bool_mask(mask)

    def call(self, inputs, mask=None, training=False):
        sequence, context = inputs
        context = ops.cast(context, sequence.dtype)
        mask = self._sequence_mask(mask)
        if self.variant == "n":
            outputs, last = self._stepped(sequence, context, mask, training)
        else:
            outputs, last = self._parallel(sequence, context, mask)
        if not self.return_sequences:
            return last
        return zero_padded(outputs, mask)

    def _stepped(self, sequence, context, mask, training):
        """nCARNN (eq. 3) stepped by keras.layers.RNN; the context joins every step's input ([e_m; c], [I])."""
        steps = tf.shape(sequence)[1]
        if mask is None:
            mask = tf.ones(tf.shape(sequence)[:2], tf.bool)
        # keras.layers.RNN cannot run zero steps: a sequence of none gets one masked step, which carries h_0 = 0
        # (the last state of an empty sequence) and is cut off the outputs
        extra = tf.cast(tf.equal(steps, 0), tf.int32)
        sequence = tf.pad(sequence, tf.stack([[0, 0], [0, extra], [0, 0]]))
        mask = tf.pad(mask, tf.stack([[0, 0], [0, extra]]))
        tiled = tf.tile(context[:, None, :], tf.stack([1, steps + extra, 1]))
        # [outputs, h_M] (or [outputs, h_hi, h_lo] under a half-precision policy, where h_hi is h_M rounded once)
        outputs, last = self.rnn(tf.concat([sequence, tiled], axis=-1), mask=mask, training=training)[:2]
        if self.go_backwards:
            outputs = tf.reverse(outputs, [1])  # keras.layers.RNN returns the steps in processing order
        return outputs[:, :steps], last

    def _parallel(self, sequence, context, mask):
        """iCARNN / sCARNN (eq. 5, 6): all gates at once, then h_m = a_m h_{m-1} + b_m (eq. 4, 7), time-major."""
        cell, units = self.cell, self.output_units
        x = tf.transpose(sequence, [1, 0, 2])  # [time, batch, d]
        real = None if mask is None else tf.transpose(mask)[..., None]  # [time, batch, 1]
        if self.go_backwards:
            # Read the steps last to first by flipping time (what `gated_linear_recurrence(reverse=True)` does
            # too, since tf2onnx 1.17 mistranslates a reversed tf.scan). Masked steps carry the state in either
            # direction, so the run starts at each example's last real token.
            x = tf.reverse(x, [0])
            real = None if real is None else tf.reverse(real, [0])
        # W_c c + b is the same at every step: computed once per example (eq. 5, 6).
        context_term = tf.nn.bias_add(tf.matmul(context, cell.context_kernel), cell.gate_bias)
        logits = _time_major_dense(x, cell.input_kernel) + context_term  # W_c c + W_e e_m + b (eq. 5, 6)
        # The gates, a, b and the state in float32 under a half-precision policy (no-op casts in float32).
        wide = accumulation_dtype(sequence.dtype)
        logits = tf.cast(logits, wide)
        g_u = tf.sigmoid(logits[..., :units])  # update gate g_u^m (eq. 5, 6)
        g_f = tf.sigmoid(logits[..., units:])  # reset gate g_f^m (eq. 5, 6)
        if self.variant == "s":
            e_bar = x  # sCARNN: e_bar_m = e_m (eq. 6)
        else:
            e_bar = _time_major_dense(x, cell.projection_kernel, cell.projection_bias)  # e_bar_m (eq. 5)
        e_bar = tf.cast(e_bar, wide)
        # h_m = (1 - g_u^m) h_{m-1} + g_u^m (g_f^m e_bar_m) (eq. 5, 6) as a_m h_{m-1} + b_m.
        a = 1.0 - g_u
        b = g_u * (g_f * e_bar)
        if real is not None:
            # Padded steps: a = 1, b = 0, so the state is carried through (the mask folded in, as in QRNN).
            a = tf.where(real, a, tf.ones_like(a))
            b = tf.where(real, b, tf.zeros_like(b))
        states = gated_linear_recurrence(a, b, time_major=True)  # h_0 = 0 [I]
        # the last state; h_0 = 0 for a sequence of no steps (states[-1] alone would fail on a time axis of 0)
        h_0 = tf.zeros(tf.stack([1, tf.shape(states)[1], units]), states.dtype)
        last = tf.concat([h_0, states[-1:]], axis=0)[-1]
        if self.go_backwards:
            states = tf.reverse(states, [0])  # back to the input's time order
        # Rounded to the compute dtype once, after the loop (no-op casts in float32).
        return tf.cast(tf.transpose(states, [1, 0, 2]), sequence.dtype), tf.cast(last, sequence.dtype)

    def compute_mask(self, inputs, mask=None):
        if not self.return_sequences:
            return None
        return self._sequence_mask(mask)

    def compute_output_shape(self, input_shape):
        sequence_shape, _ = self._check_input_shape(input_shape)
        units = sequence_shape[-1] if self.units is None else self.units
        if self.return_sequences:
            return (sequence_shape[0], sequence_shape[1], units)
        return (sequence_shape[0], units)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "variant": self.variant,
                "go_backwards": self.go_backwards,
                "return_sequences": self.return_sequences,
                **weight_settings_config(self),
            }
        )
        return config
