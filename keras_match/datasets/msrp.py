"""Microsoft Research Paraphrase Corpus (Dolan, Quirk & Brockett 2004/2005): binary sentence-pair
classification (paraphrase / semantic equivalence).

Source: the original distribution's ``msr_paraphrase_{train,test}.txt``, gzip'd by the data curators (the
decompressed bytes are the originals), from lanwuwei/SPM_toolkit (commit ``ba1dd00``); see ``msrp/SOURCE.md``
in the data folder. License: Microsoft Research Shared Source License (``msrp/LICENCE.html``):
**non-commercial use only**; redistribute only under the same terms and keep ``LICENCE.html`` with the data.

Files (relative to the data directory): ``msrp/msr_paraphrase_{train,test}.txt`` (or the data folder's ``.gz``
copies), UTF-8 with a byte-order mark, CRLF, tab-separated with the header
``Quality  #1 ID  #2 ID  #1 String  #2 String``, one pair per line, raw news sentences that contain ``"``
characters: read with quoting disabled (fields are split on tabs only).

Mapping: ``PairSplit.ids`` = ``"<#1 ID>-<#2 ID>"`` (e.g. ``"702876-702977"``; unique), ``first`` = ``#1 String``,
``second`` = ``#2 String``, ``labels`` = ``Quality`` (``0`` = not a paraphrase, ``1`` = paraphrase), which is
already the index into :data:`LABEL_NAMES` ``("not_paraphrase", "paraphrase")``. Nothing is dropped.

Splits: the corpus has an official train (4,076 pairs: 2,753 paraphrase / 1,323 not) and test (1,725: 1,147 /
578) split, and **no dev split**. This loader holds out a deterministic dev split from the train file: **the
last 400 pairs of ``msr_paraphrase_train.txt`` in file order** (lines 3,678-4,077 of the file: 277 paraphrase
/ 123 not), described in ``dataset.metadata["dev"]``. So ``"train"`` has the first 3,676 pairs (2,476 / 1,200),
``"dev"`` 400 and ``"test"`` the official 1,725. Report accuracy and F1 (positive class ``paraphrase``) on
``"test"``. (GLUE's MRPC dev is a different, random 408-pair subset of train; brmson/dataset-sts moves the last
500 pairs instead; neither is this one.)
"""

from __future__ import annotations

from keras_match.datasets.base import DataFormatError
from keras_match.datasets.classification import (
    ClassificationDataset, PairSplit, integer, label_index, pair_split, read_tsv, sentence
)
from keras_match.datasets.common import check_intact, choose_options, classification_dataset, data_path, locate

NAME = "msrp"
VARIANTS = (None,)
"""Only the official files with the dev hold-out below; no variants."""

TRAIN_SPLITS = ("train",)

LABEL_NAMES = ("not_paraphrase", "paraphrase")
"""Class names, index order (the index is the file's ``Quality``)."""

LABELS = {0: 0, 1: 1}
"""``Quality`` -> class index."""

DEV_PAIRS = 400
"""How many pairs, taken from the end of the train file, form the dev split."""

COLUMNS = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")

EVALUATION = "accuracy and F1 (positive class: paraphrase) on the official test set (1,725 pairs)"
"""The reporting convention, in words (``metadata["evaluation"]``)."""


def split_files() -> dict[str, str]:
    """The corpus files.

    Returns:
        ``{"train": ..., "test": ...}``, paths relative to the data directory (``"dev"`` comes from the
        train file).
    """
    return {split: f"msrp/msr_paraphrase_{split}.txt" for split in ("train", "test")}


def read_msrp_file(name: str, path) -> tuple[PairSplit, list[int]]:
    """Read one MSRP file (see the module docstring for the mapping).

    Args:
        name: the split's name.
        path: the file (plain or ``.gz``; BOM and CRLF allowed).

    Returns:
        The split (every pair, nothing dropped) and the 1-based file line of every pair.

    Raises:
        DataFormatError: the file is malformed: a missing column, a ``Quality`` or id that is not an integer,
            a ``Quality`` other than 0 / 1 (the message lists the valid ones), an empty sentence, or a
            repeated ``(#1 ID, #2 ID)`` pair.
    """
    rows, lines = [], []
    for number, row in read_tsv(path, COLUMNS):
        quality = integer(path, number, "Quality", row["Quality"])
        label = label_index(path, number, "Quality", quality, LABELS)
        id1 = integer(path, number, "#1 ID", row["#1 ID"])
        id2 = integer(path, number, "#2 ID", row["#2 ID"])
        first = sentence(path, number, "#1 String", row["#1 String"])
        second = sentence(path, number, "#2 String", row["#2 String"])
        rows.append((number, f"{id1}-{id2}", first, second, label))
        lines.append(number)
    return pair_split(name, rows, LABEL_NAMES, path=path, id_field="#1 ID"), lines


def hold_out_dev(train: PairSplit, lines: list[int], size: int = DEV_PAIRS) -> tuple[PairSplit, PairSplit, dict]:
    """Split the last ``size`` pairs of the train file off as the dev split.

    Args:
        train: every pair of the train file, in file order.
        lines: the file line of every pair (from :func:`read_msrp_file`).
        size: how many pairs go to dev.

    Returns:
        ``(train, dev, description)``: the first ``len(train) - size`` pairs, the last ``size`` pairs, and
        the ``metadata["dev"]`` description (rule, sizes, file lines, first and last pair id).

    Raises:
        DataFormatError: the train file has ``size`` pairs or fewer.
    """
    n = train.num_pairs
    if n <= size:
        raise DataFormatError(
            train.source, None, f"the train file has {n} pairs; more than {size} are needed to hold out the dev split"
        )
    cut = n - size
    kept = train.head(cut)
    dev = PairSplit(
        "dev",
        train.ids[cut:],
        train.first[cut:],
        train.second[cut:],
        train.labels[cut:],
        train.label_names,
        source=train.source,
    )
    description = {
        "rule": f"the last {size} pairs of the train file in file order (no official MSRP dev split)",
        "from": train.source,
        "pairs": size,
        "train_pairs": cut,
        "file_lines": (lines[cut], lines[-1]),
        "ids": (str(dev.ids[0]), str(dev.ids[-1])),
    }
    return kept, dev, description


def load(variant=None, data_dir=None, *, train_split=None, download=None) -> ClassificationDataset:
    """Load MSRP with a held-out dev split: ``"train"`` (3,676 pairs), ``"dev"`` (the last 400 pairs of the
    train file) and ``"test"`` (the official 1,725).

    Args:
        variant: ``None`` (the only choice).
        train_split: ``None`` or ``"train"`` (the only one).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``msrp/``.

    Returns:
        The dataset with splits ``"train"``, ``"dev"`` and ``"test"`` and ``label_names``
        ``("not_paraphrase", "paraphrase")``; ``metadata`` holds ``data_dir``, ``files`` (file name ->
        path), ``dev`` (how dev was held out: ``rule``, ``from``, ``pairs``, ``train_pairs``, ``file_lines``,
        ``ids``) and ``evaluation``.

    Raises:
        ValueError: a variant or training split other than the ones above.
        FileNotFoundError: a data file is missing.
        keras_match.datasets.base.DataFormatError: a data file is malformed, or the train file has 400 pairs
            or fewer.
        keras_match.datasets.download.DownloadError: fetching failed.
    """
    variant, _ = choose_options(NAME, variant, VARIANTS, train_split, TRAIN_SPLITS)
    files = split_files()
    root = locate(NAME, files.values(), data_dir, download)
    full_train, lines = read_msrp_file("train", data_path(root, files["train"]))
    train, dev, description = hold_out_dev(full_train, lines)
    test, _ = read_msrp_file("test", data_path(root, files["test"]))
    check_intact(NAME, root, files.values())
    splits = {"train": train, "dev": dev, "test": test}
    return classification_dataset(
        NAME, splits, LABEL_NAMES, variant, root, files, dev=description, evaluation=EVALUATION
    )
