"""The grid of Coupled-LSTMs (Liu et al., EMNLP 2016): the loosely and tightly coupled cells (eq. 5-8, 9-11), the
LSTM update they share, and the wavefront that runs a cell over an `n x m` grid in `n + m - 1` steps. The layer
that owns the weights and directions is `keras_match.models.coupled_lstm.CoupledLSTM2D`."""

import keras
import tensorflow as tf



def paper_uniform():
    """The paper's initializer (section 6.1): "uniform distribution in [-0.1, 0.1]"."""
    return keras.initializers.RandomUniform(minval=-0.1, maxval=0.1)


def _initializer(value):
    return paper_uniform() if value is None else keras.initializers.get(value)


# ---------------------------------------------------------------------------------------------------------------
# The cells. Tensors are `[directions, cells, features]`; `cells` runs over the examples and, within each, over
# the rows i of the current anti-diagonal's window (cell `(i, s - i)`). Kernels are `[directions, in, out]`
# (one weight set per direction, applied with a batched matmul). Gate columns follow the paper's order.
# ---------------------------------------------------------------------------------------------------------------


def lstm_update(z, c_prev):
    """Eq. 1-3 from the pre-activations `z = T_{A,b}[x; h]` (columns `c~, o, i, f`, eq. 1's order)."""
    candidate, output, inp, forget = tf.split(z, 4, axis=-1)
    c = tf.tanh(candidate) * tf.sigmoid(inp) + c_prev * tf.sigmoid(forget)  # eq. 2
    h = tf.sigmoid(output) * tf.tanh(c)  # eq. 3
    return h, c


def loose_cell(inputs, h_left, c_left, h_up, c_up, recurrent_kernels):
    """One anti-diagonal of LC-LSTMs (eq. 5-8).

    Args:
        inputs: pair `(z1, z2)`, `[D, cells, 4u]`: the input parts of `T_{A,b}` of LSTM^1 (from `x_i`) and
            LSTM^2 (from `y_j`), biases included.
        h_left, c_left: `[D, cells, 2u]`, the states `[h^(1); h^(2)]`, `[c^(1); c^(2)]` at `(i, j - 1)`.
        h_up, c_up: the same at `(i - 1, j)`.
        recurrent_kernels: pair of `[D, 2u, 4u]`, the rows of LSTM^1's and LSTM^2's `T_{A,b}` that read `H`.

    Returns:
        `(h, c)`, `[D, cells, 2u]` each: `[h^(1)_{i,j}; h^(2)_{i,j}]` and `[c^(1)_{i,j}; c^(2)_{i,j}]`.
    """
    units = h_left.shape[-1] // 2
    # Eq. 5 and 7: LSTM^1 reads H^(1)_{i-1} = [h^(1)_{i-1,j}, h^(2)_{i-1,j}] (= h_up) and its memory c^(1)_{i-1,j}.
    h1, c1 = lstm_update(inputs[0] + tf.matmul(h_up, recurrent_kernels[0]), c_up[..., :units])
    # Eq. 6 and 8: LSTM^2 reads H^(2)_{j-1} = [h^(1)_{i,j-1}, h^(2)_{i,j-1}] (= h_left) and c^(2)_{i,j-1}.
    h2, c2 = lstm_update(inputs[1] + tf.matmul(h_left, recurrent_kernels[1]), c_left[..., units:])
    return tf.concat([h1, h2], axis=-1), tf.concat([c1, c2], axis=-1)


def tight_cell(inputs, h_left, c_left, h_up, c_up, recurrent_kernel):
    """One anti-diagonal of TC-LSTMs (eq. 9-11).

    Args:
        inputs: `[D, cells, 5u]`, the part of eq. 9's `T_{A,b}` that reads `x_i, y_j` (bias included).
        h_left, c_left: `[D, cells, u]`, `h_{i,j-1}` and `c_{i,j-1}`.
        h_up, c_up: `[D, cells, u]`, `h_{i-1,j}` and `c_{i-1,j}`.
        recurrent_kernel: `[D, 2u, 5u]`, the rows of `T_{A,b}` that read `[h_{i,j-1}; h_{i-1,j}]` (eq. 9's order).

    Returns:
        `(h, c)`, `[D, cells, u]` each.
    """
    z = inputs + tf.matmul(tf.concat([h_left, h_up], axis=-1), recurrent_kernel)  # eq. 9
    candidate, output, inp, forget_left, forget_up = tf.split(z, 5, axis=-1)
    # Eq. 10: [c_{i,j-1}, c_{i-1,j}]^T [f^1; f^2] = c_{i,j-1} * f^1 + c_{i-1,j} * f^2 (element-wise).
    c = tf.tanh(candidate) * tf.sigmoid(inp) + c_left * tf.sigmoid(forget_left) + c_up * tf.sigmoid(forget_up)
    h = tf.sigmoid(output) * tf.tanh(c)  # eq. 11 (its `o_t` read as o_{i,j})
    return h, c


def wavefront(cell, inputs_at, n, m, batch, directions, state_size, dtype):
    """Run `cell` over the `n x m` grid anti-diagonal by anti-diagonal: `n + m - 1` steps of one `tf.while_loop`.

    Step `s` computes the cells `(i, s - i)` of the diagonal, rows `i = lo ... hi - 1` with
    `lo = max(0, s - m + 1)`, `hi = min(s + 1, n)`, for every example and direction at once. The state of a
    diagonal (`[directions, batch, n + 1, state]`) is indexed by the row (row i at index i + 1), so cell `(i, j)`
    finds `(i, j - 1)` in the previous diagonal's row i and `(i - 1, j)` in its row i - 1; rows outside the
    diagonal's window hold zeros, which gives the zero boundary states `h_{i,-1} = c_{i,-1} = 0`, and the extra
    zero row at index 0 gives `h_{-1,j} = c_{-1,j} = 0`. Only the window's cells are computed (no work on cells
    outside the grid). All loop variables keep their shapes (the states and a TensorArray of per-diagonal
    outputs), so the loop traces with unknown batch, n and m and converts to an ONNX `Loop` (windows are read
    with `tf.gather` over `tf.range(lo, hi)`; a negative-step `tf.range` inside the loop is mistranslated by
    tf2onnx 1.17, so none is used).

    Args:
        cell: `cell(inputs, h_left, c_left, h_up, c_up) -> (h, c)` on `[directions, cells, ...]` tensors
            (`cells = batch * (hi - lo)`, example-major).
        inputs_at: `inputs_at(s, lo, hi)` -> the cell inputs of the window of diagonal s, `[directions, cells, ...]`.
        n, m, batch: scalar int32 tensors (or ints).
        directions: int, the leading dimension of the states.
        state_size: int, the last dimension of `h` and `c`.
        dtype: the states' dtype.

    Returns:
        `[directions, batch, n, m, state_size]`: `h_{i,j}` of every cell.
    """
    steps = tf.maximum(n + m - 1, 0)  # 0 for an empty batch (n = m = 0)
    state_shape = tf.TensorShape([directions, None, None, state_size])
    # The states hold n + 1 rows: row 0 stands for row -1 (always zero), row r + 1 for row r.
    zeros = tf.zeros(tf.stack([directions, batch, n + 1, state_size]), dtype)

    def body(s, h, c, outputs):
        lo = tf.maximum(s - m + 1, 0)
        hi = tf.minimum(s + 1, n)
        rows = tf.range(lo, hi)

        def left_and_up(state):  # rows lo ... hi - 1 and lo - 1 ... hi - 2 of the previous diagonal
            left, up = tf.gather(state, rows + 1, axis=2), tf.gather(state, rows, axis=2)
            return tf.reshape(left, [directions, -1, state_size]), tf.reshape(up, [directions, -1, state_size])

        h_left, h_up = left_and_up(h)
        c_left, c_up = left_and_up(c)
        h_new, c_new = cell(inputs_at(s, lo, hi), h_left, c_left, h_up, c_up)
        window = tf.stack([directions, batch, hi - lo, state_size])
        around = [[0, 0], [0, 0], [lo + 1, n - hi], [0, 0]]  # zeros outside the window, and in row -1
        h_new = tf.pad(tf.reshape(h_new, window), around)
        c_new = tf.pad(tf.reshape(c_new, window), around)
        return s + 1, h_new, c_new, outputs.write(s, h_new)

    outputs = tf.TensorArray(dtype, size=steps, element_shape=state_shape)
    _, _, _, outputs = tf.while_loop(
        lambda s, *_: s < steps,
        body,
        (tf.constant(0), zeros, zeros, outputs),
        shape_invariants=(tf.TensorShape([]), state_shape, state_shape, tf.TensorShape(None)),
        maximum_iterations=steps,
    )
    # [steps, D, batch, n + 1, U] -> the grid: h_{i,j} of example b is diagonal i + j, row i (stored at i + 1).
    stacked = tf.reshape(outputs.stack(), tf.stack([steps, directions, batch, n + 1, state_size]))  # steps may be 0
    diagonals = tf.reshape(tf.transpose(stacked, [1, 0, 2, 3, 4]), tf.stack([directions, -1, state_size]))
    i = tf.range(n)[None, :, None]
    j = tf.range(m)[None, None, :]
    b = tf.range(batch)[:, None, None]
    index = ((i + j) * batch + b) * (n + 1) + i + 1  # [batch, n, m]
    return tf.gather(diagonals, index, axis=1)


def reverse_within(values, lengths, axis):
    """Reverse `values` along `axis` (1 or 2; axis 0 is the batch) within each example's `lengths`.

    Positions at or past an example's length stay where they are (`tf.reverse_sequence`; for axis 2 the
    tensor is transposed so the reversed axis is 1, the layout tf2onnx converts to ONNX `ReverseSequence`).
    """
    if axis == 1:
        return tf.reverse_sequence(values, lengths, seq_axis=1, batch_axis=0)
    perm = [0, 2, 1] + list(range(3, values.shape.rank))
    swapped = tf.transpose(values, perm)
    return tf.transpose(tf.reverse_sequence(swapped, lengths, seq_axis=1, batch_axis=0), perm)
