"""Malformed files: every error names the file, the 1-based line and the field."""

import gzip
import os
import json

import pytest

from keras_match import datasets
from keras_match.datasets import DataFormatError
from keras_match.datasets.reader import read_records

HEADER = "qid\taid\tquestion\tanswer\tlabel\n"
GOOD = "q1\ta0\tWhat?\tThis.\t1\n"


def write(path, text, compress=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def load_error(path):
    with pytest.raises(DataFormatError) as info:
        datasets.load_files(test=path)
    error = info.value
    assert error.path == str(path)
    assert str(path) in str(error)
    return error


@pytest.mark.parametrize(
    "body,line,field,message",
    [
        (GOOD + "q1\ta1\tWhat?\tThat.\n", 3, None, "expected 5 tab-separated fields"),
        (GOOD + "q1\ta1\tWhat?\tThat.\t0\textra\n", 3, None, "found 6"),
        (GOOD + "q1\ta1\tWhat?\tThat.\tyes\n", 3, "label", "integer"),
        (GOOD + "q1\ta1\tWhat?\tThat.\t-1\n", 3, "label", "integer >= 0"),
        (GOOD + "q1\ta1\tWhat?\tThat.\t0.5\n", 3, "label", "integer"),
        (GOOD + "\ta1\tWhat?\tThat.\t0\n", 3, "qid", "empty id"),
        (GOOD + "  \ta1\tWhat?\tThat.\t0\n", 3, "qid", "empty id"),
        (GOOD + "q1\ta0\tWhat?\tThat.\t0\n", 3, "aid", "duplicate answer id 'a0'"),
        (GOOD + "q1\ta1\tWhat else?\tThat.\t0\n", 3, "question", "different text than on line 2"),
    ],
)
def test_tsv_line_errors(tmp_path, body, line, field, message):
    error = load_error(write(tmp_path / "test.tsv", HEADER + body))
    assert error.line == line and error.field == field
    assert f"line {line}" in str(error) and message in str(error)
    if field:
        assert repr(field) in str(error)


def test_tsv_missing_column(tmp_path):
    error = load_error(write(tmp_path / "bad.tsv", "qid\tquestion\tanswer\n" + "q\tQ\tA\n"))
    assert error.line == 1 and error.field == "label" and "lacks column 'label'" in str(error)


def test_line_numbers_count_empty_lines_and_gz(tmp_path):
    text = HEADER + GOOD + "\n\n" + "q2\ta0\tWho?\tHim.\tx\n"
    error = load_error(write(tmp_path / "test.tsv.gz", text, compress=True))
    assert (error.line, error.field) == (5, "label")


@pytest.mark.parametrize("content", ["", "\n\n", HEADER, HEADER + "\n"])
def test_empty_split_file_is_an_error(tmp_path, content):
    error = load_error(write(tmp_path / "test.tsv", content))
    assert "no data rows" in str(error) or "empty file" in str(error)


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_empty_jsonl_is_an_error(tmp_path, content):
    assert "no data rows" in str(load_error(write(tmp_path / "test.jsonl", content)))


def jsonl(*objects):
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objects)


OK = {"qid": "q1", "question": "What?", "answer": "This.", "label": 1}


@pytest.mark.parametrize(
    "line2,field,message",
    [
        ('{"qid": "q1", "question": "What?", "answer": "That."', None, "invalid JSON"),
        ("not json", None, "invalid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
        ({"qid": "q1", "question": "What?", "label": 0}, "answer", "missing key 'answer'"),
        ({"question": "What?", "answer": "x", "label": 0}, "qid", "missing key 'qid'"),
        ({**OK, "label": "high"}, "label", "integer"),
        ({**OK, "label": 1.5}, "label", "integer"),
        ({**OK, "label": True}, "label", "integer"),
        ({**OK, "label": -2}, "label", "integer >= 0"),
        ({**OK, "qid": ""}, "qid", "empty id"),
        ({**OK, "answer": None}, "answer", "expected a string"),
    ],
)
def test_jsonl_line_errors(tmp_path, line2, field, message):
    error = load_error(write(tmp_path / "test.jsonl", jsonl(OK, line2)))
    assert (error.line, error.field) == (2, field)
    assert "line 2" in str(error) and message in str(error)


def test_invalid_utf8_and_corrupt_gzip(tmp_path):
    error = load_error(write(tmp_path / "test.tsv", (HEADER + GOOD).encode() + b"q2\ta0\t\xff\tx\t0\n"))
    assert error.line == 3 and "UTF-8" in str(error)
    error = load_error(write(tmp_path / "trunc.tsv.gz", gzip.compress((HEADER + GOOD * 50).encode())[:-30]))
    assert "gzip" in str(error)


def test_crlf_bom_quotes_and_empty_text(tmp_path):
    data = (
        b"\xef\xbb\xbf" + HEADER.replace("\n", "\r\n").encode()
        + b'q1\ta0\t"Quoted" ?\t\t0\r\n'
        + b'q1\ta1\t"Quoted" ?\tcar\riage\t2\r\n'
    )
    split = datasets.load_files(test=write(tmp_path / "test.tsv", data))["test"]
    [question] = split.questions
    assert question.qid == "q1" and question.text == '"Quoted" ?'
    assert [(c.aid, c.text, c.label) for c in question.candidates] == [("a0", "", 0), ("a1", "car\riage", 2)]


def test_unsupported_extension(tmp_path):
    with pytest.raises(ValueError, match=r"\.jsonl"):
        datasets.load_files(test=write(tmp_path / "test.csv", "qid,question\n"))


def test_read_records_extra_columns_and_numbers(tmp_path):
    path = write(tmp_path / "x.jsonl", jsonl({"id": 7, "n": "3", "t": "a"}))
    records = read_records(path, {"qid": "id", "label": "n", "question": "t"})
    assert records == [(1, {"qid": "7", "label": 3, "question": "a"})]


def test_a_split_file_read_again_unchanged_is_not_parsed_again_and_a_changed_one_is(tmp_path, monkeypatch):
    from keras_match.datasets import reader

    parsed = []
    original = reader.read_records
    monkeypatch.setattr(reader, "read_records", lambda path, *a, **k: parsed.append(path) or original(path, *a, **k))
    columns = {"qid": "qid", "aid": "aid", "question": "question", "answer": "answer", "label": "label"}
    path = write(tmp_path / "test.tsv", HEADER + GOOD + "q1\ta1\tWhat?\tThat.\t0\n")
    first = reader.read_split("test", path, columns)
    first.questions[0].candidates[0].label = 0  # a caller changing what it got changes nothing of the next call
    first.questions[0].candidates.pop()
    second = reader.read_split("test", path, columns)
    assert len(parsed) == 1
    assert [(c.aid, c.text, c.label) for c in second.questions[0].candidates] == [("a0", "This.", 1),
                                                                                 ("a1", "That.", 0)]
    write(path, HEADER + GOOD + "q1\ta1\tWhat?\tThose.\t1\n")  # changed in place
    os.utime(path, ns=(1, 1))  # even back-dated: its size and time differ from the kept ones
    third = reader.read_split("test", path, columns)
    assert len(parsed) == 2 and third.questions[0].candidates[1].text == "Those."
    write(path, HEADER + "q1\ta0\tWhat?\tThis.\tx\n")  # a broken file is still named with its line
    with pytest.raises(DataFormatError, match=r"line 2"):
        reader.read_split("test", path, columns)
