"""The one reader behind every loader: question-grouped TSV / JSONL files into :class:`~.base.Split` objects.

Every dataset module (and the generic loader for user files) describes its files by a column mapping
(canonical name -> column header or JSON key) and calls :func:`read_split` or :func:`read_records` +
:func:`group_questions`. The canonical names the grouping step understands are ``qid``, ``aid`` (optional),
``question``, ``answer`` and ``label``; a loader may read further columns under its own names.

File rules, shared by all loaders:

* UTF-8 (a leading byte-order mark is ignored), optionally gzip-compressed (name ending in ``.gz``).
* Lines end with LF or CRLF. Only ``\\n`` ends a line, so a stray ``\\r`` inside a text field stays in the text.
* Empty lines are skipped.
* TSV: the first line is a header naming the columns; every other line has exactly as many tab-separated
  fields as the header. No quoting: quotes are ordinary characters.
* JSONL: one JSON object per line.
* A file without any data row is an error.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import re
import zlib
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from keras_match.datasets.base import Candidate, DataFormatError, Question, Split
from keras_match.datasets.paths import file_identity

FORMATS = ("tsv", "jsonl")
"""File formats :func:`read_records` reads."""

_SUFFIXES = {".tsv": "tsv", ".jsonl": "jsonl"}
_INTEGER = re.compile(r"[0-9]+")


def file_format(path) -> str:
    """The format of a data file from its name: ``"tsv"`` or ``"jsonl"`` (a ``.gz`` suffix is allowed).

    Args:
        path: the file's path.

    Returns:
        ``"tsv"`` for ``*.tsv[.gz]``, ``"jsonl"`` for ``*.jsonl[.gz]``.

    Raises:
        ValueError: for any other name.
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    fmt = _SUFFIXES.get(os.path.splitext(name)[1])
    if fmt is None:
        raise ValueError(
            f"{path}: unsupported data file name; expected one of "
            f"{sorted(s + gz for s in _SUFFIXES for gz in ('', '.gz'))}"
        )
    return fmt


def iter_lines(path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for the non-empty lines of a (possibly gzipped) UTF-8 text file.

    Line numbers are 1-based and count every line, empty ones included. The line ending (LF or CRLF) is
    removed.

    Args:
        path: the file's path; a name ending in ``.gz`` is decompressed on the fly.

    Yields:
        ``(line_number, line)`` pairs.

    Raises:
        DataFormatError: a line is not valid UTF-8, or the gzip stream is corrupt.
    """
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rb") as f:
            for number, raw in enumerate(f, 1):  # binary files split on b"\n" only
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                raw = raw[:-1] if raw.endswith(b"\r") else raw
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if not raw:
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataFormatError(path, number, f"not valid UTF-8 ({e.reason} at byte {e.start})") from None
                yield number, text
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise DataFormatError(path, number + 1, f"corrupt gzip data ({e})") from None


def _parse_integer(path, line, field, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise DataFormatError(path, line, f"expected an integer >= 0, got {value!r}", field=field)
    if isinstance(value, str):
        if not _INTEGER.fullmatch(value.strip()):
            raise DataFormatError(path, line, f"expected an integer >= 0, got {value!r}", field=field)
        value = int(value)
    if value < 0:
        raise DataFormatError(path, line, f"expected an integer >= 0, got {value!r}", field=field)
    return value


def read_header(path, lines) -> tuple[int, list[str]]:
    """The header line of a TSV file: `(line number, column names)`, from its `iter_lines` iterator.

    Raises:
        DataFormatError: the file is empty, or the header repeats a column name.
    """
    header_line = next(lines, None)
    if header_line is None:
        raise DataFormatError(path, None, "empty file: no header line and no data rows")
    number, header_text = header_line
    header = header_text.split("\t")
    duplicates = sorted({h for h in header if header.count(h) > 1})
    if duplicates:
        raise DataFormatError(path, number, f"duplicate column name(s) {duplicates} in the header")
    return number, header


def _tsv_rows(path, wanted: Mapping[str, str], optional: Sequence[str]) -> Iterator[tuple[int, dict]]:
    lines = iter_lines(path)
    number, header = read_header(path, lines)
    index = {}
    for name, column in wanted.items():
        if column in header:
            index[name] = header.index(column)
        elif name not in optional:
            raise DataFormatError(
                path, number, f"header lacks column {column!r}; it has {header}", field=column
            )
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != len(header):
            raise DataFormatError(
                path, number, f"expected {len(header)} tab-separated fields (as in the header), found {len(fields)}"
            )
        yield number, {name: fields[i] for name, i in index.items()}


def _jsonl_rows(path, wanted: Mapping[str, str], optional: Sequence[str]) -> Iterator[tuple[int, dict]]:
    for number, text in iter_lines(path):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataFormatError(path, number, f"invalid JSON: {e.msg} (column {e.colno})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(obj).__name__}")
        row = {}
        for name, key in wanted.items():
            if key in obj:
                row[name] = obj[key]
            elif name not in optional:
                raise DataFormatError(path, number, f"missing key {key!r}", field=key)
        yield number, row


def read_records(
    path,
    columns: Mapping[str, str],
    *,
    optional: Sequence[str] = (),
    integers: Sequence[str] = ("label",),
    ids: Sequence[str] = ("qid", "aid"),
) -> list[tuple[int, dict]]:
    """Read and validate the rows of a TSV or JSONL file.

    Args:
        path: the file (``.tsv``, ``.jsonl``, either optionally ``.gz``).
        columns: canonical name -> TSV header column or JSON key, e.g. ``{"answer": "Sentence"}``.
        optional: canonical names that may be absent from the file (the whole column / key).
        integers: canonical names parsed as integers ``>= 0`` (a JSON integer or a string of digits).
        ids: canonical names that must be non-empty strings after stripping (JSON numbers are converted
            to strings).

    Returns:
        ``(line_number, row)`` pairs in file order; ``row`` maps canonical names to values (``str`` for text,
        ``int`` for ``integers``).

    Raises:
        DataFormatError: a malformed line (wrong number of TSV fields, missing column or key, invalid JSON,
            non-integer or negative integer, empty id, non-string text), or no data row at all. The error
            names the file, the 1-based line number and the field.
        ValueError: the file name has an unsupported extension.
    """
    fmt = file_format(path)
    rows_of = _tsv_rows if fmt == "tsv" else _jsonl_rows
    records = []
    for number, row in rows_of(path, columns, optional):
        for name, value in row.items():
            field = columns[name]
            if name in integers:
                row[name] = _parse_integer(path, number, field, value)
                continue
            if name in ids and isinstance(value, int) and not isinstance(value, bool):
                value = row[name] = str(value)
            if not isinstance(value, str):
                raise DataFormatError(path, number, f"expected a string, got {value!r}", field=field)
            if name in ids and not value.strip():
                raise DataFormatError(path, number, "empty id", field=field)
        records.append((number, row))
    if not records:
        raise DataFormatError(path, None, "no data rows")
    return records


def group_questions(records: Sequence[tuple[int, dict]], path) -> list[Question]:
    """Group rows into questions, in order of first appearance; candidates keep file order.

    Each row needs ``qid``, ``question``, ``answer`` and ``label``; ``aid`` is optional and defaults to the
    running 0-based index of the candidate within its question (as a string). Rows of one question need not
    be contiguous.

    Args:
        records: ``(line_number, row)`` pairs as returned by :func:`read_records`.
        path: the file the rows came from (for error messages).

    Returns:
        The questions.

    Raises:
        DataFormatError: two rows of one question carry different question texts, or an answer id repeats
            within a question.
    """
    questions: dict[str, Question] = {}
    first_line: dict[str, int] = {}
    seen_aids: dict[str, set] = {}
    for number, row in records:
        qid = row["qid"]
        question = questions.get(qid)
        if question is None:
            question = questions[qid] = Question(qid, row["question"])
            first_line[qid] = number
            seen_aids[qid] = set()
        elif row["question"] != question.text:
            raise DataFormatError(
                path,
                number,
                f"question {qid!r} has a different text than on line {first_line[qid]}",
                field="question",
            )
        aid = row.get("aid")
        if aid is None:
            aid = str(len(question.candidates))
        if aid in seen_aids[qid]:
            raise DataFormatError(path, number, f"duplicate answer id {aid!r} in question {qid!r}", field="aid")
        seen_aids[qid].add(aid)
        question.candidates.append(Candidate(aid, row["answer"], row["label"]))
    return list(questions.values())


def read_split(name: str, path, columns: Mapping[str, str], *, optional: Sequence[str] = ()) -> Split:
    """Read one split file into a :class:`~.base.Split` (see :func:`read_records`, :func:`group_questions`).

    Args:
        name: the split's name.
        path: the file.
        columns: canonical name -> column / key for ``qid``, ``question``, ``answer``, ``label`` and
            optionally ``aid``.
        optional: canonical names that may be missing from the file (typically ``("aid",)``).

    Returns:
        The split, with ``source`` set to the file's path and nothing dropped.

    Raises:
        DataFormatError: the file is malformed.
    """
    key = _file_key(path, columns, optional)
    questions = _SPLITS.get(key) if key is not None else None
    if questions is None:
        questions = tuple((q.qid, q.text, tuple((c.aid, c.text, c.label) for c in q.candidates))
                          for q in group_questions(read_records(path, columns, optional=optional), path))
        if key is not None:
            while len(_SPLITS) >= SPLIT_CACHE_FILES:
                _SPLITS.pop(next(iter(_SPLITS)))
            _SPLITS[key] = questions
    return Split(name, [Question(qid, text, [Candidate(*candidate) for candidate in candidates])
                        for qid, text, candidates in questions], source=str(path))


SPLIT_CACHE_FILES = 8
"""How many split files :func:`read_split` keeps the questions of (per process, oldest dropped first). A file read
again unchanged (the same `paths.file_identity`: resolved path, inode, size, modification time) is not parsed
again: each tuning trial, evaluation and test reads the same benchmark files. Measured here: TrecQA TRAIN-ALL
(53,417 rows) parsed in about 1 s, rebuilt from the kept questions in about 0.1 s. Each call still returns new
objects, so a caller that changes them changes nothing of a later call's."""

_SPLITS: dict = {}


def _file_key(path, columns, optional):
    """The cache key of a split file: its `file_identity` with the columns read; None when the file cannot be
    stat'ed (then it is read, and fails, as before)."""
    try:
        identity = file_identity(path)
    except OSError:
        return None
    return (*identity, tuple(sorted(columns.items())), tuple(optional))
