"""A markdown table of `benchmarks/reproduce.py` results: one row per (model, dataset, training split, loss,
variant), the mean and standard deviation over the seeds found, from the JSON files reproduce.py printed. The
variant is reproduce.py's `--label`, else the `--set` overrides other than `loss` and `bucketing` (plain batches
show as "(plain)" beside the loss).

    python benchmarks/summarize.py runs/issue8/*.json > table.md
    python benchmarks/summarize.py runs/*.json --figures map mrr --split test dev
    python benchmarks/summarize.py runs/*.json --split test wikiqa     # a transfer dataset (reproduce.py --transfer)

A split that is not the run's own (`wikiqa` above) is read from the run's transfer figures, and a BM25 row gives
the BM25 reference that reproduce.py --transfer recorded for the shown splits.

Files that are empty or not reproduce.py output (an interrupted run) are listed on stderr and skipped.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys

from keras_match.metrics import figure_name


def _split(run, split):
    """A run's figures on `split`: its own dev / test, else a transfer dataset's (reproduce.py --transfer)."""
    return run.get(split) or (run.get("transfer") or {}).get(split)


def _rows(paths):
    grouped = collections.defaultdict(list)
    skipped = []
    bm25 = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                results = json.load(f)
        except (OSError, ValueError):
            skipped.append(path)
            continue
        for name, result in results.items():
            for split, figures in (result.get("bm25") or {}).items():
                bm25.setdefault((result["dataset"], split), figures)
            overrides = result.get("overrides") or {}
            for run in result["runs"]:
                key = (name, result["dataset"], result.get("train_split") or "default",
                       run.get("loss_mode", "pointwise"),
                       "plain" if overrides.get("bucketing") is False else "", _variant(result))
                grouped[key].append(run)
    return grouped, bm25, skipped


def _variant(result):
    if result.get("label"):
        return result["label"]
    overrides = result.get("overrides") or {}
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(overrides.items()) if k not in ("loss", "bucketing"))


def _cell(values, digits=3):
    if not values:
        return "–"
    mean = statistics.mean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def table(paths, figures=None, splits=("test",), sort=True):
    """The markdown table (str) and the skipped files: one row per (model, dataset, training split, loss,
    variant), sorted by those, or, with `sort=False`, in the order of their first file in `paths`."""
    grouped, bm25, skipped = _rows(paths)
    if not grouped:
        return "", skipped
    if figures is None:
        sample = next(iter(grouped.values()))[0]
        figures = [k for k in ("map", "mrr", "p@1", "accuracy", "macro_f1") if k in (sample.get("test") or
                                                                                      sample["dev"])]
    datasets = sorted({key[1] for key in grouped})
    with_variants = any(key[-1] for key in grouped)
    header = ["model", "dataset", "train", "loss"] + (["variant"] if with_variants else []) + ["seeds"]
    header += [f"{split} {figure_name(figure)}" for split in splits
               for figure in figures]
    header += ["epochs", "train pairs/s", "wall s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for dataset in datasets:  # the BM25 reference, where reproduce.py --transfer recorded it for every split shown
        references = [bm25.get((dataset, split)) for split in splits]
        if all(references):
            cells = ["BM25", dataset, "–", "–"] + (["–"] if with_variants else []) + ["–"]
            cells += [_cell([reference[figure]] if figure in reference else []) for reference in references
                      for figure in figures]
            lines.append("| " + " | ".join(cells + ["–", "–", "–"]) + " |")
    for (name, dataset, train, loss, plain, variant), runs in (sorted(grouped.items()) if sort else grouped.items()):
        cells = [name, dataset, train, loss + (" (plain)" if plain else "")]
        cells += [variant] if with_variants else []
        cells += [", ".join(str(r["seed"]) for r in runs)]
        for split in splits:
            for figure in figures:
                cells.append(_cell([_split(r, split)[figure] for r in runs if figure in (_split(r, split) or {})]))
        cells.append(_cell([r["epochs_run"] for r in runs], 1))
        cells.append(_cell([r["train_pairs_per_s"] for r in runs if r.get("train_pairs_per_s")], 0))
        cells.append(_cell([r["wall_time_s"] for r in runs], 0))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="JSON files printed by benchmarks/reproduce.py")
    parser.add_argument("--figures", nargs="+", default=None, help="default: the task's (map mrr p@1 / accuracy)")
    parser.add_argument("--split", nargs="+", default=["test"], help="splits to show (default: test)")
    args = parser.parse_args(argv)
    text, skipped = table(args.files, args.figures, args.split)
    for path in skipped:
        print(f"skipped {path}: empty or not reproduce.py output", file=sys.stderr)
    print(text)


if __name__ == "__main__":
    main()
