"""Slow NumPy references of the MCAN equations (Tay et al., KDD 2018), written from the paper.

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


# eq. 10-12 ---------------------------------------------------------------------------------------------------
def sum_compression(v):
    return float(sum(v))


def dense_compression(v, kernel, bias):
    return max(0.0, float(sum(v[i] * kernel[i, 0] for i in range(len(v))) + bias[0]))


def fm_compression(v, w0, w, factors):
    """eq. 12 with the explicit double sum over pairs i < j."""
    n = len(v)
    total = w0[0] + sum(w[i, 0] * v[i] for i in range(n))
    for i in range(n):
        for j in range(i + 1, n):
            total += np.dot(factors[i], factors[j]) * v[i] * v[j]
    return float(total)


def compression_fn(kind, weights):
    """A vector -> scalar function for a compression layer's kind ("sm" / "nn" / "fm") and get_weights()."""
    if kind == "sm":
        return sum_compression
    if kind == "nn":
        return lambda v: dense_compression(v, *weights)
    return lambda v: fm_compression(v, *weights)


def apply_compression(fn, x):
    """Apply a vector -> scalar function at every position of x [..., n] -> [..., 1]."""
    out = np.zeros(x.shape[:-1] + (1,))
    for index in np.ndindex(*x.shape[:-1]):
        out[index + (0,)] = fn(np.asarray(x[index], np.float64))
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


# eq. 7-9, section 2.3.3 --------------------------------------------------------------------------------------
def multi_cast(q, d, q_mask, d_mask, co_weights, intra_weights, compressions, activation="relu",
               pooled_casts="broadcast", scaled=False):
    """compressions: 12 vector -> scalar functions in the order [align, max, mean, intra] x [c, m, s].

    co_weights: (kernel, bias) of the one co-attention F, or a dict {"alignment": ..., "max": ..., "mean": ...}
    of one F per cast (every cast then has its own affinity matrix)."""
    per_cast = co_weights if isinstance(co_weights, dict) else dict.fromkeys(("alignment", "max", "mean"), co_weights)
    co = {cast: co_attention(q, d, q_mask, d_mask, *weights, activation=activation, pooled_casts=pooled_casts,
                             scaled=scaled)[cast] for cast, weights in per_cast.items()}
    q_intra = intra_attention(q, q_mask, *intra_weights, activation, scaled=scaled)
    d_intra = intra_attention(d, d_mask, *intra_weights, activation, scaled=scaled)
    bars_q = [co["alignment"][0], co["max"][0], co["mean"][0], q_intra]
    bars_d = [co["alignment"][1], co["max"][1], co["mean"][1], d_intra]

    def side(x, mask, bars):
        batch, length, _ = x.shape
        z = np.zeros((batch, length, 12))
        for b in range(batch):
            for i in real_positions(mask[b]):
                v = np.asarray(x[b, i], np.float64)
                for cast, bar in enumerate(bars):
                    v_bar = bar[b, i]
                    z[b, i, 3 * cast + 0] = compressions[3 * cast + 0](np.concatenate([v_bar, v]))  # eq. 7
                    z[b, i, 3 * cast + 1] = compressions[3 * cast + 1](v_bar * v)  # eq. 8
                    z[b, i, 3 * cast + 2] = compressions[3 * cast + 2](v_bar - v)  # eq. 9
        return z

    return side(q, q_mask, bars_q), side(d, d_mask, bars_d)


# =============================================================================================================
# CTRN (Tay, Luu, Hui, AAAI 2018): QRNN eq. 1 with fo-pooling, and the CTRN-Q / CTRN-A cells.
# Conventions: inputs at padded positions (and before the first step) count as zero vectors; the recurrences
# skip padded steps; outputs at padded positions are 0; steps t, t* are 0-based.
# =============================================================================================================
def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def causal_conv_gates(x, mask, kernel, bias, length=None):
    """Z, F, O (eq. 1) of one text: x [time, m], mask [time]; kernel [k, m, 3d] (Z, F, O), bias [3d] or None.

    Step t reads the inputs t - k + 1 ... t (zero outside the text or where masked). `length` (>= time) extends
    the gate sequence past the array with zero inputs, as if the text were padded further.
    """
    x = np.asarray(x, np.float64)
    k, _, three_d = kernel.shape
    d = three_d // 3
    length = len(x) if length is None else length
    z, f, o = np.zeros((length, d)), np.zeros((length, d)), np.zeros((length, d))
    for t in range(length):
        total = np.zeros(three_d) if bias is None else np.array(bias, np.float64)
        for i in range(k):
            s = t - (k - 1) + i
            if 0 <= s < len(x) and mask[s]:
                total = total + x[s] @ kernel[i]
        z[t], f[t], o[t] = np.tanh(total[:d]), sigmoid(total[d : 2 * d]), sigmoid(total[2 * d :])
    return z, f, o


def fo_pool(z, f, o, mask):
    """c_t = f_t c_{t-1} + (1 - f_t) z_t, h_t = o_t c_t over the real steps of `mask`; 0 at padded steps."""
    c = np.zeros(z.shape[1])
    h = np.zeros(z.shape)
    for t in range(len(mask)):
        if not mask[t]:
            continue
        c = f[t] * c + (1.0 - f[t]) * z[t]
        h[t] = o[t] * c
    return h


def qrnn(x, mask, kernel, bias):
    """x [batch, time, m], mask [batch, time] -> h [batch, time, d]."""
    out = np.zeros(x.shape[:2] + (kernel.shape[2] // 3,))
    for b in range(len(x)):
        z, f, o = causal_conv_gates(x[b], mask[b], kernel, bias)
        out[b] = fo_pool(z, f, o, mask[b])
    return out


def ctrn(q, a, q_mask, a_mask, kernel, bias, alignment):
    """The CTRN-Q and CTRN-A outputs h^(q) * h^(q-dagger) and h^(a) * h^(a-dagger), per example.

    alignment "index": t* = t; the partner's gates past its end are those of zero inputs (both texts padded to
    one length). "stretch": t* = min(t * ceil(max(|q|, |a|) / min(|q|, |a|)), |partner| - 1).
    """
    d = kernel.shape[2] // 3
    out_q, out_a = np.zeros(q.shape[:2] + (d,)), np.zeros(a.shape[:2] + (d,))
    for b in range(len(q)):
        len_q, len_a = int(np.sum(q_mask[b])), int(np.sum(a_mask[b]))
        common = max(q.shape[1], a.shape[1])
        gates_q = causal_conv_gates(q[b], q_mask[b], kernel, bias, length=common)
        gates_a = causal_conv_gates(a[b], a_mask[b], kernel, bias, length=common)
        ratio = -(-max(len_q, len_a) // max(min(len_q, len_a), 1))

        def crossed(own_gates, own_mask, partner_gates, partner_length):
            z, f, o = own_gates
            _, f_p, o_p = partner_gates
            steps = range(len(own_mask))
            if alignment == "index":
                star = list(steps)
            else:
                star = [min(t * ratio, max(partner_length - 1, 0)) for t in steps]
            plain = fo_pool(z, f, o, own_mask)
            dagger = fo_pool(z, f_p[star], o_p[star], own_mask)
            return plain * dagger

        out_q[b] = crossed(gates_q, q_mask[b], gates_a, len_a)[: q.shape[1]]
        out_a[b] = crossed(gates_a, a_mask[b], gates_q, len_q)[: a.shape[1]]
    return out_q, out_a


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
