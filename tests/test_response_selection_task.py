"""ResponseSelectionTask (keras_match.tasks.response_selection): its registration and config, its examples of the
real dialog bAbI splits, per-response vs per-dialog accuracy and ties on hand-made scores, the vectorised figures
against a loop over examples on the real task 6 sizes, the serving outputs, and a bag-of-words baseline on task 1
dev."""

import time

import numpy as np
import pytest
import tensorflow as tf

from keras_match import datasets, tasks
from keras_match.tasks.response_selection import (
    RESPOND_SIGNATURE, ResponseExamples, ResponseSelectionTask, choose, evaluate_selection
)


@pytest.fixture(scope="module")
def task1(data_dir):
    return datasets.load("dialog-babi-task1", data_dir=data_dir)


@pytest.fixture(scope="module")
def task6(data_dir):
    return datasets.load("dialog-babi-task6", data_dir=data_dir)


def reference(scores, gold, dialogs):
    """Per-response and per-dialog accuracy, one example at a time (the lowest index among equal top scores)."""
    right = []
    for row, g in zip(np.asarray(scores).tolist(), np.asarray(gold).tolist()):
        right.append(row.index(max(row)) == g)
    by_dialog = {}
    for ok, d in zip(right, dialogs):
        by_dialog[d] = by_dialog.get(d, True) and ok
    return sum(right) / len(right), sum(by_dialog.values()) / len(by_dialog)


# ---- registration, config, examples -----------------------------------------------------------------------------


def test_registered_and_made_from_the_dataset(task1, task6):
    assert tasks.registered()["response_selection"] is ResponseSelectionTask
    task = tasks.task_for(task1)
    assert isinstance(task, ResponseSelectionTask) and task.kind == task1.task == "response_selection"
    assert task.monitor == "per_response_accuracy" and task.monitor in task.figures
    assert task.text_fields == ("history", "context") and task.loss_modes == ("pointwise",)
    config = task.config()
    assert config == {"kind": "response_selection", "num_candidates": 4212,
                      "candidates_sha256": task1.candidates.sha256, "candidates_file": "dialog-babi-candidates.txt"}
    assert tasks.task_from_config({"task": config}).config() == config
    assert tasks.task_for(task6).config()["num_candidates"] == 2407
    assert task.model_settings({"head": "softmax"}) == {"head": "classification", "num_classes": 4212}


def test_examples_of_a_real_split(task1):
    task = tasks.task_for(task1)
    split = task1["dev"]
    examples = task.examples(split)
    assert isinstance(examples, ResponseExamples) and set(examples.texts) == set(task.text_fields) | {"candidates"}
    n, c = len(split), 4212
    assert len(examples) == n == 6015 and examples.num_candidates == c
    history, context, candidates = (examples.texts[k] for k in ("history", "context", "candidates"))
    assert history.shape == (n, int(split.history_length.max())) and context.shape == (n,)
    assert candidates.shape == (n, c) and candidates.strides[0] == 0  # one copy of the candidates for every row
    assert candidates[123, 7] == task1.candidates[7] and examples.candidates.tolist() == task1.candidates.texts.tolist()
    assert examples.labels.dtype == np.int32 and (examples.candidates[examples.labels] == split.responses()).all()
    assert examples.groups.tolist() == split.dialog_ids().tolist() and len(set(examples.groups)) == 1000
    for i in (0, 1, 100, n - 1):
        example = split[i]
        assert examples.ids[i] == example.id and context[i] == example.context
        assert tuple(history[i, : examples.history_lengths[i]]) == example.history
    assert task.accepts(split) is None


def test_splits_of_other_tasks_are_refused(task1, task6, data_dir):
    task = tasks.task_for(task1)
    assert "ranks the candidates of 'dialog-babi-task6-dstc2-candidates.txt' (2,407)" in task.accepts(task6["dev"])
    with pytest.raises(ValueError, match="split 'dev' ranks the candidates of"):
        task.check_split(task6["dev"])
    trecqa = datasets.load("trecqa", data_dir=data_dir)
    assert "is not a response-selection split" in task.accepts(trecqa["dev"])
    assert "response-selection split" not in (tasks.RankingTask().accepts(trecqa["dev"]) or "")


# ---- figures ---------------------------------------------------------------------------------------------------


def test_per_response_and_per_dialog_accuracy_differ():
    # dialog "a": 3 turns, 2 right; dialog "b": 2 turns, both right; dialog "c": 1 turn, wrong; 4 candidates
    scores = np.array([[0.9, 0.1, 0.0, 0.0],   # a: chooses 0, gold 0: right
                       [0.1, 0.9, 0.0, 0.0],   # b: chooses 1, gold 1: right
                       [0.0, 0.2, 0.7, 0.1],   # a: chooses 2, gold 3: wrong
                       [0.0, 0.0, 0.1, 0.9],   # b: chooses 3, gold 3: right
                       [0.5, 0.0, 0.0, 0.4],   # a: chooses 0, gold 0: right
                       [0.3, 0.6, 0.0, 0.0]])  # c: chooses 1, gold 2: wrong
    gold = np.array([0, 1, 3, 3, 0, 2])
    dialogs = np.array(["a", "b", "a", "b", "a", "c"], dtype=object)  # a dialog's turns need not be adjacent
    report = evaluate_selection(scores, gold, dialogs)
    assert report == {"per_response_accuracy": 4 / 6, "per_dialog_accuracy": 1 / 3, "num_examples": 6,
                      "num_dialogs": 3, "num_candidates": 4}
    assert (report["per_response_accuracy"], report["per_dialog_accuracy"]) == reference(scores, gold, dialogs)


def test_ties_choose_the_lowest_candidate_index():
    scores = np.array([[0.2, 0.7, 0.1, 0.7],
                       [0.2, 0.7, 0.1, 0.7],
                       [1.0, 1.0, 1.0, 1.0],
                       [-3.0, -1.0, -1.0, -2.0]])
    assert choose(scores).tolist() == [1, 1, 0, 1]
    report = evaluate_selection(scores, [1, 3, 0, 2], ["x", "y", "z", "w"])
    assert report["per_response_accuracy"] == 0.5 and report["per_dialog_accuracy"] == 0.5
    # the exported choice follows the same rule (tf.argmax does not promise one)
    task = ResponseSelectionTask(4)
    outputs = task.serving_outputs("classification", tf.constant(scores, tf.float32))
    assert outputs["choice"].dtype == tf.int32 and outputs["choice"].numpy().tolist() == [1, 1, 0, 1]
    np.testing.assert_allclose(outputs["scores"].numpy(), scores)


def test_bad_scores_are_refused():
    gold, dialogs = np.array([0, 1]), np.array(["a", "a"], dtype=object)
    with pytest.raises(ValueError, match=r"non-finite scores \(NaN or inf\) in 1 example\(s\), the first at rows"):
        evaluate_selection(np.array([[1.0, 0.0], [np.nan, 0.0]]), gold, dialogs)
    with pytest.raises(ValueError, match=r"need gold \[2\] and dialogs \[2\]"):
        evaluate_selection(np.zeros([2, 2]), gold[:1], dialogs)
    with pytest.raises(ValueError, match=r"gold indices must be in 0..1"):
        evaluate_selection(np.zeros([2, 2]), np.array([0, 2]), dialogs)
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate_selection(np.zeros([0, 2]), gold[:0], dialogs[:0])
    task = ResponseSelectionTask(2)
    examples = ResponseExamples(texts={}, labels=gold, groups=dialogs, candidates=np.array(["x", "y"], object))
    with pytest.raises(ValueError, match=r"expected a score per \(example, candidate\): \[2, 2\]"):
        task.evaluate("classification", np.zeros([2, 3]), examples)


def test_one_ranking_score_per_row_reads_as_the_matrix():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=[5, 3])
    gold, dialogs = np.array([0, 1, 2, 0, 1]), np.array(list("aabbc"), dtype=object)
    examples = ResponseExamples(texts={}, labels=gold, groups=dialogs, candidates=np.array(list("xyz"), object))
    task = ResponseSelectionTask(3)
    expected = evaluate_selection(scores, gold, dialogs)
    assert task.evaluate("classification", scores, examples) == expected
    assert task.evaluate("score", scores.reshape(-1, 1), examples) == expected
    probabilities = 1 / (1 + np.exp(-scores.reshape(-1)))
    assert task.evaluate("softmax", np.stack([1 - probabilities, probabilities], -1), examples) == expected


def test_the_figures_are_vectorised_on_task6_sizes(task6):
    task = tasks.task_for(task6)
    rng = np.random.default_rng(1)
    # dev (4,159 x 2,407): against the loop over examples, on scores with many ties
    examples = task.examples(task6["dev"])
    n, c = len(examples), examples.num_candidates
    scores = rng.integers(0, 4, size=[n, c]).astype(np.float32)
    scores[np.arange(n), examples.labels] += rng.integers(0, 2, size=n) * 3  # the gold is chosen in about 40%
    report = task.evaluate("classification", scores, examples)
    assert (report["per_response_accuracy"], report["per_dialog_accuracy"]) == pytest.approx(
        reference(scores, examples.labels, examples.groups))
    assert 0.3 < report["per_response_accuracy"] < 0.5 and report["num_dialogs"] == 500
    # test (11,237 x 2,407): the gold scored highest everywhere but in one turn, so one dialog is wrong
    examples = task.examples(task6["test"])
    n, c = len(examples), examples.num_candidates
    assert (n, c) == (11237, 2407)
    oracle = np.zeros([n, c], np.float32)
    oracle[np.arange(n), examples.labels] = 1.0
    oracle[7] = 0.0  # all equal: chooses candidate 0
    assert examples.labels[7] != 0
    start = time.perf_counter()
    report = task.evaluate("classification", oracle, examples)
    seconds = time.perf_counter() - start
    assert seconds < 2, seconds  # 0.06 s here
    assert report["per_response_accuracy"] == (n - 1) / n and report["per_dialog_accuracy"] == 1116 / 1117
    assert task.summary(report) == (f"per-response accuracy {(n - 1) / n:.4f}  per-dialog accuracy {1116 / 1117:.4f}  "
                                    "(11,237 responses in 1,117 dialogs, 2,407 candidates)")


def bag_of_words_scores(examples):
    """How many distinct words each candidate shares with the last user utterance: [n, C]."""
    contexts = examples.texts["context"]
    vocabulary = {}
    for text in contexts:
        for word in set(text.split()):
            vocabulary.setdefault(word, len(vocabulary))
    users = np.zeros([len(contexts), len(vocabulary)], np.float32)
    for i, text in enumerate(contexts):
        users[i, [vocabulary[w] for w in set(text.split())]] = 1
    candidates = np.zeros([len(examples.candidates), len(vocabulary)], np.float32)
    for j, text in enumerate(examples.candidates):
        candidates[j, [vocabulary[w] for w in set(text.split()) if w in vocabulary]] = 1
    return users @ candidates.T


def test_a_bag_of_words_baseline_on_task1_dev(task1):
    task = tasks.task_for(task1)
    examples = task.examples(task1["dev"])
    scores = bag_of_words_scores(examples)
    report = task.evaluate("classification", scores, examples)
    assert (report["per_response_accuracy"], report["per_dialog_accuracy"]) == reference(
        scores, examples.labels, examples.groups)
    # 362 of 6,015 responses (6.02%; Bordes & Weston 2017 report 5.6% for TF-IDF match on task 1 test); no dialog
    # is all right: a third of the turns are <SILENCE>, which shares no word with any candidate
    assert round(report["per_response_accuracy"] * report["num_examples"]) == 362
    assert report["per_response_accuracy"] == pytest.approx(0.0602, abs=5e-5) and report["per_dialog_accuracy"] == 0
    print(f"\nbag-of-words overlap, task 1 dev: {task.summary(report)}")


# ---- serving -----------------------------------------------------------------------------------------------------


class _DialogPreprocessor:
    TEXT_INPUTS = {"history": 2, "context": 1, "candidates": 2}


def test_signatures_and_the_respond_endpoint():
    task = ResponseSelectionTask(3)
    table = task.signature_outputs("classification", 3)
    assert table["serving_default"] == {"scores": ("float32", [None, 3]), "choice": ("int32", [None])}
    assert table["serve_ids"] == table["serving_default"]
    assert table[RESPOND_SIGNATURE] == {"scores": ("float32", [None]), "choice": ("int32", []),
                                        "response": ("string", [])}

    class _PairPreprocessor:
        TEXT_INPUTS = {"question": 1, "answer": 1}

    assert task.extra_signatures("classification", _PairPreprocessor()) == {}
    inputs, make = task.extra_signatures("classification", _DialogPreprocessor())[RESPOND_SIGNATURE]
    assert inputs == {"history": ("string", [None]), "context": ("string", []), "candidates": ("string", [None])}

    def score_texts(texts):  # a stand-in model: a candidate's score is how many words it shares with the context
        context = tf.strings.split(texts["context"])  # [1, words]
        candidates = tf.strings.split(texts["candidates"])  # [1, C, words]
        shared = tf.reduce_any(tf.equal(candidates[..., None], context[:, None, None, :]), axis=-1)
        return tf.reduce_sum(tf.cast(shared, tf.float32), axis=-1).to_tensor()

    respond = tf.function(make(score_texts), input_signature=[tf.TensorSpec([None], tf.string),
                                                             tf.TensorSpec([], tf.string),
                                                             tf.TensorSpec([None], tf.string)])
    out = respond(tf.constant(["hi", "hello"]), tf.constant("book a table for two"),
                  tf.constant(["i'm on it", "a table for two", "for two a table", "bye"]))
    assert out["scores"].numpy().tolist() == [0, 4, 4, 0]
    assert int(out["choice"]) == 1 and out["response"].numpy().decode() == "a table for two"  # tie: lowest index


def test_predictions_lines():
    task = ResponseSelectionTask(3)
    texts = {"history": np.array([["a"], ["b"]], object), "context": np.array(["x", "y"], object),
             "candidates": np.array([["r0", "r1", "r2"], ["s0", "s1", "s2"]], object)}
    lines = task.predictions("classification", np.array([[0.1, 0.7, 0.7], [0.9, 0.0, 0.1]]), texts)
    assert lines == ["1\t0.7000\tr1", "0\t0.9000\ts0"]
