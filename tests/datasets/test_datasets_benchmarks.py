"""The benchmark loaders on the real data: counts from each folder's SOURCE.md, ids against the shipped qrels."""

import collections

import numpy as np
import pytest

from keras_match import datasets


@pytest.fixture(scope="module")
def trecqa_clean(data_dir):
    return datasets.load("trecqa", data_dir=data_dir)


@pytest.fixture(scope="module")
def trecqa_raw(data_dir):
    return datasets.load("trecqa", "raw", data_dir=data_dir, train_split="train")


@pytest.fixture(scope="module")
def wikiqa(data_dir):
    return datasets.load("wikiqa", data_dir=data_dir)


@pytest.fixture(scope="module")
def semeval(data_dir):
    return datasets.load("semeval2016", data_dir=data_dir)


def read_qrels(path):
    """``[(qid, docid, relevance), ...]`` in file order."""
    rows = []
    with open(path) as f:
        for line in f:
            qid, _, docid, rel = line.split()
            rows.append((qid, docid, int(rel)))
    return rows


def as_qrels(split):
    return [(q.qid, c.aid, c.label) for q in split for c in q.candidates]


def summary(split):
    return split.num_questions, split.num_pairs, split.num_positive, split.dropped


# -- TrecQA ----------------------------------------------------------------------------------------------------


def test_trecqa_clean_counts(trecqa_clean):
    assert trecqa_clean.name == "trecqa" and trecqa_clean.variant == "clean"
    assert list(trecqa_clean.splits) == ["train", "dev", "test"]
    assert summary(trecqa_clean["train"]) == (1229, 53417, 6403, {})
    assert summary(trecqa_clean["dev"]) == (65, 1117, 205, {})
    assert summary(trecqa_clean["test"]) == (68, 1442, 248, {})
    assert trecqa_clean.metadata["train_split"] == "train-all"
    assert trecqa_clean["train"].source.endswith("train-all.tsv.gz")


def test_trecqa_raw_drops_questions_without_positive(trecqa_raw):
    assert trecqa_raw.variant == "raw"
    assert summary(trecqa_raw["train"]) == (93, 4718, 348, {})  # TRAIN keeps its 10 all-negative questions
    assert summary(trecqa_raw["dev"]) == (81 - 3, 1148 - 14, 222, {"no positive answer": 3})
    assert summary(trecqa_raw["test"]) == (95 - 6, 1517 - 39, 284, {"no positive answer": 6})
    for name in ("dev", "test"):
        split = trecqa_raw[name]
        assert all(q.has_positive for q in split)
        assert sum(not q.has_negative for q in split) == {"dev": 13, "test": 21}[name]  # all-positive stay


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_trecqa_ids_match_qrels(trecqa_clean, trecqa_raw, split):
    assert as_qrels(trecqa_clean[split]) == read_qrels(trecqa_clean.metadata["qrels"][split])
    raw_qrels = read_qrels(trecqa_raw.metadata["qrels"][split])
    kept = {q.qid for q in trecqa_raw[split]}
    assert as_qrels(trecqa_raw[split]) == [row for row in raw_qrels if row[0] in kept]
    assert len({row[0] for row in raw_qrels}) - len(kept) == sum(trecqa_raw[split].dropped.values())


def test_trecqa_text(trecqa_clean):
    first = trecqa_clean["dev"].questions[0]
    assert first.qid == "1.5"
    assert first.text == "What is Crips ' gang color ?"
    assert first.candidates[0].aid == "0" and first.candidates[0].label == 1
    assert first.candidates[0].text.startswith("Prosecutors said the '' rampage")


# -- WikiQA ----------------------------------------------------------------------------------------------------


def test_wikiqa_counts(wikiqa):
    assert list(wikiqa.splits) == ["train", "dev", "test"]
    assert summary(wikiqa["train"]) == (2118, 20360, 1040, {})
    assert summary(wikiqa["dev"]) == (122, 1126, 136, {"no positive answer": 296 - 126, "only positive answers": 4})
    assert summary(wikiqa["test"]) == (237, 2341, 283, {"no positive answer": 633 - 243, "only positive answers": 6})


@pytest.mark.parametrize("split,ref", [("dev", "dev-filtered"), ("test", "test-filtered"), ("train", "train")])
def test_wikiqa_matches_ref_qrels(wikiqa, data_dir, split, ref):
    qrels = read_qrels(data_dir / "wikiqa" / f"WikiQA-{ref}.ref")
    assert [q.qid for q in wikiqa[split]] == list(dict.fromkeys(row[0] for row in qrels))
    assert as_qrels(wikiqa[split]) == qrels
    assert wikiqa.metadata["qrels"][split].endswith(f"WikiQA-{ref}.ref")


def test_wikiqa_answered_keeps_the_all_correct_questions_and_scores_them_one(wikiqa, data_dir):
    from keras_match import metrics
    from keras_match.datasets.catalog import load_by_name

    answered = load_by_name("wikiqa-answered", data_dir=data_dir)
    assert summary(answered["dev"]) == (126, 1130, 140, {"no positive answer": 296 - 126})
    assert summary(answered["test"]) == (243, 2351, 293, {"no positive answer": 633 - 243})
    filtered_ids = {q.qid for q in wikiqa["test"]}
    extra = [q for q in answered["test"] if q.qid not in filtered_ids]
    assert len(extra) == 6 and all(all(c.label > 0 for c in q.candidates) for q in extra)
    assert answered.metadata["qrels"]["test"].endswith("WikiQA-test.ref")
    # the unfiltered qrels list the answered questions' sentences as they are
    qrels = read_qrels(data_dir / "wikiqa" / "WikiQA-test.ref")
    kept = {q.qid for q in answered["test"]}
    assert as_qrels(answered["test"]) == [row for row in qrels if row[0] in kept]
    # the worst ranking (every correct sentence last): the all-correct questions still score 1 each
    worst_answered = metrics.evaluate_split(answered["test"], -answered["test"].pairs().labels.astype(float))
    worst_filtered = metrics.evaluate_split(wikiqa["test"], -wikiqa["test"].pairs().labels.astype(float))
    assert worst_answered["map"] == pytest.approx((237 * worst_filtered["map"] + 6) / 243)
    with pytest.raises(ValueError, match="variant"):
        datasets.load("wikiqa", "unanswered", data_dir=data_dir)


def test_wikiqa_original_ids_and_text(wikiqa):
    dev = wikiqa["dev"]
    first = dev.questions[0]  # ordinal 1 (Q8) has no correct sentence and is filtered out
    assert first.qid == "2"
    assert wikiqa.metadata["question_ids"]["dev"]["1"] == "Q8"
    assert wikiqa.metadata["question_ids"]["dev"]["2"] == "Q11"
    assert len(wikiqa.metadata["question_ids"]["test"]) == 633
    assert not any("\r" in c.text for q in dev for c in q.candidates)  # CRLF removed
    assert not any(q.text.endswith("\r") for q in wikiqa["train"])


# -- SemEval-2016 ----------------------------------------------------------------------------------------------


def test_semeval_counts(semeval):
    assert list(semeval.splits) == ["train", "dev"]
    assert "test" not in semeval
    assert semeval.variant == "official"
    assert summary(semeval["train"]) == (379, 3790, 1364, {})
    assert summary(semeval["dev"]) == (244, 2440, 818, {})
    assert semeval.metadata["no_positive"] == {"train": 35, "dev": 33}
    for name, expected in [("train", (1364, 649, 1777)), ("dev", (818, 413, 1209))]:
        counts = collections.Counter(semeval.metadata["labels"][name].values())
        assert (counts["Good"], counts["PotentiallyUseful"], counts["Bad"]) == expected


def test_semeval_filtered_variant(data_dir):
    ds = datasets.load("semeval2016", "filtered", data_dir=data_dir)
    assert summary(ds["dev"]) == (211, 2110, 818, {"no positive answer": 33})
    assert summary(ds["train"]) == (379, 3790, 1364, {})


def test_semeval_ids_match_qrels_and_labels(semeval):
    for name in ("train", "dev"):
        split = semeval[name]
        assert as_qrels(split) == read_qrels(semeval.metadata["qrels"][name])
        labels = semeval.metadata["labels"][name]
        assert all(c.label == (labels[c.aid] == "Good") for q in split for c in q.candidates)
    first = semeval["dev"].questions[0]
    assert first.qid == "Q268_R16" and first.candidates[0].aid == "Q268_R16_C1"
    assert first.text.startswith("Best Bank. Hi ti all QL's;")


# -- shared behaviour ------------------------------------------------------------------------------------------


def test_pairs_shapes_and_dtypes(trecqa_clean, semeval):
    for split in (trecqa_clean["dev"], semeval["dev"]):
        pairs = split.pairs()
        n = split.num_pairs
        for array in (pairs.qids, pairs.aids, pairs.questions, pairs.answers):
            assert array.shape == (n,) and array.dtype == object
            assert all(type(x) is str for x in array)
        assert pairs.labels.shape == (n,) and pairs.labels.dtype == np.int32
        assert int(pairs.labels.sum()) == split.num_positive
        assert len(pairs) == n
    pairs = trecqa_clean["dev"].pairs()
    assert pairs.qids[0] == "1.5" and pairs.questions[0] == "What is Crips ' gang color ?"


def test_names():
    assert datasets.names() == ["trecqa", "wikiqa", "semeval2016", *(f"dialog-babi-task{k}" for k in range(1, 7)),
                                "sick", "snli", "msrp"]


@pytest.mark.parametrize(
    "kwargs,valid",
    [
        ({"name": "trecqa", "variant": "cleaned"}, "['clean', 'raw']"),
        ({"name": "trecqa", "train_split": "train_all"}, "['train-all', 'train']"),
        ({"name": "wikiqa", "variant": "raw"}, "['filtered', 'answered']"),
        ({"name": "semeval2016", "variant": "clean"}, "['official', 'filtered']"),
        ({"name": "semeval2016", "train_split": "train-part1"}, "['train-part2', 'train-part2+train-2015']"),
    ],
)
def test_unknown_options_list_valid_ones(tmp_path, kwargs, valid):
    with pytest.raises(ValueError, match="valid") as info:
        datasets.load(data_dir=tmp_path, **kwargs)
    assert valid in str(info.value)


def test_unknown_dataset_lists_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        datasets.load("insuranceqa")
    assert str(datasets.names()) in str(info.value) and "'dialog-babi-task6', 'sick'" in str(info.value)


def test_options_rejected_for_paths(tmp_path):
    (tmp_path / "test.tsv").write_text("qid\tquestion\tanswer\tlabel\nq\tQ\tA\t1\n")
    with pytest.raises(ValueError, match="variant"):
        datasets.load(tmp_path, variant="clean")


@pytest.mark.parametrize(
    "name,missing",
    [
        ("trecqa", "trecqa/tsv/train-all.tsv"),
        ("wikiqa", "wikiqa/WikiQA-train.tsv.gz"),
        ("semeval2016", "semeval2016_task3_cqa/subtaskA/train-part2.tsv"),
    ],
)
def test_missing_file_says_how_to_provide_data(tmp_path, name, missing):
    with pytest.raises(FileNotFoundError) as info:
        datasets.load(name, data_dir=tmp_path)
    message = str(info.value)
    assert message == (f"{name} is missing from {tmp_path} (no {missing}); fetch it with "
                       f"`keras-match data download {name} --data-dir {tmp_path}`")
    assert info.value.filename == str(tmp_path / missing)


def test_trecqa_training_set_as_variant(data_dir):
    small = datasets.load("trecqa", variant="train", data_dir=data_dir)
    assert small["train"].num_questions == 93 and small["test"].num_questions == 68
    assert datasets.load("trecqa", variant="train-all", data_dir=data_dir)["train"].num_pairs == 53417
    with pytest.raises(ValueError, match="conflicts"):
        datasets.load("trecqa", variant="train", train_split="train-all", data_dir=data_dir)


def test_split_feeds_tf_data(trecqa_clean):
    import tensorflow as tf

    split = trecqa_clean["test"]
    ds = split.to_tf_dataset()
    assert ds.cardinality().numpy() == split.num_pairs
    first = next(iter(ds.batch(4)))
    pairs = split.pairs()
    assert [x.decode() for x in first["answer"].numpy()] == list(pairs.answers[:4])
    assert first["label"].dtype == tf.int32
    assert int(sum(b["label"].numpy().sum() for b in ds.batch(512))) == split.num_positive
