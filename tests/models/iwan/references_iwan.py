"""NumPy references of IWAN's reconstructed equations (shared/papers/iwan_architecture.md §2.3-2.7), written one
example and one word at a time over the real words only (float64), so padding and its garbage never enter."""

import numpy as np


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _unit(x, epsilon):
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + epsilon)


def alignment(hs, ht, mask_s, mask_t, kernel, bias, similarity="dot", compare="orthogonal", bilinear=None,
              epsilon=1e-6):
    """`(f_s, f_t)` of `DecompositionAlignment` (0 at padded positions).

    M_ij = sim(h_i^s, h_j^t); h~_i^s = sum_j softmax_j(M_i.) h_j^t; h~_j^t = sum_i softmax_i(M_.j) h_i^s;
    orthogonal: p = (h.h~ / (h~.h~ + eps)) h~, o = h - p, f = ReLU(W_a [p; o] + b_a);
    concat_diff_prod: f = ReLU(W_a [h; h~; h * h~; |h - h~|] + b_a).
    """
    batch = hs.shape[0]
    fs = np.zeros(hs.shape[:2] + (kernel.shape[1],))
    ft = np.zeros(ht.shape[:2] + (kernel.shape[1],))
    for b in range(batch):
        s = hs[b, mask_s[b]].astype("float64")
        t = ht[b, mask_t[b]].astype("float64")
        a, c = s, t
        if similarity == "cosine":
            a, c = _unit(s, epsilon), _unit(t, epsilon)
        elif similarity == "bilinear":
            a = s @ bilinear
        m = a @ c.T  # [m, n]
        aligned_s = np.array([softmax(m[i]) @ t if len(t) else np.zeros(s.shape[1]) for i in range(len(s))])
        aligned_t = np.array([softmax(m[:, j]) @ s if len(s) else np.zeros(t.shape[1]) for j in range(len(t))])
        for h, aligned, out, mask in ((s, aligned_s, fs, mask_s), (t, aligned_t, ft, mask_t)):
            if not len(h):
                continue
            if compare == "orthogonal":
                p, o = decompose(h, aligned, epsilon)
                x = np.concatenate([p, o], -1)
            else:
                x = np.concatenate([h, aligned, h * aligned, np.abs(h - aligned)], -1)
            out[b, mask[b]] = np.maximum(x @ kernel + bias, 0.0)
    return fs, ft


def decompose(h, aligned, epsilon=1e-6):
    """`(p, o)`: p = (h.h~ / (h~.h~ + eps)) h~ per word, o = h - p."""
    coefficient = (h * aligned).sum(-1, keepdims=True) / ((aligned * aligned).sum(-1, keepdims=True) + epsilon)
    p = coefficient * aligned
    return p, h - p


def inter_weighting(f, h, other, mask, other_mask, weighting, weights):
    """`(v, w)` of `InterWeighting`, `weights` its `get_weights()`.

    h-bar = mean of the other's real states (0 if none); inter_attention: w = softmax_i(v^T tanh(W_1 [h_i; h-bar]
    + b_1)); inter_skip: w_i = sigmoid(u^T [h_i; h-bar] + c); none: w_i = 1/m; v = sum_i w_i f_i.
    """
    batch, time = h.shape[:2]
    v = np.zeros((batch, f.shape[-1]))
    w = np.zeros((batch, time))
    for b in range(batch):
        real = h[b, mask[b]].astype("float64")
        if not len(real):
            continue
        others = other[b, other_mask[b]].astype("float64")
        summary = others.mean(0) if len(others) else np.zeros(other.shape[-1])
        joint = np.concatenate([real, np.repeat(summary[None], len(real), 0)], -1)
        if weighting == "inter_attention":
            w1, b1, score = weights
            row = softmax((np.tanh(joint @ w1 + b1) @ score)[:, 0])
        elif weighting == "inter_skip":
            u, c = weights
            row = sigmoid((joint @ u + c)[:, 0])
        else:
            row = np.full(len(real), 1.0 / len(real))
        w[b, mask[b]] = row
        v[b] = row @ f[b, mask[b]].astype("float64")
    return v, w
