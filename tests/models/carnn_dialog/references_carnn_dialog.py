"""NumPy references of the CARNN dialog layers (Tran et al., NAACL 2018, eq. 8 and 10), written as loops over the
examples and the real turns only, so a padded position cannot reach them."""

import numpy as np


def history_attention(h, e, c, mask, empty_history="context"):
    """eq. 8 for each example: h~_m = h_m + e_m over the real turns, alpha = softmax(h~_m . c), sum alpha_m h~_m."""
    batch, _, dim = h.shape
    out = np.zeros([batch, dim])
    for b in range(batch):
        turns = [m for m in range(h.shape[1]) if mask[b, m]]
        if not turns:
            out[b] = c[b] if empty_history == "context" else 0.0
            continue
        residual = [h[b, m].astype(np.float64) + e[b, m] for m in turns]
        logits = np.array([r @ c[b] for r in residual])
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        out[b] = sum(w * r for w, r in zip(weights, residual))
    return out


def candidate_scores(summary, candidates, kernel=None):
    """eq. 10 before its softmax: s[b, l] = (W h_his[b]) . e_{y_l} (h_his[b] . e_{y_l} without a kernel)."""
    out = np.zeros([summary.shape[0], candidates.shape[0]])
    for b in range(summary.shape[0]):
        s = summary[b].astype(np.float64)
        if kernel is not None:
            s = s @ kernel
        for l in range(candidates.shape[0]):
            out[b, l] = s @ candidates[l]
    return out


def position_encoding(vectors):
    """The Position Encoder (paper variant) of one text's real word vectors [J, d] -> [d]."""
    length, dim = vectors.shape
    if length == 0:
        return np.zeros(dim)
    out = np.zeros(dim)
    for j in range(1, length + 1):
        for k in range(1, dim + 1):
            out[k - 1] += ((1 - j / length) - (k / dim) * (1 - 2 * j / length)) * vectors[j - 1, k - 1]
    return out
