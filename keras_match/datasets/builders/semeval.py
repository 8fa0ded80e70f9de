"""Build the SemEval-2016 Task 3 subtask-A files (TSV and qrels) from the public original XML files.

The data curators derived six files of `semeval2016_task3_cqa/subtaskA/` from four original XML files
(`semeval2016_task3_cqa/SOURCE.md` in the data folder documents both; `keras_match.datasets.sources` pins them):

* `train-part2.{tsv,qrels}` from `xml/SemEval2016-Task3-CQA-QL-train-part2.xml` (2016 release v3.2);
* `dev.{tsv,qrels}` from `xml/SemEval2016-Task3-CQA-QL-dev.xml` (2016 release v3.2);
* `train-2015.{tsv,qrels}` from the organizers' 2015 questions reformatted for 2016 subtask A:
  `xml/SemEval2015-Task3-CQA-QL-dev-reformatted-excluding-2016-questions-cleansed.xml`, then
  `xml/SemEval2015-Task3-CQA-QL-test-reformatted-excluding-2016-questions-multiline.xml`.

Rules (SOURCE.md, "Formats"):

* one TSV row per `RelComment` of every `Thread` without the `SubtaskA_Skip_Because_Same_As_RelQuestion_ID`
  attribute, in document order, under the header `relq_id relc_id relq_subject relq_body comment label
  binary_label` (tab-separated, UTF-8, LF line ends); `label` is the comment's `RELC_RELEVANCE2RELQ` (`Good`,
  `PotentiallyUseful` or `Bad`) and `binary_label` is `1` for `Good`, else `0`;
* texts (`RelQSubject`, `RelQBody`, `RelCText`) with XML entities decoded and every run of tab / CR / LF replaced
  by one space, otherwise untouched; an empty element gives an empty field;
* qrels: one line `relq_id 0 relc_id binary_label` per TSV row, in the same order;
* `train-2015` leaves out threads `Q2630`, `Q2656` and `Q2828` (their questions are related questions of
  SemEval-2016 evaluation threads); `Q2657` has no comment, hence no row.

One step SOURCE.md does not state, found by comparing with the pinned digests: the texts of the two **2016** files
are also stripped of leading and trailing whitespace (`str.strip()`, after the tab / CR / LF replacement; the
characters stripped in these files are spaces and no-break spaces U+00A0), while those of the two **2015** files
are not (their derived rows keep leading and trailing spaces). Both choices are needed for the digests to match.

Malformed input (not well-formed XML, a `RelComment` without `RELC_ID` or with an unknown label, a `Thread`
without its `RelQuestion`, ...) raises `keras_match.datasets.base.DataFormatError` naming the original's path and
the line of the problem; the builder never writes different bytes silently.
"""

from __future__ import annotations

import dataclasses
import re
import xml.parsers.expat
from collections.abc import Callable

from keras_match.datasets.base import DataFormatError

_CONTROL = re.compile(r"[\t\r\n]+")
_ID = re.compile(r"\S+")

XML_DIR = "semeval2016_task3_cqa/xml/"
"""Where the originals are kept (`Original.path` of `SOURCES["semeval2016"]`), relative to the data directory."""

OUT_DIR = "semeval2016_task3_cqa/subtaskA/"
"""Where the derived files are kept (`Derived.path`), relative to the data directory."""

TRAIN_PART2_XML = XML_DIR + "SemEval2016-Task3-CQA-QL-train-part2.xml"
DEV_XML = XML_DIR + "SemEval2016-Task3-CQA-QL-dev.xml"
DEV_2015_XML = XML_DIR + "SemEval2015-Task3-CQA-QL-dev-reformatted-excluding-2016-questions-cleansed.xml"
TEST_2015_XML = XML_DIR + "SemEval2015-Task3-CQA-QL-test-reformatted-excluding-2016-questions-multiline.xml"

SPLITS = (
    # (derived name, originals in order, strip the texts, RELQ_IDs left out)
    ("train-part2", (TRAIN_PART2_XML,), True, frozenset()),
    ("dev", (DEV_XML,), True, frozenset()),
    ("train-2015", (DEV_2015_XML, TEST_2015_XML), False, frozenset({"Q2630", "Q2656", "Q2828"})),
)
"""How each derived split is made (see the module docstring)."""

HEADER = ("relq_id", "relc_id", "relq_subject", "relq_body", "comment", "label", "binary_label")
"""The TSV header."""

LABELS = ("Good", "PotentiallyUseful", "Bad")
"""The valid `RELC_RELEVANCE2RELQ` values; only `Good` is relevant (`binary_label` 1)."""

SKIP_ATTRIBUTE = "SubtaskA_Skip_Because_Same_As_RelQuestion_ID"
"""A `Thread` attribute marking a duplicate related thread, left out of subtask A."""

TEXTS = {"RelQSubject": "RelQuestion", "RelQBody": "RelQuestion", "RelCText": "RelComment"}
"""The text elements that are read, with the element that must hold each."""

@dataclasses.dataclass
class _Comment:
    """A `RelComment`: its `RELC_ID`, `RELC_RELEVANCE2RELQ` and `RelCText` (`None` until read)."""

    line: int
    relc_id: str
    label: str
    text: str | None = None


@dataclasses.dataclass
class _Thread:
    """A `Thread`: whether subtask A skips it, its `RelQuestion` (`RELQ_ID`, subject, body) and its comments."""

    line: int
    skip: bool
    relq_id: str | None = None
    question_line: int = 0
    subject: str | None = None
    body: str | None = None
    comments: list[_Comment] = dataclasses.field(default_factory=list)


class _ThreadReader:
    """Reads the threads of one original XML file with expat, which reports the line of every element.

    Only `Thread`, `RelQuestion`, `RelComment` and the text elements `RelQSubject`, `RelQBody`, `RelCText` are
    read; other elements (`xml`, `OrgQuestion`, `OrgQSubject`, ...) are passed over.
    """

    def __init__(self, source: str):
        self.source = source
        self.threads: list[_Thread] = []
        self._thread: _Thread | None = None
        self._comment: _Comment | None = None
        self._stack: list[str] = []
        self._text: list[str] | None = None
        self._parser = xml.parsers.expat.ParserCreate()
        self._parser.buffer_text = True
        self._parser.StartElementHandler = self._start
        self._parser.EndElementHandler = self._end
        self._parser.CharacterDataHandler = self._characters

    def read(self, data: bytes) -> list[_Thread]:
        """Parse the whole file and return its threads in document order.

        Raises:
            DataFormatError: the XML is not well-formed, or an element breaks the structure described in SOURCE.md.
        """
        try:
            self._parser.Parse(data, True)
        except xml.parsers.expat.ExpatError as error:
            message = xml.parsers.expat.ErrorString(error.code)
            raise DataFormatError(
                self.source, error.lineno, f"XML error: {message} (column {error.offset + 1})") from None
        return self.threads

    # ---- expat handlers ------------------------------------------------------------------------------------------

    def _error(self, message: str, line: int | None = None):
        """A `DataFormatError` at `line` (default: the parser's current line)."""
        return DataFormatError(self.source, line or self._parser.CurrentLineNumber, message)

    def _start(self, name: str, attributes: dict[str, str]):
        line = self._parser.CurrentLineNumber
        parent = self._stack[-1] if self._stack else None
        self._stack.append(name)
        if self._text is not None:
            raise self._error(f"unexpected element <{name}> inside <{parent}>")
        if name == "Thread":
            if self._thread is not None:
                raise self._error("<Thread> inside another <Thread>")
            self._thread = _Thread(line, SKIP_ATTRIBUTE in attributes)
        elif name == "RelQuestion":
            thread = self._inside_thread(name)
            if thread.relq_id is not None:
                raise self._error(f"a second <RelQuestion> in the <Thread> of line {thread.line}")
            thread.relq_id = self._identifier(attributes, "RELQ_ID", name)
            thread.question_line = line
        elif name == "RelComment":
            thread = self._inside_thread(name)
            if thread.relq_id is None:
                raise self._error("<RelComment> before the thread's <RelQuestion>")
            label = attributes.get("RELC_RELEVANCE2RELQ")
            if label not in LABELS:
                found = "no RELC_RELEVANCE2RELQ" if label is None else f"RELC_RELEVANCE2RELQ={label!r}"
                raise self._error(f"<RelComment> with {found}; expected one of {list(LABELS)}")
            self._comment = _Comment(line, self._identifier(attributes, "RELC_ID", name), label)
            thread.comments.append(self._comment)
        elif name in TEXTS:
            if parent != TEXTS[name]:
                raise self._error(f"<{name}> outside <{TEXTS[name]}>")
            if self._current(name) is not None:
                raise self._error(f"a second <{name}> in the <{parent}>")
            self._text = []

    def _end(self, name: str):
        self._stack.pop()
        if name in TEXTS:
            self._set_current(name, "".join(self._text))
            self._text = None
        elif name == "RelComment":
            if self._comment.text is None:
                raise self._error(f"<RelComment> {self._comment.relc_id} without <RelCText>", self._comment.line)
            self._comment = None
        elif name == "RelQuestion":
            thread = self._thread
            for field, element in (("subject", "RelQSubject"), ("body", "RelQBody")):
                if getattr(thread, field) is None:
                    raise self._error(f"<RelQuestion> {thread.relq_id} without <{element}>", thread.question_line)
        elif name == "Thread":
            if self._thread.relq_id is None:
                raise self._error("<Thread> without <RelQuestion>", self._thread.line)
            self.threads.append(self._thread)
            self._thread = None

    def _characters(self, data: str):
        if self._text is not None:
            self._text.append(data)

    # ---- helpers -------------------------------------------------------------------------------------------------

    def _inside_thread(self, name: str) -> _Thread:
        """The open thread; an error unless element `name` is a child of a `Thread`."""
        if self._thread is None or self._stack[-2:-1] != ["Thread"]:
            raise self._error(f"<{name}> outside <Thread>")
        return self._thread

    def _identifier(self, attributes: dict[str, str], key: str, name: str) -> str:
        """The id attribute `key` of element `name`: required, non-empty, without whitespace (TSV / qrels field)."""
        value = attributes.get(key)
        if value is None:
            raise self._error(f"<{name}> without {key}")
        if not _ID.fullmatch(value):
            raise self._error(f"<{name}> with {key}={value!r}; expected a non-empty id without whitespace")
        return value

    def _current(self, name: str) -> str | None:
        """The text already read for text element `name` of the open question or comment."""
        if name == "RelCText":
            return self._comment.text
        return self._thread.subject if name == "RelQSubject" else self._thread.body

    def _set_current(self, name: str, text: str):
        """Keep `text` as text element `name` of the open question or comment."""
        if name == "RelCText":
            self._comment.text = text
        elif name == "RelQSubject":
            self._thread.subject = text
        else:
            self._thread.body = text


def read_threads(source: str, data: bytes) -> list[_Thread]:
    """The `Thread`s of one original XML file, in document order.

    Args:
        source: the original's path (for error messages).
        data: its bytes (plain XML).

    Returns:
        Every thread, skipped ones included (`_Thread.skip`), with its question and comments; texts as decoded
        by the XML parser (entities resolved, nothing else changed).

    Raises:
        DataFormatError: the file is not well-formed XML or breaks the structure (see `_ThreadReader`).
    """
    return _ThreadReader(source).read(data)


def normalize(text: str, strip: bool) -> str:
    """A text as written in the derived files: runs of tab / CR / LF replaced by one space, then stripped of
    leading and trailing whitespace when `strip` (the 2016 files) and otherwise left as is."""
    text = _CONTROL.sub(" ", text)
    return text.strip() if strip else text


def split_rows(threads: list[_Thread], strip: bool, excluded: frozenset[str]) -> list[tuple[str, ...]]:
    """The TSV rows (fields in `HEADER` order) of `threads`: one per comment of every thread that is neither
    marked for skipping in subtask A nor in `excluded` (by `RELQ_ID`)."""
    rows = []
    for thread in threads:
        if thread.skip or thread.relq_id in excluded:
            continue
        subject, body = normalize(thread.subject, strip), normalize(thread.body, strip)
        for comment in thread.comments:
            binary = "1" if comment.label == "Good" else "0"
            rows.append((thread.relq_id, comment.relc_id, subject, body, normalize(comment.text, strip),
                         comment.label, binary))
    return rows


def tsv_bytes(rows: list[tuple[str, ...]]) -> bytes:
    """The TSV file: the header, then one tab-separated line per row, LF-terminated, UTF-8."""
    lines = ["\t".join(HEADER)] + ["\t".join(row) for row in rows]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def qrels_bytes(rows: list[tuple[str, ...]]) -> bytes:
    """The trec_eval qrels file: `relq_id 0 relc_id binary_label` per row, LF-terminated, UTF-8."""
    return "".join(f"{row[0]} 0 {row[1]} {row[6]}\n" for row in rows).encode("utf-8")


def build(read: Callable[[str], bytes]) -> dict[str, bytes]:
    """Build the SemEval-2016 Task 3 subtask-A TSV and qrels files from the original XML files.

    Pure: reads nothing but what `read` returns, writes nothing. Every built file's sha256 equals the `sha256` of
    its `Derived` entry in `keras_match.datasets.sources.SOURCES["semeval2016"]` when the originals are the
    pinned ones (check the originals' digests before, or the outputs' after, to rule out other versions).

    Args:
        read: `read(path)` returns the plain XML bytes of an original by its `Original.path`
            (e.g. `"semeval2016_task3_cqa/xml/SemEval2016-Task3-CQA-QL-dev.xml"`).

    Returns:
        `{Derived.path: bytes}` for the six derived files: `semeval2016_task3_cqa/subtaskA/{train-part2,dev,
        train-2015}.{tsv,qrels}`.

    Raises:
        keras_match.datasets.base.DataFormatError: an original is not well-formed XML (the parser's line), or an
            element breaks the format, e.g. a `RelComment` without `RELC_ID` or with a `RELC_RELEVANCE2RELQ`
            other than `Good` / `PotentiallyUseful` / `Bad` (the element's line); the message names the
            original's path.
        Whatever `read` raises for a missing original.

    Reference:
        `semeval2016_task3_cqa/SOURCE.md` in the data folder (origins, formats, counts and digests); the one rule
        it leaves out (texts of the 2016 files stripped) is in this module's docstring.
    """
    built = {}
    for name, sources, strip, excluded in SPLITS:
        rows = []
        for source in sources:
            rows += split_rows(read_threads(source, read(source)), strip, excluded)
        built[f"{OUT_DIR}{name}.tsv"] = tsv_bytes(rows)
        built[f"{OUT_DIR}{name}.qrels"] = qrels_bytes(rows)
    return built
