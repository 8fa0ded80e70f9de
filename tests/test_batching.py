"""keras_match.inputs.batching: the batch plans of each loss mode, on toy groups and on real TrecQA training pairs."""

import collections

import numpy as np
import pytest

from keras_match import datasets
from keras_match.inputs import batching

PAD = batching.PAD_INDEX


# ---- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trec(data_dir):
    """`(qids, labels)` of the first 60 real TrecQA (clean) training questions (4306 pairs; 4 questions there
    have only positive candidates, none only negatives)."""
    ds = datasets.load("trecqa", "clean", data_dir)
    pairs = ds["train"].head(60).pairs()
    return pairs.qids, pairs.labels


@pytest.fixture(scope="module")
def trec_some_without_positive(trec):
    """The real pairs with the labels of a few questions zeroed: questions without a positive, which real clean
    TrecQA training data never has. Returns `(qids, labels, zeroed question ids)`."""
    qids, labels = trec
    labels = labels.copy()
    order = list(dict.fromkeys(qids.tolist()))
    zeroed = {order[0], order[7], order[21]}
    labels[np.isin(qids, list(zeroed))] = 0
    return qids, labels, zeroed


def _members(qids):
    """question id -> set of its example indices."""
    out = collections.defaultdict(set)
    for i, q in enumerate(qids.tolist()):
        out[q].add(i)
    return out


def _real(row):
    """The real items of a listwise row, checking that `PAD_INDEX` only ends it."""
    n = int(np.sum(row != PAD))
    assert np.all(row[:n] >= 0), row
    assert np.all(row[n:] == PAD), row
    return row[:n]


def _same(plan_a, plan_b):
    return len(plan_a) == len(plan_b) and all(np.array_equal(a, b) for a, b in zip(plan_a, plan_b))


# ---- groups_of ----------------------------------------------------------------------------------------------


def test_groups_of_keeps_first_appearance_order_for_non_contiguous_ids():
    groups = batching.groups_of(np.array(["b", "a", "b", "c", "a", "b"], dtype=object))
    assert [g.tolist() for g in groups] == [[0, 2, 5], [1, 4], [3]]


def test_groups_of_orders_numeric_ids_by_appearance_not_value():
    groups = batching.groups_of([30, 10, 30, 20, 10])
    assert [g.tolist() for g in groups] == [[0, 2], [1, 4], [3]]


def test_groups_of_empty_and_single():
    assert batching.groups_of([]) == []
    assert [g.tolist() for g in batching.groups_of(["q"])] == [[0]]


def test_groups_of_real_trecqa_follows_the_file_order(trec, data_dir):
    qids, _ = trec
    groups = batching.groups_of(qids)
    questions = datasets.load("trecqa", "clean", data_dir)["train"].head(60).questions
    assert [len(g) for g in groups] == [len(q.candidates) for q in questions]
    assert [qids[g[0]] for g in groups] == [q.qid for q in questions]
    assert np.array_equal(np.concatenate(groups), np.arange(len(qids)))


# ---- pointwise ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 64, 1000, 10_000])
def test_pointwise_epoch_covers_every_example_once(trec, batch_size):
    _, labels = trec
    n = len(labels)
    batches = batching.plan("pointwise", None, labels, batch_size, np.random.default_rng(0))
    assert len(batches) == -(-n // batch_size)
    assert all(len(b) == batch_size for b in batches[:-1])
    assert 1 <= len(batches[-1]) <= batch_size
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(n))


def test_pointwise_seeds_and_epochs_shuffle_differently(trec):
    _, labels = trec
    plans = [batching.pointwise_batches(len(labels), 64, np.random.default_rng([5, epoch])) for epoch in (0, 1)]
    assert not np.array_equal(np.concatenate(plans[0]), np.concatenate(plans[1]))
    other_seed = batching.pointwise_batches(len(labels), 64, np.random.default_rng([6, 0]))
    assert not np.array_equal(np.concatenate(plans[0]), np.concatenate(other_seed))
    # not the identity order either: the epoch is shuffled
    assert not np.array_equal(np.concatenate(plans[0]), np.arange(len(labels)))
    again = batching.pointwise_batches(len(labels), 64, np.random.default_rng([5, 0]))
    assert _same(plans[0], again)


def test_pointwise_no_examples_gives_no_batch():
    assert batching.pointwise_batches(0, 8, np.random.default_rng(0)) == []


# ---- pairwise -----------------------------------------------------------------------------------------------


def test_pairwise_rows_are_positive_negative_of_the_same_question(trec):
    qids, labels = trec
    batches = batching.plan("pairwise", qids, labels, 32, np.random.default_rng(1))
    assert batches
    for b in batches:
        assert b.ndim == 2 and b.shape[1] == 2
        assert np.all(qids[b[:, 0]] == qids[b[:, 1]])
        assert np.all(labels[b[:, 0]] >= 1)
        assert np.all(labels[b[:, 1]] <= 0)


def test_pairwise_batch_sizes(trec):
    qids, labels = trec
    batches = batching.pairwise_batches(qids, labels, 32, np.random.default_rng(1))
    rows = sum(len(b) for b in batches)
    assert len(batches) == -(-rows // 32)
    assert all(len(b) == 32 for b in batches[:-1]) and 1 <= len(batches[-1]) <= 32


def test_pairwise_every_negative_of_a_question_with_a_positive_once(trec):
    qids, labels = trec
    rows = np.concatenate(batching.pairwise_batches(qids, labels, 50, np.random.default_rng(2)))
    expected = [i for members in _members(qids).values() if np.any(labels[sorted(members)] >= 1)
                for i in sorted(members) if labels[i] <= 0]
    counts = collections.Counter(rows[:, 1].tolist())
    assert set(counts) == set(expected)
    assert set(counts.values()) == {1}
    assert len(rows) == len(expected)


def test_pairwise_questions_missing_a_label_contribute_nothing(trec_some_without_positive):
    qids, labels, zeroed = trec_some_without_positive
    rows = np.concatenate(batching.pairwise_batches(qids, labels, 64, np.random.default_rng(3)))
    used = set(qids[rows.ravel()].tolist())
    members = _members(qids)
    only_positive = {q for q, m in members.items() if np.all(labels[sorted(m)] >= 1)}
    assert len(only_positive) == 4  # the real data's questions without a negative
    both = {q for q, m in members.items() if q not in zeroed and q not in only_positive}
    assert used == both
    assert not used & zeroed and not used & only_positive


def test_pairwise_partners_are_drawn_among_the_positives(trec):
    qids, labels = trec
    # a question with several positives should not always get the same partner
    members = _members(qids)
    many = [q for q, m in members.items() if np.sum(labels[sorted(m)] >= 1) >= 3
            and np.sum(labels[sorted(m)] <= 0) >= 20]
    assert many, "the real data has questions with >= 3 positives"
    rows = np.concatenate(batching.pairwise_batches(qids, labels, 64, np.random.default_rng(4)))
    partners = rows[np.isin(qids[rows[:, 1]], many), 0]
    assert len(set(partners.tolist())) > len(many)


def test_pairwise_is_reproducible_and_varies_with_the_seed(trec):
    qids, labels = trec
    a = batching.pairwise_batches(qids, labels, 32, np.random.default_rng([0, 0]))
    b = batching.pairwise_batches(qids, labels, 32, np.random.default_rng([0, 0]))
    c = batching.pairwise_batches(qids, labels, 32, np.random.default_rng([0, 1]))
    assert _same(a, b)
    assert not _same(a, c)


def test_pairwise_without_any_usable_question_is_empty():
    rng = np.random.default_rng(0)
    assert batching.pairwise_batches(["a", "a", "b"], [0, 0, 0], 4, rng) == []
    assert batching.pairwise_batches(["a", "a", "b"], [1, 1, 1], 4, rng) == []
    assert batching.pairwise_batches([], [], 4, rng) == []


# ---- listwise -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [16, 64, 300])
def test_listwise_full_lists_hold_every_candidate_of_each_question_once(trec_some_without_positive, batch_size):
    qids, labels, zeroed = trec_some_without_positive
    members = _members(qids)
    batches = batching.plan("listwise", qids, labels, batch_size, np.random.default_rng(7))
    seen = collections.Counter()
    for b in batches:
        assert b.ndim == 2 and b.dtype.kind == "i"
        reals = [_real(row) for row in b]
        assert b.shape[1] == max(len(r) for r in reals)  # padded to the batch's longest list, no more
        for r in reals:
            (q,) = set(qids[r].tolist())  # one question per row
            seen[q] += 1
            assert set(r.tolist()) == members[q]  # all of its candidates, each once
            assert len(r) == len(members[q])
    expected = {q for q, m in members.items() if np.any(labels[sorted(m)] >= 1)}
    assert set(seen) == expected
    assert set(seen.values()) == {1}
    assert not set(seen) & zeroed


@pytest.mark.parametrize("batch_size", [16, 64, 300])
def test_listwise_batches_respect_the_candidate_budget(trec, batch_size):
    qids, labels = trec
    batches = batching.listwise_batches(qids, labels, batch_size, np.random.default_rng(8))
    for b in batches:
        rows, width = b.shape
        assert rows * width <= batch_size or rows == 1
    # greedy: a batch is closed only when the next question would not fit
    for b, following in zip(batches, batches[1:]):
        next_len = len(_real(following[0]))
        assert (len(b) + 1) * max(b.shape[1], next_len) > batch_size
    # a question longer than the budget is alone in its batch (the real data has lists of 740 and 761)
    long_rows = [b for b in batches if b.shape[1] > batch_size]
    assert long_rows and all(len(b) == 1 for b in long_rows)


@pytest.mark.parametrize("list_size", [1, 2, 5, 15])
def test_listwise_sampled_lists(trec_some_without_positive, list_size):
    qids, labels, zeroed = trec_some_without_positive
    members = _members(qids)
    batches = batching.listwise_batches(qids, labels, 40, np.random.default_rng(9), list_size=list_size)
    seen = collections.Counter()
    for b in batches:
        assert b.shape[1] <= list_size
        assert len(b) * b.shape[1] <= 40 or len(b) == 1
        for row in b:
            r = _real(row)
            (q,) = set(qids[r].tolist())
            seen[q] += 1
            assert len(r) == min(list_size, len(members[q]))
            assert len(set(r.tolist())) == len(r) and set(r.tolist()) <= members[q]
            assert np.any(labels[r] >= 1)
    expected = {q for q, m in members.items() if np.any(labels[sorted(m)] >= 1)}
    assert set(seen) == expected and set(seen.values()) == {1}


def test_listwise_sampling_varies_but_is_reproducible(trec):
    qids, labels = trec
    a = batching.listwise_batches(qids, labels, 40, np.random.default_rng([1, 0]), list_size=5)
    b = batching.listwise_batches(qids, labels, 40, np.random.default_rng([1, 0]), list_size=5)
    c = batching.listwise_batches(qids, labels, 40, np.random.default_rng([1, 1]), list_size=5)
    assert _same(a, b)
    assert not _same(a, c)
    full_a = batching.listwise_batches(qids, labels, 64, np.random.default_rng(3))
    full_b = batching.listwise_batches(qids, labels, 64, np.random.default_rng(3))
    assert _same(full_a, full_b)


def test_listwise_keeps_questions_with_only_positives():
    # documented: only questions *without a positive* are left out of listwise plans
    batches = batching.listwise_batches(["a", "a", "b", "b", "c"], [1, 1, 0, 0, 1], 100, np.random.default_rng(0))
    (batch,) = batches
    rows = sorted(sorted(_real(r).tolist()) for r in batch)
    assert rows == [[0, 1], [4]]
    assert batch.shape == (2, 2) and sorted(batch[:, 1].tolist()) == [PAD, 1]


def test_listwise_without_positives_is_empty():
    assert batching.listwise_batches(["a", "b"], [0, 0], 8, np.random.default_rng(0)) == []


# ---- plan ---------------------------------------------------------------------------------------------------


def test_plan_dispatches_to_the_mode(trec):
    qids, labels = trec
    for mode, direct in (
        ("pairwise", lambda rng: batching.pairwise_batches(qids, labels, 16, rng)),
        ("listwise", lambda rng: batching.listwise_batches(qids, labels, 16, rng, list_size=4)),
    ):
        assert _same(batching.plan(mode, qids, labels, 16, np.random.default_rng(11), list_size=4),
                     direct(np.random.default_rng(11)))
    assert _same(batching.plan("pointwise", qids, labels, 16, np.random.default_rng(11)),
                 batching.pointwise_batches(len(labels), 16, np.random.default_rng(11)))


def test_plan_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="unknown batching mode 'triplet'.*pointwise"):
        batching.plan("triplet", ["a"], [1], 4, np.random.default_rng(0))


@pytest.mark.parametrize("mode", ["pointwise", "pairwise", "listwise"])
@pytest.mark.parametrize("batch_size", [0, -3, 2.0, True, None])
def test_plan_rejects_bad_batch_sizes(mode, batch_size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        batching.plan(mode, ["a", "a"], [1, 0], batch_size, np.random.default_rng(0))


def test_plan_rejects_bad_batch_size_even_without_usable_questions():
    with pytest.raises(ValueError):
        batching.plan("pairwise", ["a"], [0], 0, np.random.default_rng(0))
    with pytest.raises(ValueError):
        batching.plan("pointwise", [], [], -1, np.random.default_rng(0))


@pytest.mark.parametrize("list_size", [0, -1, 1.5])
def test_listwise_rejects_bad_list_sizes(list_size):
    with pytest.raises(ValueError):
        batching.plan("listwise", ["a", "a"], [1, 0], 4, np.random.default_rng(0), list_size=list_size)


def test_plan_accepts_numpy_integer_batch_size(trec):
    qids, labels = trec
    batches = batching.plan("pairwise", qids, labels, np.int64(32), np.random.default_rng(0))
    assert all(len(b) <= 32 for b in batches)


def test_a_bad_list_size_is_reported_as_list_size():
    with pytest.raises(ValueError, match="list_size"):
        batching.plan("listwise", ["a", "a"], [1, 0], 4, np.random.default_rng(0), list_size=0)


def test_split_to_halves_the_widest_batches_and_keeps_every_list_in_order():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(30), rng.integers(1, 9, 30))
    labels = (rng.random(len(groups)) < 0.4).astype(int)
    labels[np.unique(groups, return_index=True)[1]] = 1  # every question has a positive
    plan = batching.listwise_batches(groups, labels, 40, np.random.default_rng(0))
    lists = [tuple(row[row != batching.PAD_INDEX]) for batch in plan for row in batch]
    target = len(plan) + 4
    cut = batching.split_to(plan, target)
    assert len(cut) == target
    assert [tuple(row[row != batching.PAD_INDEX]) for batch in cut for row in batch] == lists
    for batch in cut:  # no all-padding column is left
        assert np.all((batch != batching.PAD_INDEX).any(axis=0))
    assert batching.split_to(plan, len(plan)) == plan
    with pytest.raises(ValueError, match="cannot cut"):
        batching.split_to(plan, len(lists) + 1)
    with pytest.raises(ValueError, match="cannot cut"):
        batching.split_to(plan, len(plan) - 1)

