"""Tests for keras_match.metrics: hand-computed cases, conventions, errors, and agreement with trec_eval
(pytrec_eval) on real TrecQA and WikiQA run files."""

import csv
import gzip

import numpy as np
import pytest

from keras_match import metrics
from keras_match.datasets.base import Candidate, Question, Split

pytrec_eval = pytest.importorskip("pytrec_eval")

TREC_MEASURES = {"map": "map", "mrr": "recip_rank", "p@1": "P_1"}


# ---------------------------------------------------------------------------------------------------------------
# Ranking and tie-breaking
# ---------------------------------------------------------------------------------------------------------------


def test_ties_broken_by_docid_string_descending():
    docids = ["1", "10", "29", "9"]
    order = metrics.rank_order([0.5, 0.5, 0.5, 0.5], docids)
    assert [docids[i] for i in order] == ["9", "29", "10", "1"]


def test_score_dominates_docid():
    docids = ["9", "29", "10", "1"]
    order = metrics.rank_order([0.1, 0.2, 0.3, 0.4], docids)
    assert [docids[i] for i in order] == ["1", "10", "29", "9"]


def test_default_docids_are_positions_as_strings():
    # 11 tied candidates: trec_eval on qrels numbering them 0..10 ranks "9" > "8" > ... > "2" > "10" > "1" > "0".
    order = metrics.rank_order(np.zeros(11))
    assert order.tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 10, 1, 0]


def test_tied_hand_computed_metrics():
    # Tied order: "9"(0) "29"(1) "10"(0) "1"(1) -> relevant at ranks 2 and 4.
    labels, scores, docids = [0, 1, 0, 1], [1.0] * 4, ["9", "29", "10", "1"]
    assert metrics.average_precision(labels, scores, docids) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert metrics.reciprocal_rank(labels, scores, docids) == pytest.approx(0.5)
    assert metrics.precision_at_k(labels, scores, 1, docids) == 0.0
    assert metrics.precision_at_k(labels, scores, 2, docids) == 0.5
    # Same ids, labels moved: relevant "9" now first.
    assert metrics.reciprocal_rank([1, 0, 0, 0], scores, docids) == 1.0


def test_untied_hand_computed_metrics():
    labels = [0, 1, 0, 0, 1, 1]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]  # relevant at ranks 2, 5, 6
    assert metrics.average_precision(labels, scores) == pytest.approx((1 / 2 + 2 / 5 + 3 / 6) / 3)
    assert metrics.reciprocal_rank(labels, scores) == pytest.approx(1 / 2)
    assert metrics.precision_at_k(labels, scores, 5) == pytest.approx(2 / 5)


def test_graded_labels_relevant_from_one():
    # Label 2 and 1 are relevant, 0 and -1 are not.
    labels, scores = [2, -1, 0, 1], [4.0, 3.0, 2.0, 1.0]
    assert metrics.average_precision(labels, scores) == pytest.approx((1 / 1 + 2 / 4) / 2)
    assert metrics.precision_at_k(labels, scores, 2) == 0.5


def test_no_relevant_gives_zero_per_question():
    for fn in (metrics.average_precision, metrics.reciprocal_rank):
        assert fn([0, 0], [1.0, 2.0]) == 0.0


def test_precision_divides_by_k_like_trec_eval():
    assert metrics.precision_at_k([1, 1], [2.0, 1.0], 5) == pytest.approx(2 / 5)


def test_recall_n_at_k():
    labels = [1, 0, 0, 0, 1, 0]
    scores = [0.5, 0.9, 0.1, 0.2, 0.95, 0.3]
    # First 4 candidates only: ranked 0.9(0) 0.5(1) 0.2 0.1 -> the single positive at rank 2.
    assert metrics.recall_n_at_k(labels, scores, n=4, k=1) == 0.0
    assert metrics.recall_n_at_k(labels, scores, n=4, k=2) == 1.0
    # All 6: positives at ranks 1 and 3.
    assert metrics.recall_n_at_k(labels, scores, n=6, k=1) == 0.5
    assert metrics.recall_n_at_k(labels, scores, n=6, k=3) == 1.0
    # R2@1 from a group whose positive comes first; tie with the negative broken by docid "1" > "0".
    assert metrics.recall_n_at_k([1, 0, 0], [0.5, 0.5, 0.9], n=2, k=1) == 0.0
    assert metrics.recall_n_at_k([1, 0, 0], [0.5, 0.5, 0.9], n=2, k=1, docids=["b", "a", "c"]) == 1.0
    with pytest.raises(ValueError, match="at least 10 candidates"):
        metrics.recall_n_at_k(labels, scores, n=10, k=1)
    with pytest.raises(ValueError, match="k <= n"):
        metrics.recall_n_at_k(labels, scores, n=2, k=3)
    with pytest.raises(ValueError, match="k must be"):
        metrics.precision_at_k(labels, scores, 0)


# ---------------------------------------------------------------------------------------------------------------
# evaluate_ranking
# ---------------------------------------------------------------------------------------------------------------

# q1: tied, relevant at ranks 2 and 4 (AP 0.5, RR 0.5, P@1 0); q2: no positive; q3: relevant first (all 1.0).
# Rows of q3 are split around q2 to check grouping does not need contiguous rows.
QIDS = ["q1"] * 4 + ["q3", "q2", "q2", "q3"]
DOCIDS = ["9", "29", "10", "1", "a", "a", "b", "b"]
SCORES = [1.0, 1.0, 1.0, 1.0, 0.7, 0.2, 0.1, 0.3]
LABELS = [0, 1, 0, 1, 1, 0, 0, 0]


def test_evaluate_skip_zero_error():
    skip = metrics.evaluate_ranking(QIDS, DOCIDS, SCORES, LABELS, metrics=("map", "mrr", "p@1", "p@2"))
    assert skip == pytest.approx(
        {"map": 0.75, "mrr": 0.75, "p@1": 0.5, "p@2": 0.5, "num_questions": 2, "num_skipped": 1}
    )
    zero = metrics.evaluate_ranking(QIDS, DOCIDS, SCORES, LABELS, no_positive="zero")
    assert zero == pytest.approx({"map": 0.5, "mrr": 0.5, "p@1": 1 / 3, "num_questions": 3, "num_skipped": 0})
    with pytest.raises(ValueError, match="'q2'"):
        metrics.evaluate_ranking(QIDS, DOCIDS, SCORES, LABELS, no_positive="error")
    with pytest.raises(ValueError, match="no_positive must be one of"):
        metrics.evaluate_ranking(QIDS, DOCIDS, SCORES, LABELS, no_positive="ignore")


def test_evaluate_defaults_and_types():
    result = metrics.evaluate_ranking(QIDS, DOCIDS, np.asarray(SCORES, np.float32)[:, None], np.asarray(LABELS))
    assert set(result) == {"map", "mrr", "p@1", "num_questions", "num_skipped"}
    assert all(type(result[m]) is float for m in ("map", "mrr", "p@1"))
    assert type(result["num_questions"]) is int
    # Numeric ids are compared as their strings.
    numeric = metrics.evaluate_ranking([1, 1, 1, 1], [9, 29, 10, 1], [1.0] * 4, [0, 1, 0, 1])
    assert numeric["map"] == pytest.approx(0.5)


def test_evaluate_recall_metric():
    # Two groups of 3, positive first (response-selection style).
    qids = ["c1"] * 3 + ["c2"] * 3
    result = metrics.evaluate_ranking(
        qids, ["0", "1", "2"] * 2, [0.9, 0.1, 0.5, 0.2, 0.8, 0.1], [1, 0, 0] * 2, metrics=("r3@1", "r3@2", "r2@1")
    )
    assert result == pytest.approx({"r3@1": 0.5, "r3@2": 1.0, "r2@1": 0.5, "num_questions": 2, "num_skipped": 0})
    with pytest.raises(ValueError, match="'r10@1' needs at least 10 candidates.*'c1'"):
        metrics.evaluate_ranking(qids, ["0", "1", "2"] * 2, [0.0] * 6, [1, 0, 0] * 2, metrics=("map", "r10@1"))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(qids=QIDS[:-1]), r"equal lengths.*qids=7.*docids=8.*scores=8.*labels=8"),
        (dict(scores=SCORES[:-1]), r"scores=7"),
        (dict(scores=[1.0, float("nan")] + SCORES[2:]), r"non-finite scores.*'q1'"),
        (dict(scores=SCORES[:5] + [np.inf] + SCORES[6:]), r"non-finite scores.*'q2'"),
        (dict(labels=LABELS[:5] + [np.nan] + LABELS[6:]), r"non-finite labels.*'q2'"),
        (dict(docids=["9", "9"] + DOCIDS[2:]), r"question 'q1' has duplicate candidate id\(s\) '9'"),
        (dict(scores=np.zeros((8, 2))), r"shape \[N\] or \[N, 1\]"),
        (dict(qids=[], docids=[], scores=[], labels=[]), r"empty"),
        (dict(metrics=("map", "ndcg")), r"unknown metric 'ndcg'.*'map', 'mrr', 'p@<k>'"),
        (dict(metrics=("p@0",)), r"unknown metric 'p@0'"),
        (dict(metrics=("r2@3",)), r"unknown metric 'r2@3'"),
        (dict(labels=[0] * 8), r"no question to evaluate"),
    ],
)
def test_evaluate_errors(kwargs, match):
    args = dict(qids=QIDS, docids=DOCIDS, scores=SCORES, labels=LABELS)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        metrics.evaluate_ranking(**args)


def test_evaluate_split():
    split = Split(
        name="test",
        questions=[
            Question("q1", "?", [Candidate(d, "", lab) for d, lab in zip(["9", "29", "10", "1"], [0, 1, 0, 1])]),
            Question("q2", "?", [Candidate("a", "", 0), Candidate("b", "", 0)]),
        ],
    )
    assert metrics.evaluate_split(split, [1.0] * 6, metrics=("map",), no_positive="zero") == pytest.approx(
        {"map": 0.25, "num_questions": 2, "num_skipped": 0}
    )
    with pytest.raises(ValueError, match="scores=5"):
        metrics.evaluate_split(split, [1.0] * 5)


# ---------------------------------------------------------------------------------------------------------------
# trec_eval files
# ---------------------------------------------------------------------------------------------------------------


def test_write_trec_run_and_qrels(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    scores = list(SCORES)
    scores[4] = 0.1 + 0.2  # not exactly representable in few digits: must round-trip exactly
    metrics.write_trec_run(run, QIDS, DOCIDS, scores, run_name="test")
    metrics.write_trec_qrels(qrels, QIDS, DOCIDS, LABELS)
    lines = run.read_text().splitlines()
    assert lines[:4] == ["q1 Q0 9 1 1.0 test", "q1 Q0 29 2 1.0 test", "q1 Q0 10 3 1.0 test", "q1 Q0 1 4 1.0 test"]
    assert lines[4:] == ["q3 Q0 a 1 0.30000000000000004 test", "q3 Q0 b 2 0.3 test", "q2 Q0 a 1 0.2 test",
                         "q2 Q0 b 2 0.1 test"]
    assert qrels.read_text().splitlines()[:2] == ["q1 0 9 0", "q1 0 29 1"]
    with open(run) as f:
        parsed_run = pytrec_eval.parse_run(f)
    with open(qrels) as f:
        parsed_qrels = pytrec_eval.parse_qrel(f)
    assert parsed_run["q3"]["a"] == scores[4]
    per_query = pytrec_eval.RelevanceEvaluator(parsed_qrels, {"map"}).evaluate(parsed_run)
    assert per_query["q1"]["map"] == pytest.approx(0.5)


def test_write_errors(tmp_path):
    with pytest.raises(ValueError, match="docid"):
        metrics.write_trec_run(tmp_path / "r", ["q"], ["a b"], [1.0])
    with pytest.raises(ValueError, match="run_name"):
        metrics.write_trec_run(tmp_path / "r", ["q"], ["a"], [1.0], run_name="my run")
    with pytest.raises(ValueError, match="non-finite scores"):
        metrics.write_trec_run(tmp_path / "r", ["q"], ["a"], [np.nan])
    with pytest.raises(ValueError, match="integers"):
        metrics.write_trec_qrels(tmp_path / "q", ["q"], ["a"], [0.5])


# ---------------------------------------------------------------------------------------------------------------
# Agreement with trec_eval (pytrec_eval) on real data
# ---------------------------------------------------------------------------------------------------------------


def _read_trecqa(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {key: [r[key] for r in rows] for key in ("qid", "aid", "question", "answer", "label")}


def _overlap(question, answer):
    return len(set(question.lower().split()) & set(answer.lower().split()))


def _count_scores(data):
    """Integer word overlap: many ties within a question."""
    return np.array([float(_overlap(q, a)) for q, a in zip(data["question"], data["answer"])])


def _ratio_scores(data):
    """Word overlap / answer length: floats, with ties left at 0 overlap."""
    return np.array([_overlap(q, a) / len(a.split()) for q, a in zip(data["question"], data["answer"])])


def _pytrec_per_query(tmp_path, qids, docids, scores, qrels):
    """Per-query trec_eval values for a run written by write_trec_run (so the writer is checked too)."""
    run_file = tmp_path / "run.txt"
    metrics.write_trec_run(run_file, qids, docids, scores)
    with open(run_file) as f:
        run = pytrec_eval.parse_run(f)
    return pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES.values())).evaluate(run)


def _read_qrels(path):
    with open(path) as f:
        return pytrec_eval.parse_qrel(f)


def _mean(per_query, queries, measure):
    return float(np.mean([per_query[q][measure] for q in queries]))


def _file_order_map(qids, scores, labels):
    """MAP with ties left in file order (what a naive argsort does), to show the tie-break matters."""
    qids, scores, labels = np.asarray(qids), np.asarray(scores), np.asarray(labels, dtype=int)
    aps = []
    for q in dict.fromkeys(qids):
        rows = np.flatnonzero(qids == q)
        rel = labels[rows][np.argsort(-scores[rows], kind="stable")] >= 1
        if rel.any():
            aps.append(np.mean(np.cumsum(rel)[rel] / (np.flatnonzero(rel) + 1)))
    return float(np.mean(aps))


@pytest.mark.parametrize("scorer", [_count_scores, _ratio_scores], ids=["overlap-count", "overlap-ratio"])
def test_trecqa_clean_test_matches_trec_eval(data_dir, tmp_path, scorer):
    data = _read_trecqa(data_dir / "trecqa/tsv/clean-test.tsv")
    qrels = _read_qrels(data_dir / "trecqa/qrels/clean-test.qrels")
    scores = scorer(data)
    per_query = _pytrec_per_query(tmp_path, data["qid"], data["aid"], scores, qrels)
    assert len(per_query) == len(qrels) == 68

    ours = metrics.evaluate_ranking(data["qid"], data["aid"], scores, data["label"], no_positive="error")
    assert ours["num_questions"] == 68 and ours["num_skipped"] == 0
    for name, measure in TREC_MEASURES.items():
        assert ours[name] == pytest.approx(_mean(per_query, per_query, measure), abs=1e-6), name

    # Per question too, through the per-question functions.
    qids, aids, labels = np.array(data["qid"]), np.array(data["aid"]), np.array(data["label"], dtype=int)
    for q in per_query:
        rows = qids == q
        assert metrics.average_precision(labels[rows], scores[rows], aids[rows]) == pytest.approx(
            per_query[q]["map"], abs=1e-6
        )
        assert metrics.reciprocal_rank(labels[rows], scores[rows], aids[rows]) == pytest.approx(
            per_query[q]["recip_rank"], abs=1e-6
        )

    # The run really exercises the tie-break: file-order ties would give a different MAP.
    assert abs(_file_order_map(data["qid"], scores, data["label"]) - ours["map"]) > 1e-4


def test_trecqa_raw_test_no_positive_conventions(data_dir, tmp_path):
    data = _read_trecqa(data_dir / "trecqa/tsv/raw-test.tsv")
    qrels = _read_qrels(data_dir / "trecqa/qrels/raw-test.qrels")
    scores = _count_scores(data)
    per_query = _pytrec_per_query(tmp_path, data["qid"], data["aid"], scores, qrels)
    with_rel = [q for q in per_query if any(rel >= 1 for rel in qrels[q].values())]
    assert (len(per_query), len(with_rel)) == (95, 89)

    skip = metrics.evaluate_ranking(data["qid"], data["aid"], scores, data["label"], no_positive="skip")
    zero = metrics.evaluate_ranking(data["qid"], data["aid"], scores, data["label"], no_positive="zero")
    assert (skip["num_questions"], skip["num_skipped"]) == (89, 6)
    assert (zero["num_questions"], zero["num_skipped"]) == (95, 0)
    # trec_eval on qrels restricted to questions with a relevant answer (WikiQA-filtered style) = "skip".
    filtered_qrels = {q: qrels[q] for q in with_rel}
    per_query_filtered = _pytrec_per_query(tmp_path, data["qid"], data["aid"], scores, filtered_qrels)
    assert sorted(per_query_filtered) == sorted(with_rel)
    for name, measure in TREC_MEASURES.items():
        assert skip[name] == pytest.approx(_mean(per_query, with_rel, measure), abs=1e-6), name
        assert skip[name] == pytest.approx(_mean(per_query_filtered, with_rel, measure), abs=1e-6), name
        # trec_eval on the full qrels averages over all 95 questions, the 6 without a relevant answer as 0.
        assert zero[name] == pytest.approx(_mean(per_query, per_query, measure), abs=1e-6), name
    with pytest.raises(ValueError, match="6 question"):
        metrics.evaluate_ranking(data["qid"], data["aid"], scores, data["label"], no_positive="error")


def test_wikiqa_test_filtered_matches_trec_eval(data_dir, tmp_path):
    with gzip.open(data_dir / "wikiqa/WikiQA-test.tsv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    # .ref ids: qnum = 1-based ordinal of the question in the file, sidx = 0-based index within the question.
    ordinal, position, qids, aids = {}, {}, [], []
    for r in rows:
        q = ordinal.setdefault(r["QuestionID"], str(len(ordinal) + 1))
        position[q] = position.get(q, -1) + 1
        qids.append(q)
        aids.append(str(position[q]))
    labels = [int(r["Label"]) for r in rows]
    data = {"question": [r["Question"] for r in rows], "answer": [r["Sentence"] for r in rows]}
    scores = _ratio_scores(data)
    qrels = _read_qrels(data_dir / "wikiqa/WikiQA-test-filtered.ref")
    per_query = _pytrec_per_query(tmp_path, qids, aids, scores, qrels)  # run on all 633 questions
    assert len(per_query) == 237

    keep = np.isin(qids, list(qrels))
    assert all(qrels[q][a] == lab for q, a, lab in zip(np.array(qids)[keep], np.array(aids)[keep],
                                                       np.array(labels)[keep]))
    ours = metrics.evaluate_ranking(
        np.array(qids)[keep], np.array(aids)[keep], scores[keep], np.array(labels)[keep], no_positive="error"
    )
    assert ours["num_questions"] == 237
    for name, measure in TREC_MEASURES.items():
        assert ours[name] == pytest.approx(_mean(per_query, per_query, measure), abs=1e-6), name


def test_trecqa_raw_trec_eval_spec_reproduces_trec_eval_on_the_full_qrels(data_dir):
    """`trecqa-raw-trec-eval` keeps the 6 raw test questions without a relevant answer and scores them 0: the
    mean then equals trec_eval's (pytrec_eval) mean over every question of the official raw-test qrels, which
    the usual `trecqa-raw` (questions dropped) does not."""
    from keras_match.datasets.catalog import load_by_name as load_dataset
    from keras_match.tasks import task_for

    full = load_dataset("trecqa-raw-trec-eval", data_dir=data_dir)
    dropped = load_dataset("trecqa-raw", data_dir=data_dir)
    assert full["test"].num_questions == 95 and dropped["test"].num_questions == 89
    assert task_for(full).no_positive == "zero" and task_for(dropped).no_positive == "skip"
    pairs = full["test"].pairs()
    scores = np.array([len(set(q.lower().split()) & set(a.lower().split())) / (1 + len(a.split()))
                       for q, a in zip(pairs.questions, pairs.answers)])
    ours = metrics.evaluate_ranking(pairs.qids, pairs.aids, scores, pairs.labels, metrics=("map", "mrr"),
                                    no_positive="zero")
    run = {}
    for qid, aid, score in zip(pairs.qids, pairs.aids, scores):
        run.setdefault(str(qid), {})[str(aid)] = float(score)
    with open(full.metadata["qrels"]["test"]) as f:
        qrels = pytrec_eval.parse_qrel(f)
    assert len(qrels) == 95
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank"}).evaluate(run)
    assert len(per_query) == 95
    for ours_key, trec_key in (("map", "map"), ("mrr", "recip_rank")):
        expected = np.mean([v[trec_key] for v in per_query.values()])
        assert ours[ours_key] == pytest.approx(expected, abs=1e-12)
    skipped = metrics.evaluate_ranking(*(lambda p: (p.qids, p.aids))(dropped["test"].pairs()),
                                       scores[np.isin(pairs.qids, dropped["test"].pairs().qids)],
                                       dropped["test"].pairs().labels, metrics=("map",))
    assert skipped["map"] == pytest.approx(ours["map"] * 95 / 89, abs=1e-9)


def test_figure_names_are_the_fields_terms():
    keys = ("map", "mrr", "p@1", "r10@1", "accuracy", "macro_f1", "per_response_accuracy", "per_dialog_accuracy")
    assert [metrics.figure_name(k) for k in keys] == [
        "MAP", "MRR", "P@1", "R10@1", "accuracy", "macro-F1", "per-response accuracy", "per-dialog accuracy"]
