"""Sentence-pair classification containers and the row checks shared by their loaders.

A loaded classification benchmark (SICK, SNLI, MSRP) is a :class:`ClassificationDataset`: named
:class:`PairSplit` objects, each a set of parallel arrays (pair id, first sentence, second sentence, class
index). Unlike the ranking benchmarks (:class:`~.base.MatchingDataset`) nothing is grouped: every pair is
one example with one of the dataset's ``label_names``.

Conventions shared by every classification loader:

* ``PairSplit.first`` is the premise / first sentence, ``PairSplit.second`` the hypothesis / second sentence.
  The project's models name their two text inputs ``question`` and ``answer``; :meth:`PairSplit.texts`
  maps ``first`` to ``"question"`` and ``second`` to ``"answer"``.
* ``labels`` are ``int32`` indices into ``label_names`` (the order is the dataset module's ``LABEL_NAMES``).
* Texts are kept exactly as stored (no stripping, no tokenization); an empty or blank sentence is an error.
* TSV files follow :mod:`.reader`'s file rules (UTF-8, optional BOM, LF or CRLF, optional gzip, header line,
  no quoting); every malformed line raises :class:`~.base.DataFormatError` naming the file, the 1-based
  line and the field.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

import numpy as np

from keras_match.datasets.base import DataFormatError, SplitsByName
from keras_match.datasets.reader import iter_lines, read_header


@dataclasses.dataclass
class PairSplit:
    """One split of a sentence-pair classification benchmark, as parallel arrays in file order.

    Args:
        name: the split's name (``"train"``, ``"dev"``, ``"test"``).
        ids: the pair ids, a ``dtype=object`` array of ``str``.
        first: the first sentence (premise) of every pair, a ``dtype=object`` array of ``str``.
        second: the second sentence (hypothesis) of every pair, a ``dtype=object`` array of ``str``.
        labels: the class of every pair, ``int32`` indices into ``label_names``.
        label_names: the dataset's class names, index order.
        source: the file(s) the split was read from.
        dropped: why pairs were dropped and how many, e.g. ``{"no gold label": 158}``; empty when none was.

    Raises:
        ValueError: the arrays differ in length, or a label is not a valid index into ``label_names``.
    """

    name: str
    ids: np.ndarray
    first: np.ndarray
    second: np.ndarray
    labels: np.ndarray
    label_names: tuple[str, ...]
    source: str = ""
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.label_names = tuple(self.label_names)
        self.labels = np.asarray(self.labels, dtype=np.int32)
        lengths = {len(self.ids), len(self.first), len(self.second), len(self.labels)}
        if len(lengths) != 1:
            raise ValueError(
                f"split {self.name!r}: ids, first, second and labels differ in length "
                f"({len(self.ids)}, {len(self.first)}, {len(self.second)}, {len(self.labels)})"
            )
        if len(self.labels) and (self.labels.min() < 0 or self.labels.max() >= len(self.label_names)):
            raise ValueError(
                f"split {self.name!r}: labels must be indices into {list(self.label_names)}, "
                f"found values {sorted(set(self.labels.tolist()))}"
            )

    def __len__(self) -> int:
        return len(self.labels)

    num_pairs = property(__len__, doc="The number of pairs, `len(split)`.")

    def counts(self) -> dict:
        """Counts for reports.

        Returns:
            ``{"pairs": n, "per_class": {label_name: count, ...}, "dropped": {reason: count, ...}}``; every
            class is listed, in ``label_names`` order, zero counts included.
        """
        per_class = np.bincount(self.labels, minlength=len(self.label_names))
        return {
            "pairs": self.num_pairs,
            "per_class": {name: int(count) for name, count in zip(self.label_names, per_class)},
            "dropped": dict(self.dropped),
        }

    def head(self, num_pairs: int) -> "PairSplit":
        """A split holding only the first ``num_pairs`` pairs (for short runs).

        Args:
            num_pairs: how many pairs to keep, from the start of the split.

        Returns:
            A new split; ``dropped`` is unchanged (it describes the file, not the truncation).
        """
        return dataclasses.replace(
            self,
            ids=self.ids[:num_pairs],
            first=self.first[:num_pairs],
            second=self.second[:num_pairs],
            labels=self.labels[:num_pairs],
            dropped=dict(self.dropped),
        )

    def texts(self) -> dict[str, np.ndarray]:
        """The two text inputs under the model's input names.

        Returns:
            ``{"question": first, "answer": second}`` (``dtype=object`` arrays of ``str``).
        """
        return {"question": self.first, "answer": self.second}


@dataclasses.dataclass
class ClassificationDataset(SplitsByName):
    """A sentence-pair classification benchmark's splits.

    Args:
        name: the dataset's name (``"sick"``, ``"snli"``, ``"msrp"``).
        splits: split name -> :class:`PairSplit`.
        label_names: the class names; ``PairSplit.labels`` index into them.
        variant: the variant loaded, or ``None``.
        metadata: free-form facts about the load (data directory, files, conventions).

    Raises:
        ValueError: a split's ``label_names`` differ from the dataset's.
    """

    name: str
    splits: dict[str, PairSplit]
    label_names: tuple[str, ...]
    variant: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)

    task = "classification"
    """What the dataset's labels are for (``MatchingDataset.task`` is ``"ranking"``)."""

    def __post_init__(self):
        self.label_names = tuple(self.label_names)
        for name, split in self.splits.items():
            if split.label_names != self.label_names:
                raise ValueError(
                    f"dataset {self.name!r}: split {name!r} has label_names {list(split.label_names)}, "
                    f"the dataset {list(self.label_names)}"
                )

    @property
    def num_classes(self) -> int:
        return len(self.label_names)


# -- reading helpers shared by the classification loaders ---------------------------------------------------


def read_tsv(path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Read the rows of a headed TSV file (see :mod:`.reader` for the file rules), keeping some columns.

    Unlike :func:`.reader.read_records`, a row with too few fields names the first missing column.

    Args:
        path: the file (optionally ``.gz``).
        columns: the header names to keep; other columns are read but not returned.

    Returns:
        ``(line_number, row)`` pairs in file order; ``row`` maps each of ``columns`` to its raw string.

    Raises:
        DataFormatError: empty file, a header without one of ``columns`` or with a repeated name, a row with
            a different number of fields than the header (too few: ``field`` is the first missing column),
            or no data row at all.
    """
    lines = iter_lines(path)
    number, header = read_header(path, lines)
    for column in columns:
        if column not in header:
            raise DataFormatError(path, number, f"header lacks column {column!r}; it has {header}", field=column)
    index = {column: header.index(column) for column in columns}
    rows = []
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) < len(header):
            missing = header[len(fields)]
            raise DataFormatError(
                path,
                number,
                f"missing column {missing!r}: expected {len(header)} tab-separated fields (as in the header), "
                f"found {len(fields)}",
                field=missing,
            )
        if len(fields) > len(header):
            raise DataFormatError(
                path,
                number,
                f"expected {len(header)} tab-separated fields (as in the header), found {len(fields)} "
                f"(a tab inside a text?)",
            )
        rows.append((number, {column: fields[i] for column, i in index.items()}))
    if not rows:
        raise DataFormatError(path, None, "no data rows")
    return rows


def sentence(path, line: int, field: str, value) -> str:
    """Check a sentence field: a string with at least one non-blank character.

    Args:
        path: the file, for the error message.
        line: the 1-based line number.
        field: the column / key name.
        value: the value read.

    Returns:
        ``value`` unchanged.

    Raises:
        DataFormatError: ``value`` is not a string, or is empty or blank.
    """
    if not isinstance(value, str):
        raise DataFormatError(path, line, f"expected a sentence (string), got {value!r}", field=field)
    if not value.strip():
        raise DataFormatError(path, line, "empty sentence", field=field)
    return value


def integer(path, line: int, field: str, value: str) -> int:
    """Parse a field that must be a non-negative integer written in digits.

    Args:
        path: the file, for the error message.
        line: the 1-based line number.
        field: the column name.
        value: the raw string.

    Returns:
        The integer.

    Raises:
        DataFormatError: ``value`` is not a string of digits.
    """
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise DataFormatError(path, line, f"expected an integer >= 0, got {value!r}", field=field)
    return int(value)


def label_index(path, line: int, field: str, value, labels: Mapping):
    """Map a stored label to its class index.

    Args:
        path: the file, for the error message.
        line: the 1-based line number.
        field: the column / key name.
        value: the stored label.
        labels: every valid stored label -> its class index (or a marker such as ``None`` for labels the
            caller drops, e.g. SNLI's ``"-"``).

    Returns:
        ``labels[value]``.

    Raises:
        DataFormatError: ``value`` is not one of ``labels``; the message lists the valid ones.
    """
    try:
        return labels[value]
    except (KeyError, TypeError):
        raise DataFormatError(path, line, f"unknown label {value!r}; valid: {list(labels)}", field=field) from None


def pair_split(
    name: str,
    rows: Iterable[tuple[int, str, str, str, int]],
    label_names: Sequence[str],
    *,
    path,
    id_field: str,
    source: str | None = None,
    dropped: Mapping[str, int] | None = None,
) -> PairSplit:
    """Build a :class:`PairSplit` from checked rows, rejecting repeated pair ids.

    Args:
        name: the split's name.
        rows: ``(line_number, pair_id, first, second, label_index)`` tuples in file order.
        label_names: the dataset's class names.
        path: the file the rows came from (for error messages and the default ``source``).
        id_field: the name of the id column / key (for error messages).
        source: the split's ``source``; default ``str(path)``.
        dropped: the split's ``dropped`` counts.

    Returns:
        The split.

    Raises:
        DataFormatError: a pair id occurs twice.
    """
    seen: dict[str, int] = {}
    ids, first, second, labels = [], [], [], []
    for number, pair_id, a, b, label in rows:
        if pair_id in seen:
            raise DataFormatError(
                path, number, f"duplicate pair id {pair_id!r} (first on line {seen[pair_id]})", field=id_field
            )
        seen[pair_id] = number
        ids.append(pair_id)
        first.append(a)
        second.append(b)
        labels.append(label)
    return PairSplit(
        name,
        _strings(ids),
        _strings(first),
        _strings(second),
        np.asarray(labels, dtype=np.int32),
        tuple(label_names),
        source=str(path) if source is None else source,
        dropped=dict(dropped or {}),
    )


def _strings(values: list[str]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
