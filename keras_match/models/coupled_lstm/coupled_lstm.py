"""Coupled-LSTMs over the interaction grid of a sentence pair (Liu et al., EMNLP 2016, sections 3 and 4.2).

`CoupledLSTM2D` is one "basic block" of the paper (section 4.2): the loosely (LC-LSTMs, eq. 5-8) or tightly
(TC-LSTMs, eq. 9-11) coupled LSTMs run over the `n x m` grid from one corner or from all four (section 4.2.1),
summed by the aggregation layer (eq. 13).

The grid is computed as a wavefront: every cell `(i, j)` depends on `(i - 1, j)` and `(i, j - 1)` only, so all
cells of an anti-diagonal `i + j = s` are computed at once, in `n + m - 1` sequential steps of one
`tf.while_loop` (`wavefront`), the four directions side by side in the same loop.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import is_shape_pair
from keras_match.layers.weight_settings import set_weight_settings
from keras_match.layers.weight_settings import weight_setting
from keras_match.layers.weight_settings import weight_settings_config
from keras_match.models.coupled_lstm.grid import (  # noqa: F401  (the cells and the wavefront, read here by name)
    _initializer,
    loose_cell,
    lstm_update,
    paper_uniform,
    reverse_within,
    tight_cell,
    wavefront,
)

COUPLINGS = ("loose", "tight")
DIRECTIONS = (1, 4)

DIRECTION_FLIPS = ((False, False), (False, True), (True, True), (True, False))
"""(reverse the rows i, reverse the columns j) of the four directions of section 4.2.1, in the paper's order.

Direction 1 reads `h_{i-1,j}, h_{i,j-1}`; 2 reads `h_{i-1,j}, h_{i,j+1}`; 3 reads `h_{i+1,j}, h_{i,j+1}`; 4 reads
`h_{i+1,j}, h_{i,j-1}`. A direction is direction 1 run on the inputs reversed along the reversed axes (within
each example's true length), its grid reversed back the same way.
"""


@keras.saving.register_keras_serializable(package="keras_match")
class CoupledLSTM2D(keras.layers.Layer):
    """Coupled-LSTMs over the `n x m` interaction grid of two sentences, from one or four corners.

    One basic block of Liu et al. (2016), section 4.2: the C-LSTMs of eq. 12 computed over the grid from each of
    `directions` corners (section 4.2.1), each direction with its own weights, and the directions summed by the
    aggregation layer (eq. 13): `h^_{i,j} = sum_d h^d_{i,j}`. Stack blocks by feeding one block's grid to the
    next (section 4.2.3).

    Couplings (`h` and `c` outside the grid, e.g. `h_{0,j}` before the first row, are zero vectors):

    - `"tight"`, TC-LSTMs (eq. 9-11): one cell per grid position with two forget gates,

          [c~, o, i, f^1, f^2]_{i,j} = [tanh, s, s, s, s] T_{A,b}[x_i; y_j; h_{i,j-1}; h_{i-1,j}]      (eq. 9)
          c_{i,j} = c~_{i,j} * i_{i,j} + c_{i,j-1} * f^1_{i,j} + c_{i-1,j} * f^2_{i,j}                 (eq. 10)
          h_{i,j} = o_{i,j} * tanh(c_{i,j})                                                            (eq. 11)

      The output at `(i, j)` is `h_{i,j}` (`units` channels).
    - `"loose"`, LC-LSTMs (eq. 5-8): two standard LSTMs (eq. 1-4) with separate weights and memory cells;
      LSTM^1 moves along the rows of X, LSTM^2 along the columns of Y, and each reads both hidden states of its
      predecessor,

          h^(1)_{i,j} = LSTM^1([h^(1)_{i-1,j}; h^(2)_{i-1,j}], c^(1)_{i-1,j}, x_i)                      (eq. 5, 7)
          h^(2)_{i,j} = LSTM^2([h^(1)_{i,j-1}; h^(2)_{i,j-1}], c^(2)_{i,j-1}, y_j)                      (eq. 6, 8)

      The output at `(i, j)` is the concatenation `[h^(1)_{i,j}; h^(2)_{i,j}]` (`2 * units` channels).

    Readings chosen where the paper is ambiguous:

    - LC output: "The hidden states of LC-LSTMs are the combination of the hidden states of two interdependent
      LSTMs" (section 3.2), and eq. 7-8 combine them by concatenation, so the LC grid is `[h^(1); h^(2)]`
      (summed over directions, eq. 13, it is `[sum_d h^(1),d; sum_d h^(2),d]`). Table 2's 45K parameters for
      LC-LSTMs (d = 50, 100-d inputs) fit a 100-d pooled vector, i.e. the concatenation, not a sum.
    - Grid input (stacked blocks): "In TC-LSTMs, each hidden state h_{i,j} at higher layer receives a fusion of
      information x_i and y_j, flowed from lower layer. However, in LC-LSTMs, the information x_i and y_j are
      accepted by two corresponding LSTMs at the higher layer separately" (section 3.3). So a TC block reads
      the lower grid's vector `g_{i,j}` in place of `[x_i; y_j]`, and an LC block splits `g_{i,j}` in two
      halves: the first (the lower block's `h^(1)`) is LSTM^1's input, the second (`h^(2)`) LSTM^2's. A grid
      with an odd number of channels cannot feed an LC block; to give both LSTMs the same grid, concatenate it
      with itself. Table 2's increments per stacked block agree with this reading: TC 77.5K -> 190K over three
      more blocks, ~37.5K each = (50 + 2 x 50) x 250 weights + 250 biases, i.e. a 50-d `g_{i,j}`.
    - Eq. 10 prints `[c_{i,j-1}, c_{i-1,j}]^T [f^1; f^2]`: read element-wise, `f^1` gating `c_{i,j-1}` and `f^2`
      gating `c_{i-1,j}` (the order of eq. 9's inputs); eq. 11 prints `o_t`, read as `o_{i,j}`.
    - Weights: eq. 5-6 name LSTM^1 and LSTM^2, and section 4.2 speaks of "four directional coupled-LSTMs",
      so by default each LSTM and each direction has its own weights here (`share_directions` and
      `share_streams` tie them). (Table 2 lists the same parameter count for
      one direction and four, and its LC count fits LSTM^1 and LSTM^2 sharing weights; the paper does not
      say either.)
    - Initialization: "The other parameters are initialized by randomly sampling from uniform distribution in
      [-0.1, 0.1]" (section 6.1): the default of all three initializers, biases included.

    Computation: a wavefront over the anti-diagonals `i + j = s` (`wavefront`): `n + m - 1` sequential steps of
    one `tf.while_loop`, each step computing every cell of its diagonal for every example and direction (the
    directions are stacked, and use their own weights through one batched matmul per step); the `n * m` cells
    of the padded grid are each computed once. The input parts of the gates are projected before the loop
    (sequence inputs) or per diagonal (grid inputs). The other directions are direction 1 run on inputs
    reversed within each example's true length (`tf.reverse_sequence`), their grids reversed back the same
    way. The per-diagonal outputs are kept as `(n + m - 1) x (n + 1)` rows per example and direction before
    they are laid out as the grid, so that memory is smaller with the shorter text first. The layer traces with
    unknown batch, `n` and `m` (SavedModel) and converts to ONNX with tf2onnx (a `Loop`).

    Precision: under `mixed_bfloat16` the input projections run in bfloat16, but the recurrence (recurrent matmuls,
    gates, the `h` and `c` states of the wavefront, the direction sum) runs in float32 (`state_dtype`) and only
    the output grid is rounded to bfloat16: a cell state rounded to bfloat16's 8-bit mantissa at every cell would
    drift over the `n + m - 1` diagonals (TC's `c` adds two gated predecessors). Float32 layers are unchanged.

    Args:
        units: int, the number of LSTM units d of each LSTM (the paper's "hidden layer size", 50).
        coupling: `"loose"` (LC-LSTMs) or `"tight"` (TC-LSTMs). Defaults to `"loose"`, the paper's best on its
            ranking task (three stacked LC-LSTMs, Table 4; TC-LSTMs were best on SNLI, Table 2).
        directions: 4 (the four directions of section 4.2.1, summed, eq. 13) or 1 (the paper's "single
            direction" rows of Tables 2 and 4: direction 1 only). Defaults to 4.
        kernel_initializer: initializer of the input kernels. Defaults to uniform in [-0.1, 0.1] (section 6.1).
        recurrent_initializer: initializer of the recurrent kernels. Same default.
        bias_initializer: initializer of the biases. Same default.
        kernel_regularizer: optional regularizer of the input kernels (the paper's L2).
        recurrent_regularizer: optional regularizer of the recurrent kernels (the paper's L2).
        bias_regularizer: optional regularizer of the biases (the paper's L2).
        share_directions: bool, one weight set for all directions (built with a leading axis of 1 and broadcast
            over the directions in the wavefront). Table 2's parameter counts fit only shared directions.
        share_streams: bool, loose coupling only: LSTM^1 and LSTM^2 share one weight set (the `lstm1_*`
            weights; no `lstm2_*` is built), which needs `dx == dy` for a pair input. Table 2's LC counts
            (45K with one block, 135K with four) fit only shared streams and shared directions.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: either a pair `[x, y]` of float tensors `[batch, n, dx]` and `[batch, m, dy]` (the embedded
            sentences, a first block), or one float grid `[batch, n, m, d']` (the output of a lower block). `n`,
            `m` and the batch may be unknown; `dx`, `dy`, `d'` must be known.
        mask: for a pair, optional `[x_mask, y_mask]` (`[batch, n]`, `[batch, m]`, True = real token, either may
            be None = all real); for a grid, an optional `[batch, n, m]` mask. Masks carried by the inputs
            (`Embedding(mask_zero=True)`, a lower block) are used implicitly.

    Output shape:
        `[batch, n, m, units]` (tight) or `[batch, n, m, 2 * units]` (loose), in the compute dtype: the sum over
        directions of `h_{i,j}` (eq. 13), summed in `state_dtype` before it is cast.

    Masking:
        Masks must mark a prefix (right padding): the true lengths are the numbers of real tokens (of rows and
        columns holding a real cell, for a grid mask, which must be the outer product of two such masks).
        Inputs at padded positions are ignored (zeroed): extra padding never changes the real cells, and the
        output is 0 at padded cells (`i >= len_x` or `j >= len_y`). Directions 2-4 start at the last real word,
        not at the padded end. The output mask is the grid mask `x_mask[:, :, None] & y_mask[:, None, :]` (or
        the grid input's mask), so a stacked block or `DynamicPooling2D` receives it; None without masks.

    Weights (one slice per direction along the first axis, `D = directions`):
        tight: `kernel [D, dx + dy, 5u]` (rows: x then y; a grid input: `[D, d', 5u]`),
        `recurrent_kernel [D, 2u, 5u]` (rows: `h_{i,j-1}` then `h_{i-1,j}`), `bias [D, 5u]`; gate columns
        `c~, o, i, f^1, f^2` (eq. 9). loose: `lstm1_kernel [D, dx, 4u]`, `lstm1_recurrent_kernel [D, 2u, 4u]`
        (rows: `h^(1)` then `h^(2)`), `lstm1_bias [D, 4u]` and the same for `lstm2` with `dy` (a grid: `d' / 2`
        each); gate columns `c~, o, i, f` (eq. 1).

    Raises:
        ValueError: at construction if `units` is not a positive integer, `coupling` is not `"loose"` or
            `"tight"`, or `directions` is not 1 or 4; at build if the input is neither a pair of rank-3 tensors
            nor one rank-4 tensor, if a feature dimension is undefined, or if an LC block gets a grid with an
            odd number of channels.

    Examples:

    ```python
    x = np.random.rand(2, 5, 100).astype("float32"); y = np.random.rand(2, 7, 100).astype("float32")
    CoupledLSTM2D(50, coupling="tight")([x, y])                # [2, 5, 7, 50]
    CoupledLSTM2D(50, coupling="loose", directions=1)([x, y])  # [2, 5, 7, 100]

    # Three stacked LC blocks and the paper's pooling (Table 1, MQA), masks implicit:
    embed = keras.layers.Embedding(20000, 100, mask_zero=True)
    grid = CoupledLSTM2D(50)([embed(question_ids), embed(answer_ids)])   # [batch, n, m, 100]
    grid = CoupledLSTM2D(50)(grid)       # LSTM^1 reads channels 0-49 (h^(1)), LSTM^2 channels 50-99 (h^(2))
    grid = CoupledLSTM2D(50)(grid)
    pooled = DynamicPooling2D(2, 1)(grid)                      # [batch, 2, 1, 100]
    ```

    Reference:
        - [Liu, Qiu, Zhou, Chen, Huang. Modelling Interaction of Sentence Pair with Coupled-LSTMs. EMNLP 2016](
          https://arxiv.org/abs/1605.05573): eq. 1-4 (LSTM), 5-8 (LC-LSTMs), 9-11 (TC-LSTMs), 12, section
          4.2.1 (four directions), eq. 13 (aggregation), section 6.1 (initialization).
    """

    def __init__(
        self,
        units,
        coupling="loose",
        directions=4,
        kernel_initializer=None, recurrent_initializer=None, bias_initializer=None,
        kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
        share_directions=False,
        share_streams=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        positive_int("units", units)
        one_of("coupling", coupling, COUPLINGS)
        if isinstance(directions, bool):
            raise ValueError(f"`directions` must be one of {DIRECTIONS}. Received: directions={directions!r}")
        one_of("directions", directions, DIRECTIONS)
        self.units = units
        self.coupling = coupling
        self.directions = int(directions)
        for flag, value in (("share_directions", share_directions), ("share_streams", share_streams)):
            if not isinstance(value, bool):
                raise ValueError(f"`{flag}` must be true or false. Received: {flag}={value!r}")
        if share_streams and coupling != "loose":
            raise ValueError("`share_streams` ties LSTM^1 and LSTM^2 of loose coupling; a tight block has one cell. "
                             f"Received: coupling={coupling!r}, share_streams=True")
        self.share_directions = share_directions
        self.share_streams = share_streams
        set_weight_settings(  # an initializer left None is the paper's uniform in [-0.1, 0.1] (`_initializer`)
            self,
            (kernel_initializer, recurrent_initializer, bias_initializer),
            (kernel_regularizer, recurrent_regularizer, bias_regularizer),
            get_initializer=_initializer,
        )
        self.supports_masking = True
        self._grid_input = None

    @property
    def output_units(self):
        """The number of output channels: `units` (tight) or `2 * units` (loose, `[h^(1); h^(2)]`)."""
        return self.units if self.coupling == "tight" else 2 * self.units

    # ----------------------------------------------------------------------------------------------- build

    def _input_dims(self, input_shape):
        """`(grid_input, dims)`: dims `(dx, dy)` of a pair or `(d',)` of a grid; ValueError otherwise."""
        is_pair = is_shape_pair(input_shape)
        if is_pair and all(len(s) == 3 for s in input_shape):
            dims = tuple(s[-1] for s in input_shape)
            grid = False
        elif not is_pair and isinstance(input_shape, (list, tuple)) and len(input_shape) == 4:
            dims = (input_shape[-1],)
            grid = True
        else:
            raise ValueError(
                f"Layer {self.name} expects a pair of sequences [x, y] of rank 3 ([batch, n, dx], [batch, m, dy]) "
                f"or one grid of rank 4 ([batch, n, m, d']). Received input_shape={input_shape}"
            )
        if any(d is None for d in dims):
            raise ValueError(f"Layer {self.name} needs defined feature dimensions. Received input_shape={input_shape}")
        if not grid and self.share_streams and dims[0] != dims[1]:
            raise ValueError(
                f"Layer {self.name} (share_streams=True) gives LSTM^1 (reading x) and LSTM^2 (reading y) one weight "
                f"set, so x and y need the same feature dimension. Received input_shape={input_shape}"
            )
        if grid and self.coupling == "loose" and dims[0] % 2:
            raise ValueError(
                f"Layer {self.name} (loose coupling) splits a grid input's channels between its two LSTMs, so it "
                f"needs an even number of channels. Received input_shape={input_shape}"
            )
        return grid, dims

    def _add(self, name, shape, kind):
        initializer, regularizer = weight_setting(self, kind)
        # The recurrent kernels are read in the recurrence's dtype (`_weight`): not autocast to bfloat16 under
        # `mixed_bfloat16` (their float32 values reach the float32 recurrence unrounded; no effect in float32).
        return self.add_weight(name=name, shape=shape, initializer=initializer, regularizer=regularizer,
                               autocast=kind != "recurrent")

    def build(self, input_shape):
        grid, dims = self._input_dims(input_shape)
        self._grid_input = grid
        # One weight set broadcast over the direction axis when the directions share it (`_weight`).
        d, u = (1 if self.share_directions else self.directions), self.units
        if self.coupling == "tight":
            self.kernel = self._add("kernel", (d, sum(dims), 5 * u), "kernel")
            self.recurrent_kernel = self._add("recurrent_kernel", (d, 2 * u, 5 * u), "recurrent")
            self.bias = self._add("bias", (d, 5 * u), "bias")
        else:
            stream_dims = (dims[0] // 2,) * 2 if grid else dims
            streams = ("lstm1",) if self.share_streams else ("lstm1", "lstm2")
            for stream, dim in zip(streams, stream_dims):
                setattr(self, f"{stream}_kernel", self._add(f"{stream}_kernel", (d, dim, 4 * u), "kernel"))
                setattr(self, f"{stream}_recurrent_kernel",
                        self._add(f"{stream}_recurrent_kernel", (d, 2 * u, 4 * u), "recurrent"))
                setattr(self, f"{stream}_bias", self._add(f"{stream}_bias", (d, 4 * u), "bias"))

    @property
    def state_dtype(self):
        """The dtype of the recurrence (cells, states, direction sum): float32 for a bfloat16 / float16 compute
        dtype (`mixed_bfloat16`), else the compute dtype itself (`keras_match.layers.masked_ops.accumulation_dtype`)."""
        return accumulation_dtype(self.compute_dtype)

    def _weight(self, name, dtype=None):
        """The weight `name` as the cells use it, `[directions, ...]`, in `dtype` (default the compute dtype): with
        `share_streams` LSTM^2's weights are LSTM^1's; with `share_directions` the one slice is broadcast over the
        directions (its gradient is the sum of the directions' gradients)."""
        if self.share_streams:
            name = name.replace("lstm2", "lstm1")
        value = tf.cast(getattr(self, name), dtype or self.compute_dtype)
        if self.share_directions and self.directions > 1:
            value = tf.broadcast_to(value, [self.directions] + list(value.shape[1:]))
        return value

    # ------------------------------------------------------------------------------------------------ call

    def call(self, inputs, mask=None):
        if self._grid_input:
            grid = tf.convert_to_tensor(inputs)
            grid = tf.cast(grid, self.compute_dtype)
            shape = tf.shape(grid)
            batch, n, m = shape[0], shape[1], shape[2]
            grid_mask = None if mask is None else tf.cast(mask, tf.bool)
            if grid_mask is None:
                len_x, len_y = tf.fill([batch], n), tf.fill([batch], m)
            else:
                len_x = tf.reduce_sum(tf.cast(tf.reduce_any(grid_mask, axis=2), tf.int32), axis=1)
                len_y = tf.reduce_sum(tf.cast(tf.reduce_any(grid_mask, axis=1), tf.int32), axis=1)
                grid = tf.where(grid_mask[..., None], grid, tf.zeros_like(grid))
            inputs_at = self._grid_inputs(grid, len_x, len_y, batch, n, m)
        else:
            x, y = (tf.cast(tf.convert_to_tensor(t), self.compute_dtype) for t in inputs)
            x_mask, y_mask = (None, None) if mask is None else (
                None if k is None else tf.cast(k, tf.bool) for k in mask)
            batch, n, m = tf.shape(x)[0], tf.shape(x)[1], tf.shape(y)[1]
            len_x = tf.fill([batch], n) if x_mask is None else tf.reduce_sum(tf.cast(x_mask, tf.int32), axis=1)
            len_y = tf.fill([batch], m) if y_mask is None else tf.reduce_sum(tf.cast(y_mask, tf.int32), axis=1)
            if x_mask is not None:
                x = tf.where(x_mask[..., None], x, tf.zeros_like(x))
            if y_mask is not None:
                y = tf.where(y_mask[..., None], y, tf.zeros_like(y))
            grid_mask = None
            if x_mask is not None or y_mask is not None:
                grid_mask = tf.logical_and(
                    (tf.range(n)[None, :] < len_x[:, None])[:, :, None],
                    (tf.range(m)[None, :] < len_y[:, None])[:, None, :],
                )
            inputs_at = self._sequence_inputs(x, y, len_x, len_y, batch, n, m)

        # The recurrence runs in `state_dtype` (float32 under mixed_bfloat16): the input parts of the gates are
        # projected in the compute dtype and cast up; every cast is a no-op when the two dtypes are one.
        state_dtype = self.state_dtype
        if self.coupling == "tight":
            recurrent = self._weight("recurrent_kernel", state_dtype)

            def cell(inputs, h_left, c_left, h_up, c_up):
                inputs = tf.cast(inputs, state_dtype)
                return tight_cell(inputs, h_left, c_left, h_up, c_up, recurrent)
        else:
            recurrent = (self._weight("lstm1_recurrent_kernel", state_dtype),
                         self._weight("lstm2_recurrent_kernel", state_dtype))

            def cell(inputs, h_left, c_left, h_up, c_up):
                inputs = (tf.cast(inputs[0], state_dtype), tf.cast(inputs[1], state_dtype))
                return loose_cell(inputs, h_left, c_left, h_up, c_up, recurrent)

        grids = self._grid_states(cell, inputs_at, n, m, batch)
        total = None
        for direction in range(self.directions):
            flip_rows, flip_columns = DIRECTION_FLIPS[direction]
            h = grids[direction]
            if flip_rows:
                h = reverse_within(h, len_x, axis=1)
            if flip_columns:
                h = reverse_within(h, len_y, axis=2)
            total = h if total is None else total + h  # eq. 13
        if grid_mask is not None:
            total = tf.where(grid_mask[..., None], total, tf.zeros_like(total))
        return tf.cast(total, self.compute_dtype)

    def _grid_states(self, cell, inputs_at, n, m, batch):
        """`[directions, batch, n, m, units]`, the states of every cell (in `state_dtype`): the wavefront
        (`wavefront`). The one place the schedule is chosen (`benchmarks/coupled_lstm_speed.py` times a
        cell-by-cell schedule in its place)."""
        return wavefront(cell, inputs_at, n, m, batch, self.directions, self.output_units, self.state_dtype)

    def _directional(self, values, len_x, len_y, rows_axis, columns_axis):
        """`[D, batch, ...]`: `values` as each direction reads it (reversed along its reversed axes)."""
        copies = []
        for flip_rows, flip_columns in DIRECTION_FLIPS[: self.directions]:
            v = values
            if flip_rows and rows_axis is not None:
                v = reverse_within(v, len_x, rows_axis)
            if flip_columns and columns_axis is not None:
                v = reverse_within(v, len_y, columns_axis)
            copies.append(v)
        return tf.stack(copies)

    def _sequence_inputs(self, x, y, len_x, len_y, batch, n, m):
        """`inputs_at` of a first block: the input parts of the gates, `x` and `y` projected before the loop.

        On diagonal s the window's rows `i = lo ... hi - 1` read `x_i` (rows `lo ... hi - 1` of the projected x)
        and `y_{s-i}` (columns `s - lo` down to `s - hi + 1` of the projected y). The projections are kept
        time-major and read with `tf.gather` along their first axis: its gradient (IndexedSlices) keeps the
        per-step cost of the backward loop proportional to the window (a strided slice made the training step
        ~35% slower, its gradient being a full-size dense tensor per step), and it converts to ONNX `Gather`
        (TensorArray gathers do not convert with tf2onnx).
        """
        d = self.directions
        xs = self._directional(x, len_x, len_y, 1, None)  # [D, batch, n, dx]
        ys = self._directional(y, len_x, len_y, None, 1)  # [D, batch, m, dy]

        def project(values, kernel, bias=None):  # [D, batch, t, k] @ [D, k, C] -> time-major [t, D, batch, C]
            out = tf.matmul(tf.reshape(values, [d, -1, values.shape[-1]]), kernel)
            if bias is not None:
                out += bias[:, None, :]
            out = tf.reshape(out, tf.stack([d, batch, tf.shape(values)[2], kernel.shape[-1]]))
            return tf.transpose(out, [2, 0, 1, 3])

        def window(rows_part, columns_part, s, lo, hi):  # -> two [D, batch, hi - lo, C]
            rows = tf.transpose(tf.gather(rows_part, tf.range(lo, hi)), [1, 2, 0, 3])
            # s - range, not range(s - lo, s - hi, -1): tf2onnx mistranslates a negative-step Range inside a loop.
            columns = tf.transpose(tf.gather(columns_part, s - tf.range(lo, hi)), [1, 2, 0, 3])
            return rows, columns

        def flat(values):
            return tf.reshape(values, [d, -1, values.shape[-1]])

        if self.coupling == "tight":
            dx = x.shape[-1]
            kernel = self._weight("kernel")
            row_part = project(xs, kernel[:, :dx], self._weight("bias"))  # eq. 9: the x_i and bias terms
            column_part = project(ys, kernel[:, dx:])  # eq. 9: the y_j term

            def inputs_at(s, lo, hi):
                rows, columns = window(row_part, column_part, s, lo, hi)
                return flat(rows + columns)
        else:
            row_part = project(xs, self._weight("lstm1_kernel"), self._weight("lstm1_bias"))  # eq. 5: LSTM^1, x_i
            column_part = project(ys, self._weight("lstm2_kernel"), self._weight("lstm2_bias"))  # eq. 6: LSTM^2, y_j

            def inputs_at(s, lo, hi):
                rows, columns = window(row_part, column_part, s, lo, hi)
                return flat(rows), flat(columns)

        return inputs_at

    def _grid_inputs(self, grid, len_x, len_y, batch, n, m):
        """`inputs_at` of a stacked block: the window's cells `(i, s - i)` gathered per step, then projected.

        The grid is kept cell-major (`[n * m, D, batch, d']`, cell `(i, j)` at `i * m + j`) and read with
        `tf.gather`, like the projections of `_sequence_inputs` (a gradient proportional to the window, ONNX
        `Gather`).
        """
        d, channels = self.directions, grid.shape[-1]
        grids = self._directional(grid, len_x, len_y, 1, 2)  # [D, batch, n, m, d']
        cells = tf.reshape(tf.transpose(grids, [2, 3, 0, 1, 4]), tf.stack([-1, d, batch, channels]))

        def window(s, lo, hi):  # -> [D, batch * (hi - lo), d']
            rows = tf.range(lo, hi)
            diagonal = tf.gather(cells, rows * m + (s - rows))  # [hi - lo, D, batch, d']
            return tf.reshape(tf.transpose(diagonal, [1, 2, 0, 3]), [d, -1, channels])

        if self.coupling == "tight":
            kernel, bias = self._weight("kernel"), self._weight("bias")[:, None, :]

            def inputs_at(s, lo, hi):
                return tf.matmul(window(s, lo, hi), kernel) + bias  # eq. 9, g_{i,j} in place of [x_i; y_j]
        else:
            half = channels // 2
            kernel1, bias1 = self._weight("lstm1_kernel"), self._weight("lstm1_bias")[:, None, :]
            kernel2, bias2 = self._weight("lstm2_kernel"), self._weight("lstm2_bias")[:, None, :]

            def inputs_at(s, lo, hi):
                g = window(s, lo, hi)
                # Section 3.3: LSTM^1 reads the first half of g_{i,j} (the lower h^(1)), LSTM^2 the second.
                return (
                    tf.matmul(g[..., :half], kernel1) + bias1,
                    tf.matmul(g[..., half:], kernel2) + bias2,
                )

        return inputs_at

    # --------------------------------------------------------------------------------------- shapes, config

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if self._grid_input:
            return mask
        x_mask, y_mask = mask
        if x_mask is None and y_mask is None:
            return None
        # keras.ops: in a functional model the masks are symbolic (KerasTensors).
        x, y = inputs
        x_mask = ops.ones_like(x[..., 0], dtype="bool") if x_mask is None else ops.cast(x_mask, "bool")
        y_mask = ops.ones_like(y[..., 0], dtype="bool") if y_mask is None else ops.cast(y_mask, "bool")
        return ops.logical_and(ops.expand_dims(x_mask, 2), ops.expand_dims(y_mask, 1))

    def compute_output_shape(self, input_shape):
        grid, _ = self._input_dims(input_shape)
        if grid:
            return tuple(input_shape[:-1]) + (self.output_units,)
        x_shape, y_shape = input_shape
        return (x_shape[0], x_shape[1], y_shape[1], self.output_units)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "coupling": self.coupling,
                "directions": self.directions,
                "share_directions": self.share_directions,
                "share_streams": self.share_streams,
                **weight_settings_config(self),
            }
        )
        return config
