"""The SemEval-2016 subtask-A builder (keras_match.datasets.builders.semeval): the six derived files rebuilt byte for
byte from the four original XML files of the data folder, the formatting rules on small hand-written files, and
malformed originals rejected with the original's path and the line of the problem."""

import collections
import hashlib

import pytest

from keras_match.datasets.base import DataFormatError
from keras_match.datasets.download import original_bytes
from keras_match.datasets.builders import semeval as builder
from keras_match.datasets.semeval import read_semeval_split
from keras_match.datasets.sources import SOURCES

SOURCE = SOURCES["semeval2016"]
ORIGINALS = [original.path for original in SOURCE.originals]
DERIVED = {derived.path: derived.sha256 for derived in SOURCE.derived}

DEV_XML = "semeval2016_task3_cqa/xml/SemEval2016-Task3-CQA-QL-dev.xml"
TRAIN_PART2_XML = "semeval2016_task3_cqa/xml/SemEval2016-Task3-CQA-QL-train-part2.xml"
TEST_2015_XML = ("semeval2016_task3_cqa/xml/"
                 "SemEval2015-Task3-CQA-QL-test-reformatted-excluding-2016-questions-multiline.xml")
OUT = "semeval2016_task3_cqa/subtaskA/"


@pytest.fixture(scope="module")
def originals(data_dir):
    """Every original of `SOURCES["semeval2016"]`, path -> plain bytes."""
    return {entry.path: original_bytes(data_dir, entry) for entry in SOURCE.originals}


@pytest.fixture(scope="module")
def built(originals):
    """`build` on the real originals, with the paths it asked for."""
    asked = []

    def read(path):
        asked.append(path)
        return originals[path]

    return builder.build(read), asked


def line_of(data, needle):
    """The 1-based line of the first occurrence of `needle` in `data`."""
    return data[:data.index(needle)].count(b"\n") + 1


def build_with(originals, path, data):
    """`build` with original `path` replaced by `data`."""
    return builder.build(lambda name: data if name == path else originals[name])


# ---- the real originals -------------------------------------------------------------------------------------------


def test_build_returns_every_derived_file_and_reads_only_the_originals(built):
    files, asked = built
    assert set(files) == set(DERIVED)
    assert sorted(set(asked)) == sorted(ORIGINALS)


@pytest.mark.parametrize("path", sorted(DERIVED))
def test_built_file_has_the_pinned_digest(built, path):
    assert hashlib.sha256(built[0][path]).hexdigest() == DERIVED[path]


@pytest.mark.parametrize("name, questions, comments, good", [
    ("dev", 244, 2440, 818),
    ("train-part2", 379, 3790, 1364),
    ("train-2015", 606, 3347, None),  # SOURCE.md gives the 2015 label counts before three threads were removed
])
def test_built_tsv_loads_through_the_semeval_reader(built, tmp_path, name, questions, comments, good):
    path = tmp_path / f"{name}.tsv"
    path.write_bytes(built[0][f"{OUT}{name}.tsv"])
    split, labels = read_semeval_split(name, path)
    assert (split.num_questions, split.num_pairs) == (questions, comments)
    assert len(labels) == comments
    assert set(labels.values()) <= {"Good", "PotentiallyUseful", "Bad"}
    if good is not None:
        assert list(labels.values()).count("Good") == split.num_positive == good


def test_built_dev_matches_source_md_counts(built, tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_bytes(built[0][f"{OUT}dev.tsv"])
    split, labels = read_semeval_split("dev", path)
    assert len(split) == 244
    assert collections.Counter(labels.values()) == {"Good": 818, "PotentiallyUseful": 413, "Bad": 1209}
    qrels = built[0][f"{OUT}dev.qrels"].decode().splitlines()
    assert qrels[0] == "Q268_R16 0 Q268_R16_C1 0"
    assert [(q.qid, c.aid, c.label) for q in split for c in q.candidates] == [
        (qid, aid, int(rel)) for qid, _, aid, rel in (line.split(" ") for line in qrels)]


def test_train_2015_leaves_out_the_removed_threads(built):
    qids = {line.split(" ")[0] for line in built[0][f"{OUT}train-2015.qrels"].decode().splitlines()}
    assert not qids & {"Q2630", "Q2656", "Q2828", "Q2657"}
    assert {"Q2481", "Q2772"} <= qids  # the first thread of each 2015 file


# ---- malformed originals ------------------------------------------------------------------------------------------


def test_truncated_xml_names_the_file_and_the_parser_line(originals):
    data = originals[DEV_XML]
    cut = data.index(b'<RelComment RELC_ID="Q268_R16_C4"')  # a line start inside the document
    truncated = data[:cut]
    with pytest.raises(DataFormatError) as error:
        build_with(originals, DEV_XML, truncated)
    assert error.value.path == DEV_XML
    assert error.value.line == truncated.count(b"\n") + 1  # the end of the data, where the parser stopped
    assert error.value.line == line_of(data, b'<RelComment RELC_ID="Q268_R16_C4"')
    assert f"{DEV_XML}, line {error.value.line}:" in str(error.value)
    assert "XML error" in str(error.value)


def test_unknown_comment_label_names_the_comment_line(originals):
    data = originals[DEV_XML]
    start = data.index(b'<RelComment RELC_ID="Q268_R16_C4"')
    end = data.index(b">", start)
    tag = data[start:end]
    assert b'RELC_RELEVANCE2RELQ="Good"' in tag
    broken = data[:start] + tag.replace(b'RELC_RELEVANCE2RELQ="Good"', b'RELC_RELEVANCE2RELQ="Great"') + data[end:]
    with pytest.raises(DataFormatError, match="'Great'") as error:
        build_with(originals, DEV_XML, broken)
    assert error.value.path == DEV_XML
    assert error.value.line == line_of(data, b'<RelComment RELC_ID="Q268_R16_C4"') > 50
    assert str(error.value).startswith(f"{DEV_XML}, line {error.value.line}:")


def test_comment_without_relc_id_names_the_comment_line(originals):
    data = originals[TEST_2015_XML]
    needle = b'<RelComment RELC_ID="Q2773_C2" '
    broken = data.replace(needle, b"<RelComment ", 1)
    with pytest.raises(DataFormatError, match="without RELC_ID") as error:
        build_with(originals, TEST_2015_XML, broken)
    assert error.value.path == TEST_2015_XML
    assert error.value.line == line_of(data, needle)
    assert str(error.value).startswith(f"{TEST_2015_XML}, line {error.value.line}:")


def test_undefined_entity_names_its_line(originals):
    data = originals[TRAIN_PART2_XML]
    needle = b"<RelCText>The cheapest I know is 1600."
    broken = data.replace(needle, b"<RelCText>&nbsp;The cheapest I know is 1600.", 1)
    with pytest.raises(DataFormatError, match="undefined entity") as error:
        build_with(originals, TRAIN_PART2_XML, broken)
    assert error.value.path == TRAIN_PART2_XML
    assert error.value.line == line_of(data, needle)


# ---- the rules, on hand-written originals -------------------------------------------------------------------------


def thread(relq_id, subject, body, comments, skip=False):
    """A `Thread` element: `comments` are `(relc_id, label, text)`."""
    attribute = ' SubtaskA_Skip_Because_Same_As_RelQuestion_ID="Q0_R1"' if skip else ""
    parts = [f'<Thread THREAD_SEQUENCE="{relq_id}"{attribute}>',
             (f'<RelQuestion RELQ_ID="{relq_id}"><RelQSubject>{subject}</RelQSubject><RelQBody>{body}</RelQBody>'
              "</RelQuestion>")]
    parts += [f'<RelComment RELC_ID="{cid}" RELC_RELEVANCE2RELQ="{label}"><RelCText>{text}</RelCText></RelComment>'
              for cid, label, text in comments]
    return "\n".join(parts + ["</Thread>"])


def document(*threads):
    return ('<?xml version="1.0" encoding="utf-8"?>\n<xml version="1.0">\n'
            + "\n".join(threads) + "\n</xml>\n").encode("utf-8")


def small_originals(**overrides):
    """Four tiny originals, by basename prefix: `part2`, `dev`, `dev2015`, `test2015`."""
    files = {
        "part2": document(thread("Q1_R1", "S", "B", [("Q1_R1_C1", "Bad", "x")])),
        "dev": document(thread("Q2_R1", "S", "B", [("Q2_R1_C1", "Good", "y")])),
        "dev2015": document(thread("Q3", "S", "B", [("Q3_C1", "PotentiallyUseful", "z")])),
        "test2015": document(thread("Q4", "S", "B", [("Q4_C1", "Good", "w")])),
    }
    files.update(overrides)
    names = dict(zip(("part2", "dev", "dev2015", "test2015"), ORIGINALS))
    return {names[key]: data for key, data in files.items()}


def test_rules_on_small_files():
    dev = document(
        thread("Q2_R1", "S", "B", [("Q2_R1_C1", "Good", "dup")], skip=True),
        thread("Q2_R2", " Tom &amp; Jerry&#160;", "", [
            ("Q2_R2_C1", "Good", "a\t\tb\r\n\nc  d \u00a0"),
            ("Q2_R2_C2", "PotentiallyUseful", "&lt;p&gt; \u00a0e"),
            ("Q2_R2_C3", "Bad", ""),
        ]),
    )
    test2015 = document(
        thread("Q2630", "removed", "B", [("Q2630_C1", "Good", "gone")]),
        thread("Q2657", "no comments", "B", []),
        thread("Q5", "\nS\t", "line one\nline two\n", [("Q5_C1", "Bad", " x\n")]),
    )
    files = builder.build(small_originals(dev=dev, test2015=test2015).__getitem__)
    header = "relq_id\trelc_id\trelq_subject\trelq_body\tcomment\tlabel\tbinary_label\n"
    # 2016: entities decoded, runs of tab/CR/LF -> one space, then stripped; skipped threads left out
    assert files[f"{OUT}dev.tsv"].decode("utf-8") == header + (
        "Q2_R2\tQ2_R2_C1\tTom & Jerry\t\ta b c  d\tGood\t1\n"
        "Q2_R2\tQ2_R2_C2\tTom & Jerry\t\t<p> \u00a0e\tPotentiallyUseful\t0\n"
        "Q2_R2\tQ2_R2_C3\tTom & Jerry\t\t\tBad\t0\n")
    assert files[f"{OUT}dev.qrels"] == b"Q2_R2 0 Q2_R2_C1 1\nQ2_R2 0 Q2_R2_C2 0\nQ2_R2 0 Q2_R2_C3 0\n"
    # 2015: the dev file's threads first, then the test file's; not stripped; Q2630 and Q2657 give no row
    assert files[f"{OUT}train-2015.tsv"].decode("utf-8") == header + (
        "Q3\tQ3_C1\tS\tB\tz\tPotentiallyUseful\t0\n"
        "Q5\tQ5_C1\t S \tline one line two \t x \tBad\t0\n")
    assert files[f"{OUT}train-2015.qrels"] == b"Q3 0 Q3_C1 0\nQ5 0 Q5_C1 0\n"
    assert files[f"{OUT}train-part2.qrels"] == b"Q1_R1 0 Q1_R1_C1 0\n"


@pytest.mark.parametrize("old, new, message, line", [
    ("<RelQSubject>S</RelQSubject>", "", "without <RelQSubject>", 4),
    ("<RelCText>y</RelCText>", "", "without <RelCText>", 5),
    ('RELQ_ID="Q2_R1"', "", "without RELQ_ID", 4),
    ('RELC_RELEVANCE2RELQ="Good"', "", "no RELC_RELEVANCE2RELQ", 5),
    ('RELC_ID="Q2_R1_C1"', 'RELC_ID="Q2 R1"', "RELC_ID='Q2 R1'", 5),
    ("<RelCText>y</RelCText>", "<RelCText>y<b/></RelCText>", "unexpected element <b>", 5),
    ("</Thread>", "", "mismatched tag", 7),  # </xml> closes <Thread>
])
def test_structure_errors_on_small_files(old, new, message, line):
    dev = small_originals()[DEV_XML].decode("utf-8")
    assert old in dev
    with pytest.raises(DataFormatError, match=message) as error:
        builder.build(small_originals(dev=dev.replace(old, new).encode("utf-8")).__getitem__)
    assert (error.value.path, error.value.line) == (DEV_XML, line)
