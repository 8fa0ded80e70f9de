"""SemEval-2016 Task 3 subtask A (Qatar Living community QA, English): rank a thread's comments.

Files (relative to the data directory), derived from the official v3.2 XML by the data curators: UTF-8, LF,
tab-separated with the header ``relq_id  relc_id  relq_subject  relq_body  comment  label  binary_label``, one
row per comment (10 per thread), threads marked ``SubtaskA_Skip_Because_Same_As_RelQuestion_ID`` excluded:

* train: ``semeval2016_task3_cqa/subtaskA/train-part2.tsv`` (379 questions / 3,790 comments; the official
  train-part1 is not available), and with ``train_split="train-part2+train-2015"`` also
  ``subtaskA/train-2015.tsv``: the organizers' SemEval-2015 questions reformatted for 2016 subtask A (606
  questions / 3,347 comments; 1 to 10+ comments per thread; training data only), after train-part2's questions.
* dev: ``semeval2016_task3_cqa/subtaskA/dev.tsv`` (244 questions / 2,440 comments).
* There is no test split (the 2016 test set is not available): report results on dev.

Mapping: ``Question.qid`` = ``relq_id``, ``Question.text`` = ``relq_subject + " " + relq_body`` (just the subject
when the body is empty), ``Candidate.aid`` = ``relc_id``, ``Candidate.text`` = ``comment``,
``Candidate.label`` = ``1`` for ``Good`` and ``0`` for ``PotentiallyUseful`` and ``Bad`` (the official scorer's
relevance, column ``binary_label``). The original 3-way label of every comment is in
``metadata["labels"][split][relc_id]``. The qrels (``subtaskA/{train-part2,dev}.qrels``) use the same ids.
"""

from __future__ import annotations

import dataclasses

from keras_match.datasets.base import DataFormatError, MatchingDataset, Split
from keras_match.datasets.common import (
    NO_POSITIVE, check_intact, choose_options, data_path, drop_questions, file_paths, locate, ranking_dataset
)
from keras_match.datasets.reader import group_questions, read_records

NAME = "semeval2016"
VARIANTS = ("official", "filtered")
"""Dev conventions: ``"official"`` (default) keeps every question, ``"filtered"`` drops the ones without Good."""

TRAIN_SPLITS = {"train-part2": ("train-part2",), "train-part2+train-2015": ("train-part2", "train-2015")}
"""Training sets by ``train_split`` name (the first is the default) -> the subtask-A files they join, in order."""

DIRECTORY = "semeval2016_task3_cqa/subtaskA"

LABELS = {"Good": 1, "PotentiallyUseful": 0, "Bad": 0}
"""3-way label -> binary relevance."""

COLUMNS = {
    "qid": "relq_id",
    "aid": "relc_id",
    "subject": "relq_subject",
    "body": "relq_body",
    "answer": "comment",
    "label": "binary_label",
    "label3": "label",
}


def split_files(train_split: str = "train-part2") -> dict[str, str]:
    """The files to read, training files first.

    Args:
        train_split: a key of :data:`TRAIN_SPLITS`.

    Returns:
        ``{file stem: path}`` (``"train-part2"``, [``"train-2015"``], ``"dev"``), relative to the data directory.
    """
    return {stem: f"{DIRECTORY}/{stem}.tsv" for stem in (*TRAIN_SPLITS[train_split], "dev")}


def join_splits(name: str, parts: list[Split]) -> Split:
    """One split of several, questions in order (question ids must not repeat).

    Raises:
        DataFormatError: a question id of one part appears in another (names both files).
    """
    if len(parts) == 1:
        return dataclasses.replace(parts[0], name=name)
    seen = {}
    for part in parts:
        for question in part:
            if question.qid in seen:
                raise DataFormatError(part.source, None, f"question {question.qid!r} is also in {seen[question.qid]}")
            seen[question.qid] = part.source
    return Split(name, [q for part in parts for q in part], source=" + ".join(part.source for part in parts))


def read_semeval_split(name: str, path) -> tuple[Split, dict[str, str]]:
    """Read one subtask-A TSV file (see the module docstring for the mapping).

    Args:
        name: the split's name.
        path: the file.

    Returns:
        The split (nothing dropped) and the map ``relc_id`` -> 3-way label.

    Raises:
        DataFormatError: the file is malformed, a 3-way label is unknown, or ``binary_label`` disagrees with it.
    """
    records = read_records(path, COLUMNS)
    labels = {}
    for number, row in records:
        label3 = row.pop("label3")
        if label3 not in LABELS:
            raise DataFormatError(path, number, f"unknown label {label3!r}; expected {list(LABELS)}", field="label")
        if row["label"] != LABELS[label3]:
            raise DataFormatError(
                path, number, f"binary_label {row['label']} disagrees with label {label3!r}", field="binary_label"
            )
        row["question"] = " ".join(part for part in (row.pop("subject"), row.pop("body")) if part)
        labels[row["aid"]] = label3
    return Split(name, group_questions(records, path), source=str(path)), labels


def load(variant=None, data_dir=None, *, train_split=None, download=None) -> MatchingDataset:
    """Load SemEval-2016 Task 3 subtask A (splits ``"train"`` and ``"dev"`` only).

    Conventions: the official scorer (``ev.py``, MAP over the top 10 comments of every question) counts every
    question, and one without any Good comment scores average precision 0 (its ``--ignore_noanswer`` option
    is off by default). Variant ``"official"`` (default) therefore keeps all dev questions, including the 33
    without a Good comment; note that trec_eval-style MAP skips such questions, so score them as 0 to
    reproduce the official number. Variant ``"filtered"`` drops them from dev (reason
    ``"no positive answer"``) for trec_eval-style scores. Training keeps every question.

    Args:
        variant: ``"official"`` (default) or ``"filtered"``.
        train_split: ``None`` or ``"train-part2"`` (the default), or ``"train-part2+train-2015"`` (with the
            organizers' 2015 training threads; ``metadata["qrels"]["train"]`` is then a list of both qrels files).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``semeval2016_task3_cqa/``.

    Returns:
        The dataset with splits ``"train"`` and ``"dev"``; ``metadata`` holds ``data_dir``, ``qrels``
        (split -> qrels path), ``labels`` (split -> ``relc_id`` -> ``"Good"`` / ``"PotentiallyUseful"`` /
        ``"Bad"``), ``train_split``, ``train_parts`` (training file -> its questions, in order),
        ``no_positive`` (split -> number of kept questions without a Good comment) and ``evaluation``.

    Raises:
        ValueError: unknown variant or training split.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed, has an unknown 3-way label, or a
            ``binary_label`` that disagrees with the 3-way label (see :func:`read_semeval_split`).
    """
    variant, train_split = choose_options(NAME, variant, VARIANTS, train_split, tuple(TRAIN_SPLITS))
    files = split_files(train_split)
    qrels = {stem: relative.replace(".tsv", ".qrels") for stem, relative in files.items()}
    root = locate(NAME, [*files.values(), *qrels.values()], data_dir, download)
    parts, facts = {}, {}
    for stem, relative in files.items():
        parts[stem], facts[stem] = read_semeval_split(stem, data_path(root, relative))
    check_intact(NAME, root, [*files.values(), *qrels.values()])
    training = TRAIN_SPLITS[train_split]
    splits = {"train": join_splits("train", [parts[stem] for stem in training]), "dev": parts["dev"]}
    labels = {"train": {k: v for stem in training for k, v in facts[stem].items()}, "dev": facts["dev"]}
    qrels_paths = file_paths(root, qrels)
    train_qrels = [qrels_paths[stem] for stem in training]
    if variant == "filtered":
        splits["dev"] = drop_questions(splits["dev"], NO_POSITIVE)
    return ranking_dataset(
        NAME,
        splits,
        variant,
        root,
        train_split=train_split,
        train_parts={stem: parts[stem].num_questions for stem in training},
        qrels={"train": train_qrels[0] if len(train_qrels) == 1 else train_qrels, "dev": qrels_paths["dev"]},
        labels=labels,
        no_positive={name: sum(not q.has_positive for q in split) for name, split in splits.items()},
        # how keras_match.metrics.evaluate_ranking must treat questions without a Good comment
        no_positive_rule="zero" if variant == "official" else "skip",
        evaluation=(
            "official scorer: MAP over all dev questions, average precision 0 without a Good comment"
            if variant == "official"
            else "trec_eval: dev questions without a Good comment dropped"
        ),
    )
