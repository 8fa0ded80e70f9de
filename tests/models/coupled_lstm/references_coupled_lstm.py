"""Slow NumPy references of Liu et al. (EMNLP 2016): coupled-LSTMs cell by cell, and dynamic pooling.

Written from the paper's equations, independently of the layers' wavefront and flips: each direction walks its
own grid in its own order (section 4.2.1: direction 1 reads h_{i-1,j} and h_{i,j-1}, 2 reads h_{i-1,j} and
h_{i,j+1}, 3 reads h_{i+1,j} and h_{i,j+1}, 4 reads h_{i+1,j} and h_{i,j-1}) over each example's true lengths.

Conventions (the layer's documented readings): states outside the grid are zero; the output at padded cells is
zero; LC's output is [h^(1); h^(2)]; a grid input feeds TC whole and LC split in two halves (LSTM^1, LSTM^2).
Weights are a dict named as the layer's weights, each with a leading direction axis.
"""

import numpy as np

# (row step, column step) of each direction: cell (i, j) reads rows i - di and columns j - dj.
DIRECTION_STEPS = ((1, 1), (1, -1), (-1, -1), (-1, 1))


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm(x_and_h, c_prev, kernel, recurrent_kernel, bias):
    """Eq. 1-3: [c~, o, i, f] = [tanh, s, s, s] T_{A,b}[x; h]; c = c~ i + c_prev f; h = o tanh(c)."""
    x, h = x_and_h
    z = x @ kernel + h @ recurrent_kernel + bias
    u = len(bias) // 4
    cand, o, i, f = np.tanh(z[:u]), sigmoid(z[u:2 * u]), sigmoid(z[2 * u:3 * u]), sigmoid(z[3 * u:])
    c = cand * i + c_prev * f
    return o * np.tanh(c), c


def tight(xy, h_left, c_left, h_up, c_up, kernel, recurrent_kernel, bias):
    """Eq. 9-11 at one cell: xy = [x_i; y_j] (or g_{i,j})."""
    z = xy @ kernel + np.concatenate([h_left, h_up]) @ recurrent_kernel + bias
    u = len(bias) // 5
    cand, o, i, f1, f2 = (z[k * u:(k + 1) * u] for k in range(5))
    c = np.tanh(cand) * sigmoid(i) + c_left * sigmoid(f1) + c_up * sigmoid(f2)
    return sigmoid(o) * np.tanh(c), c


def _one_direction(cell_input, n, m, weights, coupling, d, di, dj):
    """The grid [n, m, out] of direction d of one example (true lengths n, m)."""
    w = {k: np.asarray(v[d], np.float64) for k, v in weights.items()}
    u = w["recurrent_kernel" if coupling == "tight" else "lstm1_recurrent_kernel"].shape[0] // 2
    size = u if coupling == "tight" else 2 * u
    h = np.zeros((n, m, size))
    c = np.zeros((n, m, size))

    def state(i, j):
        if 0 <= i < n and 0 <= j < m:
            return h[i, j], c[i, j]
        return np.zeros(size), np.zeros(size)

    rows = range(n) if di == 1 else range(n - 1, -1, -1)
    columns = range(m) if dj == 1 else range(m - 1, -1, -1)
    for i in rows:
        for j in columns:
            h_up, c_up = state(i - di, j)  # "h_{i-1,j}" of direction 1
            h_left, c_left = state(i, j - dj)  # "h_{i,j-1}" of direction 1
            if coupling == "tight":
                h[i, j], c[i, j] = tight(cell_input(i, j), h_left, c_left, h_up, c_up,
                                         w["kernel"], w["recurrent_kernel"], w["bias"])
            else:
                in1, in2 = cell_input(i, j)
                # Eq. 5, 7: LSTM^1 reads [h^(1); h^(2)] at (i-1, j) and c^(1)_{i-1,j}.
                h1, c1 = lstm((in1, h_up), c_up[:u], w["lstm1_kernel"], w["lstm1_recurrent_kernel"],
                              w["lstm1_bias"])
                # Eq. 6, 8: LSTM^2 reads [h^(1); h^(2)] at (i, j-1) and c^(2)_{i,j-1}.
                h2, c2 = lstm((in2, h_left), c_left[u:], w["lstm2_kernel"], w["lstm2_recurrent_kernel"],
                              w["lstm2_bias"])
                h[i, j], c[i, j] = np.concatenate([h1, h2]), np.concatenate([c1, c2])
    return h


def _coupled(cell_inputs, lengths, shape, weights, coupling, directions):
    batch, n, m = shape
    out_size = None
    results = []
    for b in range(batch):
        nb, mb = lengths[b]
        total = 0.0
        for d in range(directions):
            di, dj = DIRECTION_STEPS[d]
            total = total + _one_direction(cell_inputs(b), nb, mb, weights, coupling, d, di, dj)  # eq. 13
        results.append((nb, mb, total))
        if nb and mb:
            out_size = total.shape[-1]
    if out_size is None:
        u = weights["recurrent_kernel" if coupling == "tight" else "lstm1_recurrent_kernel"].shape[1] // 2
        out_size = u if coupling == "tight" else 2 * u
    out = np.zeros((batch, n, m, out_size))
    for b, (nb, mb, total) in enumerate(results):
        if nb and mb:
            out[b, :nb, :mb] = total
    return out


def coupled_lstm(x, y, x_mask, y_mask, weights, coupling, directions):
    """Sequences x [batch, n, dx], y [batch, m, dy] with prefix masks -> the summed grid [batch, n, m, out]."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    lengths = [(int(a.sum()), int(b.sum())) for a, b in zip(x_mask, y_mask)]

    def cell_inputs(b):
        if coupling == "tight":
            return lambda i, j: np.concatenate([x[b, i], y[b, j]])  # eq. 9: [x_i; y_j]
        return lambda i, j: (x[b, i], y[b, j])  # eq. 5: x_i to LSTM^1, eq. 6: y_j to LSTM^2

    return _coupled(cell_inputs, lengths, (x.shape[0], x.shape[1], y.shape[1]), weights, coupling, directions)


def coupled_lstm_grid(g, grid_mask, weights, coupling, directions):
    """A grid g [batch, n, m, d'] with its rectangle mask -> the summed grid [batch, n, m, out]."""
    g = np.asarray(g, np.float64)
    lengths = [(int(k.any(axis=1).sum()), int(k.any(axis=0).sum())) for k in grid_mask]
    half = g.shape[-1] // 2

    def cell_inputs(b):
        if coupling == "tight":
            return lambda i, j: g[b, i, j]
        return lambda i, j: (g[b, i, j, :half], g[b, i, j, half:])

    return _coupled(cell_inputs, lengths, g.shape[:3], weights, coupling, directions)


def region(r, length, parts):
    """Positions of region r of `length` positions cut into `parts` (the layer's documented rule)."""
    start = (r * length) // parts
    end = max(((r + 1) * length) // parts, start + 1)
    return [k for k in range(start, end) if k < length]


def dynamic_pooling(grid, grid_mask, p, q):
    """grid [batch, n, m, ch], rectangle mask -> [batch, p, q, ch]: max per region, 0 for an empty example."""
    batch, _, _, channels = grid.shape
    out = np.zeros((batch, p, q, channels))
    for b in range(batch):
        nb, mb = int(grid_mask[b].any(axis=1).sum()), int(grid_mask[b].any(axis=0).sum())
        for r in range(p):
            for s in range(q):
                cells = [grid[b, i, j] for i in region(r, nb, p) for j in region(s, mb, q)]
                if cells:
                    out[b, r, s] = np.max(cells, axis=0)
    return out
