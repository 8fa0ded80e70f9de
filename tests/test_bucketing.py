"""Length-bucketed batches (keras_match.inputs.batching, `lengths=`) on real TrecQA TRAIN-ALL lengths, and
length-sorted scoring (keras_match.inputs.pipeline.predict)."""

import collections

import numpy as np
import pytest

from keras_match import datasets
from keras_match.inputs import batching


@pytest.fixture(scope="module")
def trecqa(data_dir):
    """The first 300 TRAIN-ALL questions: qids, labels and a length key per pair (answer, then question)."""
    pairs = datasets.load("trecqa", "clean", data_dir)["train"].head(300).pairs()
    answer = np.array([min(len(a.split()), 60) for a in pairs.answers])
    question = np.array([min(len(q.split()), 40) for q in pairs.questions])
    return pairs.qids, pairs.labels, batching.length_keys(answer, question), answer


def _longest(plan, answer):
    return np.array([answer[b[b >= 0]].max() for b in plan])


def test_a_bucketed_epoch_covers_every_pair_once_and_changes_every_epoch(trecqa):
    qids, labels, keys, answer = trecqa
    n = len(labels)
    first = batching.pointwise_batches(n, 64, np.random.default_rng([7, 0]), lengths=keys)
    second = batching.pointwise_batches(n, 64, np.random.default_rng([7, 1]), lengths=keys)
    for plan in (first, second):
        assert sorted(np.concatenate(plan).tolist()) == list(range(n))
        assert all(len(b) == 64 for b in plan[:-1]) or sum(len(b) == 64 for b in plan) == len(plan) - 1
    assert [b.tolist() for b in first] != [b.tolist() for b in second]
    again = batching.pointwise_batches(n, 64, np.random.default_rng([7, 0]), lengths=keys)
    assert [b.tolist() for b in first] == [b.tolist() for b in again]


def test_bucketed_batches_hold_pairs_of_similar_length(trecqa):
    """The point of it: a batch's longest answer is much shorter than with uniform batches (real lengths)."""
    qids, labels, keys, answer = trecqa
    rng = np.random.default_rng(0)
    bucketed = _longest(batching.pointwise_batches(len(labels), 64, rng, lengths=keys), answer)
    plain = _longest(batching.pointwise_batches(len(labels), 64, rng), answer)
    padded = lambda longest, plan_sizes: float(np.sum(longest * plan_sizes))  # noqa: E731
    sizes = np.full(len(bucketed), 64)
    assert padded(bucketed, sizes) < 0.8 * padded(plain, sizes)
    # the batch order is shuffled, not sorted: lengths do not rise through the epoch
    assert not np.all(np.diff(bucketed) >= 0)


def test_bucketed_pairwise_rows_stay_pairs_of_one_question(trecqa):
    qids, labels, keys, answer = trecqa
    plan = batching.pairwise_batches(qids, labels, 64, np.random.default_rng(3), lengths=keys)
    plain = batching.pairwise_batches(qids, labels, 64, np.random.default_rng(3))
    rows = np.concatenate(plan)
    assert np.all(qids[rows[:, 0]] == qids[rows[:, 1]])
    assert np.all(labels[rows[:, 0]] >= 1) and np.all(labels[rows[:, 1]] < 1)
    assert collections.Counter(rows[:, 1].tolist()) == collections.Counter(np.concatenate(plain)[:, 1].tolist())
    longest = np.mean([answer[b].max() for b in plan])
    assert longest < np.mean([answer[b].max() for b in plain])


def test_bucketed_lists_are_whole_questions_packed_by_size(trecqa):
    qids, labels, keys, answer = trecqa
    plan = batching.listwise_batches(qids, labels, 256, np.random.default_rng(5), lengths=keys)
    seen = []
    for batch in plan:
        for row in batch:
            real = row[row >= 0]
            assert len(set(qids[real])) == 1
            seen.append(qids[real[0]])
            assert sorted(real.tolist()) == sorted(np.flatnonzero(qids == qids[real[0]]).tolist())
        assert len(batch) == 1 or batch.size <= 256
    with_positive = {q for q in set(qids) if labels[qids == q].max() >= 1}
    assert sorted(seen) == sorted(with_positive)
    # packed by size: fewer padded slots than packing lists in random order
    plain = batching.listwise_batches(qids, labels, 256, np.random.default_rng(5))
    padding = lambda plan: sum(int(np.sum(b < 0)) for b in plan)  # noqa: E731
    assert padding(plan) < padding(plain)


def test_length_keys_order_by_the_first_length_then_the_next():
    keys = batching.length_keys(np.array([3, 1, 3, 2]), np.array([1, 9, 0, 5]))
    assert np.argsort(keys, kind="stable").tolist() == [1, 3, 2, 0]


def test_scoring_sorts_by_length_and_returns_the_callers_order():
    """`pipeline.predict` scores in length order but gives outputs in the input order; a model that does not
    mask (its output depends on the batch's padded width) shows the batches really are length-sorted."""
    import keras

    from keras_match.inputs import pipeline
    from keras_match.models.common import output_head
    from keras_match.preprocessors.pair import PairPreprocessor

    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("question", "answer")}
    width = keras.layers.Lambda(lambda x: keras.ops.cast(keras.ops.shape(x)[1], "float32")
                                * keras.ops.ones_like(keras.ops.cast(x[:, :1], "float32")), output_shape=(1,))
    x = keras.layers.Concatenate()([width(inputs["answer"]), width(inputs["question"])])
    model = keras.Model(inputs, output_head(x, "score"))
    model.get_layer("relevance_score").set_weights([np.array([[1.0], [0.0]], "float32"), np.zeros(1, "float32")])
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, 40)
    answer = np.zeros((40, 30), np.int32)
    for row, length in enumerate(lengths):
        answer[row, :length] = 5
    encoded = {"question": np.ones((40, 3), np.int32), "answer": answer}
    out = pipeline.predict(model, encoded, PairPreprocessor.SEQUENCE_INPUTS, batch_size=8)[:, 0]
    # each pair's output is the width of its batch: sorted batches of 8 -> the 8th-smallest length above it
    order = np.argsort(lengths, kind="stable")
    expected = np.empty(40)
    for start in range(0, 40, 8):
        members = order[start : start + 8]
        expected[members] = lengths[members].max()
    np.testing.assert_array_equal(out, expected)
