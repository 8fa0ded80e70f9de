"""SICK entailment (Marelli et al., LREC 2014), as released for SemEval-2014 Task 1: 3-way sentence-pair
classification.

Source: the three SemEval-2014 Task 1 files, unmodified copies from brmson/dataset-sts (commit ``e1d3375``,
``data/sts/sick2014/``); see ``sick/SOURCE.md`` in the data folder. License: CC BY-NC-SA 3.0 (non-commercial,
attribute Marelli et al. 2014, share alike), as stated in ``sick/semeval2014_task1/readme.txt``.

Files (relative to the data directory), ASCII, tab-separated with the header
``pair_ID  sentence_A  sentence_B  relatedness_score  entailment_judgment``, raw (untokenized) text, no quoting;
train and trial end lines with LF, test with CRLF:

* ``"train"``: ``sick/semeval2014_task1/SICK_train.txt`` (4,500 pairs: 1,299 entailment / 2,536 neutral /
  665 contradiction).
* ``"dev"``: ``sick/semeval2014_task1/SICK_trial.txt``, the official trial set (500: 144 / 282 / 74).
* ``"test"``: ``sick/semeval2014_task1/SICK_test_annotated.txt`` (4,927: 1,414 / 2,793 / 720).

This 4,500 / 500 / 4,927 split is the one papers on SICK entailment / relatedness use (e.g. Tai et al. 2015).
The final release ``sick/SICK.txt.gz`` (9,840 pairs) drops 87 of these pairs and is not read here.

Mapping: ``PairSplit.ids`` = ``pair_ID`` (a string of digits, unique per file), ``first`` = ``sentence_A``
(premise), ``second`` = ``sentence_B`` (hypothesis), ``labels`` = ``entailment_judgment`` (``ENTAILMENT``,
``NEUTRAL``, ``CONTRADICTION``) as an index into :data:`LABEL_NAMES`. Nothing is dropped. The relatedness
scores (1-5) are kept in ``metadata["relatedness"][split]``, a ``float32`` array aligned with the split.
"""

from __future__ import annotations

import math

import numpy as np

from keras_match.datasets.base import DataFormatError
from keras_match.datasets.classification import (
    ClassificationDataset, PairSplit, integer, label_index, pair_split, read_tsv, sentence
)
from keras_match.datasets.common import choose_options, classification_dataset, read_benchmark

NAME = "sick"
VARIANTS = (None,)
"""Only the SemEval-2014 files; no variants."""

TRAIN_SPLITS = ("train",)

LABEL_NAMES = ("entailment", "neutral", "contradiction")
"""Class names, index order."""

LABELS = {"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2}
"""``entailment_judgment`` as stored -> class index."""

DIRECTORY = "sick/semeval2014_task1"

COLUMNS = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")

EVALUATION = "accuracy on the SemEval-2014 Task 1 test set (4,927 pairs); dev = the trial set"
"""The reporting convention, in words (``metadata["evaluation"]``)."""


def split_files() -> dict[str, str]:
    """The split files.

    Returns:
        ``{"train": ..., "dev": ..., "test": ...}``, paths relative to the data directory.
    """
    return {
        "train": f"{DIRECTORY}/SICK_train.txt",
        "dev": f"{DIRECTORY}/SICK_trial.txt",
        "test": f"{DIRECTORY}/SICK_test_annotated.txt",
    }


def read_sick_split(name: str, path) -> tuple[PairSplit, np.ndarray]:
    """Read one SemEval-2014 Task 1 SICK file (see the module docstring for the mapping).

    Args:
        name: the split's name.
        path: the file (plain or ``.gz``; LF or CRLF).

    Returns:
        The split (nothing dropped) and its relatedness scores (``float32``, aligned with the split).

    Raises:
        DataFormatError: the file is malformed: a missing column, a non-integer ``pair_ID`` or a repeated
            one, an empty sentence, a relatedness score that is not a number in [1, 5], or an unknown
            ``entailment_judgment`` (the message lists the valid ones).
    """
    rows, relatedness = [], []
    for number, row in read_tsv(path, COLUMNS):
        integer(path, number, "pair_ID", row["pair_ID"])
        first = sentence(path, number, "sentence_A", row["sentence_A"])
        second = sentence(path, number, "sentence_B", row["sentence_B"])
        relatedness.append(_score(path, number, row["relatedness_score"]))
        label = label_index(path, number, "entailment_judgment", row["entailment_judgment"], LABELS)
        rows.append((number, row["pair_ID"], first, second, label))
    split = pair_split(name, rows, LABEL_NAMES, path=path, id_field="pair_ID")
    return split, np.asarray(relatedness, dtype=np.float32)


def _score(path, number, value: str) -> float:
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not 1.0 <= score <= 5.0:  # also false for nan
        raise DataFormatError(path, number, f"expected a number in [1, 5], got {value!r}", field="relatedness_score")
    return score


def load(variant=None, data_dir=None, *, train_split=None, download=None) -> ClassificationDataset:
    """Load SICK entailment (SemEval-2014 Task 1 files): splits ``"train"``, ``"dev"`` (trial) and ``"test"``.

    Conventions: the files are used as shipped; every pair is kept. Report accuracy on ``"test"`` (4,927
    pairs); ``"dev"`` is the official trial set.

    Args:
        variant: ``None`` (the only choice).
        train_split: ``None`` or ``"train"`` (the only one).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``sick/semeval2014_task1/``.

    Returns:
        The dataset with splits ``"train"``, ``"dev"`` and ``"test"`` and ``label_names``
        ``("entailment", "neutral", "contradiction")``; ``metadata`` holds ``data_dir``, ``files`` (split ->
        path), ``relatedness`` (split -> ``float32`` scores aligned with the split) and ``evaluation``.

    Raises:
        ValueError: a variant or training split other than the ones above.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed.
        keras_match.datasets.download.DownloadError: fetching failed.
    """
    variant, _ = choose_options(NAME, variant, VARIANTS, train_split, TRAIN_SPLITS)
    files = split_files()
    root, splits, relatedness = read_benchmark(NAME, files, read_sick_split, data_dir, download)
    return classification_dataset(
        NAME, splits, LABEL_NAMES, variant, root, files, relatedness=relatedness, evaluation=EVALUATION
    )
