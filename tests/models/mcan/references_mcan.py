"""Slow NumPy references of MCAN's own equations (Tay et al., KDD 2018): compression (eq. 10-12) and the
multi-cast features (eq. 7-9), written from the paper; same conventions as tests/references.py."""

import numpy as np

from references import co_attention
from references import intra_attention
from references import real_positions



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
