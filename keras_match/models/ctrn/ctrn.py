"""Cross Temporal Recurrent layer: QRNN cells with lightweight temporal crossing (Tay et al., AAAI 2018)."""

import keras
import tensorflow as tf

from keras_match.layers.checks import one_of
from keras_match.layers.gated_recurrence import gated_linear_recurrence
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import pass_pair_masks
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.models.ctrn.qrnn import QRNNConvolutionLayer
from keras_match.models.ctrn.qrnn import add_gate_weights
from keras_match.models.ctrn.qrnn import causal_windows
from keras_match.models.ctrn.qrnn import gate
from keras_match.models.ctrn.qrnn import gate_of_padding
from keras_match.models.ctrn.qrnn import time_major_real

ALIGNMENTS = ("index", "stretch")


def stretch_indices(own_length, own_true, partner_true):
    """The paper's aligned steps `t* = t * ceil(max(|q|, |a|) / min(|q|, |a|))`, clipped to the partner.

    Args:
        own_length: scalar int32, the number of steps `t = 0 ... own_length - 1` to align.
        own_true, partner_true: int32 `[batch]`, the true lengths `|own|`, `|partner|` (from the masks).

    Returns:
        int32 `[batch, own_length]`: `min(t * r_b, |partner|_b - 1)` (and `>= 0`), with
        `r_b = ceil(max / max(min, 1))` per example. Steps are 0-based, so the first steps of both texts align.
    """
    longest = tf.maximum(own_true, partner_true)
    shortest = tf.maximum(tf.minimum(own_true, partner_true), 1)
    ratio = (longest + shortest - 1) // shortest  # integer ceil
    steps = tf.range(own_length, dtype=tf.int32)
    aligned = steps[None, :] * ratio[:, None]
    return tf.clip_by_value(aligned, 0, tf.maximum(partner_true - 1, 0)[:, None])


@keras.saving.register_keras_serializable(package="keras_match")
class CTRN(QRNNConvolutionLayer):
    """Cross Temporal Recurrent layer: each text is composed with its own gates and with its partner's.

    Implements the CTRN-Q and CTRN-A cells of Tay et al. (2018), section "Cross Temporal Recurrent Networks".
    One set of QRNN convolutions (eq. 1) is shared by both texts (the paper's `3kdm` parameters "with shared
    parameters for q and a", Table 2), giving `Z, F, O` per text. Then, per text, two fo-pooling cells run:

        c_t^(q)  = f_t^q  * c_{t-1}^(q)  + (1 - f_t^q)  * z_t^q        h_t^(q)  = o_t^q  * c_t^(q)
        c_t^(q+) = f_t*^a * c_{t-1}^(q+) + (1 - f_t*^a) * z_t^q        h_t^(q+) = o_t*^a * c_t^(q+)
        c_t^(a)  = f_t^a  * c_{t-1}^(a)  + (1 - f_t^a)  * z_t^a        h_t^(a)  = o_t^a  * c_t^(a)
        c_t^(a+) = f_t*^q * c_{t-1}^(a+) + (1 - f_t*^q) * z_t^a        h_t^(a+) = o_t*^q * c_t^(a+)

    (`+` stands for the paper's dagger) and the layer returns, per time step, `h_t^(q) * h_t^(q+)` for the
    question and `h_t^(a) * h_t^(a+)` for the answer (the lightweight temporal crossing, LTC). Each text's two
    cells are one call of `keras_match.layers.gated_linear_recurrence` (stacked along the batch axis).

    Computed like `QRNN` (time-major, one matmul per gate over the causal windows), each text's gates over its
    own length only (plus at most k - 1 steps for index alignment), so the extra cost over a siamese QRNN is the
    crossed cells' recurrence, measured by `benchmarks/recurrence_speed.py` (training-step time of QRNN, CTRN and an
    LSTM at d = 512, batch 256 and TrecQA lengths; its result file is `benchmarks/results/recurrence_speed.json`).

    Readings chosen where the flattened equations are ambiguous:

    - CTRN-A's crossed cell prints `z_{t*}^a`; CTRN-Q's prints `z_t^q`, and the text says the cells are
      "functionally symmetrical" and that the partner's gates are applied to the own representation, so both
      use the own `z_t` (only the partner's `f`, `o` are taken at `t*`).
    - The final Hadamard products print `h_t^(a) = h_t^(q) * h_t^(q+)`; the left side is read as the
      question's output `h_t^q`.
    - `t*` (below) counts steps from 0, so the first steps of both texts always align.

    The aligned step `t*` (`alignment`):

    - `"index"`: `t* = t`. Both texts are padded (with zero inputs) to one length `max(lq, la)` before the
      shared convolution, so a step beyond the partner's end reads the partner's gates for zero (padding)
      input; the partner's gate sequence is then cut to the own length. This is the paper's "simple index-wise
      alignment", and it never depends on how much padding a batch has.
    - `"stretch"`: the paper's formula `t* = t * ceil(max(|q|, |a|) / min(|q|, |a|))`, with `|q|`, `|a|` the
      true lengths of each example (from the masks), clipped to the partner's last real step
      `|partner| - 1`. So the shorter text reads every r-th gate of the longer one; the longer text reads
      the shorter one's gates at `t * r` and, past its end, its last real gate.

    Default: `"index"`, what the paper's own words describe ("a simple index-wise alignment"), which needs no
    gathers. Both readings are measured with the `ctrn` preset on raw TrecQA TRAIN (at most 25 epochs, chosen on
    raw dev, 3 seeds): rows 0 and 4 of `benchmarks/ablations/ctrn_trecqa_raw.json`, their result files in
    `benchmarks/results/ctrn_trecqa_raw/` and their table `python benchmarks/tables.py ctrn-trecqa`.

    The layer adds no weights over `QRNN`: same fused kernel `[k, m, 3 * units]` (Z, F, O) and bias.

    Args:
        units: int, number of filters d (the output size), as in `QRNN`.
        kernel_size: int, filter width k of the shared convolutions, as in `QRNN`. Defaults to 2.
        alignment: `"index"` (default) or `"stretch"`, how the partner's step `t*` is chosen (above).

    The other arguments (`use_bias`, the kernel's and the bias's initializers and regularizers, the standard
    `keras.layers.Layer` ones) are `QRNN`'s, with the same defaults: both layers take them from their base class
    `keras_match.models.ctrn.qrnn.QRNNConvolutionLayer`.

    Call arguments:
        inputs: a pair `[q, a]` of float tensors `[batch, lq, m]` and `[batch, la, m]` (`lq`, `la` may differ
            and be unknown).
        mask: optional pair `[q_mask, a_mask]` (`[batch, lq]`, `[batch, la]`, True = real token; either may be
            None = all real). Masks carried by the inputs (`Embedding(mask_zero=True)`) are used implicitly.

    Output shape:
        A tuple `(hq, ha)`: `[batch, lq, units]` and `[batch, la, units]`, zero at padded positions, in the
        layer's compute dtype. The masks are propagated. Extra padding after either text never changes the real
        outputs.

    Precision:
        As `QRNN`: under `mixed_bfloat16` only the convolution matmuls run in bfloat16; the gates' activations
        (own, partner's and padding gates alike), both cells' recurrences and the crossed product are float32,
        cast to bfloat16 once at the end, since a bfloat16 forget gate above `1 - 2^-9` is exactly 1 (a frozen
        cell) and a bfloat16 state takes a rounding (up to 2^-8 relative) per step.

    Raises:
        ValueError: at construction if `units` / `kernel_size` is not a positive integer or `alignment` is
            unknown; at build if the inputs are not two rank-3 tensors with the same, defined last dimension.

    Examples:

    ```python
    q = np.random.rand(2, 5, 50).astype("float32"); a = np.random.rand(2, 9, 50).astype("float32")
    hq, ha = CTRN(64)([q, a])                     # [2, 5, 64], [2, 9, 64]

    embed = keras.layers.Embedding(10000, 300, mask_zero=True)
    hq, ha = CTRN(512, alignment="stretch")([embed(question_ids), embed(answer_ids)])  # masks implicit
    ```

    Reference:
        - [Tay, Luu, Hui. Cross Temporal Recurrent Networks for Ranking Question Answer Pairs. AAAI 2018](
          https://arxiv.org/abs/1711.07656): eq. 1, the CTRN-Q / CTRN-A cells, "Complexity Analysis", Table 2.
    """

    def __init__(
        self,
        units,
        kernel_size=2,
        alignment="index",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(units, kernel_size, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer, **kwargs)
        one_of("alignment", alignment, ALIGNMENTS)
        self.alignment = alignment

    def build(self, input_shape):
        q_shape, _ = check_pair_shape(input_shape, self.name)
        add_gate_weights(self, q_shape[-1])

    def call(self, inputs, mask=None):
        q, a = inputs
        q_mask, a_mask = split_pair_masks(mask)
        batch, len_q, len_a = tf.shape(q)[0], tf.shape(q)[1], tf.shape(a)[1]
        if q_mask is None:
            q_mask = tf.ones(tf.stack([batch, len_q]), tf.bool)
        if a_mask is None:
            a_mask = tf.ones(tf.stack([batch, len_a]), tf.bool)
        k = self.kernel_size

        # Steps of each text's gates to compute: its own length, and with index alignment up to k - 1 more
        # (zero-input steps that still see its last words) when the partner is longer; every later step of a
        # text padded further has all-padding windows, i.e. the constant gates `gate_of_padding`.
        if self.alignment == "index":
            steps_q = tf.minimum(tf.maximum(len_q, len_a), len_q + k - 1)
            steps_a = tf.minimum(tf.maximum(len_a, len_q), len_a + k - 1)
        else:
            steps_q, steps_a = len_q, len_a
        windows_q = causal_windows(q, q_mask, k, steps_q)
        windows_a = causal_windows(a, a_mask, k, steps_a)
        gates_q = [gate(windows_q, self.kernel, self.bias, i, steps_q) for i in range(3)]  # Z, F, O (eq. 1)
        gates_a = [gate(windows_a, self.kernel, self.bias, i, steps_a) for i in range(3)]

        # The partner's F and O at the aligned steps t* of each own step t.
        if self.alignment == "index":
            padding = [gate_of_padding(self.kernel, self.bias, i) for i in (1, 2)]
            f_for_q, o_for_q = (self._fit(g, len_q, p) for g, p in zip(gates_a[1:], padding))
            f_for_a, o_for_a = (self._fit(g, len_a, p) for g, p in zip(gates_q[1:], padding))
        else:
            true_q = tf.reduce_sum(tf.cast(q_mask, tf.int32), axis=1)
            true_a = tf.reduce_sum(tf.cast(a_mask, tf.int32), axis=1)
            steps_read_by_q = stretch_indices(len_q, true_q, true_a)
            steps_read_by_a = stretch_indices(len_a, true_a, true_q)
            f_for_q, o_for_q = (self._gather(g, steps_read_by_q) for g in gates_a[1:])
            f_for_a, o_for_a = (self._gather(g, steps_read_by_a) for g in gates_q[1:])

        own_q = [self._head(g, len_q) for g in gates_q]
        own_a = [self._head(g, len_a) for g in gates_a]
        out_q = self._cross(own_q, f_for_q, o_for_q, time_major_real(q_mask))
        out_a = self._cross(own_a, f_for_a, o_for_a, time_major_real(a_mask))
        return out_q, out_a

    # tf.split rather than slicing below: its gradient is a concat, a slice's gradient a zero-filled full copy.
    def _head(self, values, length):
        """The first `length` steps of time-major `values` `[s, batch, units]` (`s >= length`)."""
        if self.alignment != "index":
            return values  # computed for exactly the own length
        head, _ = tf.split(values, tf.stack([length, tf.shape(values)[0] - length]), axis=0)
        return head

    def _fit(self, values, length, padding):
        """Time-major gates `[s, batch, units]` cut or continued with the padding gate to `length` steps."""
        shape = tf.shape(values)
        extra = tf.maximum(length - shape[0], 0)
        continued = tf.concat(
            [values, tf.broadcast_to(padding, tf.stack([extra, shape[1], self.units]))], axis=0
        )
        head, _ = tf.split(continued, tf.stack([length, shape[0] + extra - length]), axis=0)
        return head

    def _gather(self, values, steps):
        """`values` `[s, batch, units]` read at `steps` `[batch, t]` per example -> `[t, batch, units]`."""
        batch = tf.shape(values)[1]
        rows = tf.transpose(steps) * batch + tf.range(batch)[None, :]
        return tf.gather(tf.reshape(values, [-1, self.units]), rows)

    def _cross(self, own_gates, f_partner, o_partner, real):
        """One text's two cells (own gates, partner gates) as one recurrence; returns `h * h-dagger`.

        Inputs are time-major `[time, batch, units]`, `real` bool `[time, batch, 1]`; the two cells are stacked
        along the batch axis (`[time, 2 * batch, units]`) and run as one `gated_linear_recurrence`.
        """
        z, f, o = own_gates
        forget = tf.concat([f, f_partner], axis=1)
        # Padded steps: a = 1 and b = (1 - a) z = 0, so both states are carried through (mask folded in).
        forget = tf.where(tf.concat([real, real], axis=1), forget, 1.0)
        candidate = (1.0 - forget) * tf.concat([z, z], axis=1)
        cells = gated_linear_recurrence(forget, candidate, time_major=True)
        own, crossed = tf.split(cells, 2, axis=1)
        hidden = (o * own) * (o_partner * crossed)
        hidden = tf.where(real, hidden, 0.0)
        # The gates are float32 under bfloat16 (`qrnn.gate`); a no-op in float32.
        return tf.cast(tf.transpose(hidden, [1, 0, 2]), self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        return pass_pair_masks(mask)

    def compute_output_shape(self, input_shape):
        q_shape, a_shape = input_shape
        return super().compute_output_shape(q_shape), super().compute_output_shape(a_shape)  # as QRNN's, per text

    def get_config(self):
        config = super().get_config()
        config.update({"alignment": self.alignment})
        return config
