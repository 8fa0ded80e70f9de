"""Dataset names of the command line (`--dataset`) and of `keras_match.train`, resolved to loaded datasets.

| name | what it loads |
| --- | --- |
| `trecqa-clean` | TrecQA, clean dev/test (TRAIN-ALL unless `train_split="train"`) |
| `trecqa-raw` | TrecQA, raw dev/test without the questions that have no relevant answer |
| `trecqa-raw-trec-eval` | raw dev/test with every question, those without a relevant answer scored 0 (trec_eval) |
| `wikiqa`, `semeval2016` | the benchmarks of those names |
| `wikiqa-answered` | WikiQA dev/test with every question that has a correct sentence (126 / 243, not 122 / 237) |
| `sick`, `snli`, `msrp` | sentence-pair classification (entailment, entailment, paraphrase) |
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


def load_by_name(spec, data_dir=None, train_split=None, download=False):
    """Load a dataset by its command-line name or from a path; a loaded dataset is returned unchanged.

    Args:
        spec: a name of `known_names()`, the path of the user's files, or a loaded dataset.
        data_dir: the benchmark data folder (default `$KERAS_MATCH_DATA`, then the user cache).
        train_split: TrecQA's training set (`"train-all"`, the default, or `"train"`).
        download: fetch missing benchmark files first.

    Raises:
        ValueError: `spec` is neither a known name nor an existing path; `train_split` given for a dataset
            other than TrecQA.
    """
    from keras_match import datasets

    if not isinstance(spec, (str, os.PathLike)):
        return spec
    spec = str(spec)
    if spec in SPECS or spec in known_names():
        name, variant, options = SPECS.get(spec, (spec, None, {}))
        kwargs = dict(options)
        if train_split is not None:
            if name != "trecqa":
                raise ValueError(f"--train-split applies to TrecQA only, not to {spec!r}")
            kwargs["train_split"] = train_split
        return datasets.load(name, variant=variant, data_dir=data_dir, download=download, **kwargs)
    if os.path.exists(spec):
        return datasets.load(spec)
    raise ValueError(f"unknown dataset {spec!r}: use one of {known_names()} or the path of a TSV/JSONL file or "
                     "folder")
