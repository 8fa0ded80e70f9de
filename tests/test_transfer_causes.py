"""benchmarks/transfer_causes.py (issue 58: why a preset ranks another benchmark below BM25) and the table of
benchmarks/transfer.py's preset figures (`presets-transfer`): the measurements on hand-made cases whose answers are
known, then on a tiny real case (the shipped `lc_lstm/trecqa-clean` on three WikiQA test questions)."""

import json
import os
import types

import numpy as np
import pytest
from conftest import benchmark_module

from keras_match.artifacts import provenance


@pytest.fixture(scope="module")
def causes():
    return benchmark_module("transfer_causes")


def test_oov_shares_count_tokens_and_distinct_words_outside_a_hand_made_vocabulary(causes):
    shares = causes.oov_shares([["the", "cat", "sat"], ["a", "cat", "sat"]], {"the", "cat"})
    assert shares == {"tokens": 6, "oov_tokens": 3, "token_share": 0.5, "words": 4, "oov_words": 2,
                      "word_share": 0.5}
    assert causes.oov_shares([], {"the"})["token_share"] == 0.0


def test_truncation_counts_the_texts_cut_and_the_tokens_past_the_length(causes):
    cut = causes.truncation([["a"] * 3, ["a"] * 5, ["a"]], 3)
    assert (cut["cut"], cut["longest"], cut["texts"]) == (1, 5, 3)
    assert cut["share_cut"] == pytest.approx(1 / 3) and cut["tokens_cut_share"] == pytest.approx(2 / 9)
    assert causes.truncation([["a"] * 3], 3)["cut"] == 0


def test_overlap_counts_the_questions_content_words_found_in_the_answer(causes):
    question = causes.tokens_of(["Who wrote Hamlet ?"])[0]
    assert causes.overlap(question, causes.tokens_of(["Shakespeare wrote Hamlet ."])[0]) == 1.0
    assert causes.overlap(question, causes.tokens_of(["Hamlet is a play ."])[0]) == 0.5  # "who", "?" left out
    assert causes.overlap(["who", "?"], ["who"]) == 0.0


def test_spearman_matches_scipy_with_ties_and_skips_constant_questions(causes):
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = [3.0, 1.0, 2.0, 2.0, 5.0], [1.0, 0.0, 1.0, 0.0, 4.0]
    assert causes.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic)
    assert causes.spearman([1.0, 1.0], [1.0, 2.0]) is None
    by_question = causes.mean_spearman_by_question(["q1"] * 3 + ["q2"] * 3 + ["q3"] * 2,
                                                   [1, 2, 3, 1, 2, 3, 5, 5], [1, 2, 3, 3, 2, 1, 0, 1])
    assert by_question == {"rho": pytest.approx(0.0), "questions": 2}  # q3's scores are constant


def test_without_length_takes_each_questions_length_line_out_of_its_scores(causes):
    """Scores that are a line in the lengths become equal within their question (their ranking is then the
    tie rule's); a question whose lengths are equal keeps its scores; labels are never read."""
    removed = causes.without_length(["a"] * 3 + ["b"] * 2 + ["c"], [1, 2, 3, 5, 6, 7], [1, 2, 3, 4, 4, 9])
    assert removed[:3] == pytest.approx([2, 2, 2]) and removed[3:].tolist() == [5, 6, 7]
    mixed = causes.without_length(["a"] * 4, [0.0, 1.0, 0.5, 2.0], [10, 20, 30, 45])
    assert np.corrcoef(mixed, [10, 20, 30, 45])[0, 1] == pytest.approx(0.0, abs=1e-9)


def test_halves_split_the_questions_at_the_median_and_score_each_half(causes):
    examples = types.SimpleNamespace(groups=["q1", "q1", "q2", "q2", "q3", "q3"], ids=["a", "b"] * 3,
                                     labels=[1, 0, 0, 1, 1, 0])
    scores = {"model": [0.9, 0.1, 0.9, 0.1, 0.2, 0.8], "bm25": [0.1, 0.9, 0.1, 0.9, 0.9, 0.1]}
    split = causes.halves(examples, {"q1": 0.1, "q2": 0.9, "q3": 0.5}, scores, "skip")
    assert (split["low"]["median"], split["low"]["questions"], split["high"]["questions"]) == (0.5, 2, 1)
    assert split["low"]["model"]["map"] == pytest.approx(0.75) and split["low"]["bm25"]["map"] == pytest.approx(0.75)
    assert split["high"]["model"]["map"] == pytest.approx(0.5) and split["high"]["bm25"]["map"] == 1.0


def test_drop_ids_removes_the_oov_id_and_pads_at_the_end(causes):
    inputs = {"question": np.array([[2, 1, 3, 0], [1, 1, 0, 0]]), "answer": np.array([[4, 5, 1]]),
              "features": np.array([[0.5]])}
    dropped = causes.drop_ids(inputs, 1)
    assert dropped["question"].tolist() == [[2, 3, 0, 0], [0, 0, 0, 0]]
    assert dropped["answer"].tolist() == [[4, 5, 0]] and dropped["features"] is inputs["features"]


def test_embedding_movement_by_training_count_on_a_hand_made_matrix(causes):
    vectors = type("Vectors", (), {"index": {"a": 0, "b": 1}, "matrix": np.array([[3.0, 4.0], [1.0, 0.0]])})()
    trained = np.array([[0, 0], [0, 0], [3.0, 4.0], [0.0, 2.0], [9.0, 9.0]])  # rows: pad, OOV, a, b, c (no vector)
    moved = causes.embedding_movement(trained, ["a", "b", "c"], vectors, {"a": 30, "b": 1, "c": 2})
    buckets = {b["count"]: b for b in moved["by_count"]}
    assert buckets["20+"]["distance"] == 0.0 and buckets["20+"]["cosine"] == pytest.approx(1.0)
    assert buckets["1"]["distance"] == pytest.approx(np.sqrt(5)) and buckets["1"]["cosine"] == pytest.approx(0.0)
    assert buckets["2-4"]["words"] == 0 and moved["without_vector"] == 1 and moved["oov_row_norm"] == 0.0
    assert "rounding_relative_distance" not in buckets["1"]
    vectors.matrix = np.array([[3.0, 4.0], [1.0, 1e-4]])  # 1e-4 is no float16 number: storage moves it
    rounded = causes.embedding_movement(trained, ["a", "b", "c"], vectors, {"a": 30, "b": 1}, "float16")
    buckets = {b["count"]: b for b in rounded["by_count"]}
    assert buckets["20+"]["rounding_relative_distance"] == 0.0  # 3 and 4 are float16 numbers
    assert 0 < buckets["1"]["rounding_relative_distance"] < 1e-7


@pytest.fixture(scope="module")
def tiny_case(data_dir):
    """The shipped lc_lstm/trecqa-clean (trained embeddings, no vectors needed to load) and three WikiQA test
    questions."""
    from keras_match.artifacts import presets
    from keras_match.datasets.base import Split
    from keras_match.datasets.catalog import load_by_name

    run = presets.load_preset("lc_lstm/trecqa-clean")
    test = load_by_name("wikiqa", data_dir=str(data_dir))["test"]
    return run, Split(name="test", questions=test.questions[:3])


def test_the_vocabulary_shares_are_the_preprocessors_own_oov_ids(causes, tiny_case):
    """The script's tokens outside the vocabulary are exactly the ids the preset's preprocessor makes 1 (counted
    with the truncation lengths raised, so that no token is cut)."""
    from keras_match.inputs import pipeline

    run, split = tiny_case
    pairs = split.pairs()
    answers = list(dict.fromkeys(pairs.answers.tolist()))
    shares = causes.oov_shares(causes.tokens_of(answers), set(run.preprocessor.encoder.vocabulary))
    assert 0 < shares["oov_tokens"] < shares["tokens"]
    with causes.lengths(run.preprocessor, 200, 200):
        ids = pipeline.encode(run.preprocessor, {"question": [""] * len(answers), "answer": answers})["answer"]
    assert run.preprocessor.max_answer_length == 40  # restored
    assert int((ids == 1).sum()) == shares["oov_tokens"] and int((ids > 0).sum()) == shares["tokens"]


def test_glove_rows_for_oov_words_leave_in_vocabulary_scores_unchanged(causes, tiny_case):
    """`with_vector_rows` keeps every trained weight: a pair of vocabulary words scores as before; a pair whose
    OOV word got its GloVe row scores otherwise."""
    from keras_match.text import vectors as vectors_lib

    run, _ = tiny_case
    vectors = vectors_lib.load_vectors(os.environ["KERAS_MATCH_EMBEDDINGS"])
    vocabulary = set(run.preprocessor.encoder.vocabulary)
    new_word = next(w for w in ("glacier", "caves", "volcano", "penguin") if w not in vocabulary and w in vectors.index)
    extended, added = causes.with_vector_rows(run, [new_word, "the", "zzzqqq-not-a-word"], vectors)
    assert added == 1 and extended.preprocessor.encoder.vocabulary[-1] == new_word
    assert run.preprocessor.encoder.vocab_size + 1 == extended.preprocessor.encoder.vocab_size
    known = (["what is the capital of france ?"], ["paris is the capital of france ."])
    assert np.allclose(run.score(*known), extended.score(*known), atol=1e-6)
    unknown = ([f"how are {new_word} formed ?"], [f"a {new_word} is formed by the ice ."])
    assert not np.allclose(run.score(*unknown), extended.score(*unknown), atol=1e-6)


def test_measure_split_on_a_tiny_real_case(causes, tiny_case):
    run, split = tiny_case
    vocabulary = set(run.preprocessor.encoder.vocabulary)
    result = causes.measure_split(run, split, "skip", vocabulary, vocabulary)
    assert result["pairs"] == split.num_pairs
    assert result["figures"]["model"]["num_questions"] + result["figures"]["model"]["num_skipped"] == 3
    assert 0 < result["vocabulary"]["all"]["token_share"] < 1
    assert result["vocabulary"]["all"] == result["vocabulary"]["outside_training_words"]
    assert result["truncation"]["answers"]["max_length"] == 40
    assert result["correlations"]["labels"]["overlap"]["questions"] <= 3
    assert result["oov_halves"]["low"]["questions"] + result["oov_halves"]["high"]["questions"] == 3
    assert result["overlap_halves"]["low"]["questions"] + result["overlap_halves"]["high"]["questions"] <= 3
    lengths = result["interventions"]["lengths_raised"]
    assert lengths["max_answer_length"] >= result["truncation"]["answers"]["longest"]
    # no vectors given: no oov_glove
    assert set(result["interventions"]) == {"lengths_raised", "oov_dropped", "length_removed"}


def _transfer_result(split="test"):
    figures = lambda m: {"map": m, "mrr": m + 0.01, "p@1": m}  # noqa: E731
    return {"bm25": {"trecqa-clean": figures(0.674), "semeval2016:dev": figures(0.5)},
            "runs": {"lc_lstm/trecqa-clean": {"zoo": "lc_lstm", "trecqa-clean": figures(0.518),
                                              "semeval2016:dev": figures(0.6)},
                     "ctrn_semeval/semeval2016": {"zoo": "ctrn_semeval", "trecqa-clean": figures(0.7),
                                                  "semeval2016:dev": figures(0.62)}},
            "split": split, "provenance": provenance.collect(0.0, command="python benchmarks/transfer.py")}


def test_the_presets_transfer_table_bolds_the_own_benchmark_and_marks_figures_below_bm25(tmp_path, monkeypatch):
    tables = benchmark_module("tables")
    (tmp_path / "transfer").mkdir()
    (tmp_path / "transfer" / "presets-test.json").write_text(json.dumps(_transfer_result()))
    monkeypatch.setattr(tables, "RESULTS", tmp_path)
    lines = tables.make("presets-transfer").splitlines()
    assert lines[0] == "| preset | `trecqa-clean` MAP / MRR | `semeval2016:dev` MAP / MRR |"
    assert lines[2] == f"| {tables.BM25_LABEL} | 0.674 / 0.684 | 0.500 / 0.510 |"
    assert lines[3] == "| `ctrn_semeval/semeval2016` | 0.700 / 0.710 | **0.620 / 0.630** |"
    assert lines[4] == "| `lc_lstm/trecqa-clean` | **0.518 / 0.528 †** | 0.600 / 0.610 |"
    (tmp_path / "transfer" / "presets-test.json").write_text(json.dumps(_transfer_result("dev")))
    with pytest.raises(tables.TableError, match="not test"):
        tables.make("presets-transfer")


def test_the_script_collects_provenance_and_its_docstring_gives_the_commands():
    from conftest import REPO

    source = (REPO / "benchmarks" / "transfer_causes.py").read_text(encoding="utf-8")
    docstring = source.split('"""')[1]
    assert "provenance.collect(started" in source and "provenance" in docstring
    for name in ("causes-lc_lstm-wikiqa.json", "causes-compare_aggregate_mult-trecqa-clean.json"):
        assert f"benchmarks/results/transfer/{name}" in docstring
