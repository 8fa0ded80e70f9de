"""The TrecQA builder: the derived files rebuilt byte for byte from the data folder's originals, and malformed
originals rejected with an error naming the original and the line."""

import gzip
import hashlib

import pytest

from keras_match.datasets.base import DataFormatError
from keras_match.datasets.download import original_bytes
from keras_match.datasets.builders import trecqa
from keras_match.datasets.reader import read_split
from keras_match.datasets.sources import SOURCES

SOURCE = SOURCES["trecqa"]
DERIVED = {derived.path: derived.sha256 for derived in SOURCE.derived}
COLUMNS = {name: name for name in ("qid", "aid", "question", "answer", "label")}

DEV = "trecqa/jacana/DEV.xml"
TEST = "trecqa/jacana/TEST.xml"
QUESTIONS = "trecqa/jacana/train2393_raw/Train1-2393.Question.POSInput.gz"
POSITIVES = "trecqa/jacana/train2393_raw/Train1-2393.Positive-M.POSInput.cleaned.gz"
ID_TXT = "trecqa/castorini_nce_train-all/id.txt"
SIM_TXT = "trecqa/castorini_nce_train-all/sim.txt"
A_TOKS = "trecqa/castorini_nce_train-all/a.toks"


@pytest.fixture(scope="module")
def originals(data_dir):
    """`{Original.path: bytes}` of every TrecQA original."""
    return {original.path: original_bytes(data_dir, original) for original in SOURCE.originals}


@pytest.fixture(scope="module")
def built(originals):
    """The builder's output from the unmodified originals, and the paths it asked `read` for."""
    requested = []

    def read(path):
        requested.append(path)
        return originals[path]

    return trecqa.build(read), requested


def test_builds_exactly_the_derived_files(built, originals):
    files, requested = built
    assert set(files) == set(DERIVED)
    assert all(isinstance(data, bytes) for data in files.values())
    assert set(requested) <= set(originals)  # only originals, by their `Original.path`


@pytest.mark.parametrize("path", sorted(DERIVED))
def test_built_file_matches_pinned_digest(built, path):
    files, _ = built
    assert hashlib.sha256(files[path]).hexdigest() == DERIVED[path]


def test_train_all_is_plain_text(built):
    data = built[0]["trecqa/tsv/train-all.tsv"]
    assert data.startswith(b"qid\taid\tquestion\tanswer\tlabel\n")
    # SOURCE.md: 53,417 pairs; question 984 completed from a.toks.
    assert data.count(b"\n") == 1 + 53417
    assert b"\tThe US Department of Treasury first issued paper currency during which war ?\t" in data


@pytest.mark.parametrize("split,questions,pairs,positive", [
    ("train", 93, 4718, 348),
    ("clean-test", 68, 1442, 248),
])
def test_built_tsv_reads_back(built, tmp_path, split, questions, pairs, positive):
    path = tmp_path / f"{split}.tsv"
    path.write_bytes(built[0][f"trecqa/tsv/{split}.tsv"])
    loaded = read_split(split, path, COLUMNS)
    assert (loaded.num_questions, loaded.num_pairs, loaded.num_positive) == (questions, pairs, positive)
    if split == "clean-test":
        assert all(question.has_positive and question.has_negative for question in loaded)


# ---- malformed originals ------------------------------------------------------------------------------------------


def replace_line(data, line, text):
    """`data` with its 1-based `line` replaced by `text` (bytes); LF-separated."""
    lines = data.split(b"\n")
    lines[line - 1] = text
    return b"\n".join(lines)


def line_of(data, text, occurrence=1):
    """The 1-based number of the `occurrence`-th line of `data` equal to `text`."""
    numbers = [i for i, line in enumerate(data.split(b"\n"), 1) if line.rstrip(b"\r") == text]
    return numbers[occurrence - 1]


def drop_question_tag(originals):
    """DEV.xml without the `<question>` line of its second block: the error is at that line's number."""
    data = originals[DEV]
    line = line_of(data, b"<question>", 2)
    lines = data.split(b"\n")
    del lines[line - 1]
    return DEV, b"\n".join(lines), line, "lacks <question>"


def sim_label_7(originals):
    return SIM_TXT, replace_line(originals[SIM_TXT], 5, b"7"), 5, "'7'"


def negative_labelled_1(originals):
    """The last pair of TRAIN-ALL is a Negative-file candidate: sim.txt may not label it 1."""
    count = originals[SIM_TXT].count(b"\n")
    return SIM_TXT, replace_line(originals[SIM_TXT], count, b"1"), count, "expected 0"


def id_txt_cut_short(originals):
    lines = originals[ID_TXT].split(b"\n")
    return ID_TXT, b"\n".join(lines[:1000]) + b"\n", 1001, "file ends after 1000 lines"


def id_txt_extra_line(originals):
    count = originals[ID_TXT].count(b"\n")
    return ID_TXT, originals[ID_TXT] + b"2393\n", count + 1, "lines"


def id_txt_wrong_question(originals):
    return ID_TXT, replace_line(originals[ID_TXT], 3, b"2"), 3, "expected '1'"


def a_toks_differs(originals):
    return A_TOKS, replace_line(originals[A_TOKS], 1, b"who is the author of a book ?"), 1, "differs"


def xml_not_utf8(originals):
    """A Latin-1 byte on the tokens line of TEST.xml's first question."""
    line = line_of(originals[TEST], b"<question>") + 1
    lines = originals[TEST].split(b"\n")
    return TEST, replace_line(originals[TEST], line, lines[line - 1] + b"\tcaf\xe9"), line, "UTF-8"


def unclosed_positive_block(originals):
    """A Positive-file block whose `</A>` is missing: the next `<A ... >` is reported."""
    data = gzip.decompress(originals[POSITIVES])
    line = line_of(data, b"</A>", 3)
    lines = data.split(b"\n")
    del lines[line - 1]
    return POSITIVES, gzip.compress(b"\n".join(lines)), line, "inside the block"


def question_file_corrupt_gzip(originals):
    return QUESTIONS, originals[QUESTIONS][:1000], None, "corrupt gzip"


MALFORMED = [drop_question_tag, sim_label_7, negative_labelled_1, id_txt_cut_short, id_txt_extra_line,
             id_txt_wrong_question, a_toks_differs, xml_not_utf8, unclosed_positive_block,
             question_file_corrupt_gzip]


@pytest.mark.parametrize("corrupt", MALFORMED, ids=[case.__name__ for case in MALFORMED])
def test_malformed_original_raises(originals, corrupt):
    path, data, line, message = corrupt(originals)
    assert data != originals[path]
    changed = dict(originals, **{path: data})
    with pytest.raises(DataFormatError) as info:
        trecqa.build(changed.__getitem__)
    error = info.value
    assert error.path == path
    assert error.line == line
    assert path in str(error)
    assert message in str(error)
