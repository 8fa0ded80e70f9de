"""Dataset names of the command line (`--dataset`) and of `keras_match.train`, resolved to loaded datasets.

| name | what it loads |
| --- | --- |
| `trecqa-clean` | TrecQA, clean dev/test (TRAIN-ALL unless `train_split="train"`) |
| `trecqa-raw` | TrecQA, raw dev/test without the questions that have no relevant answer |
| `trecqa-raw-trec-eval` | raw dev/test with every question, those without a relevant answer scored 0 (trec_eval) |
| `wikiqa`, `semeval2016` | the benchmarks of those names |
| `wikiqa-answered` | WikiQA dev/test with every question that has a correct sentence (126 / 243, not 122 / 237) |
| `sick`, `snli`, `msrp` | sentence-pair classification (entailment, entailment, paraphrase) |
| `dialog-babi-task1` ... `dialog-babi-task6` | dialog bAbI response selection (`keras_match.datasets.dialog_babi`) |
| a path | the user's TSV/JSONL file or folder (`keras_match.datasets.generic`) |
"""

from __future__ import annotations

import os

__all__ = ["SPECS", "load_by_name", "known_names"]

SPECS = {
    "trecqa-clean": ("trecqa", "clean", {}),
    "trecqa-raw": ("trecqa", "raw", {}),
    "trecqa-raw-trec-eval": ("trecqa", "raw", {"no_positive": "zero"}),
    "wikiqa-answered": ("wikiqa", "answered", {}),
}
"""Names that pick a benchmark's variant (and loader options); every benchmark's own name is known too."""


def known_names() -> list[str]:
    """Every dataset name `load_by_name` accepts besides a path."""
    from keras_match import datasets

    return sorted(set(SPECS) | set(datasets.names()) - {"trecqa"})


def load_by_name(spec, data_dir=None, train_split=None, download=None):
    """Load a dataset by its command-line name or from a path; a loaded dataset is returned unchanged.

    Args:
        spec: a name of `known_names()`, the path of the user's files, or a loaded dataset.
        data_dir: the benchmark data folder (default `$KERAS_MATCH_DATA`, then the user cache).
        train_split: the benchmark's training set (TrecQA: `"train-all"`, the default, or `"train"`; SemEval-2016:
            `"train-part2"` or `"train-part2+train-2015"`).
        download: fetch and build missing benchmark files first (`None`: only into the user cache).

    Raises:
        ValueError: `spec` is neither a known name nor an existing path; a `train_split` the benchmark does not
            have.
    """
    from keras_match import datasets

    if not isinstance(spec, (str, os.PathLike)):
        return spec
    spec = str(spec)
    if spec in SPECS or spec in known_names():
        name, variant, options = SPECS.get(spec, (spec, None, {}))
        kwargs = dict(options)
        if train_split is not None:  # the loader checks it (before any file is read) and lists the valid ones
            kwargs["train_split"] = train_split
        return datasets.load(name, variant=variant, data_dir=data_dir, download=download, **kwargs)
    if os.path.exists(spec):
        return datasets.load(spec)
    raise ValueError(f"unknown dataset {spec!r}: use one of {known_names()} or the path of a TSV/JSONL file or "
                     "folder")
