"""User files: directory and single-file loading, TSV / JSONL round trips of real splits."""

import gzip
import json

import numpy as np
import pytest

from keras_match import datasets


@pytest.fixture(scope="module")
def trecqa(data_dir):
    return datasets.load("trecqa", "raw", data_dir=data_dir, train_split="train")


def write_tsv(path, split, columns=("label", "answer", "extra", "qid", "question", "aid")):
    lines = ["\t".join(columns)]
    for q in split:
        for c in q.candidates:
            row = {"qid": q.qid, "aid": c.aid, "question": q.text, "answer": c.text, "label": str(c.label)}
            row["extra"] = "x"
            lines.append("\t".join(row[k] for k in columns))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def write_jsonl(path, split, with_aid=True):
    lines = []
    for q in split:
        for c in q.candidates:
            obj = {"qid": q.qid, "question": q.text, "answer": c.text, "label": c.label, "meta": [1]}
            if with_aid:
                obj["aid"] = c.aid
            lines.append(json.dumps(obj))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def test_directory_round_trip(tmp_path, trecqa):
    write_tsv(tmp_path / "train.tsv.gz", trecqa["train"])
    write_jsonl(tmp_path / "dev.jsonl", trecqa["dev"])
    write_jsonl(tmp_path / "test.jsonl.gz", trecqa["test"])
    (tmp_path / "notes.txt").write_text("ignored")
    ds = datasets.load(str(tmp_path))
    assert ds.name == tmp_path.name and ds.variant is None
    assert list(ds.splits) == ["train", "dev", "test"]
    for name in ("train", "dev", "test"):
        assert ds[name].questions == trecqa[name].questions
        assert ds[name].dropped == {}
    assert ds.metadata["files"]["dev"] == str(tmp_path / "dev.jsonl")
    assert ds.counts()["train"] == {"questions": 93, "pairs": 4718, "positive": 348, "dropped": {}}


def test_single_file_is_test_split_and_aid_defaults_to_index(tmp_path, trecqa):
    path = write_jsonl(tmp_path / "mine.jsonl", trecqa["dev"], with_aid=False)
    ds = datasets.load(path)
    assert list(ds.splits) == ["test"] and ds.name == "mine.jsonl"
    assert [(q.qid, q.text) for q in ds["test"]] == [(q.qid, q.text) for q in trecqa["dev"]]
    for mine, original in zip(ds["test"], trecqa["dev"]):
        assert [c.aid for c in mine.candidates] == [str(i) for i in range(len(original.candidates))]
        assert [(c.text, c.label) for c in mine.candidates] == [(c.text, c.label) for c in original.candidates]


def test_load_files_subset_and_interleaved_questions(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text(
        "question\tanswer\tlabel\tqid\n"
        "A?\ta1\t0\t1\n"
        "B?\tb1\t1\t2\n"
        "A?\ta2\t3\t1\n"
        "\t\t0\t3\n"
    )
    ds = datasets.load_files(dev=path, name="tiny")
    assert ds.name == "tiny" and list(ds.splits) == ["dev"]
    dev = ds["dev"]
    assert [q.qid for q in dev] == ["1", "2", "3"]
    assert [(c.aid, c.text, c.label) for c in dev.questions[0].candidates] == [("0", "a1", 0), ("1", "a2", 3)]
    assert dev.questions[2].text == "" and dev.questions[2].candidates[0].text == ""
    pairs = dev.pairs()
    assert list(pairs.qids) == ["1", "1", "2", "3"] and list(pairs.aids) == ["0", "1", "0", "0"]
    assert pairs.labels.dtype == np.int32 and list(pairs.labels) == [0, 3, 1, 0]
    assert dev.num_positive == 2


def test_directory_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.tsv"):
        datasets.load(tmp_path)
    (tmp_path / "test.tsv").write_text("qid\tquestion\tanswer\tlabel\nq\tQ\tA\t1\n")
    (tmp_path / "test.jsonl").write_text('{"qid": "q", "question": "Q", "answer": "A", "label": 1}\n')
    with pytest.raises(ValueError, match="several files"):
        datasets.load(tmp_path)
    with pytest.raises(ValueError, match="at least one"):
        datasets.load_files()
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        datasets.load_files(train=tmp_path / "nope.tsv")
