"""Batch plans: which examples go into each training batch, for each batching mode of `keras_match.losses`.

A plan is a list of integer index arrays into the training examples (the flat pairs of a split, in order):

- pointwise: `[batch]` indices, every example once per epoch, shuffled;
- pairwise: `[batch, 2]` rows `(positive, negative)` of the same question: every negative candidate of a
  question that has a positive once per epoch, each paired with a positive of its question drawn at random;
- listwise: `[questions, list_size]` rows, one question's candidates each, padded with `-1` (padded items
  carry label -1, keras-rs's convention): every question with a positive once per epoch, with all of its
  candidates or, with `list_size`, a random sample of that many that holds at least one positive. Questions are
  packed in shuffled order while a batch's questions x longest list fit in `batch_size` candidates (at least
  one question per batch).

Plans are pure numpy and drawn from a `numpy.random.Generator`, so a seed and an epoch number give the same
batches every time. Questions without a positive (or, for pairwise, without a negative) teach a ranking loss
nothing and are left out of pairwise / listwise plans.

Length bucketing (`lengths=`, on by default in training): a batch costs what its longest text costs, so the
shuffled examples (rows, lists) are sorted by length inside windows of `BUCKET_WINDOW` batches, cut into
batches, and the batches shuffled (the pipeline's key: the answer length in steps of 4, then the question
length, then the exact answer length, so a batch is short in both texts). Every example still comes once per epoch and the order still changes every
epoch; only which examples share a batch is no longer uniform. Listwise lists are sorted by their size, then
their longest candidate, before packing.
"""

from __future__ import annotations

import numpy as np

from keras_match import losses

MODES = losses.MODES
"""The batching modes, one per loss mode."""

__all__ = ["MODES", "PAD_INDEX", "BUCKET_WINDOW", "length_keys", "groups_of", "pointwise_batches", "pairwise_batches", "listwise_batches", "plan"]

PAD_INDEX = -1
"""Index of a padded list item."""

BUCKET_WINDOW = 200
"""Length bucketing sorts inside windows of this many batches (12,800 pairs at batch size 64). Simulated on the
TrecQA TRAIN-ALL lengths (padded share of the id positions; 0.53 for shuffled batches): windows of 50 / 100 /
200 batches leave 0.16 / 0.12 / 0.08 with the answer length in steps of 4 as the first key, 0.22 / 0.17 / 0.12
with the exact answer length."""


def _check_batch_size(batch_size, name="batch_size"):
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"{name} must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def groups_of(group_ids) -> list[np.ndarray]:
    """The indices of each group (question), groups in order of first appearance, indices ascending."""
    group_ids = np.asarray(group_ids)
    if len(group_ids) == 0:
        return []
    _, first, inverse = np.unique(group_ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # group number by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    by_group = rank[inverse.reshape(-1)]
    sorted_indices = np.argsort(by_group, kind="stable")
    boundaries = np.flatnonzero(np.diff(by_group[sorted_indices])) + 1
    return np.split(sorted_indices, boundaries)


def length_keys(*lengths) -> np.ndarray:
    """One sort key per example from its text lengths, the first most significant (answer, then question).

    Args:
        *lengths: int arrays `[n]`, e.g. the answers' and the questions' token counts.

    Returns:
        int64 `[n]`: examples sort by the first length, ties by the next.
    """
    key = np.zeros(len(lengths[0]), np.int64)
    for length in lengths:
        length = np.asarray(length, np.int64)
        key = key * (int(length.max(initial=0)) + 1) + length
    return key


def _window_order(keys, window):
    """The permutation that sorts `keys` (of already shuffled items) inside consecutive windows of `window`."""
    keys = np.asarray(keys)
    return np.concatenate([start + np.argsort(keys[start : start + window], kind="stable")
                           for start in range(0, len(keys), window)] or [np.zeros(0, np.int64)])


def _chunks(items, batch_size, rng, keys=None):
    """Cut (shuffled) items, an array, into batches; with `keys` (one sort key per item), bucket them."""
    if keys is not None:
        items = items[_window_order(keys, batch_size * BUCKET_WINDOW)]
    batches = [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
    if keys is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def pointwise_batches(num_examples, batch_size, rng, lengths=None) -> list[np.ndarray]:
    """Every example once, shuffled, in batches of `batch_size` (the last may be smaller).

    With `lengths` (a sort key per example, `length_keys`), examples of similar length share batches.
    """
    batch_size = _check_batch_size(batch_size)
    order = rng.permutation(int(num_examples))
    keys = None if lengths is None else np.asarray(lengths)[order]
    return [np.asarray(b, dtype=np.int64) for b in _chunks(order, batch_size, rng, keys)]


def pairwise_batches(group_ids, labels, batch_size, rng, lengths=None) -> list[np.ndarray]:
    """`(positive, negative)` index rows of the same question, `[batch, 2]`, shuffled across questions.

    With `lengths` (a sort key per example), rows whose longer candidate is of similar length share batches.
    """
    batch_size = _check_batch_size(batch_size)
    labels = np.asarray(labels)
    rows = []
    for members in groups_of(group_ids):
        relevant = labels[members] >= 1
        positives, negatives = members[relevant], members[~relevant]
        if len(positives) and len(negatives):
            partners = positives[rng.integers(0, len(positives), size=len(negatives))]
            rows.append(np.stack([partners, negatives], axis=1))
    if not rows:
        return []
    rows = np.concatenate(rows)[rng.permutation(sum(len(r) for r in rows))]
    keys = None
    if lengths is not None:
        lengths = np.asarray(lengths)
        keys = np.maximum(lengths[rows[:, 0]], lengths[rows[:, 1]])
    return [np.asarray(b, dtype=np.int64).reshape(-1, 2) for b in _chunks(rows, batch_size, rng, keys)]


def listwise_batches(group_ids, labels, batch_size, rng, list_size=None, lengths=None) -> list[np.ndarray]:
    """One question's candidates per row, `[questions, length]`, padded with `PAD_INDEX`.

    Args:
        group_ids: the question id of each example.
        labels: each example's label (`>= 1` relevant).
        batch_size: candidates per batch: questions are packed in shuffled order while (questions x longest
            list) stays within `batch_size`; a longer list gets a batch of its own.
        rng: `numpy.random.Generator`.
        list_size: None (all candidates of a question) or a positive int: a random sample of that many
            candidates (all of them when fewer) that includes at least one positive.
        lengths: optional sort key per example: lists of similar size and longest candidate share batches.
    """
    batch_size = _check_batch_size(batch_size)
    if list_size is not None:
        _check_batch_size(list_size, "list_size")
    labels = np.asarray(labels)
    lists = []
    for members in groups_of(group_ids):
        relevant = labels[members] >= 1
        if not relevant.any():
            continue
        members = rng.permutation(members)
        if list_size is not None and len(members) > list_size:
            relevant = labels[members] >= 1
            first_positive = members[np.argmax(relevant)]
            others = members[members != first_positive]
            members = np.concatenate([[first_positive], others[: list_size - 1]])
            members = rng.permutation(members)
        lists.append(members)
    lists = [lists[i] for i in rng.permutation(len(lists))]
    if lengths is not None:
        lengths = np.asarray(lengths)
        sizes = np.array([len(m) for m in lists], np.int64)
        keys = length_keys(sizes, np.array([lengths[m].max() for m in lists], np.int64))  # size, then longest
        window = max(1, batch_size * BUCKET_WINDOW // max(1, int(sizes.mean()) if len(sizes) else 1))
        lists = [lists[i] for i in _window_order(keys, window)]
    batches, current = [], []
    for members in lists:
        candidate = current + [members]
        if current and len(candidate) * max(len(m) for m in candidate) > batch_size:
            batches.append(current)
            candidate = [members]
        current = candidate
    if current:
        batches.append(current)
    if lengths is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return [_pad(batch) for batch in batches]


def _pad(rows):
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), PAD_INDEX, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def plan(mode, group_ids, labels, batch_size, rng, list_size=None, lengths=None) -> list[np.ndarray]:
    """The batches of one epoch for a loss mode (`"pointwise"`, `"pairwise"`, `"listwise"`); with `lengths`
    (a sort key per example, see `length_keys`), length-bucketed.

    Raises:
        ValueError: unknown mode, or a batch size that is not a positive integer.
    """
    if mode == "pointwise":
        return pointwise_batches(len(labels), batch_size, rng, lengths=lengths)
    if mode == "pairwise":
        return pairwise_batches(group_ids, labels, batch_size, rng, lengths=lengths)
    if mode == "listwise":
        return listwise_batches(group_ids, labels, batch_size, rng, list_size=list_size, lengths=lengths)
    raise ValueError(f"unknown batching mode {mode!r}; valid modes: {list(MODES)}")


def split_to(batches, count) -> list[np.ndarray]:
    """A listwise plan cut into exactly `count` batches: the batch with the most lists is halved (each half
    padded to its own longest list) until the count is reached, so every list still comes once, in the same
    order. Training gives every epoch the same number of batches this way (the longest plan's), which lets one
    input iterator run through all epochs.

    Raises:
        ValueError: `count` is below the plan's length or above its number of lists.
    """
    batches = list(batches)
    lists = sum(len(b) for b in batches)
    if not len(batches) <= count <= lists:
        raise ValueError(f"cannot cut {len(batches)} batches of {lists} lists into {count} batches")
    while len(batches) < count:
        widest = max(range(len(batches)), key=lambda i: len(batches[i]))
        batch = batches[widest]
        half = len(batch) // 2
        batches[widest : widest + 1] = [_trim_lists(batch[:half]), _trim_lists(batch[half:])]
    return batches


def _trim_lists(batch):
    """A listwise batch without the padding columns that no list of it needs."""
    width = int((batch != PAD_INDEX).sum(axis=1).max())
    return batch[:, :width]
