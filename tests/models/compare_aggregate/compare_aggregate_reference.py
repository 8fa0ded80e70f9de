"""Slow NumPy references of Compare-Aggregate (Wang & Jiang, ICLR 2017), eq. 1-9, written from the paper.

Float64, explicit loops over the batch, words and window positions, no code shared with keras_match. The paper's
own layout is kept: a text is a matrix whose COLUMNS are words (`Q in R^{d x Q}`), and `W` matrices are
`[out, in]`; a Keras kernel `[in, out]` is therefore transposed on the way in. Each example is cut to its real
words before anything is computed, so padding cannot enter. Conventions for padding (the paper has none): outputs
at padded positions are 0; an empty question gives `h_j = 0`; an empty answer gives `r = 0`.
"""

import numpy as np


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def relu(v):
    return np.maximum(v, 0.0)


def real_length(mask_row):
    """Number of real words of a right-padded mask row."""
    mask_row = np.asarray(mask_row, bool)
    length = int(mask_row.sum())
    assert mask_row[:length].all(), "references expect right-padded masks"
    return length


def columns(x_row, length):
    """The paper's word matrix `[dim, length]` of one example `[time, dim]`."""
    return np.asarray(x_row[:length], np.float64).T


# eq. 1 -------------------------------------------------------------------------------------------------------
def preprocess(X, weights):
    """`X_bar = sigma(W^i X + b^i e^T) * tanh(W^u X + b^u e^T)`; X is `[d, n]`, returns `[l, n]`.

    weights: `[kernel_i, bias_i, kernel_u, bias_u]` in Keras layout (`kernel [d, l]`)."""
    kernel_i, b_i, kernel_u, b_u = (np.asarray(w, np.float64) for w in weights)
    W_i, W_u = kernel_i.T, kernel_u.T
    e = np.ones((1, X.shape[1]))
    return sigmoid(W_i @ X + np.outer(b_i, e)) * np.tanh(W_u @ X + np.outer(b_u, e))


def gated_preprocessing(x, weights):
    """Every word of `x [batch, time, d]` through eq. 1 -> `[batch, time, l]` (no masking: position-wise)."""
    batch, time, _ = x.shape
    out = np.zeros((batch, time, len(weights[1])))
    for b in range(batch):
        out[b] = preprocess(columns(x[b], time), weights).T
    return out


# eq. 2 -------------------------------------------------------------------------------------------------------
def attend(Q_bar, A_bar, kernel_g, bias_g):
    """`G = softmax((W^g Q_bar + b^g e_Q^T)^T A_bar)` column by column, `H = Q_bar G`. Returns `(H, G)`."""
    n_q, n_a = Q_bar.shape[1], A_bar.shape[1]
    l = A_bar.shape[0]
    G = np.zeros((n_q, n_a))
    if n_q == 0:
        return np.zeros((l, n_a)), G
    W_g = np.asarray(kernel_g, np.float64).T
    logits = (W_g @ Q_bar + np.outer(bias_g, np.ones(n_q))).T @ A_bar  # [Q, A]
    for j in range(n_a):
        column = np.exp(logits[:, j] - logits[:, j].max())
        G[:, j] = column / column.sum()
    return Q_bar @ G, G


def compare_attention(q_bar, a_bar, q_mask, a_mask, kernel_g, bias_g):
    """Batch-first wrapper: returns `h [batch, len_a, l]` and `G^T [batch, len_a, len_q]`, 0 at padding."""
    batch, len_a, l = a_bar.shape
    len_q = q_bar.shape[1]
    h, weights = np.zeros((batch, len_a, l)), np.zeros((batch, len_a, len_q))
    for b in range(batch):
        n_q, n_a = real_length(q_mask[b]), real_length(a_mask[b])
        H, G = attend(columns(q_bar[b], n_q), columns(a_bar[b], n_a), kernel_g, bias_g)
        h[b, :n_a] = H.T
        weights[b, :n_a, :n_q] = G.T
    return h, weights


# eq. 3-8 -----------------------------------------------------------------------------------------------------
def nn(a, h, kernel, bias):  # eq. 3
    W = np.asarray(kernel, np.float64).T
    return relu(W @ np.concatenate([a, h]) + bias)


def ntn(a, h, tensor, bias):  # eq. 4: one bilinear form per slice
    return relu(np.array([a @ tensor[s] @ h for s in range(len(tensor))]) + bias)


def euccos(a, h):  # eq. 5, with cos = 0 when a vector is 0
    norms = np.linalg.norm(a) * np.linalg.norm(h)
    cosine = float(a @ h) / norms if norms > 0 else 0.0
    return np.array([np.linalg.norm(a - h), cosine])


def sub(a, h):  # eq. 6
    return (a - h) * (a - h)


def mult(a, h):  # eq. 7
    return a * h


def submult_nn(a, h, kernel, bias):  # eq. 8
    W = np.asarray(kernel, np.float64).T
    return relu(W @ np.concatenate([(a - h) * (a - h), a * h]) + bias)


FUNCTIONS = {"nn": nn, "ntn": ntn, "euccos": euccos, "sub": sub, "mult": mult, "submult_nn": submult_nn}


def comparison(name, weights):
    """`f(a, h)` of the named comparison with the layer's `get_weights()`."""
    weights = [np.asarray(w, np.float64) for w in weights]
    return lambda a, h: FUNCTIONS[name](a, h, *weights)


def compare(f, a, h, a_mask):
    """`t_j = f(a_j, h_j)` at the real answer positions, 0 elsewhere: `[batch, len_a, k]`."""
    batch, len_a, l = a.shape
    k = len(f(np.zeros(l), np.zeros(l)))
    out = np.zeros((batch, len_a, k))
    for b in range(batch):
        for j in range(real_length(a_mask[b])):
            out[b, j] = f(np.asarray(a[b, j], np.float64), np.asarray(h[b, j], np.float64))
    return out


# eq. 9 -------------------------------------------------------------------------------------------------------
def feature_map(T, kernel, bias, padding):
    """Kim's convolution of the real comparison vectors `T [k, n]` (columns = words) with one window size.

    kernel `[w, k, filters]` (Keras Conv1D layout), bias `[filters]`. Returns `{position: c_p}`:
    "valid": `c_p = ReLU(sum_o K_o^T t_{p+o} + b)` for `p = 0 .. n - w` (the words extended with zero columns
    to length `w` when `n < w`, giving the single window `p = 0`);
    "same": one window centred on every word `p = 0 .. n - 1` (`(w-1)//2` before, `w//2` after, zero columns
    outside the text).
    """
    w, k, _ = kernel.shape
    n = T.shape[1]
    if n == 0:
        return {}
    if padding == "valid":
        before, starts = 0, range(max(n - w, 0) + 1)
    else:
        before, starts = (w - 1) // 2, range(n)
    padded = np.concatenate([np.zeros((k, before)), T, np.zeros((k, w))], axis=1)  # enough zeros after
    out = {}
    for p in starts:
        total = np.array(bias, np.float64)
        for o in range(w):
            total = total + np.asarray(kernel[o], np.float64).T @ padded[:, p + o]
        out[p] = relu(total)
    return out


def cnn(t, a_mask, conv_weights, padding="valid"):
    """`r = CNN([t_1 .. t_A])` (eq. 9): per window, max over the feature map, concatenated.

    t `[batch, time, k]`; conv_weights `[(kernel, bias), ...]` per window in order. Returns `(r, word_features)`,
    `r [batch, n filters]`, `word_features [batch, time, n filters]` (`c_p` at position `p`, 0 elsewhere).
    """
    batch, time, _ = t.shape
    filters = conv_weights[0][1].shape[0]
    width = len(conv_weights) * filters
    r, word_features = np.zeros((batch, width)), np.zeros((batch, time, width))
    for b in range(batch):
        n = real_length(a_mask[b])
        T = columns(t[b], n)
        for index, (kernel, bias) in enumerate(conv_weights):
            block = slice(index * filters, (index + 1) * filters)
            c = feature_map(T, kernel, bias, padding)
            for p, values in c.items():
                word_features[b, p, block] = values
            if c:
                r[b, block] = np.max(np.stack(list(c.values())), axis=0)
    return r, word_features


# eq. 1-9 -----------------------------------------------------------------------------------------------------
def compare_aggregate(q, a, q_mask, a_mask, weights, name, n_windows, padding="valid"):
    """The whole model from embedded q, a to r; weights = CompareAggregate.get_weights() in its order:
    preprocessing (4), attention (2), comparison (2 or 0), then (kernel, bias) per window."""
    pre, att = weights[:4], weights[4:6]
    n_comparison = len(weights) - 6 - 2 * n_windows
    comp = weights[6 : 6 + n_comparison]
    convs = [(weights[i], weights[i + 1]) for i in range(6 + n_comparison, len(weights), 2)]
    q_bar, a_bar = gated_preprocessing(q, pre), gated_preprocessing(a, pre)
    h, attention = compare_attention(q_bar, a_bar, q_mask, a_mask, *att)
    t = compare(comparison(name, comp), a_bar, h, a_mask)
    r, word_features = cnn(t, a_mask, convs, padding)
    return {"aggregate": r, "word_features": word_features, "attention": attention}
