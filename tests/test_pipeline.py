"""keras_match.inputs.pipeline: encoding, training batches of each loss mode and scoring, with a real preprocessor
built from real TrecQA training text (the first 40 clean training questions, 2482 pairs; no model training)."""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match import datasets, tasks, text
from keras_match.inputs import batching, pipeline
from keras_match.text.features import OverlapFeatures
from keras_match.models import common
from keras_match.preprocessors.pair import PairPreprocessor

MAX_Q, MAX_A = 40, 64  # the questions here have at most 33 tokens: every batch is trimmed
SEED = 13
BATCH = {"pointwise": 64, "pairwise": 32, "listwise": 128}
SEQUENCE_INPUTS = PairPreprocessor.SEQUENCE_INPUTS  # ("answer", "question")


# ---- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def examples(data_dir):
    ds = datasets.load("trecqa", "clean", data_dir)
    return tasks.RankingTask().examples(ds["train"].head(40))


@pytest.fixture(scope="module")
def training_texts(examples):
    return list(np.unique(examples.texts["question"])) + list(examples.texts["answer"])


@pytest.fixture(scope="module")
def preprocessor(training_texts):
    return PairPreprocessor(text.TextEncoder.build(training_texts), max_question_length=MAX_Q,
                            max_answer_length=MAX_A, overlap_features=True,
                            document_frequencies=OverlapFeatures.build(training_texts))


@pytest.fixture(scope="module")
def plain_preprocessor(preprocessor):
    return PairPreprocessor(preprocessor.encoder, max_question_length=MAX_Q, max_answer_length=MAX_A)


@pytest.fixture(scope="module")
def inputs(preprocessor, examples):
    encoded = pipeline.encode(preprocessor, examples.texts, batch_size=512)  # several preprocessor calls
    for value in encoded.values():
        value.flags.writeable = False  # nothing downstream may modify the encoded inputs
    return encoded


def _epoch(dataset):
    return [({k: v.numpy() for k, v in x.items()}, y.numpy()) for x, y in dataset]


def _plan(examples, mode, epoch, seed=SEED, list_size=None):
    return batching.plan(mode, examples.groups, examples.labels, BATCH[mode], np.random.default_rng([seed, epoch]),
                         list_size=list_size)


def _expected_batch(inputs, index):
    """The untrimmed inputs of a plan's batch, padded list items all zero."""
    padded = index == batching.PAD_INDEX
    out = {}
    for key, value in inputs.items():
        rows = value[np.where(padded, 0, index)].copy()
        rows[padded] = 0
        out[key] = rows
    return out


def _check_trimmed(batch, full):
    """`batch` is `full` cut to its longest text: the cut columns are padding, the last kept one is not."""
    for key in ("question", "answer"):
        width = batch[key].shape[-1]
        assert 1 <= width <= full[key].shape[-1]
        np.testing.assert_array_equal(batch[key], full[key][..., :width])
        assert not np.any(full[key][..., width:])
        assert np.any(batch[key][..., -1]) or not np.any(batch[key])
    np.testing.assert_array_equal(batch["features"], full["features"])


# ---- encode -------------------------------------------------------------------------------------------------


def test_encode_equals_the_preprocessor_on_the_whole_batch(preprocessor, examples, inputs):
    direct = preprocessor(examples.texts)
    assert set(inputs) == {"question", "answer", "features"}
    n = len(examples)
    assert inputs["question"].shape == (n, MAX_Q) and inputs["question"].dtype == np.int32
    assert inputs["answer"].shape == (n, MAX_A) and inputs["answer"].dtype == np.int32
    assert inputs["features"].shape == (n, 4) and inputs["features"].dtype == np.float32
    np.testing.assert_array_equal(inputs["question"], direct["question"].numpy())
    np.testing.assert_array_equal(inputs["answer"], direct["answer"].numpy())
    np.testing.assert_allclose(inputs["features"], direct["features"].numpy(), rtol=1e-6, atol=1e-7)
    # real text: every answer has tokens, many are cut at the maximum length
    assert np.all(inputs["answer"][:, 0] != 0)
    assert np.any(inputs["answer"][:, -1] != 0)


def test_encode_batch_size_does_not_change_the_result(preprocessor, examples, inputs):
    texts = {key: value[:300] for key, value in examples.texts.items()}
    small = pipeline.encode(preprocessor, texts, batch_size=7)  # last chunk of 6 texts
    for key in inputs:
        np.testing.assert_allclose(small[key], inputs[key][:300], rtol=1e-6, atol=1e-7)


def test_encode_nothing_gives_empty_arrays_of_the_right_widths(preprocessor, plain_preprocessor):
    empty = pipeline.encode(preprocessor, {"question": [], "answer": []})
    assert {k: (v.shape, v.dtype) for k, v in empty.items()} == {
        "question": ((0, MAX_Q), np.dtype(np.int32)),
        "answer": ((0, MAX_A), np.dtype(np.int32)),
        "features": ((0, 4), np.dtype(np.float32)),
    }
    empty = pipeline.encode(plain_preprocessor, {"question": np.array([], dtype=object), "answer": []})
    assert {k: v.shape for k, v in empty.items()} == {"question": (0, MAX_Q), "answer": (0, MAX_A)}


def test_encode_rejects_inputs_of_different_lengths(preprocessor):
    with pytest.raises(ValueError, match="same length"):
        pipeline.encode(preprocessor, {"question": ["a", "b"], "answer": ["a"]})
    with pytest.raises(ValueError, match="same length"):
        pipeline.encode(preprocessor, {"question": [], "answer": ["a"]})


def test_encode_rejects_non_text(preprocessor):
    with pytest.raises(TypeError, match=r"question\[1\] is NoneType, not str"):  # the field and the index
        pipeline.encode(preprocessor, {"question": ["a", None], "answer": ["a", "b"]})


def test_encode_accepts_utf8_bytes(preprocessor, examples):
    questions = list(examples.texts["question"][:25]) + ["Where is the café ?"]
    answers = list(examples.texts["answer"][:25]) + ["Le café est à Paris ."]
    as_str = pipeline.encode(preprocessor, {"question": questions, "answer": answers})
    as_bytes = pipeline.encode(preprocessor, {"question": [q.encode("utf-8") for q in questions],
                                              "answer": np.array([a.encode("utf-8") for a in answers], object)})
    mixed = pipeline.encode(preprocessor, {"question": [q.encode("utf-8") if i % 2 else q
                                                        for i, q in enumerate(questions)], "answer": answers})
    for key in as_str:
        np.testing.assert_array_equal(as_bytes[key], as_str[key])
        np.testing.assert_array_equal(mixed[key], as_str[key])


def test_encode_accepts_invalid_utf8_as_replacement_characters(preprocessor):
    raw = [b"caf\xe9 in the city", b"\xff\xfe who ?"]
    decoded = [t.decode("utf-8", errors="replace") for t in raw]  # "caf\ufffd ...", "\ufffd\ufffd who ?"
    from_bytes = pipeline.encode(preprocessor, {"question": raw, "answer": raw})
    from_str = pipeline.encode(preprocessor, {"question": decoded, "answer": decoded})
    for key in from_str:
        np.testing.assert_array_equal(from_bytes[key], from_str[key])
    assert np.all(from_bytes["question"][:, 0] != 0)


def test_encode_traces_the_preprocessor_once_and_again_when_its_state_changes(training_texts, examples):
    texts = {key: value[:50] for key, value in examples.texts.items()}
    preprocessor = PairPreprocessor(text.TextEncoder.build(training_texts), max_question_length=MAX_Q,
                                    max_answer_length=MAX_A)
    first = pipeline.encode(preprocessor, texts)
    function = pipeline.encoding_function(preprocessor)
    for _ in range(3):
        again = pipeline.encode(preprocessor, texts, batch_size=16)  # other batch sizes: the same trace
        for key in first:
            np.testing.assert_array_equal(again[key], first[key])
    assert function.experimental_get_tracing_count() == 1
    assert pipeline.encoding_function(preprocessor) is function

    # a new vocabulary (the same words reversed): new ids, not the cached graph's
    preprocessor.set_vocabulary(list(reversed(preprocessor.encoder.vocabulary)))
    renumbered = pipeline.encode(preprocessor, texts)
    np.testing.assert_array_equal(renumbered["question"], preprocessor(texts)["question"].numpy())
    assert (renumbered["question"] != first["question"]).any()
    # a shorter truncation length set on the object: the new width
    preprocessor.max_answer_length = 5
    assert pipeline.encode(preprocessor, texts)["answer"].shape == (50, 5)
    assert pipeline.encoding_function(preprocessor) is not function

    # the cached function does not keep its preprocessor alive
    import gc
    import weakref

    gone = weakref.ref(preprocessor)
    del preprocessor, function
    gc.collect()
    assert gone() is None


# ---- training_dataset ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["pointwise", "pairwise", "listwise"])
def test_training_batches_are_the_plan_trimmed(inputs, examples, mode):
    dataset = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS)
    batches = _epoch(dataset)
    plan = _plan(examples, mode, 0)
    assert len(batches) == len(plan)
    widths = set()
    for (x, y), index in zip(batches, plan):
        assert set(x) == {"question", "answer", "features"}
        rank = {"pointwise": 2, "pairwise": 3, "listwise": 3}[mode]
        assert x["question"].ndim == rank and x["answer"].ndim == rank
        assert x["question"].shape[:-1] == index.shape and x["features"].shape == index.shape + (4,)
        if mode == "pairwise":
            assert index.shape[1] == 2
        assert x["question"].dtype == np.int32 and x["features"].dtype == np.float32
        _check_trimmed(x, _expected_batch(inputs, index))
        widths.add(x["question"].shape[-1])
        labels = examples.labels
        if mode == "pointwise":
            assert y.dtype == np.int32
            np.testing.assert_array_equal(y, labels[index])
        elif mode == "pairwise":
            assert y.dtype == np.float32 and y.shape == (len(index),) and not np.any(y)
            assert np.all(labels[index[:, 0]] >= 1) and np.all(labels[index[:, 1]] == 0)
            assert np.all(examples.groups[index[:, 0]] == examples.groups[index[:, 1]])
        else:
            assert y.dtype == np.float32 and y.shape == index.shape
    assert max(widths) < MAX_Q and len(widths) > 1  # each batch is cut to its own longest text


def test_pairwise_rows_match_back_to_positive_then_negative_examples(inputs, examples):
    """Without the plan: look each pair's rows up among the encoded examples of that question."""
    by_row = collections.defaultdict(set)
    for i in range(len(examples)):
        by_row[(inputs["question"][i].tobytes(), inputs["answer"][i].tobytes())].add(i)
    dataset = pipeline.training_dataset(inputs, examples, "pairwise", 32, SEED, SEQUENCE_INPUTS)
    negatives = collections.Counter()
    for x, y in _epoch(dataset):
        q = np.pad(x["question"], [(0, 0), (0, 0), (0, MAX_Q - x["question"].shape[-1])])
        a = np.pad(x["answer"], [(0, 0), (0, 0), (0, MAX_A - x["answer"].shape[-1])])
        for pair in range(len(y)):
            found = [by_row[(q[pair, col].tobytes(), a[pair, col].tobytes())] for col in (0, 1)]
            assert found[0] and found[1]
            assert any(examples.labels[i] >= 1 for i in found[0])
            assert all(examples.labels[i] == 0 for i in found[1])
            negatives[min(found[1])] += 1
    expected = sum(1 for i in range(len(examples)) if examples.labels[i] == 0)  # every question has a positive
    assert sum(negatives.values()) == expected


def test_listwise_labels_mark_exactly_the_padded_items(inputs, examples):
    dataset = pipeline.training_dataset(inputs, examples, "listwise", 128, SEED, SEQUENCE_INPUTS, list_size=6)
    batches = _epoch(dataset)
    plan = _plan(examples, "listwise", 0, list_size=6)
    assert len(batches) == len(plan)
    saw_padding = False
    for (x, y), index in zip(batches, plan):
        padded = y == -1
        np.testing.assert_array_equal(padded, index == batching.PAD_INDEX)
        saw_padding |= bool(padded.any())
        assert not np.any(x["question"][padded]) and not np.any(x["answer"][padded])
        assert not np.any(x["features"][padded])
        real = ~padded
        np.testing.assert_array_equal(y[real], examples.labels[index[real]].astype(np.float32))
        assert np.all(x["answer"][real][:, 0] != 0)  # real candidates are never all padding
        assert x["question"].shape[1] <= 6
        assert np.all(np.any(y >= 1, axis=1))  # every list holds a positive
    assert saw_padding  # questions with fewer than 6 candidates


def test_listwise_full_lists(inputs, examples):
    batches = _epoch(pipeline.training_dataset(inputs, examples, "listwise", 128, SEED, SEQUENCE_INPUTS))
    for x, y in batches:
        assert y.shape[0] * y.shape[1] <= 128 or y.shape[0] == 1
        assert x["answer"].shape[:2] == y.shape
    total_real = sum(int(np.sum(y != -1)) for _, y in batches)
    assert total_real == len(examples)  # all 40 questions have a positive: every candidate once
    assert sum(len(y) for _, y in batches) == len(set(examples.groups.tolist()))


@pytest.mark.parametrize("mode", ["pointwise", "pairwise", "listwise"])
def test_each_pass_is_the_next_epoch(inputs, examples, mode):
    dataset = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS)
    first, second, third = _epoch(dataset), _epoch(dataset), _epoch(dataset)
    for epoch, batches in enumerate((first, second, third)):
        plan = _plan(examples, mode, epoch)
        assert len(batches) == len(plan)
        for (x, _), index in zip(batches, plan):
            _check_trimmed(x, _expected_batch(inputs, index))
    assert not _same_epoch(first, second) and not _same_epoch(second, third)

    resumed = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS, first_epoch=1)
    assert _same_epoch(_epoch(resumed), second)
    assert _same_epoch(_epoch(resumed), third)
    again = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS)
    assert _same_epoch(_epoch(again), first)
    other_seed = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED + 1, SEQUENCE_INPUTS)
    assert not _same_epoch(_epoch(other_seed), first)


@pytest.mark.parametrize("mode", ["pointwise", "pairwise", "listwise"])
def test_training_epochs_yield_every_epoch_in_one_pass_with_equal_counts(inputs, examples, mode):
    """What training fits on: epochs back to back, each `steps_per_epoch` batches, each example (list) once per
    epoch; epochs 0..2 are `training_dataset`'s passes (listwise: the same lists, a batch halved where needed)."""
    run = pipeline.training_epochs(inputs, examples, mode, BATCH[mode], SEED, 3, SEQUENCE_INPUTS)
    batches = _epoch(run.dataset)
    steps = run.steps_per_epoch
    assert len(batches) == 3 * steps
    passes = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS)
    for epoch in range(3):
        mine, theirs = batches[epoch * steps:(epoch + 1) * steps], _epoch(passes)
        if mode != "listwise":
            assert _same_epoch(mine, theirs)
        else:
            assert len(mine) >= len(theirs)
            assert _lists_of(mine) == _lists_of(theirs)  # the same lists in the same order
    resumed = pipeline.training_epochs(inputs, examples, mode, BATCH[mode], SEED, 3, SEQUENCE_INPUTS, first_epoch=1)
    assert resumed.steps_per_epoch == steps
    assert _same_epoch(_epoch(resumed.dataset), batches[steps:])
    with pytest.raises(ValueError, match="epochs must be an integer above first_epoch=2"):
        pipeline.training_epochs(inputs, examples, mode, BATCH[mode], SEED, 2, SEQUENCE_INPUTS, first_epoch=2)


def test_listwise_epochs_of_unequal_plans_are_cut_to_the_longest(inputs, examples):
    counts = [len(_plan(examples, "listwise", e, list_size=None)) for e in range(6)]
    run = pipeline.training_epochs(inputs, examples, "listwise", BATCH["listwise"], SEED, 6, SEQUENCE_INPUTS)
    assert run.steps_per_epoch == max(counts)


def _lists_of(batches):
    """Each real list of a listwise epoch as a tuple of its (question ids, answer ids) rows, in order."""
    out = []
    for x, y in batches:
        for row in range(len(y)):
            real = y[row] != -1
            out.append(tuple(x["answer"][row][real][:, :5].reshape(-1).tolist()) + (int(real.sum()),))
    return out


def _same_epoch(a, b):
    if len(a) != len(b):
        return False
    for (xa, ya), (xb, yb) in zip(a, b):
        if not np.array_equal(ya, yb):
            return False
        for key in xa:
            if xa[key].shape != xb[key].shape or not np.array_equal(xa[key], xb[key]):
                return False
    return True


@pytest.mark.parametrize("bucketing", [False, True])
def test_pointwise_epoch_covers_every_example_once(inputs, examples, bucketing):
    dataset = pipeline.training_dataset(inputs, examples, "pointwise", 64, SEED, SEQUENCE_INPUTS, bucketing=bucketing)
    assert int(dataset.cardinality()) == -(-len(examples) // 64)
    batches = _epoch(dataset)
    assert sorted(len(y) for _, y in batches)[1:] == [64] * (len(batches) - 1)  # one short batch at most
    if bucketing:  # length-bucketed: the batches cost less padding than shuffled ones
        plain = _epoch(pipeline.training_dataset(inputs, examples, "pointwise", 64, SEED, SEQUENCE_INPUTS))
        cost = lambda epoch: sum(x["answer"].size for x, _ in epoch)  # noqa: E731
        assert cost(batches) < 0.85 * cost(plain)
        assert [x["answer"].shape for x, _ in _epoch(dataset)] != [x["answer"].shape for x, _ in batches]

    def rows(q, a, f, y):
        q = np.pad(q, [(0, 0), (0, MAX_Q - q.shape[1])])
        a = np.pad(a, [(0, 0), (0, MAX_A - a.shape[1])])
        table = np.concatenate([q, a, f.view(np.int32), y[:, None]], axis=1)
        return sorted(map(tuple, table.tolist()))

    seen = [r for x, y in batches for r in rows(x["question"], x["answer"], x["features"], y)]
    assert sorted(seen) == rows(inputs["question"], inputs["answer"], inputs["features"], examples.labels)
    # in a shuffled order: the first batch is not the first 64 examples
    first = batches[0][0]["answer"]
    assert not np.array_equal(first, inputs["answer"][:64, : first.shape[1]])


def test_pointwise_needs_no_groups(inputs, examples):
    unlabelled = pipeline.Examples(texts=examples.texts, labels=examples.labels, groups=None)
    batches = _epoch(pipeline.training_dataset(inputs, unlabelled, "pointwise", 500, SEED, SEQUENCE_INPUTS))
    assert sum(len(y) for _, y in batches) == len(examples)


@pytest.mark.parametrize("mode", ["pairwise", "listwise"])
def test_ranking_modes_need_groups(inputs, examples, mode):
    classification = pipeline.Examples(texts=examples.texts, labels=examples.labels, groups=None)
    with pytest.raises(ValueError, match="groups"):
        pipeline.training_dataset(inputs, classification, mode, 32, SEED, SEQUENCE_INPUTS)


@pytest.mark.parametrize("mode", ["pointwise", "pairwise", "listwise"])
def test_no_usable_question_raises(inputs, examples, mode):
    no_positive = pipeline.Examples(texts=examples.texts, labels=np.zeros_like(examples.labels),
                                    groups=examples.groups)
    if mode == "pointwise":  # pointwise trains on any labels
        assert len(_epoch(pipeline.training_dataset(inputs, no_positive, mode, 1000, SEED, SEQUENCE_INPUTS))) == 3
        return
    with pytest.raises(ValueError, match="no .* training batch"):
        pipeline.training_dataset(inputs, no_positive, mode, 32, SEED, SEQUENCE_INPUTS)


def test_pairwise_without_negatives_raises(inputs, examples):
    only_positive = pipeline.Examples(texts=examples.texts, labels=np.ones_like(examples.labels),
                                      groups=examples.groups)
    with pytest.raises(ValueError, match="no pairwise training batch"):
        pipeline.training_dataset(inputs, only_positive, "pairwise", 32, SEED, SEQUENCE_INPUTS)


def test_empty_training_data_raises(preprocessor):
    empty_inputs = pipeline.encode(preprocessor, {"question": [], "answer": []})
    empty = pipeline.Examples(texts={"question": [], "answer": []}, labels=np.zeros([0], np.int32),
                              groups=np.zeros([0], object))
    for mode in ("pointwise", "pairwise", "listwise"):
        with pytest.raises(ValueError):
            pipeline.training_dataset(empty_inputs, empty, mode, 8, SEED, SEQUENCE_INPUTS)


def test_training_dataset_rejects_a_bad_mode_or_batch_size(inputs, examples):
    with pytest.raises(ValueError):
        pipeline.training_dataset(inputs, examples, "triplet", 32, SEED, SEQUENCE_INPUTS)
    with pytest.raises(ValueError):
        pipeline.training_dataset(inputs, examples, "pairwise", 0, SEED, SEQUENCE_INPUTS)


def test_training_dataset_does_not_modify_the_inputs(inputs, examples):
    # the fixture's arrays are read-only: an in-place write while gathering would raise
    for mode in ("pointwise", "pairwise", "listwise"):
        _epoch(pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS, list_size=3))


# ---- predict ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(preprocessor):
    """Masked embedding + masked mean pooling: padding never changes its output."""
    keras.utils.set_random_seed(0)
    question, answer = common.token_inputs("question", "answer")
    features = common.feature_input(4)
    embedding = keras.layers.Embedding(preprocessor.vocab_size, 8, mask_zero=True)
    pooled = [keras.layers.GlobalAveragePooling1D()(embedding(x)) for x in (question, answer)]
    x = keras.layers.Concatenate()(pooled + [features])
    x = keras.layers.Dense(8, activation="tanh")(x)
    return keras.Model({"question": question, "answer": answer, "features": features}, common.output_head(x))


def test_predict_equals_the_model_on_padded_inputs_in_the_callers_order(tiny_model, inputs):
    order = np.random.default_rng(0).permutation(len(inputs["question"]))[:700]
    subset = {key: value[order] for key, value in inputs.items()}
    outputs = pipeline.predict(tiny_model, subset, SEQUENCE_INPUTS, batch_size=64)
    assert outputs.shape == (700, 2) and outputs.dtype == np.float32
    direct = keras.ops.convert_to_numpy(tiny_model(subset, training=False))
    np.testing.assert_allclose(outputs, direct, rtol=1e-5, atol=1e-6)
    # the caller's order, whatever it is
    reverse = {key: value[::-1] for key, value in subset.items()}
    np.testing.assert_allclose(pipeline.predict(tiny_model, reverse, SEQUENCE_INPUTS, batch_size=50), outputs[::-1],
                               rtol=1e-5, atol=1e-6)
    # the outputs depend on the input (a constant model would pass the checks above)
    assert np.std(outputs[:, 1]) > 1e-4


def test_every_dataset_the_pipeline_iterates_has_autotuning_off(tiny_model, inputs, examples, monkeypatch):
    """`tf.data`'s autotuning (on unless a dataset's options turn it off) made deleting an iterator wait for its
    model thread's period, 18 s of the 41 s of scoring a split (`pipeline.without_autotune`): the scoring dataset
    `predict` iterates and the training datasets have it off."""
    iterated = []
    iterate = tf.data.Dataset.__iter__

    def spy(dataset):
        iterated.append(dataset.options().autotune.enabled)
        return iterate(dataset)

    monkeypatch.setattr(tf.data.Dataset, "__iter__", spy)
    pipeline.predict(tiny_model, {key: value[:300] for key, value in inputs.items()}, SEQUENCE_INPUTS, batch_size=64)
    assert iterated == [False]
    assert tf.data.Dataset.from_tensor_slices([1]).options().autotune.enabled is None  # the default: on
    for mode in ("pointwise", "pairwise", "listwise"):
        epochs = pipeline.training_epochs(inputs, examples, mode, BATCH[mode], SEED, 2, SEQUENCE_INPUTS)
        assert epochs.dataset.options().autotune.enabled is False, mode
        passes = pipeline.training_dataset(inputs, examples, mode, BATCH[mode], SEED, SEQUENCE_INPUTS)
        assert passes.options().autotune.enabled is False, mode


def test_predict_nothing(tiny_model, inputs):
    empty = {key: value[:0] for key, value in inputs.items()}
    outputs = pipeline.predict(tiny_model, empty, SEQUENCE_INPUTS)
    assert outputs.shape == (0, 2) and outputs.dtype == np.float32


def test_predict_score_head_nothing(preprocessor):
    question, answer = common.token_inputs("question", "answer")
    embedding = keras.layers.Embedding(preprocessor.vocab_size, 4, mask_zero=True)
    pooled = [keras.layers.GlobalAveragePooling1D()(embedding(x)) for x in (question, answer)]
    model = keras.Model({"question": question, "answer": answer},
                        common.output_head(keras.layers.Concatenate()(pooled), head="score"))
    empty = {"question": np.zeros([0, MAX_Q], np.int32), "answer": np.zeros([0, MAX_A], np.int32)}
    assert pipeline.predict(model, empty, SEQUENCE_INPUTS).shape == (0, 1)


def test_predict_cuts_each_batch_to_its_longest_text(preprocessor, inputs):
    """With a model that does not mask, the outputs show the cut: they equal the model on each batch trimmed to
    its own longest text, not on the padded inputs. Batches are made in length order (answer length in steps
    of 4, question length, answer length) and the outputs returned in the caller's order."""
    keras.utils.set_random_seed(1)
    question, answer = common.token_inputs("question", "answer")
    embedding = keras.layers.Embedding(preprocessor.vocab_size, 4)  # no mask: padding counts in the mean
    pooled = [keras.layers.GlobalAveragePooling1D()(embedding(x)) for x in (question, answer)]
    model = keras.Model({"question": question, "answer": answer},
                        common.output_head(keras.layers.Concatenate()(pooled), head="score"))
    subset = {key: inputs[key][:150] for key in ("question", "answer")}
    outputs = pipeline.predict(model, subset, SEQUENCE_INPUTS, batch_size=40)
    answer_length = np.count_nonzero(subset["answer"], axis=1)
    question_length = np.count_nonzero(subset["question"], axis=1)
    # the key: answer length in steps of 4, then question length, then exact answer length (stable)
    order = np.lexsort((answer_length, question_length, answer_length // 4))
    expected = np.empty_like(outputs)
    for start in range(0, 150, 40):
        members = order[start:start + 40]
        batch = {key: value[members] for key, value in subset.items()}
        widths = {key: int(np.max(np.count_nonzero(value, axis=1))) for key, value in batch.items()}
        expected[members] = keras.ops.convert_to_numpy(
            model({key: value[:, :widths[key]] for key, value in batch.items()}, training=False))
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    untrimmed = keras.ops.convert_to_numpy(model(subset, training=False))
    assert not np.allclose(outputs, untrimmed, atol=1e-4)
