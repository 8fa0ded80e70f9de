"""Slow NumPy references of the CTRN paper (Tay, Luu, Hui, AAAI 2018): QRNN eq. 1 with fo-pooling, and the
CTRN-Q / CTRN-A cells.

Conventions: inputs at padded positions (and before the first step) count as zero vectors; the recurrences
skip padded steps; outputs at padded positions are 0; steps t, t* are 0-based.
"""

import numpy as np



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
