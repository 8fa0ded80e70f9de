"""Slow NumPy references of the CARNN paper (Tran et al., NAACL 2018): the nCARNN, iCARNN and sCARNN units
(eq. 3, 5, 6), their unrolled form (eq. 4, 7), and the Position Encoder (Sukhbaatar et al. 2015, section 4.1).

Written from the equations, one example and one step at a time, in float64. Conventions: padded steps are
skipped (the state is carried), outputs at padded positions are 0, h_0 = 0; positions j and coordinates k of
the Position Encoder are 1-based.

The weights come as a dict keyed like the `CARNNCell` attributes, update-gate columns first in fused kernels:
`input_kernel [d, 2u]` (W_eu | W_ef), `context_kernel [dc, 2u]` (W_cu | W_cf), `recurrent_kernel [u, 2u]`
(W_hu | W_hf, "n" only), `gate_bias [2u]` (b_u | b_f), `projection_kernel [d, u]`, `projection_bias [u]`
(W_e_bar, b_e_bar; not "s").
"""

import numpy as np


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _split(weights):
    """The named matrices of eq. 3 / 5 / 6 from the fused kernels."""
    u = len(weights["gate_bias"]) // 2
    w = {key: None if value is None else np.asarray(value, np.float64) for key, value in weights.items()}
    named = {
        "W_eu": w["input_kernel"][:, :u], "W_ef": w["input_kernel"][:, u:],
        "W_cu": w["context_kernel"][:, :u], "W_cf": w["context_kernel"][:, u:],
        "b_u": w["gate_bias"][:u], "b_f": w["gate_bias"][u:],
    }
    if w.get("recurrent_kernel") is not None:
        named["W_hu"], named["W_hf"] = w["recurrent_kernel"][:, :u], w["recurrent_kernel"][:, u:]
    if w.get("projection_kernel") is not None:
        named["W_p"], named["b_p"] = w["projection_kernel"], w["projection_bias"]
    return u, named


def carnn_step(e, c, h, W, variant):
    """One step: h_m from e_m [d], c [dc], h_{m-1} [u]."""
    pre_u = c @ W["W_cu"] + e @ W["W_eu"] + W["b_u"]
    pre_f = c @ W["W_cf"] + e @ W["W_ef"] + W["b_f"]
    if variant == "n":  # eq. 3: the gates also read h_{m-1}
        pre_u = pre_u + h @ W["W_hu"]
        pre_f = pre_f + h @ W["W_hf"]
    g_u, g_f = sigmoid(pre_u), sigmoid(pre_f)
    e_bar = e if variant == "s" else e @ W["W_p"] + W["b_p"]  # eq. 6 vs eq. 3, 5
    return g_u * (g_f * e_bar) + (1.0 - g_u) * h


def carnn(x, c, mask, weights, variant, go_backwards=False):
    """x [batch, time, d], c [batch, dc], mask [batch, time] -> (outputs [batch, time, u], last [batch, u]).

    `go_backwards`: the steps are read from the last real one to the first; outputs stay in input order.
    """
    u, W = _split(weights)
    x, c = np.asarray(x, np.float64), np.asarray(c, np.float64)
    batch, time, _ = x.shape
    outputs, last = np.zeros((batch, time, u)), np.zeros((batch, u))
    for b in range(batch):
        h = np.zeros(u)  # h_0 = 0
        order = range(time - 1, -1, -1) if go_backwards else range(time)
        for m in order:
            if not mask[b, m]:
                continue
            h = carnn_step(x[b, m], c[b], h, W, variant)
            outputs[b, m] = h
        last[b] = h
    return outputs, last


def carnn_unrolled_last(x, c, mask, weights, variant):
    """The last state of iCARNN / sCARNN by the unrolled sums of eq. 4 / 7 (forward direction):

    h_M = sum_i (g_u^i * g_f^i * prod_{j > i} (1 - g_u^j)) * e_bar_i, over the real steps i, j.
    """
    assert variant in ("i", "s")
    u, W = _split(weights)
    x, c = np.asarray(x, np.float64), np.asarray(c, np.float64)
    last = np.zeros((len(x), u))
    for b in range(len(x)):
        steps = [m for m in range(x.shape[1]) if mask[b, m]]
        gates = {}
        for m in steps:
            e = x[b, m]
            g_u = sigmoid(c[b] @ W["W_cu"] + e @ W["W_eu"] + W["b_u"])
            g_f = sigmoid(c[b] @ W["W_cf"] + e @ W["W_ef"] + W["b_f"])
            e_bar = e if variant == "s" else e @ W["W_p"] + W["b_p"]
            gates[m] = (g_u, g_f, e_bar)
        for i in steps:
            g_u, g_f, e_bar = gates[i]
            weight = g_u * g_f
            for j in steps:
                if j > i:
                    weight = weight * (1.0 - gates[j][0])
            last[b] += weight * e_bar
    return last


def position_weight(j, J, k, d, variant):
    """l_kj, 1-based j and k."""
    if variant == "paper":
        return (1.0 - j / J) - (k / d) * (1.0 - 2.0 * j / J)
    return 1.0 + 4.0 * (k - (d + 1) / 2.0) * (j - (J + 1) / 2.0) / (d * J)


def position_encoder(x, mask, variant="paper"):
    """x [..., time, d], mask [..., time] -> m [..., d] = sum_j l_j * x_j over the real words (J = their count)."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    flat_x, flat_mask = x.reshape(-1, x.shape[-2], d), np.asarray(mask).reshape(-1, x.shape[-2])
    out = np.zeros((len(flat_x), d))
    for n in range(len(flat_x)):
        J = int(flat_mask[n].sum())
        j = 0
        for t in range(flat_x.shape[1]):
            if not flat_mask[n, t]:
                continue
            j += 1
            for k in range(1, d + 1):
                out[n, k - 1] += position_weight(j, J, k, d, variant) * flat_x[n, t, k - 1]
    return out.reshape(x.shape[:-2] + (d,))
