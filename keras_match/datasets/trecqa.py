"""TrecQA answer sentence selection (Wang et al. 2007; Yao et al. 2013 "jacana" version).

Files (relative to the data directory), UTF-8, LF, tab-separated with the header
``qid  aid  question  answer  label``, one row per (question, candidate), rows grouped by question; text is
PTB-tokenized with original case; ``aid`` is the 0-based candidate index within its question; ``label`` is
``1`` (the sentence answers the question) or ``0``:

* train: ``trecqa/tsv/train-all.tsv[.gz]`` (TRAIN-ALL, 1,229 questions / 53,417 pairs, reconstructed by the data
  curators, see ``trecqa/SOURCE.md``) or ``trecqa/tsv/train.tsv`` (TRAIN, 93 / 4,718). Never combine the two:
  TRAIN is a subset of TRAIN-ALL.
* dev / test, variant ``"clean"``: ``trecqa/tsv/clean-{dev,test}.tsv`` (65 / 68 questions), the common "clean"
  version (Rao et al. 2016), in which every question has a relevant and an irrelevant candidate.
* dev / test, variant ``"raw"``: ``trecqa/tsv/raw-{dev,test}.tsv`` (81 / 95 questions).

The trec_eval qrels of every split are ``trecqa/qrels/<split>.qrels`` (``qid 0 aid label``, same ids as the
TSV); their paths are in ``MatchingDataset.metadata["qrels"]``. The raw qrels still list the dropped questions:
trec_eval given those qrels counts each with average precision 0 (it does not skip them), so filter the qrels
to the kept questions to reproduce this loader's figures with trec_eval.
"""

from __future__ import annotations

from keras_match.datasets.base import MatchingDataset
from keras_match.datasets.common import (
    NO_POSITIVE, check_intact, choose, choose_options, data_path, file_paths, drop_questions, locate, ranking_dataset
)
from keras_match.datasets.reader import read_split

NAME = "trecqa"
VARIANTS = ("clean", "raw")
"""Dev/test versions; the first is the default."""

TRAIN_SPLITS = {"train-all": "train-all.tsv", "train": "train.tsv"}
"""Training files by ``train_split`` name; the first is the default (the data folder keeps TRAIN-ALL gzip'd as
``train-all.tsv.gz``; a build from the originals writes ``train-all.tsv``: either is read)."""


def _variant_and_train_split(variant, train_split) -> tuple[str, str]:
    """Validate ``variant`` and ``train_split``, accepting the training-set names as variants too:
    ``variant="train"`` means the TRAIN training set with the clean dev/test files (``"train-all"`` likewise).

    Args:
        variant: ``None``, a variant, or a training-set name.
        train_split: ``None`` or a training-set name.

    Returns:
        ``(variant, train_split)``, defaults filled in (see :func:`.common.choose_options`).

    Raises:
        ValueError: the training set is named twice, differently; unknown variant or training split.
    """
    if variant in TRAIN_SPLITS:
        if train_split is not None and train_split != variant:
            raise ValueError(
                f"trecqa: variant {variant!r} names the training set, which conflicts with train_split={train_split!r}"
            )
        variant, train_split = None, variant
    return choose_options(NAME, variant, VARIANTS, train_split, tuple(TRAIN_SPLITS))

COLUMNS = {name: name for name in ("qid", "aid", "question", "answer", "label")}


def split_files(variant=None, train_split=None) -> dict[str, str]:
    """The split files of a variant, relative to the data directory.

    Args:
        variant: ``"clean"`` (default) or ``"raw"``; ``"train"`` / ``"train-all"`` choose the training set and
            keep the clean dev/test files.
        train_split: ``"train-all"`` (default) or ``"train"``.

    Returns:
        ``{"train": ..., "dev": ..., "test": ...}``.

    Raises:
        ValueError: unknown variant or training split.
    """
    variant, train_split = _variant_and_train_split(variant, train_split)
    return {
        "train": f"trecqa/tsv/{TRAIN_SPLITS[train_split]}",
        "dev": f"trecqa/tsv/{variant}-dev.tsv",
        "test": f"trecqa/tsv/{variant}-test.tsv",
    }


NO_POSITIVE_RULES = ("skip", "zero")


def load(variant=None, data_dir=None, *, train_split=None, no_positive="skip", download=None) -> MatchingDataset:
    """Load TrecQA.

    Conventions: the training split keeps every question. The clean dev/test files are used as shipped
    (nothing dropped). From the raw dev/test files, questions without any relevant candidate are dropped
    (``Split.dropped == {"no positive answer": n}``: 3 of 81 dev and 6 of 95 test questions), the usual
    reporting convention, unless ``no_positive="zero"``: then they are kept and score 0, which is what
    trec_eval gives on the full raw qrels (it averages over every qrels question and a question without a
    relevant answer has average precision and reciprocal rank 0). Questions whose candidates are all relevant
    (13 dev, 21 test) are kept, as trec_eval scores them.

    Args:
        variant: ``"clean"`` (default) or ``"raw"`` dev/test files; ``"train"`` or ``"train-all"`` name the
            training set instead (with the clean dev/test files).
        train_split: ``"train-all"`` (default, TRAIN-ALL) or ``"train"`` (the small manually checked TRAIN).
        no_positive: raw dev/test questions without a relevant answer: ``"skip"`` (default, dropped) or
            ``"zero"`` (kept, scored 0: trec_eval's figure; ``metadata["no_positive_rule"]`` says which).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``trecqa/``.

    Returns:
        The dataset with splits ``"train"``, ``"dev"`` and ``"test"``; ``metadata`` holds ``data_dir``,
        ``train_split``, ``qrels`` (split -> qrels path) and ``evaluation`` (the convention, in words).

    Raises:
        ValueError: unknown variant or training split.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed.
    """
    variant, train_split = _variant_and_train_split(variant, train_split)
    no_positive = choose("no_positive", no_positive, NO_POSITIVE_RULES, NAME)
    files = split_files(variant, train_split)
    qrels = {name: f"trecqa/qrels/{_stem(relative)}.qrels" for name, relative in files.items()}
    root = locate(NAME, [*files.values(), *qrels.values()], data_dir, download)
    splits = {name: read_split(name, data_path(root, relative), COLUMNS) for name, relative in files.items()}
    check_intact(NAME, root, [*files.values(), *qrels.values()])
    if variant == "raw" and no_positive == "skip":
        for name in ("dev", "test"):
            splits[name] = drop_questions(splits[name], NO_POSITIVE)
    evaluation = (
        "clean dev/test as shipped"
        if variant == "clean"
        else "raw dev/test without the questions lacking a relevant answer (the usual reporting convention; "
        "trec_eval run on the full raw qrels would count them with average precision 0)"
        if no_positive == "skip"
        else "raw dev/test, every question; those lacking a relevant answer score 0 (trec_eval on the full qrels)"
    )
    return ranking_dataset(
        NAME, splits, variant, root, train_split=train_split, qrels=file_paths(root, qrels),
        evaluation=evaluation,
        no_positive_rule="zero" if variant == "raw" and no_positive == "zero" else "skip",
    )


def _stem(relative: str) -> str:
    name = relative.rsplit("/", 1)[-1]
    return name.split(".", 1)[0]
