"""The summary of `benchmarks/reproduce.py` results: one row per (model, dataset, training split, loss, variant),
the mean and standard deviation over the seeds found, from the JSON files reproduce.py printed; JSON, or with
`--table` a markdown table. The variant is reproduce.py's `--label`, else the `--set` overrides other than `loss`
and `bucketing` (plain batches show as "(plain)" beside the loss).

    python benchmarks/summarize.py runs/issue8/*.json > summary.json
    python benchmarks/summarize.py runs/issue8/*.json --table > table.md
    python benchmarks/summarize.py runs/*.json --figures map mrr --split test dev --table
    python benchmarks/summarize.py runs/*.json --split test wikiqa     # a transfer dataset (reproduce.py --transfer)

A split that is not the run's own (`wikiqa` above) is read from the run's transfer figures, and a BM25 row gives
the BM25 reference that reproduce.py --transfer recorded for the shown splits.

Files that are empty or not JSON (an interrupted run) are listed on stderr and skipped. A result without its
provenance (`keras_match.artifacts.provenance`: the command, code, versions, machine and time that made it, for the file
and for each of its runs) is refused: exit 1 naming the file.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys

from keras_match.metrics import figure_name


def figures_on(run, split):
    """A run's figures on `split`: its own dev / test, else a transfer dataset's (reproduce.py --transfer); {}
    when it has none."""
    return run.get(split) or (run.get("transfer") or {}).get(split) or {}


def write_result(path, result) -> None:
    """Writes a benchmark script's JSON `result` to `path` (its folder made; all or nothing: `storage.write_text`)
    and prints it.

    Raises:
        keras_match.artifacts.storage.WriteError (an OSError): the file cannot be written; `path` is as it was.
    """
    import pathlib

    from keras_match.artifacts import storage

    text = json.dumps(result, indent=1) + "\n"
    path = pathlib.Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise storage.WriteError(f"cannot make {path.parent}: {storage.describe_os_error(error)}") from None
    storage.write_text(path, text)
    print(text, end="")


def write_dataset_result(script, path, result, started, name, dataset) -> int:
    """`result` with the provenance of a script that read dataset `name` (`dataset`, loaded) since `started` (a
    `time.time()`), written to `path` and printed (`write_result`).

    Returns:
        0, or 1 with one line on stderr naming `script` when the file cannot be written.
    """
    from keras_match import training
    from keras_match.artifacts import provenance

    result = dict(result, provenance=provenance.collect(started, dataset=name,
                                                        data_files=training.data_files(dataset)))
    try:
        write_result(path, result)
    except OSError as error:
        print(f"{script}: {error}", file=sys.stderr)
        return 1
    return 0


class ProvenanceError(Exception):
    """A result file without its provenance."""


def read(path):
    """The results of a reproduce.py JSON file, each with its provenance (`keras_match.artifacts.provenance.check`).

    Raises:
        OSError, ValueError: the file cannot be read or is not JSON.
        ProvenanceError: the file, or one of its runs, does not say what made it.
    """
    from keras_match.artifacts import provenance

    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    if not isinstance(results, dict) or not results:
        raise ValueError(f"{path}: not reproduce.py output")
    for name, result in results.items():
        try:
            provenance.check(result, path)
            for run in result["runs"]:
                provenance.check(run, f"{path} ({name}, seed {run.get('seed')})")
        except ValueError as error:
            raise ProvenanceError(str(error)) from None
    return results


def _rows(paths):
    grouped = collections.defaultdict(list)
    skipped = []
    bm25 = {}
    for path in paths:
        try:
            results = read(path)
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


def cell(values, digits=3):
    """A table cell: the mean of `values` with their standard deviation (`0.720 ± 0.028`), the value alone for
    one, "–" for none."""
    if not values:
        return "–"
    mean = statistics.mean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _stats(values):
    if not values:
        return None
    return {"mean": statistics.mean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values)}


def summary(paths, figures=None, splits=("test",), sort=True):
    """The rows as JSON-ready dicts and the skipped files: one row per (model, dataset, training split, loss,
    variant), with the seeds and, per split and figure, the mean, standard deviation and count over the seeds;
    then BM25's reference per dataset where reproduce.py --transfer recorded one for every split shown.

    Raises:
        ProvenanceError: a result file without its provenance.
    """
    grouped, bm25, skipped = _rows(paths)
    figures = _figures(grouped, figures)
    rows = []
    for (name, dataset, train, loss, plain, variant), runs in (sorted(grouped.items()) if sort else grouped.items()):
        rows.append({"model": name, "dataset": dataset, "train_split": train, "loss": loss,
                     "plain_batches": bool(plain), "variant": variant, "seeds": [r["seed"] for r in runs],
                     "figures": {split: {figure: _stats([figures_on(r, split)[figure] for r in runs
                                                         if figure in (figures_on(r, split))])
                                         for figure in figures} for split in splits},
                     "epochs_run": _stats([r["epochs_run"] for r in runs]),
                     "train_pairs_per_s": _stats([r["train_pairs_per_s"] for r in runs if r.get("train_pairs_per_s")]),
                     "wall_time_s": _stats([r["wall_time_s"] for r in runs])})
    references = {dataset: {split: bm25[(dataset, split)] for split in splits}
                  for dataset in sorted({key[1] for key in grouped}) if all((dataset, s) in bm25 for s in splits)}
    return {"rows": rows, "bm25": references}, skipped


def _figures(grouped, figures):
    if figures is None and grouped:
        sample = next(iter(grouped.values()))[0]
        figures = [k for k in ("map", "mrr", "p@1", "accuracy", "macro_f1") if k in (sample.get("test") or
                                                                                      sample["dev"])]
    return figures


def table(paths, figures=None, splits=("test",), sort=True):
    """The markdown table (str) and the skipped files: one row per (model, dataset, training split, loss,
    variant), sorted by those, or, with `sort=False`, in the order of their first file in `paths`.

    Raises:
        ProvenanceError: a result file without its provenance.
    """
    grouped, bm25, skipped = _rows(paths)
    if not grouped:
        return "", skipped
    figures = _figures(grouped, figures)
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
            cells += [cell([reference[figure]] if figure in reference else []) for reference in references
                      for figure in figures]
            lines.append("| " + " | ".join(cells + ["–", "–", "–"]) + " |")
    for (name, dataset, train, loss, plain, variant), runs in (sorted(grouped.items()) if sort else grouped.items()):
        cells = [name, dataset, train, loss + (" (plain)" if plain else "")]
        cells += [variant] if with_variants else []
        cells += [", ".join(str(r["seed"]) for r in runs)]
        for split in splits:
            for figure in figures:
                cells.append(cell([figures_on(r, split)[figure] for r in runs if figure in (figures_on(r, split))]))
        cells.append(cell([r["epochs_run"] for r in runs], 1))
        cells.append(cell([r["train_pairs_per_s"] for r in runs if r.get("train_pairs_per_s")], 0))
        cells.append(cell([r["wall_time_s"] for r in runs], 0))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="JSON files printed by benchmarks/reproduce.py")
    parser.add_argument("--figures", nargs="+", default=None, help="default: the task's (map mrr p@1 / accuracy)")
    parser.add_argument("--split", nargs="+", default=["test"], help="splits to show (default: test)")
    parser.add_argument("--table", action="store_true", help="print a markdown table instead of JSON")
    args = parser.parse_args(argv)
    try:
        if args.table:
            text, skipped = table(args.files, args.figures, args.split)
        else:
            found, skipped = summary(args.files, args.figures, args.split)
            text = json.dumps(found, indent=2)
    except ProvenanceError as error:
        raise SystemExit(str(error)) from None
    for path in skipped:
        print(f"skipped {path}: empty or not reproduce.py output", file=sys.stderr)
    print(text)


if __name__ == "__main__":
    main()
