"""Build the derived TrecQA files from their public originals, byte for byte.

The data curators derived twelve files from the originals listed in `SOURCES["trecqa"]`
(`keras_match.datasets.sources`); the data folder's `trecqa/SOURCE.md` documents how, and pins their sha256:

* `trecqa/tsv/{train,raw-dev,raw-test}.tsv` from the jacana files `TRAIN.xml`, `DEV.xml`, `TEST.xml`
  (SOURCE.md, "Formats" and "Splits and measured counts"): one row per `<positive>` / `<negative>` block, in
  file order; `question` / `answer` = the block's first line (its tokens) joined by single spaces; questions
  without candidates are omitted.
* `trecqa/tsv/clean-{dev,test}.tsv`: the raw splits minus the questions lacking a positive or a negative
  candidate.
* `trecqa/tsv/train-all.tsv` (SOURCE.md, "TRAIN-ALL: how it was reconstructed", steps 1-4): questions from
  `Train1-2393.Question.POSInput.gz`, candidates from the `Positive-M...cleaned` then the `Negative-M` file,
  labels from Castorini's `sim.txt` (7 positives relabelled 0), question ids and candidate counts checked against
  Castorini's `id.txt`, question text checked against `a.toks` (the truncated question `984` completed from it).
  The data folder stores it gzip'd (`train-all.tsv.gz`); the builder returns the plain bytes, whose sha256 is the
  one pinned in `sources.py`.
* `trecqa/qrels/<split>.qrels`: trec_eval qrels of each split, `qid 0 aid label`, one line per TSV row.

Every TSV is UTF-8 with LF line ends and the header `qid aid question answer label` (tab-separated); `aid` is the
0-based index of the candidate within its question.

The builder is strict: any departure from the documented layout of an original raises `DataFormatError` naming
the original's path and the 1-based line, rather than producing different bytes.
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import zlib
from typing import Callable, Iterable

from keras_match.datasets.base import DataFormatError

JACANA = "trecqa/jacana/"
RAW_2393 = "trecqa/jacana/train2393_raw/"
CASTORINI = "trecqa/castorini_nce_train-all/"

XML_SPLITS = {
    "train": JACANA + "TRAIN.xml",
    "raw-dev": JACANA + "DEV.xml",
    "raw-test": JACANA + "TEST.xml",
}
"""Split name -> the jacana file (an `Original.path`) it is read from."""

CLEAN_SPLITS = {"clean-dev": "raw-dev", "clean-test": "raw-test"}
"""Clean split -> the raw split it filters (questions with both a positive and a negative candidate kept)."""

QUESTIONS_2393 = RAW_2393 + "Train1-2393.Question.POSInput.gz"
POSITIVES_2393 = RAW_2393 + "Train1-2393.Positive-M.POSInput.cleaned.gz"
NEGATIVES_2393 = RAW_2393 + "Train1-2393.Negative-M.POSInput.gz"
A_TOKS = CASTORINI + "a.toks"
ID_TXT = CASTORINI + "id.txt"
SIM_TXT = CASTORINI + "sim.txt"

SPLITS = ("train-all", "train", "raw-dev", "raw-test", "clean-dev", "clean-test")
"""Every split built, in the order of `SOURCES["trecqa"].derived`."""

RELABELLED_POSITIVES = frozenset({
    ("115", 4), ("343", 2), ("351", 5), ("534", 1), ("534", 4), ("600", 0), ("748", 5),
})
"""`(qid, aid)` of the 7 TRAIN-ALL candidates of the Positive file that `sim.txt` labels 0 (SOURCE.md, TRAIN-ALL
step 3). Any other disagreement between a candidate's file and its `sim.txt` label is an error."""

TRUNCATED_QUESTIONS = frozenset({"984"})
"""TRAIN-ALL questions whose text in the Question file is cut short and is completed from `a.toks` (SOURCE.md,
TRAIN-ALL step 4). Any other question must equal its `a.toks` line once lowercased."""

TSV_HEADER = "qid\taid\tquestion\tanswer\tlabel\n"

_QAPAIRS = re.compile(r"<QApairs id='([^'\s]+)'>")
_XML_BLOCKS = ("question", "positive", "negative")
_XML_ANNOTATION_LINES = 5  # tokens, POS tags, dependency labels, head indices, NER tags
_Q_OPEN = re.compile(r"<Q ([0-9]+) >")
_A_OPEN = re.compile(r"<A ([0-9]+) >")


@dataclasses.dataclass
class _Question:
    """A question of a derived split: its id, text and `(answer, label)` candidates in file order."""

    qid: str
    text: str
    candidates: list[tuple[str, int]] = dataclasses.field(default_factory=list)

    def is_clean(self) -> bool:
        """Whether the question has both a positive and a negative candidate (the clean-split rule)."""
        labels = {label for _, label in self.candidates}
        return labels == {0, 1}


def build(read: Callable[[str], bytes]) -> dict[str, bytes]:
    """Build every derived TrecQA file from the originals, byte for byte.

    Pure function: the originals come from `read`, nothing is written and nothing is fetched.

    Args:
        read: returns the bytes of an original given its `Original.path` in `SOURCES["trecqa"].originals`:
            the plain XML / text for `trecqa/jacana/*.xml` and `trecqa/castorini_nce_train-all/*`, the gzip bytes
            as stored at the origin for `trecqa/jacana/train2393_raw/*.gz`.

    Returns:
        `{Derived.path: bytes}` for the twelve derived files: `trecqa/tsv/<split>.tsv` (`train-all.tsv` plain,
        not gzip'd) and `trecqa/qrels/<split>.qrels` for the splits `train-all`, `train`, `raw-dev`,
        `raw-test`, `clean-dev`, `clean-test`. Each file's sha256 is the one pinned in `sources.py`.

    Raises:
        DataFormatError: an original is malformed or disagrees with the others (not UTF-8, corrupt gzip,
            unexpected line, a `<QApairs>` block without `<question>`, a label other than 0/1, question ids or
            candidate counts of `id.txt` differing from the Train1-2393 files, ...); the error names the
            original's path and the 1-based line.
        OSError: whatever `read` raises (e.g. `FileNotFoundError` for a missing original).

    Reference:
        The data folder's `trecqa/SOURCE.md`: "Formats" for the jacana and TSV / qrels layouts, "Splits and
        measured counts" for the raw and clean splits, "TRAIN-ALL: how it was reconstructed" steps 1-4.
    """
    splits = {name: _parse_jacana(path, _lines(path, read(path))) for name, path in XML_SPLITS.items()}
    for clean, raw in CLEAN_SPLITS.items():
        splits[clean] = [question for question in splits[raw] if question.is_clean()]
    splits["train-all"] = _train_all(read)
    kept = {name: [question for question in splits[name] if question.candidates] for name in SPLITS}
    files = {f"trecqa/tsv/{name}.tsv": _tsv(kept[name]) for name in SPLITS}
    files.update({f"trecqa/qrels/{name}.qrels": _qrels(kept[name]) for name in SPLITS})
    return files


# ---- reading originals ------------------------------------------------------------------------------------------


def _gunzip(path: str, data: bytes) -> bytes:
    """The decompressed bytes of the gzip original `path`.

    Raises:
        DataFormatError: the data is not a valid gzip stream (no line: the position is in compressed bytes).
    """
    try:
        return gzip.decompress(data)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise DataFormatError(path, None, f"corrupt gzip data ({e})") from None


def _lines(path: str, data: bytes) -> list[str]:
    """The lines of the text original `path`: decoded as UTF-8, split on LF, a trailing CR removed from each.

    Element `i` is line `i + 1`. A final LF does not start an extra line.

    Raises:
        DataFormatError: a byte sequence is not valid UTF-8 (the line holding it is named).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataFormatError(path, line, f"not valid UTF-8 ({e.reason} at byte {e.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# ---- jacana XML: train, raw-dev, raw-test -------------------------------------------------------------------------


def _parse_jacana(path: str, lines: list[str]) -> list[_Question]:
    """Parse a jacana pseudo-XML file (SOURCE.md, "Formats") into its questions, in file order.

    Each `<QApairs id='ID'>` ... `</QApairs>` block holds one `<question>` block followed by any number of
    `<positive>` / `<negative>` blocks; each of those holds at least 5 lines of tab-separated annotations aligned
    token by token, the first being the tokens. Questions without candidates are kept (the caller omits them).

    Args:
        path: the original's path, for errors.
        lines: its lines (`_lines`).

    Returns:
        The questions; candidates labelled 1 (`<positive>`) or 0 (`<negative>`).

    Raises:
        DataFormatError: any other line, a `QApairs` block without `<question>` or with two, an unclosed or
            mismatched block, a repeated question id, misaligned annotation lines.
    """
    questions: list[_Question] = []
    seen: dict[str, int] = {}  # question id -> line of its <QApairs>
    qid = pairs_line = None  # id and line of the open <QApairs> block; None outside QApairs blocks
    question = None  # the open QApairs block's question, once its <question> block is read
    block = None  # (tag, opening line, [(line, text), ...]) of the open question/positive/negative block
    for number, line in enumerate(lines, 1):
        if block is not None:
            tag, start, content = block
            if line != f"</{tag}>":
                if _is_jacana_tag(line):
                    raise DataFormatError(path, number, f"{line!r} inside the <{tag}> block opened at line {start}")
                content.append((number, line))
                continue
            text = _jacana_text(path, tag, start, content)
            if tag == "question":
                question = _Question(qid, text)
            else:
                question.candidates.append((text, 1 if tag == "positive" else 0))
            block = None
        elif pairs_line is None:
            match = _QAPAIRS.fullmatch(line)
            if not match:
                raise DataFormatError(path, number, f"expected <QApairs id='...'>, found {line[:60]!r}")
            qid = match.group(1)
            if qid in seen:
                raise DataFormatError(path, number, f"question id {qid!r} repeated (first at line {seen[qid]})")
            seen[qid] = pairs_line = number
        elif question is None:
            if line != "<question>":
                raise DataFormatError(path, number, f"<QApairs id='{qid}'> block (line {pairs_line}) lacks "
                                      f"<question>: expected <question>, found {line[:60]!r}")
            block = ("question", number, [])
        elif line in ("<positive>", "<negative>"):
            block = (line[1:-1], number, [])
        elif line == "</QApairs>":
            questions.append(question)
            qid = pairs_line = question = None
        else:
            raise DataFormatError(path, number, f"expected <positive>, <negative> or </QApairs>, found {line[:60]!r}")
    if block is not None:
        raise DataFormatError(path, block[1], f"<{block[0]}> block never closed (file ends)")
    if pairs_line is not None:
        raise DataFormatError(path, pairs_line, f"<QApairs id='{qid}'> block never closed (file ends)")
    return questions


def _is_jacana_tag(line: str) -> bool:
    """Whether `line` is one of the jacana structure tags (which never occur inside a block)."""
    if _QAPAIRS.fullmatch(line) or line == "</QApairs>":
        return True
    return any(line in (f"<{tag}>", f"</{tag}>") for tag in _XML_BLOCKS)


def _jacana_text(path: str, tag: str, start: int, content: list[tuple[int, str]]) -> str:
    """The text of a `<question>` / `<positive>` / `<negative>` block: its first line's tokens joined by spaces.

    Raises:
        DataFormatError: fewer than 5 annotation lines, annotation lines of unequal token counts, an empty token.
    """
    if len(content) < _XML_ANNOTATION_LINES:
        raise DataFormatError(path, start, f"<{tag}> block has {len(content)} lines, expected at least "
                              f"{_XML_ANNOTATION_LINES} (tokens, POS, dependencies, heads, NER)")
    number, tokens_line = content[0]
    tokens = tokens_line.split("\t")
    for other_number, other in content[1:_XML_ANNOTATION_LINES]:
        if len(other.split("\t")) != len(tokens):
            raise DataFormatError(path, other_number, f"{len(other.split(chr(9)))} tab-separated fields, but the "
                                  f"tokens line {number} has {len(tokens)}")
    if not all(token and token.strip() == token for token in tokens):
        raise DataFormatError(path, number, "empty token or token with surrounding white space")
    return " ".join(tokens)


# ---- TRAIN-ALL ----------------------------------------------------------------------------------------------------


def _train_all(read: Callable[[str], bytes]) -> list[_Question]:
    """Reconstruct TRAIN-ALL (SOURCE.md, "TRAIN-ALL: how it was reconstructed", steps 1-4).

    Castorini's `id.txt`, `sim.txt` and `a.toks` have one line per pair, in the order of the Train1-2393 files
    (questions in Question-file order, each with its Positive then its Negative candidates): line `n` of each
    describes the `n`-th pair.

    Raises:
        DataFormatError: a malformed original, or originals that disagree (see `build`).
    """
    questions, candidates = _train_2393(read)
    columns = {path: _lines(path, read(path)) for path in (ID_TXT, SIM_TXT, A_TOKS)}

    def field(path: str, row: int, qid: str, start: int) -> str:
        """Line `row + 1` of Castorini's file `path`, which must exist."""
        if row >= len(columns[path]):
            raise DataFormatError(path, row + 1, f"file ends after {row} lines, but the Train1-2393 files have more "
                                  f"candidates: question {qid} ({QUESTIONS_2393}, line {start}) has "
                                  f"{len(candidates[qid])} in the Positive/Negative files")
        return columns[path][row]

    result = []
    row = 0  # 0-based index of the current line of id.txt / sim.txt / a.toks
    for qid, start, raw_text in questions:
        question = _Question(qid, raw_text)
        for aid, (number, answer, path) in enumerate(candidates[qid]):
            found = field(ID_TXT, row, qid, start)
            if found != qid:
                raise DataFormatError(ID_TXT, row + 1, f"question id {found!r}, expected {qid!r}: question {qid} "
                                      f"({QUESTIONS_2393}, line {start}) has {len(candidates[qid])} candidates in "
                                      f"the Positive/Negative files, but {ID_TXT} moves on after {aid}")
            label = _label(field(SIM_TXT, row, qid, start), row + 1)  # step 3
            expected = _expected_label(qid, aid, path)
            if label != expected:
                raise DataFormatError(SIM_TXT, row + 1, f"label {label} for question {qid}'s candidate {aid} "
                                      f"({path}, line {number}), expected {expected}: only the 7 documented "
                                      f"RELABELLED_POSITIVES differ from their file's label")
            toks = field(A_TOKS, row, qid, start)
            if aid == 0:  # step 4
                question.text = _question_text(qid, raw_text, start, toks, row + 1)
            elif toks != question.text.lower():
                raise DataFormatError(A_TOKS, row + 1, f"{toks[:60]!r} differs from the line of question {qid}'s "
                                      f"first candidate ({row + 1 - aid}): {question.text.lower()[:60]!r}")
            question.candidates.append((answer, label))
            row += 1
        result.append(question)
    for path, lines in columns.items():
        if len(lines) > row:
            raise DataFormatError(path, row + 1, f"{len(lines)} lines, but the Train1-2393 files have {row} "
                                  f"candidates (one line per candidate)")
    return result


def _train_2393(read: Callable[[str], bytes]) -> tuple[list[tuple[str, int, str]], dict[str, list]]:
    """The questions and candidates of the Train1-2393 files (SOURCE.md, TRAIN-ALL steps 1 and 2).

    Returns:
        `(questions, candidates)`: `(qid, line, text)` of every question in Question-file order, and for each
        question id the `(line, text, path)` of its candidates: its Positive-file lines, then its Negative-file lines.

    Raises:
        DataFormatError: a malformed file, a question block without exactly one line, a repeated question id, a
            candidate block of an unknown question or repeated, a tab inside a candidate.
    """
    questions = []
    candidates = {}
    lines = _lines(QUESTIONS_2393, _gunzip(QUESTIONS_2393, read(QUESTIONS_2393)))
    for qid, start, content in _blocks(QUESTIONS_2393, lines, "Q", _Q_OPEN):
        if len(content) != 1:
            raise DataFormatError(QUESTIONS_2393, start, f"<Q {qid} > block has {len(content)} lines, expected 1")
        if qid in candidates:
            raise DataFormatError(QUESTIONS_2393, start, f"question id {qid} repeated")
        questions.append((qid, start, content[0][1]))
        candidates[qid] = []
    for path in (POSITIVES_2393, NEGATIVES_2393):
        seen = {}
        for qid, start, content in _blocks(path, _lines(path, _gunzip(path, read(path))), "A", _A_OPEN):
            if qid not in candidates:
                raise DataFormatError(path, start, f"<A {qid} > names a question absent from {QUESTIONS_2393}")
            if qid in seen:
                raise DataFormatError(path, start, f"<A {qid} > repeated (first at line {seen[qid]})")
            seen[qid] = start
            for number, text in content:
                if "\t" in text:
                    raise DataFormatError(path, number, "tab inside a candidate sentence (the TSV separator)")
                candidates[qid].append((number, text, path))
    return questions, candidates


def _blocks(path: str, lines: list[str], tag: str, opening: re.Pattern) -> list[tuple[str, int, list]]:
    """The `<TAG qid >` ... `</TAG>` blocks of a Train1-2393 file: `(qid, opening line, [(line, text), ...])`.

    Raises:
        DataFormatError: a line outside a block, an empty line, a block opened inside another or never closed.
    """
    blocks = []
    block = None
    closing = f"</{tag}>"
    for number, line in enumerate(lines, 1):
        match = opening.fullmatch(line)
        if block is None:
            if not match:
                raise DataFormatError(path, number, f"expected <{tag} qid >, found {line[:60]!r}")
            block = (match.group(1), number, [])
        elif match:
            raise DataFormatError(path, number, f"{line!r} inside the block opened at line {block[1]} (no {closing})")
        elif line == closing:
            blocks.append(block)
            block = None
        elif not line.strip():
            raise DataFormatError(path, number, "empty line inside a block")
        else:
            block[2].append((number, line))
    if block is not None:
        raise DataFormatError(path, block[1], f"<{tag} {block[0]} > block never closed (file ends)")
    return blocks


def _label(text: str, line: int) -> int:
    """A `sim.txt` label: `0` or `1`.

    Raises:
        DataFormatError: anything else.
    """
    if text not in ("0", "1"):
        raise DataFormatError(SIM_TXT, line, f"label {text!r}, expected 0 or 1")
    return int(text)


def _expected_label(qid: str, aid: int, path: str) -> int:
    """The label TRAIN-ALL candidate `aid` of question `qid`, listed in `path`, has in `sim.txt`: 1 for the Positive
    file, 0 for the Negative file and for `RELABELLED_POSITIVES` (SOURCE.md, TRAIN-ALL step 3)."""
    return int(path == POSITIVES_2393 and (qid, aid) not in RELABELLED_POSITIVES)


def _question_text(qid: str, raw: str, start: int, toks: str, line: int) -> str:
    """The TRAIN-ALL text of question `qid` (SOURCE.md, TRAIN-ALL step 4): the raw Question-file line, checked
    against Castorini's lowercased `a.toks` line; a question of `TRUNCATED_QUESTIONS` gets the tail of `a.toks`.

    Raises:
        DataFormatError: `a.toks` disagrees with the Question file.
    """
    lowered = raw.lower()
    if toks == lowered:
        return raw
    if qid in TRUNCATED_QUESTIONS and toks.startswith(lowered + " "):
        return raw + toks[len(lowered):]
    raise DataFormatError(A_TOKS, line, f"{toks[:60]!r} differs from question {qid} of {QUESTIONS_2393} "
                          f"(line {start}) lowercased: {lowered[:60]!r}")


# ---- writing -----------------------------------------------------------------------------------------------------


def _rows(questions: Iterable[_Question]):
    """`(qid, aid, question, answer, label)` of every candidate, question by question."""
    for question in questions:
        for aid, (answer, label) in enumerate(question.candidates):
            yield question.qid, aid, question.text, answer, label


def _tsv(questions: list[_Question]) -> bytes:
    """The TSV file of a split: header, then `qid aid question answer label` per candidate (UTF-8, LF)."""
    lines = [TSV_HEADER]
    lines.extend(f"{qid}\t{aid}\t{question}\t{answer}\t{label}\n"
                 for qid, aid, question, answer, label in _rows(questions))
    return "".join(lines).encode("utf-8")


def _qrels(questions: list[_Question]) -> bytes:
    """The trec_eval qrels of a split: `qid 0 aid label` per candidate (LF)."""
    return "".join(f"{qid} 0 {aid} {label}\n" for qid, aid, _, _, label in _rows(questions)).encode("utf-8")
