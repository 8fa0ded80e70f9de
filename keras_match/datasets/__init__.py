"""Answer-selection benchmarks and user data as question-grouped splits, and sentence-pair classification sets.

>>> from keras_match import datasets
>>> ds = datasets.load("trecqa")                 # clean dev/test, TRAIN-ALL
>>> ds["dev"].counts()                            # {'questions': 65, 'pairs': 1117, ...}
>>> pairs = ds["train"].pairs()                   # flat arrays for tf.data / Keras

Benchmarks (:func:`names`): ``"trecqa"`` (variants ``"clean"``, ``"raw"``; ``train_split`` ``"train-all"`` or
``"train"``), ``"wikiqa"`` (filtered dev/test), ``"semeval2016"`` (subtask A, splits ``"train"`` and ``"dev"``
only; variants ``"official"``, ``"filtered"``). Each module documents its files and which questions are dropped
from evaluation splits and why; ``Split.dropped`` records the counts. These load as :class:`MatchingDataset`
(``task == "ranking"``).

Sentence-pair classification benchmarks load as :class:`ClassificationDataset` (``task == "classification"``),
whose :class:`PairSplit` objects are parallel arrays of pair ids, first / second sentences and class indices
into ``label_names``: ``"sick"`` (SemEval-2014 Task 1 entailment: train / dev = trial / test, 3 classes),
``"snli"`` (SNLI 1.0 ``"dev"`` and ``"test"`` only, no training split; pairs without a gold label dropped) and
``"msrp"`` (paraphrase, 2 classes; dev = the last 400 pairs of the train file).

>>> sick = datasets.load("sick")
>>> sick.label_names                              # ('entailment', 'neutral', 'contradiction')
>>> sick["train"].counts()                        # {'pairs': 4500, 'per_class': {...}, 'dropped': {}}
>>> inputs = sick["train"].texts()                # {'question': first sentences, 'answer': second sentences}

User data: ``load("path/to/dir")`` (``train``/``dev``/``test`` ``.tsv``/``.jsonl`` files, optionally ``.gz``),
``load("file.tsv")`` (a single ``"test"`` split) or :func:`load_files`; formats in :mod:`.generic`.

Data directory: the ``data_dir`` argument, else ``$KERAS_MATCH_DATA``, else the user cache
(``$KERAS_MATCH_CACHE/data``, else ``~/.cache/keras_match/data``), with the layout of the project's data folder
(``trecqa/tsv/...``, ``wikiqa/...``, ``semeval2016_task3_cqa/subtaskA/...``, ``sick/semeval2014_task1/...``,
``snli/...``, ``msrp/...``). On first use a benchmark is fetched from its public originals and its derived files are
built into the user cache (an explicit folder is written to only with ``download=True``, :func:`download` or
``keras-match data download NAME``); every file read is checked against its pinned sha256 (see :mod:`.download`).
"""

from __future__ import annotations

import os

from keras_match.datasets import dialog_babi, msrp, semeval, sick, snli, trecqa, wikiqa
from keras_match.datasets.base import (Candidate, DataFormatError, MatchingDataset, Pairs, Question, Split,
                                       UnknownSplitError)
from keras_match.datasets.classification import ClassificationDataset, PairSplit
from keras_match.datasets.dialog_babi import ResponseSelectionDataset, ResponseSplit
from keras_match.datasets.download import ChecksumError, DataError, DownloadError, MissingDataError, download, verify
from keras_match.datasets.generic import load_files, load_path
from keras_match.datasets.paths import cache_dir, resolve_data_dir

_LOADERS = {
    trecqa.NAME: trecqa.load,
    wikiqa.NAME: wikiqa.load,
    semeval.NAME: semeval.load,
    **dialog_babi.LOADERS,
    sick.NAME: sick.load,
    snli.NAME: snli.load,
    msrp.NAME: msrp.load,
}

__all__ = [
    "Candidate",
    "ChecksumError",
    "ClassificationDataset",
    "DataError",
    "DataFormatError",
    "DownloadError",
    "MatchingDataset",
    "MissingDataError",
    "PairSplit",
    "Pairs",
    "Question",
    "ResponseSelectionDataset",
    "ResponseSplit",
    "Split",
    "UnknownSplitError",
    "cache_dir",
    "download",
    "load",
    "load_files",
    "names",
    "resolve_data_dir",
    "verify",
]


def names() -> list[str]:
    """The benchmark names :func:`load` accepts.

    Returns:
        ``["trecqa", "wikiqa", "semeval2016", "dialog-babi-task1", ..., "dialog-babi-task6", "sick", "snli",
        "msrp"]``: the answer-selection (ranking) benchmarks, the response-selection ones (:mod:`.dialog_babi`),
        then the sentence-pair classification ones.
    """
    return list(_LOADERS)


def load(
    name, variant=None, data_dir=None, *, train_split=None, download=None, **options
) -> MatchingDataset | ClassificationDataset:
    """Load a benchmark by name, or user data from a path.

    Args:
        name: a benchmark name (see :func:`names`), or the path of an existing directory of split files or of
            a single file (loaded as the ``"test"`` split; see :mod:`keras_match.datasets.generic`). Benchmark
            names win over same-named relative paths (write ``"./trecqa"`` for the directory).
        variant: the benchmark's dev/test version; ``None`` selects its default. Not allowed with a path.
        data_dir: the data directory; default ``$KERAS_MATCH_DATA``, else the user cache (see
            :func:`resolve_data_dir`). Not allowed with a path.
        train_split: the benchmark's training file (TrecQA: ``"train-all"`` or ``"train"``; SemEval-2016:
            ``"train-part2"`` or ``"train-part2+train-2015"``); ``None`` selects its default (SNLI has no training
            split and accepts only ``None``). Not allowed with a path.
        download: fetch and build missing or damaged benchmark files first: ``None`` (default) only into the
            user cache, ``True`` into any data directory, ``False`` never (see :mod:`.download`).
        **options: the benchmark loader's own options (TrecQA: ``no_positive="skip" | "zero"``).

    Returns:
        The dataset, with splits ``"train"``, ``"dev"`` and ``"test"`` (``semeval2016``: ``"train"`` and
        ``"dev"``; ``snli``: ``"dev"`` and ``"test"``; a path: the split files found). A
        :class:`MatchingDataset` for the ranking benchmarks and paths, a :class:`ClassificationDataset` for
        ``sick``, ``snli`` and ``msrp`` (tell them apart by ``dataset.task``).

    Raises:
        ValueError: unknown name (not a benchmark and not an existing path), unknown variant or training
            split, or benchmark options given with a path.
        MissingDataError: a data file is missing (a ``FileNotFoundError``); the message names the dataset, the
            folder and the command that fetches it.
        ChecksumError: a data file is damaged (its sha256 is not the pinned one).
        DataFormatError: a data file is malformed.
        DownloadError: fetching failed.
    """
    loader = _LOADERS.get(name) if isinstance(name, str) else None
    if loader is not None:
        return loader(variant, data_dir, train_split=train_split, download=download, **options)
    if isinstance(name, (str, os.PathLike)) and str(name) and os.path.exists(name):
        options = {"variant": variant, "data_dir": data_dir, "train_split": train_split, "download": download,
                   **options}
        given = [option for option, value in options.items() if value not in (None, False)]
        if given:
            raise ValueError(f"{given} apply to named benchmarks only, not to the path {str(name)!r}")
        return load_path(name)
    raise ValueError(f"unknown dataset {name!r}: not one of {names()} and not an existing file or directory")
