"""Slow NumPy references of the shared layers (highway, pooling, co-attention, intra-attention, gated linear
recurrence), written from the papers' equations.

Explicit Python loops over batch and positions, float64, no code shared with keras_match. Weights come from
the layers' own `get_weights()`. Conventions for padded positions (the paper has none): padded words are
skipped; a max / mean over no real word is 0; a weighted sum with no real word is the zero vector; outputs at
padded positions are 0.
"""

import numpy as np

ACTIVATIONS = {
    "relu": lambda v: np.maximum(v, 0.0),
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "tanh": np.tanh,
    "linear": lambda v: v,
}


def dense(vector, kernel, bias, activation="linear"):
    """activation(vector . kernel + bias) for one vector."""
    out = np.array([np.dot(vector, kernel[:, u]) + bias[u] for u in range(kernel.shape[1])])
    return ACTIVATIONS[activation](out)


def softmax(values):
    values = np.asarray(values, dtype=np.float64)
    e = np.exp(values - values.max())
    return e / e.sum()


def real_positions(mask_row):
    return [t for t in range(len(mask_row)) if mask_row[t]]


# eq. 1 -------------------------------------------------------------------------------------------------------
def highway(x, weights, activation="relu"):
    """x [..., d]; weights = [W_H, b_H, W_T, b_T] (+ [W_C, b_C] for the carry projection)."""
    x = np.asarray(x, np.float64)
    w_h, b_h, w_t, b_t = weights[:4]
    out = np.zeros(x.shape[:-1] + (w_h.shape[1],))
    for index in np.ndindex(*x.shape[:-1]):
        v = x[index]
        h = dense(v, w_h, b_h, activation)
        t = dense(v, w_t, b_t, "sigmoid")
        carry = dense(v, weights[4], weights[5], activation) if len(weights) == 6 else v
        out[index] = h * t + (1.0 - t) * carry
    return out


# eq. 14 ------------------------------------------------------------------------------------------------------
def mean_max(x, mask):
    batch, _, dim = x.shape
    out = np.zeros((batch, 2 * dim))
    for b in range(batch):
        real = real_positions(mask[b])
        if not real:
            continue
        for k in range(dim):
            column = [float(x[b, t, k]) for t in real]
            out[b, k] = sum(column) / len(column)
            out[b, dim + k] = max(column)
    return out


# eq. 2-5 -----------------------------------------------------------------------------------------------------
def co_attention(q, d, q_mask, d_mask, kernel, bias, activation="relu", pooled_casts="broadcast", scaled=False):
    """Returns the same dict as CoAttention: affinity, max, mean, alignment (per word, 0 at padding).

    pooled_casts="weighted": the max / mean casts are each word times its softmax weight (not the sum);
    scaled: the affinity divided by sqrt(units)."""
    batch, len_q, dim = q.shape
    len_d = d.shape[1]
    out = {
        "affinity": np.zeros((batch, len_q, len_d)),
        "max": (np.zeros((batch, len_q, dim)), np.zeros((batch, len_d, dim))),
        "mean": (np.zeros((batch, len_q, dim)), np.zeros((batch, len_d, dim))),
        "alignment": (np.zeros((batch, len_q, dim)), np.zeros((batch, len_d, dim))),
    }
    for b in range(batch):
        real_q, real_d = real_positions(q_mask[b]), real_positions(d_mask[b])
        fq = {i: dense(q[b, i], kernel, bias, activation) for i in real_q}
        fd = {j: dense(d[b, j], kernel, bias, activation) for j in real_d}
        scale = np.sqrt(len(bias)) if scaled else 1.0
        s = {(i, j): float(np.dot(fq[i], fd[j])) / scale for i in real_q for j in real_d}  # eq. 2
        for (i, j), value in s.items():
            out["affinity"][b, i, j] = value
        for name, reduce in (("max", max), ("mean", lambda vals: sum(vals) / len(vals))):
            # eq. 3 / 4: score each q word against all real d words (and vice versa), softmax over own words.
            q_scores = [reduce([s[i, j] for j in real_d]) if real_d else 0.0 for i in real_q]
            d_scores = [reduce([s[i, j] for i in real_q]) if real_q else 0.0 for j in real_d]
            q_weights = softmax(q_scores) if real_q else []
            d_weights = softmax(d_scores) if real_d else []
            if pooled_casts == "weighted":  # each word times its own weight
                for w, i in zip(q_weights, real_q):
                    out[name][0][b, i] = w * q[b, i]
                for w, j in zip(d_weights, real_d):
                    out[name][1][b, j] = w * d[b, j]
                continue
            q_vec = sum((w * q[b, i] for w, i in zip(q_weights, real_q)), np.zeros(dim)) if real_q else 0
            d_vec = sum((w * d[b, j] for w, j in zip(d_weights, real_d)), np.zeros(dim)) if real_d else 0
            for i in real_q:
                out[name][0][b, i] = q_vec
            for j in real_d:
                out[name][1][b, j] = d_vec
        # eq. 5: each word's aligned vector is a softmax-weighted sum of the partner's real words.
        if real_d:
            for i in real_q:
                weights = softmax([s[i, j] for j in real_d])
                out["alignment"][0][b, i] = sum(w * d[b, j] for w, j in zip(weights, real_d))
        if real_q:
            for j in real_d:
                weights = softmax([s[i, j] for i in real_q])
                out["alignment"][1][b, j] = sum(w * q[b, i] for w, i in zip(weights, real_q))
    return out


# eq. 6 -------------------------------------------------------------------------------------------------------
def intra_attention(x, mask, kernel, bias, activation="relu", scaled=False):
    batch, length, dim = x.shape
    scale = np.sqrt(len(bias)) if scaled else 1.0
    out = np.zeros((batch, length, dim))
    for b in range(batch):
        real = real_positions(mask[b])
        fx = {i: dense(x[b, i], kernel, bias, activation) for i in real}
        for i in real:
            weights = softmax([np.dot(fx[i], fx[j]) / scale for j in real])
            out[b, i] = sum(w * x[b, j] for w, j in zip(weights, real))
    return out


def linear_recurrence(a, b, mask=None, initial_state=None, reverse=False):
    """h_t = a_t h_{t-1} + b_t per row, skipping masked steps (the state is carried there, and reported)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    batch, time, dim = a.shape
    out = np.zeros((batch, time, dim))
    for r in range(batch):
        h = np.zeros(dim) if initial_state is None else np.array(initial_state[r], np.float64)
        steps = range(time - 1, -1, -1) if reverse else range(time)
        for t in steps:
            if mask is None or mask[r][t]:
                h = a[r, t] * h + b[r, t]
            out[r, t] = h
    return out
