"""SNLI 1.0 (Bowman, Angeli, Potts & Manning, EMNLP 2015), dev and test only: 3-way sentence-pair
classification (natural language inference).

Source: the original ``snli_1.0_{dev,test}.jsonl`` of ``snli_1.0.zip``, gzip'd, unmodified copies from
uclnlp/inferbeddings (commit ``80492a7``, ``data/snli/``); see ``snli/SOURCE.md`` in the data folder.
License: CC BY-SA 4.0 (attribute Bowman et al. 2015, share derivatives alike).

**There is no training split**: the 550,152-pair SNLI training file is not in the data folder. The dataset
has splits ``"dev"`` and ``"test"`` only; train on another dataset (e.g. ``sick``) or use dev as a small
training set.

Files (relative to the data directory): ``snli/snli_1.0_{dev,test}.jsonl.gz``, UTF-8 JSON lines (LF), one
pair per line with the keys ``pairID``, ``captionID``, ``gold_label``, ``sentence1``, ``sentence2``,
``annotator_labels`` and the parses (unused). This loader reads the JSONL rather than the derived
``snli/tsv/*.tsv.gz``: both hold all 10,000 rows of each split in the same order (checked to agree field by
field), but SOURCE.md describes the JSONL as the complete original files (every field, untouched) with a
public origin (:mod:`keras_match.datasets.download` fetches them), while the TSV is a convenience copy the data
curators derived.

Mapping: ``PairSplit.ids`` = ``pairID`` (unique), ``first`` = ``sentence1`` (premise), ``second`` =
``sentence2`` (hypothesis), ``labels`` = ``gold_label`` (``entailment``, ``neutral``, ``contradiction``) as an
index into :data:`LABEL_NAMES`. Rows whose ``gold_label`` is ``-`` (no majority among the five annotators) are
dropped, the standard convention, and counted in ``PairSplit.dropped["no gold label"]``.

Counts (of 10,000 rows per file): dev 9,842 pairs (3,329 entailment / 3,235 neutral / 3,278 contradiction,
158 dropped); test 9,824 (3,368 / 3,219 / 3,237, 176 dropped).
"""

from __future__ import annotations

from keras_match.datasets.classification import ClassificationDataset, PairSplit, label_index, pair_split, sentence
from keras_match.datasets.common import check_intact, choose, classification_dataset, data_path, locate
from keras_match.datasets.reader import read_records

NAME = "snli"
VARIANTS = (None,)
"""Only the original dev/test files; no variants."""

LABEL_NAMES = ("entailment", "neutral", "contradiction")
"""Class names, index order."""

LABELS = {name: index for index, name in enumerate(LABEL_NAMES)}
"""``gold_label`` as stored -> class index."""

NO_GOLD = "-"
"""``gold_label`` of pairs without an annotator majority."""

NO_GOLD_LABEL = "no gold label"
"""``PairSplit.dropped`` reason for the ``-`` rows."""

KEYS = {"id": "pairID", "label": "gold_label", "first": "sentence1", "second": "sentence2"}
"""Name used here -> JSON key."""

EVALUATION = "accuracy on the test pairs with a gold label (9,824); no training split"
"""The reporting convention, in words (``metadata["evaluation"]``)."""


def split_files() -> dict[str, str]:
    """The split files.

    Returns:
        ``{"dev": ..., "test": ...}``, paths relative to the data directory.
    """
    return {split: f"snli/snli_1.0_{split}.jsonl.gz" for split in ("dev", "test")}


def read_snli_split(name: str, path) -> PairSplit:
    """Read one SNLI 1.0 JSONL file, dropping the pairs without a gold label (see the module docstring).

    Args:
        name: the split's name.
        path: the file (``.jsonl`` or ``.jsonl.gz``).

    Returns:
        The split; ``dropped`` is ``{"no gold label": n}`` when ``n > 0`` rows had ``gold_label == "-"``.

    Raises:
        DataFormatError: the file is malformed: invalid JSON, a missing key, an empty or repeated ``pairID``,
            an empty sentence, an unknown ``gold_label`` (the message lists the valid ones), or no pair at all.
    """
    records = read_records(path, KEYS, integers=(), ids=("id",))
    valid = {**LABELS, NO_GOLD: None}
    rows, no_gold = [], 0
    for number, row in records:
        label = label_index(path, number, KEYS["label"], row["label"], valid)
        if label is None:
            no_gold += 1
            continue
        first = sentence(path, number, KEYS["first"], row["first"])
        second = sentence(path, number, KEYS["second"], row["second"])
        rows.append((number, row["id"], first, second, label))
    return pair_split(
        name,
        rows,
        LABEL_NAMES,
        path=path,
        id_field=KEYS["id"],
        dropped={NO_GOLD_LABEL: no_gold} if no_gold else {},
    )


def load(variant=None, data_dir=None, *, train_split=None, download=None) -> ClassificationDataset:
    """Load SNLI 1.0 dev and test (there is no training split in the data folder).

    Conventions: pairs without a gold label (``-``) are dropped from both splits, as is standard; report
    accuracy on the 9,824 test pairs.

    Args:
        variant: ``None`` (the only choice).
        train_split: must be ``None``: SNLI has no training split here.
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``snli/``.

    Returns:
        The dataset with splits ``"dev"`` and ``"test"`` and ``label_names``
        ``("entailment", "neutral", "contradiction")``; ``metadata`` holds ``data_dir``, ``files`` (split ->
        path) and ``evaluation``.

    Raises:
        ValueError: a variant other than ``None``, or any ``train_split``.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed.
        keras_match.datasets.download.DownloadError: fetching failed.
    """
    variant = choose("variant", variant, VARIANTS, NAME)
    if train_split is not None:
        raise ValueError(
            f"unknown train_split {train_split!r} for dataset {NAME!r}: it has no training split "
            f"(only 'dev' and 'test'); pass train_split=None"
        )
    files = split_files()
    root = locate(NAME, files.values(), data_dir, download)
    splits = {name: read_snli_split(name, data_path(root, relative)) for name, relative in files.items()}
    check_intact(NAME, root, files.values())
    return classification_dataset(NAME, splits, LABEL_NAMES, variant, root, files, evaluation=EVALUATION)
