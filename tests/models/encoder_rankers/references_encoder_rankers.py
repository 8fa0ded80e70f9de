"""Slow NumPy references of the encoder rankers' equations, written from the papers' descriptions, a row and a
position at a time (no shared code with `keras_match.models.encoder_rankers`)."""

import numpy as np


def pack_pair(question_ids, answer_ids, sep_id=102, max_length=None):
    """BERT's packed pair, row by row: the question's real ids, then the answer's real ids but its first (`[CLS]`),
    right-padded with 0 to the longest row; segment 0 over the question, 1 over the answer; a row longer than
    `max_length` keeps its first `max_length - 1` ids and `[SEP]`. Returns `(ids, segments, mask)`."""
    rows = []
    for question, answer in zip(np.asarray(question_ids), np.asarray(answer_ids)):
        q = [int(t) for t in question if t != 0]
        a = [int(t) for t in answer if t != 0][1:]
        ids, segments = q + a, [0] * len(q) + [1] * len(a)
        if max_length is not None and len(ids) > max_length:
            ids, segments = ids[:max_length - 1] + [sep_id], segments[:max_length]
        rows.append((ids, segments))
    width = max([1] + [len(ids) for ids, _ in rows])
    packed = np.zeros((len(rows), width), "int32")
    segment = np.zeros((len(rows), width), "int32")
    mask = np.zeros((len(rows), width), bool)
    for i, (ids, segments) in enumerate(rows):
        packed[i, :len(ids)], segment[i, :len(ids)], mask[i, :len(ids)] = ids, segments, True
    return packed, segment, mask


def mean_pooled(states, mask, normalize=True):
    """sentence-transformers' sentence embedding: the sum of the real tokens' states over their count (0 without
    one), divided by its L2 norm (at least 1e-12)."""
    out = []
    for row, keep in zip(np.asarray(states, np.float64), np.asarray(mask, bool)):
        total = np.zeros(row.shape[-1])
        for t in range(row.shape[0]):
            if keep[t]:
                total += row[t]
        mean = total / max(1, int(keep.sum()))
        out.append(mean / max(np.sqrt(np.sum(mean * mean)), 1e-12) if normalize else mean)
    return np.array(out)


def cosine(u, v):
    """The cosine similarity of each row pair, `[batch, 1]` (0 for a zero vector)."""
    out = []
    for x, y in zip(np.asarray(u, np.float64), np.asarray(v, np.float64)):
        out.append([np.dot(x, y) / (max(np.linalg.norm(x), 1e-12) * max(np.linalg.norm(y), 1e-12))])
    return np.array(out)


def sbert_concatenation(u, v):
    """SBERT's classification features `[u; v; |u - v|]`."""
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    return np.concatenate([u, v, np.abs(u - v)], axis=-1)
