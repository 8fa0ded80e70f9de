"""The gated linear recurrence `h_t = a_t * h_{t-1} + b_t`, written once for QRNN, CTRN, iCARNN and sCARNN."""

import keras
import tensorflow as tf

from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import zero_padded


def gated_linear_recurrence(a, b, mask=None, initial_state=None, reverse=False, time_major=False):
    """Run `h_t = a_t * h_{t-1} + b_t` (element-wise) over time with `tf.scan`.

    Every recurrence of the zoo whose gates are computed before the loop is this one, with its own `a` and `b`:

    - QRNN fo-pooling (Bradbury et al. 2016; Tay et al. 2018, eq. 1 and the cell below it):
      `c_t = f_t * c_{t-1} + (1 - f_t) * z_t`, i.e. `a = f`, `b = (1 - f) * z`;
    - CTRN's crossed cells: the same with the partner's forget gate (`keras_match.models.ctrn.CTRN`);
    - iCARNN / sCARNN (Tran et al. 2018): `h_t = g_t * h_{t-1} + (1 - g_t) * x_t`, i.e. `a = g`, `b = (1 - g) * x`.

    The loop is exact (no log-space or cumulative-product trick: those overflow or lose precision on long texts)
    and uses `tf.scan` over time-major tensors, the fastest exact form measured on the project's CPU stack; it
    keeps the static batch and feature dimensions, works with an unknown (`None`) time dimension in functional
    models and SavedModels, is differentiable, and converts with tf2onnx to an ONNX `Loop`.

    Masking: where `mask` is False the step is skipped: `a_t = 1, b_t = 0` there, so the state is carried through
    unchanged (padding at the end leaves the last real state in place; padding in the middle or at the start
    leaves the state untouched as well). **The function does not zero the outputs at masked steps**: there
    `h_t` holds the carried state, so `h[:, -1]` is each row's final state however much padding follows (and
    `h[:, 0]` with `reverse=True`). Callers that return sequences zero those positions themselves
    (`keras_match.layers.masked_ops.zero_padded`), as `QRNN` and `CTRN` do.

    Precision: with half-precision coefficients (bfloat16, float16, e.g. under `mixed_bfloat16`) the state runs in
    float32 and the states are rounded to the dtype of `a` once, on the way out: a bfloat16 state would round at
    every step (relative 2^-8 of `|h|`, so with `a` near 1 most of a small `b_t` is lost) and drift over long texts.
    The coefficients themselves are taken as given: a forget gate within 2^-9 of 1 is already 1 in bfloat16 (the
    state never decays), so callers that need long memory compute `a` in float32 (and get float32 states back), as
    `CARNN` does.

    Callers that can make `a = 1` at padded steps themselves (e.g. `a = where(mask, f, 1)`, `b = (1 - a) * z`, as
    `QRNN` and `CTRN` do) can pass `mask=None` and save two full passes over `a` and `b`.

    Args:
        a: float tensor `[batch, time, dim]`, the decay (forget) coefficients `a_t`.
        b: float tensor `[batch, time, dim]` (same shape), the inputs `b_t`. Cast to the dtype the state runs in
            (that of `a`, float32 for a half-precision `a`).
        mask: optional bool tensor `[batch, time]`, True at real steps (ints and floats are cast; non-zero = real).
        initial_state: optional float tensor `[batch, dim]`, `h_0` (the state before the first step processed);
            zeros when None.
        reverse: bool, run from the last step to the first (`h_t = a_t * h_{t+1} + b_t`); outputs stay in the
            input's time order.
        time_major: bool. If True, `a`, `b` and the output are `[time, batch, dim]` and `mask` is `[time, batch]`
            (no transposes: the loop runs over the first axis); callers that compute their gates time-major
            avoid three full copies this way.

    Returns:
        Float tensor `[batch, time, dim]` (`[time, batch, dim]` with `time_major`) of the states `h_t`, dtype of
        `a` (computed in float32 for bfloat16 / float16, see Precision). A zero-length time dimension gives a
        zero-length output.

    Examples:

    ```python
    f = tf.sigmoid(tf.random.normal([2, 5, 3])); z = tf.tanh(tf.random.normal([2, 5, 3]))
    c = gated_linear_recurrence(f, (1.0 - f) * z)                      # QRNN f-pooling, [2, 5, 3]
    mask = tf.constant([[True] * 5, [True] * 3 + [False] * 2])
    c = gated_linear_recurrence(f, (1.0 - f) * z, mask=mask)           # row 1: c[1, 3:] == c[1, 2]
    ```

    Reference:
        - [Bradbury, Merity, Xiong, Socher. Quasi-Recurrent Neural Networks. ICLR 2017](
          https://arxiv.org/abs/1611.01576), section 2 (f-, fo- and ifo-pooling).
        - [Tay, Luu, Hui. Cross Temporal Recurrent Networks for Ranking Question Answer Pairs. AAAI 2018](
          https://arxiv.org/abs/1711.07656), the QRNN cell after eq. 1 and the CTRN-Q / CTRN-A cells.
    """
    a = tf.convert_to_tensor(a)
    dtype = a.dtype
    # The state's dtype: float32 for bfloat16 / float16 coefficients (no-op casts for float32 and float64).
    state_dtype = accumulation_dtype(dtype.name)
    a = tf.cast(a, state_dtype)
    b = tf.cast(tf.convert_to_tensor(b), state_dtype)
    if mask is not None:
        step = tf.expand_dims(tf.cast(mask, tf.bool), -1)
        a = tf.where(step, a, tf.ones_like(a))
        b = tf.where(step, b, tf.zeros_like(b))
    # Time-major for tf.scan: [time, batch, dim].
    a_tm = a if time_major else tf.transpose(a, [1, 0, 2])
    b_tm = b if time_major else tf.transpose(b, [1, 0, 2])
    if initial_state is None:
        # Zeros [batch, dim] that keep the static batch/dim (and work for a zero-length time dimension).
        initial_state = tf.reduce_sum(b_tm[:0], axis=0)
    else:
        initial_state = tf.cast(tf.convert_to_tensor(initial_state), state_dtype)
    if reverse:
        # A forward scan of the time-reversed steps, flipped back: tf.scan(reverse=True) gives the same in
        # TensorFlow, but tf2onnx 1.17 converts it with its outputs in reversed time order.
        a_tm, b_tm = tf.reverse(a_tm, [0]), tf.reverse(b_tm, [0])
    states = tf.scan(lambda h, step: step[0] * h + step[1], (a_tm, b_tm), initializer=initial_state)
    if reverse:
        states = tf.reverse(states, [0])
    states = tf.cast(states, dtype)  # one rounding per state, after the loop
    return states if time_major else tf.transpose(states, [1, 0, 2])


@keras.saving.register_keras_serializable(package="keras_match")
class GatedLinearRecurrence(keras.layers.Layer):
    """A weightless layer around `gated_linear_recurrence`: `h_t = a_t * h_{t-1} + b_t` over time.

    For functional models that compute the coefficients `a` and `b` with other layers (e.g. a sigmoid gate
    and a candidate). See `gated_linear_recurrence` for the loop, the masking rule and the references.

    Args:
        reverse: bool, run from the last step to the first (outputs stay in input order).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: a pair `[a, b]` of float tensors `[batch, time, dim]`.
        mask: optional mask `[batch, time]` or a pair of masks (the first non-None one is used, so a mask
            carried by `a` or `b` from an `Embedding(mask_zero=True)` is honoured).

    Precision: under a half-precision policy (`mixed_bfloat16`) the state runs in float32 and the output is in the
    compute dtype (see `gated_linear_recurrence`); the inputs `a`, `b` arrive rounded to the compute dtype.

    Output shape:
        `[batch, time, dim]`, the states `h_t` in the layer's compute dtype; **zero at masked steps** (unlike the function, which carries
        the state there), so the layer can feed mask-aware pooling directly. The mask is propagated.

    Raises:
        ValueError: at build if the inputs are not a pair of rank-3 shapes with the same last dimension.

    Examples:

    ```python
    a = keras.Input((None, 8)); b = keras.Input((None, 8))
    h = GatedLinearRecurrence()([a, b])                  # [batch, time, 8]
    ```
    """

    def __init__(self, reverse=False, **kwargs):
        super().__init__(**kwargs)
        self.reverse = bool(reverse)
        self.supports_masking = True

    def build(self, input_shape):
        if (
            not isinstance(input_shape, (list, tuple))
            or len(input_shape) != 2
            or any(len(s) != 3 for s in input_shape)
            or input_shape[0][-1] != input_shape[1][-1]
        ):
            raise ValueError(
                f"Layer {self.name} expects a pair [a, b] of rank-3 inputs [batch, time, dim] with the same dim. "
                f"Received input_shape={input_shape}"
            )

    @staticmethod
    def _single_mask(mask):
        if isinstance(mask, (list, tuple)):
            mask = next((m for m in mask if m is not None), None)
        return mask

    def call(self, inputs, mask=None):
        a, b = inputs
        mask = self._single_mask(mask)
        states = gated_linear_recurrence(a, b, mask=mask, reverse=self.reverse)
        return zero_padded(states, mask)

    def compute_mask(self, inputs, mask=None):
        return self._single_mask(mask)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update({"reverse": self.reverse})
        return config
