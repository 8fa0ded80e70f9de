"""WikiQA answer sentence selection (Yang, Yih & Meek, EMNLP 2015).

Files (relative to the data directory): ``wikiqa/WikiQA-{train,dev,test}.tsv.gz``, the original corpus files:
UTF-8, CRLF, tab-separated with the header
``QuestionID  Question  DocumentID  DocumentTitle  SentenceID  Sentence  Label``, one row per (question,
candidate sentence of the question's Wikipedia summary), rows grouped by question, raw (untokenized) text,
``Label`` ``1`` = the sentence answers the question.

Ids follow the corpus qrels (``wikiqa/WikiQA-{split}.ref`` and ``WikiQA-{dev,test}-filtered.ref``, format
``qnum 0 sidx label``) so that run files match them: ``Question.qid`` is the 1-based ordinal of the question in
its split file (``"1"``, ``"2"``, ...; ordinals count every question of the file, so they are unchanged by
filtering) and ``Candidate.aid`` is the 0-based index of the sentence within its question (``SentenceID`` is
``DocumentID + "-" + aid``). The corpus ``QuestionID`` of every question is kept in
``metadata["question_ids"][split][qid]``.
"""

from __future__ import annotations

from keras_match.datasets.base import MatchingDataset, Split
from keras_match.datasets.common import (
    NO_POSITIVE,
    ONLY_POSITIVE,
    choose_options,
    drop_questions,
    file_paths,
    ranking_dataset,
    read_benchmark,
)
from keras_match.datasets.reader import group_questions, read_records

NAME = "wikiqa"
VARIANTS = ("filtered", "answered")
"""Dev/test versions: ``"filtered"`` (the default), the standard evaluation subset of the ``*-filtered.ref`` qrels
(122 / 237 questions with a correct and an incorrect sentence); ``"answered"``, every question with a correct
sentence (126 / 243: Yang et al.'s "questions with answers", the counts of Wang & Jiang 2017's Table 2, whose
WikiQA figures are on these)."""

TRAIN_SPLITS = ("train",)

COLUMNS = {"question_id": "QuestionID", "question": "Question", "answer": "Sentence", "label": "Label"}

QRELS = {
    "filtered": {
        "train": "wikiqa/WikiQA-train.ref",
        "dev": "wikiqa/WikiQA-dev-filtered.ref",
        "test": "wikiqa/WikiQA-test-filtered.ref",
    },
    "answered": {split: f"wikiqa/WikiQA-{split}.ref" for split in ("train", "dev", "test")},
}
"""The qrels files of each variant (the unfiltered ones also list the questions a variant drops)."""

DROPPED = {"filtered": (NO_POSITIVE, ONLY_POSITIVE), "answered": (NO_POSITIVE,)}
"""The dev/test questions each variant drops, by ``Split.dropped`` reason, in the order they are dropped."""

EVALUATION = {
    "filtered": "dev/test: questions with at least one correct and one incorrect sentence (the *-filtered.ref subset)",
    "answered": "dev/test: questions with at least one correct sentence (Yang et al. 2015's questions with answers)",
}


def split_files() -> dict[str, str]:
    """The split files.

    Returns:
        ``{"train": ..., "dev": ..., "test": ...}``, paths relative to the data directory.
    """
    return {split: f"wikiqa/WikiQA-{split}.tsv.gz" for split in ("train", "dev", "test")}


def read_wikiqa_split(name: str, path) -> tuple[Split, dict[str, str]]:
    """Read one ``WikiQA-*.tsv[.gz]`` file with qrels-compatible ids (see the module docstring).

    Args:
        name: the split's name.
        path: the file.

    Returns:
        The split (nothing dropped) and the map ordinal qid -> corpus ``QuestionID``.

    Raises:
        DataFormatError: the file is malformed.
    """
    records = read_records(path, COLUMNS, ids=("question_id",))
    ordinals: dict[str, str] = {}
    for _, row in records:
        row["qid"] = ordinals.setdefault(row["question_id"], str(len(ordinals) + 1))
    split = Split(name, group_questions(records, path), source=str(path))
    return split, {qid: question_id for question_id, qid in ordinals.items()}


def load(variant=None, data_dir=None, *, train_split=None, download=None) -> MatchingDataset:
    """Load WikiQA.

    Conventions: the training split keeps all 2,118 questions (drop the ones without a correct answer with
    ``split.filter(lambda q: q.has_positive, ...)`` if wanted). Dev and test follow the standard evaluation
    subset of the ``*-filtered.ref`` qrels: questions without a correct sentence are dropped (reason
    ``"no positive answer"``), then questions whose sentences are all correct (reason
    ``"only positive answers"``), keeping 122 of 296 dev and 237 of 633 test questions. The ``"answered"`` variant
    keeps the questions whose sentences are all correct (126 of 296 dev and 243 of 633 test questions); each
    scores MAP and MRR 1 with any ranking.

    Args:
        variant: ``None`` or ``"filtered"`` (the default), or ``"answered"``.
        train_split: ``None`` or ``"train"`` (the only one).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``wikiqa/``.

    Returns:
        The dataset with splits ``"train"``, ``"dev"`` and ``"test"``; ``metadata`` holds ``data_dir``,
        ``qrels`` (split -> qrels path), ``question_ids`` (split -> ordinal qid -> ``QuestionID``) and
        ``evaluation``.

    Raises:
        ValueError: unknown variant or training split.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed.
    """
    variant, _ = choose_options(NAME, variant, VARIANTS, train_split, TRAIN_SPLITS)
    root, splits, question_ids = read_benchmark(NAME, split_files(), read_wikiqa_split, data_dir, download)
    for name in ("dev", "test"):
        splits[name] = drop_questions(splits[name], *DROPPED[variant])
    return ranking_dataset(
        NAME,
        splits,
        variant,
        root,
        qrels=file_paths(root, QRELS[variant]),
        question_ids=question_ids,
        evaluation=EVALUATION[variant],
    )
