"""Question-grouped containers shared by every dataset loader.

A loaded benchmark is a :class:`MatchingDataset`: named :class:`Split` objects, each a list of
:class:`Question` objects, each holding its :class:`Candidate` answers with their labels. Ranking metrics
need the grouping (question id -> candidates), and the flat pair view (``Split.pairs()``) feeds
``tf.data`` pipelines.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np


class DataFormatError(ValueError):
    """A data file is malformed. The message names the file, the line and the field."""

    def __init__(self, path, line, message, field=None):
        self.path = str(path)
        self.line = line
        self.field = field
        where = f"{self.path}, line {line}" if line is not None else self.path
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


class UnknownSplitError(KeyError, ValueError):
    """A split the dataset does not have (`dataset["nosuchsplit"]`): a KeyError, as a dict's missing key, and a
    ValueError, the usage error of a command's `--split`. The message names the splits the dataset has."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


@dataclasses.dataclass
class Candidate:
    """One candidate answer of a question.

    Args:
        aid: candidate id, unique within its question (the trec_eval ``docid``).
        text: the candidate's text as stored in the data file.
        label: graded relevance; ``0`` is not relevant, ``>= 1`` relevant.
    """

    aid: str
    text: str
    label: int


@dataclasses.dataclass
class Question:
    """A question with its candidate answers.

    Args:
        qid: question id, unique within its split.
        text: the question text as stored in the data file.
        candidates: the candidate answers, in file order.
    """

    qid: str
    text: str
    candidates: list[Candidate] = dataclasses.field(default_factory=list)

    @property
    def num_positive(self) -> int:
        return sum(1 for c in self.candidates if c.label > 0)

    @property
    def has_positive(self) -> bool:
        return self.num_positive > 0

    @property
    def has_negative(self) -> bool:
        return any(c.label <= 0 for c in self.candidates)


@dataclasses.dataclass
class Pairs:
    """The flat (question, candidate) view of a split, as parallel arrays of equal length.

    ``questions`` and ``answers`` are ``dtype=object`` arrays of Python ``str`` (numpy ``<U`` arrays do not
    feed Keras ``fit``/``predict``); ``labels`` is ``int32``.
    """

    qids: np.ndarray
    aids: np.ndarray
    questions: np.ndarray
    answers: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclasses.dataclass
class Split:
    """One split of a benchmark, question-grouped.

    Args:
        name: the split's name (``"train"``, ``"dev"``, ``"test"``).
        questions: the questions kept for this split.
        source: the file(s) the split was read from.
        dropped: why questions were dropped and how many, e.g.
            ``{"no positive answer": 3, "only positive answers": 13}``; empty when none was dropped.
    """

    name: str
    questions: list[Question]
    source: str = ""
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def __len__(self) -> int:
        return len(self.questions)

    num_questions = property(__len__, doc="The number of questions, `len(split)`.")

    @property
    def num_pairs(self) -> int:
        return sum(len(q.candidates) for q in self.questions)

    @property
    def num_positive(self) -> int:
        return sum(q.num_positive for q in self.questions)

    def counts(self) -> dict:
        """Counts for reports: questions, pairs, positives and the dropped questions by reason."""
        return {
            "questions": self.num_questions,
            "pairs": self.num_pairs,
            "positive": self.num_positive,
            "dropped": dict(self.dropped),
        }

    def pairs(self) -> Pairs:
        """Flatten to parallel arrays, question by question, candidates in file order."""
        rows = [(q.qid, c.aid, q.text, c.text, c.label) for q in self.questions for c in q.candidates]
        if not rows:
            empty = np.array([], dtype=object)
            return Pairs(empty, empty, empty, empty, np.array([], dtype=np.int32))
        qids, aids, qs, ans, labels = zip(*rows)
        obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
        return Pairs(obj(qids), obj(aids), obj(qs), obj(ans), np.asarray(labels, dtype=np.int32))

    def to_tf_dataset(self):
        """The pairs as a ``tf.data.Dataset`` of dicts: ``qid``, ``aid``, ``question``, ``answer`` (tf.string
        scalars) and ``label`` (int32 scalar), question by question in file order; batch and map it with
        ``keras_match.text.TextEncoder.encode`` to feed a model."""
        import tensorflow as tf

        p = self.pairs()
        strings = lambda xs: tf.constant([str(x) for x in xs], dtype=tf.string)  # noqa: E731
        return tf.data.Dataset.from_tensor_slices(
            {
                "qid": strings(p.qids),
                "aid": strings(p.aids),
                "question": strings(p.questions),
                "answer": strings(p.answers),
                "label": tf.constant(p.labels, dtype=tf.int32),
            }
        )

    def head(self, num_questions: int) -> "Split":
        """A split holding only the first ``num_questions`` questions (for short runs)."""
        return dataclasses.replace(self, questions=self.questions[:num_questions])

    def filter(self, keep, reason: str) -> "Split":
        """Keep the questions for which ``keep(question)`` is true; count the others under ``reason``."""
        kept = [q for q in self.questions if keep(q)]
        dropped = dict(self.dropped)
        if len(kept) != len(self.questions):
            dropped[reason] = dropped.get(reason, 0) + len(self.questions) - len(kept)
        return dataclasses.replace(self, questions=kept, dropped=dropped)


class SplitsByName:
    """Split lookup shared by the dataset containers (`MatchingDataset`, `ClassificationDataset`): `dataset["dev"]`
    (an `UnknownSplitError`, a KeyError, naming the splits there are), `"test" in dataset`, `counts()`."""

    name: str
    splits: dict

    def __getitem__(self, split: str):
        try:
            return self.splits[split]
        except KeyError:
            raise UnknownSplitError(
                f"dataset {self.name!r} has no split {split!r}; it has {sorted(self.splits)}"
            ) from None

    def __contains__(self, split: str) -> bool:
        return split in self.splits

    def counts(self) -> dict:
        """Split name -> the split's counts."""
        return {name: split.counts() for name, split in self.splits.items()}


@dataclasses.dataclass
class MatchingDataset(SplitsByName):
    """A benchmark's splits.

    Args:
        name: the dataset's name (``"trecqa"``, ``"wikiqa"``, ...).
        splits: split name -> :class:`Split`; the training loop uses ``"train"``, ``"dev"`` and ``"test"``.
        variant: the variant loaded (``"clean"``, ``"raw"``, ...) or ``None``.
        metadata: free-form facts about the load (data directory, evaluation convention).
    """

    name: str
    splits: dict[str, Split]
    variant: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)

    task = "ranking"
    """What the dataset's labels are for (``ClassificationDataset.task`` is ``"classification"``)."""


def hold_out_dev(dataset: MatchingDataset, fraction: float) -> MatchingDataset:
    """The dataset with the last `fraction` of its training questions as `dev` and its `dev` split as `test`: for a
    benchmark whose test labels are not public (SemEval-2016 task 3A here), the model is chosen on held-out
    training questions and scored on the official dev split.

    A training split joined from several files (SemEval-2016's `train-part2+train-2015`: `metadata["train_parts"]`)
    holds out the last `fraction` of its first file's questions, so that the model is chosen on the same questions
    with or without the extra files, and trains on the rest of every file. The result's `metadata["holdout_dev"]`
    is `fraction`.

    Args:
        dataset: a ranking dataset with `train` and `dev` splits and no `test` split.
        fraction: in (0, 1); at least one question is held out.

    Raises:
        ValueError: `fraction` outside (0, 1), or the dataset has a test split (choose on its dev split instead).
    """
    if not 0 < fraction < 1:
        raise ValueError(f"holdout_dev must be a fraction in (0, 1), got {fraction}")
    if "test" in dataset:
        raise ValueError(f"{dataset.name} has a test split: choose on its dev split instead of holding out dev")
    train = dataset["train"]
    first = next(iter(dataset.metadata.get("train_parts", {}).values()), train.num_questions)
    n = max(1, round(first * fraction))
    source = f"{train.source} (questions {first - n + 1}-{first} of {train.num_questions})"
    splits = {
        "train": dataclasses.replace(train, questions=train.questions[:first - n] + train.questions[first:]),
        "dev": dataclasses.replace(train, name="dev", questions=train.questions[first - n:first], source=source),
        "test": dataclasses.replace(dataset["dev"], name="test"),
    }
    metadata = dict(dataset.metadata, holdout_dev=fraction)
    return MatchingDataset(dataset.name, splits, variant=dataset.variant, metadata=metadata)
