"""Ship a trained preset from an ablation's results: the best seed of one row, by its dev figure, into the package.

Given an ablation's results folder (benchmarks/ablation.py `--out OUT`: the result files `NN-sSEED.json`, each
with its provenance, and the run folders under `OUT/runs/`) and a row number, this

1. reads the row's result files (benchmarks/summarize.py `read`: a file without provenance is refused) and picks
   the seed with the best dev figure (MAP for a ranker, accuracy for a classifier; the test split takes no part
   in the choice); its run folder is the one under `--runs` (default `OUT/runs`) whose `metrics.json` holds
   exactly the result file's figures;
2. writes that run's preset in float32 and in float16 (`keras_match.artifacts.presets.write_preset`) into a temporary
   folder and re-evaluates BOTH, loaded from their files, on the benchmark's test (and dev) split; the float32
   preset must hold the run's weights exactly (`differing_weights`, every weight compared); loaded in the precision
   the run computed in it must give the run's figures exactly, but for a run in mixed precision, whose scores
   depend on the batch shapes they were computed in (the run scored dev through its state cache): there the
   difference is printed and returned (`run_figure_drift`); the figures shipped are those of the preset loaded in
   float32, as a user loads it;
3. ships float16 if no dev or test figure moved by more than `--tolerance` (0.002) from the float32 preset's, else
   float32, as `keras_match/presets/<entry>/<dataset>/` (`--into`), its model card saying which seed, why, both
   figures and this command;
4. writes the preset shipped with its weights gzip-compressed (`write_preset(compress=True)`: a Compare-Aggregate
   body over MiniLM with its top two layers trained takes 7.8 MB in float16 so, 8.4 MB without) and, into the
   package, refuses (exit 1, nothing shipped) a weights file over 8 MB or shipped presets over 40 MB in all; a
   preset over that budget goes to a folder of its own (`--into DIR`, no limit), loaded with
   `keras_match.zoo.load(ENTRY, weights="DIR/ENTRY/DATASET")`;
5. prints JSON of what it did: the seeds' figures, the chosen seed, both presets' figures and sizes, the choice,
   and its provenance (`keras_match.artifacts.provenance.collect`: this command, the code's commit, versions,
   machine, start and end).

    KERAS_MATCH_DATA=../shared/data python benchmarks/ablation.py benchmarks/ablations/compare_aggregate_wikiqa.json \\
        --out runs/ca-wikiqa --rows 0 --jobs 2
    KERAS_MATCH_DATA=../shared/data python benchmarks/ship_presets.py runs/ca-wikiqa --row 0 \\
        --plan benchmarks/ablations/compare_aggregate_wikiqa.json

A preset already shipped for the same entry and dataset is kept unless `--replace` is given.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import summarize  # noqa: E402  (benchmarks/summarize.py: result files with their provenance)

PACKAGE_PRESETS = HERE.parent / "keras_match" / "presets"
MAX_WEIGHTS_BYTES = 8_000_000
MAX_SHIPPED_BYTES = 40_000_000
TOLERANCE = 0.002


class ShipError(Exception):
    """Nothing was shipped: the message says why."""


def differing_weights(expected, actual) -> list[str]:
    """The paths (`keras.Variable.path`) of the weights on which Keras models `expected` and `actual` differ: a
    weight either lacks, another shape, or any value not identical. Empty when `actual` holds `expected`'s weights
    exactly (a preset loaded from its files against the run it was written from)."""
    import numpy as np

    ours, theirs = ({weight.path: np.asarray(weight.numpy()) for weight in model.weights}
                    for model in (expected, actual))
    for model, named in ((expected, ours), (actual, theirs)):
        if len(named) != len(model.weights):  # two weights of one path: compared by path, one would hide the other
            raise ValueError(f"{model.name}: {len(model.weights) - len(named)} weight paths are not unique")
    return sorted(path for path in ours.keys() | theirs.keys()
                  if path not in ours or path not in theirs or ours[path].shape != theirs[path].shape
                  or not np.array_equal(ours[path], theirs[path]))


def row_results(out: pathlib.Path, row: int) -> list[dict]:
    """The row's finished seeds, in file order: `{"seed", "file", "entry", "result", "run"}` (`result`: the
    result file's record of the entry; `run`: its record of the seed's run)."""
    found = []
    for path in sorted(out.glob(f"{row:02d}-s*.json")):
        results = summarize.read(path)  # refuses a file without provenance
        if len(results) != 1:
            raise ShipError(f"{path}: {len(results)} entries in one result file; expected one (ablation.py's)")
        (entry, result), = results.items()
        for run in result["runs"]:
            found.append({"seed": run["seed"], "file": path, "entry": entry, "result": result, "run": run})
    if not found:
        raise ShipError(f"no result files {out}/{row:02d}-s*.json: row {row} has no finished seed")
    entries = {item["entry"] for item in found}
    datasets = {item["result"]["dataset"] for item in found}
    if len(entries) != 1 or len(datasets) != 1:
        raise ShipError(f"row {row}'s result files hold several entries or datasets: {sorted(entries)} on "
                        f"{sorted(datasets)}")
    return found


def selection_figure(run: dict) -> str:
    """The dev figure the seed is chosen by: MAP (ranker), accuracy (classifier), per-response accuracy (dialog)."""
    dev = run.get("dev") or {}
    for key in ("map", "accuracy", "per_response_accuracy"):
        if key in dev:
            return key
    raise ShipError(f"seed {run.get('seed')}: no dev MAP, accuracy or per-response accuracy in its result")


def find_run_dir(runs_dir: pathlib.Path, entry: str, dataset: str, run: dict) -> pathlib.Path:
    """The run folder of a result: under `runs_dir`, named `<entry>-<dataset>-*-s<seed>` (reproduce.py), finished,
    with the result's seed, entry and dev / test figures in its `metrics.json`."""
    candidates = []
    for folder in sorted(runs_dir.glob(f"{entry}-{dataset}-*-s{run['seed']}")):
        metrics_file = folder / "metrics.json"
        if not metrics_file.is_file():
            continue
        metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
        if metrics.get("zoo") == entry and all(metrics.get(split, {}).get(key) == value
                                               for split in ("dev", "test")
                                               for key, value in (run.get(split) or {}).items()):
            candidates.append(folder)
    if len(candidates) != 1:
        raise ShipError(f"{len(candidates)} finished run folders {runs_dir}/{entry}-{dataset}-*-s{run['seed']} "
                        f"with the result's figures (need exactly one): {[str(c) for c in candidates]}")
    return candidates[0]


def folder_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def shipped_folders(into: pathlib.Path) -> list[pathlib.Path]:
    """The preset folders `<entry>/<dataset>/` under `into`."""
    from keras_match.artifacts import presets

    return [folder for entry in sorted(into.iterdir()) if entry.is_dir() for folder in sorted(entry.iterdir())
            if presets.is_preset(folder)] if into.is_dir() else []


def in_package(into: pathlib.Path) -> bool:
    """Whether `into` is the package's presets folder (`keras_match/presets`), where the size limits apply."""
    return into.resolve() == PACKAGE_PRESETS.resolve()


def check_limits(final: pathlib.Path, into: pathlib.Path, target: pathlib.Path) -> tuple[int, int]:
    """The weights file's bytes and the bytes of every preset under `into` once `final` replaces `target`.

    Args:
        final: the preset folder written (its `model.weights.h5` and every other file count).
        into: the presets' folder it goes into (`--into`).
        target: the folder it will take under `into` (`<entry>/<dataset>`); a preset there now is replaced, so it
            does not count.

    Returns:
        `(weights_bytes, total_bytes)`.

    Raises:
        ShipError: shipping into the package (`in_package`), a weights file over `MAX_WEIGHTS_BYTES` or presets
            over `MAX_SHIPPED_BYTES` in all. A folder outside the package (`--into DIR`: a preset over the budget,
            loaded with `zoo.load(ENTRY, weights=DIR/ENTRY/DATASET)`) has no limit.
    """
    from keras_match.artifacts import presets

    weights_bytes = (final / presets.WEIGHTS_FILE).stat().st_size
    others = sum(folder_bytes(folder) for folder in shipped_folders(into) if folder.resolve() != target.resolve())
    total = others + folder_bytes(final)
    if not in_package(into):
        return weights_bytes, total
    if weights_bytes > MAX_WEIGHTS_BYTES:
        raise ShipError(f"{final / presets.WEIGHTS_FILE}: {weights_bytes:,} bytes, over the "
                        f"{MAX_WEIGHTS_BYTES:,} allowed per weights file")
    if total > MAX_SHIPPED_BYTES:
        raise ShipError(f"the shipped presets would take {total:,} bytes, over the {MAX_SHIPPED_BYTES:,} allowed")
    return weights_bytes, total


def summary(figures: dict) -> str:
    from keras_match.artifacts import presets
    from keras_match.metrics import figure_name

    return ", ".join(f"{figure_name(key)} {figures[key]:.4f}" for key in presets.FIGURES if key in figures)


def portable(command: str, runs: str | None = None) -> str:
    """`command` as anyone can run it from a clone: a script given by an absolute path (`/somewhere/benchmarks/
    reproduce.py`) by its path in the repository, and without this machine's `--runs DIR` and `--replace`; with
    `runs`, an absolute `--out DIR` (a run folder of the machine that trained it) becomes `runs`, the folder
    `ablation.py --out OUT` trains its seeds in (`OUT/runs`)."""
    words, kept = shlex.split(command), []
    skip = out_value = False
    for word in words:
        if skip:
            skip = False
        elif out_value:
            out_value = False
            kept.append(runs if word.startswith("/") else word)
        elif word == "--runs":
            skip = True
        elif word == "--out" and runs is not None:
            kept.append(word)
            out_value = True
        elif runs is not None and word.startswith("--out=/"):
            kept.append(f"--out={runs}")
        elif word != "--replace" and not word.startswith("--runs="):
            kept.append("benchmarks/" + word.rsplit("/benchmarks/", 1)[1]
                        if word.startswith("/") and "/benchmarks/" in word else word)
    return shlex.join(kept)


def card_notes(*, command, out, plan, row, label, entry, chosen, seeds, key, dataset, run_command, float16, fig32,
               fig16, difference, tolerance) -> str:
    name = key.upper() if key == "map" else key
    listed = "; ".join(f"seed {item['seed']}: dev {name} {item['run']['dev'][key]:.4f}, test {name} "
                       f"{item['run']['test'][key]:.4f}" for item in seeds)
    lines = [
        f"Shipped by `{command}` from the ablation results `{out}` (row {row}, \"{label}\"; the result files "
        f"`{row:02d}-s*.json` with their provenance).",
        "",
        f"**Seed {chosen['seed']}** of the {len(seeds)} seeds trained with these settings: the best by dev {name}, "
        f"the figure the seeds are chosen by (the test split took no part in the choice). The seeds: {listed}.",
        "",
        f"Rebuild the run: `{portable(run_command, runs=f'{out}/runs')}` (the seed's own command, from its result file's provenance, "
        "run from a clone)"
        + (f", or the row's {len(seeds)} seeds: `KERAS_MATCH_DATA=DATA python benchmarks/ablation.py {plan} --out "
           f"{out} --rows {row}`" if plan else "") + f"; then `{portable(command)}`.",
        "",
        f"Stored in {'float16' if float16 else 'float32'}: re-evaluated on {dataset}'s test split, loaded from "
        f"their files, the float32 preset gives {summary(fig32)} and the float16 preset {summary(fig16)}; the "
        f"largest difference on dev and test is {difference:.4f}, "
        + (f"within the {tolerance} allowed" if difference <= tolerance else f"over the {tolerance} allowed")
        + (f", so the weights ship in {'float16 (half the size)' if float16 else 'float32'}."
           if float16 == (difference <= tolerance)
           else f"; the weights ship in {'float16' if float16 else 'float32'} all the same (--float16 "
                f"{'always' if float16 else 'never'})."),
    ]
    return "\n".join(lines)


def ship(args) -> dict:
    from keras_match.artifacts import presets, provenance, runs

    started = time.time()
    out = pathlib.Path(args.out)
    runs_dir = pathlib.Path(args.runs) if args.runs else out / "runs"
    into = pathlib.Path(args.into)
    seeds = row_results(out, args.row)
    entry, dataset = seeds[0]["entry"], seeds[0]["result"]["dataset"]
    label = seeds[0]["result"].get("label") or ""
    key = selection_figure(seeds[0]["run"])
    # best dev figure; a tie goes to the seed listed first (file order)
    chosen = max(seeds, key=lambda item: (item["run"]["dev"][key], -seeds.index(item)))
    run_dir = find_run_dir(runs_dir, entry, dataset, chosen["run"])
    target = into / entry / dataset
    if target.exists() and not args.replace:
        raise ShipError(f"{target} exists: a preset of {entry} on {dataset} is shipped already (--replace to "
                        "replace it)")
    command = shlex.join(["python", "benchmarks/ship_presets.py", *args.argv])
    # a row chosen on held-out training questions (ablation `holdout_dev`): the preset records how, so that it is
    # scored on the same splits (presets.benchmark_dataset)
    fraction = seeds[0]["result"].get("holdout_dev")
    holdout = {"fraction": fraction, "train_split": seeds[0]["result"].get("train_split")} if fraction else None
    run_metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))

    into.mkdir(parents=True, exist_ok=True)
    # beside the presets' folder (same file system, so the final rename is atomic), not in it: an interrupted
    # run leaves no folder that trained() would list
    work = pathlib.Path(tempfile.mkdtemp(prefix=".ship-", dir=into.parent))
    try:
        print(f"[ship] {entry} on {dataset}: seed {chosen['seed']} ({run_dir}); writing the float32 and float16 "
              "candidates", file=sys.stderr)
        candidate32 = presets.write_preset(run_dir, work / "float32", benchmark=dataset, data_dir=args.data_dir,
                                           holdout_dev=holdout)
        # the splits the preset records (the result file's hold-out, else the run's own record)
        recorded = json.loads((candidate32 / presets.METADATA_FILE).read_text(encoding="utf-8")).get("holdout_dev")
        benchmark = presets.benchmark_dataset(dataset, recorded, data_dir=args.data_dir)
        loaded32 = presets.load_preset(candidate32)
        differing = differing_weights(runs.load_run(run_dir).model, loaded32.model)
        if differing:
            raise ShipError(f"the float32 preset of {run_dir} does not hold the run's weights ({len(differing)} "
                            f"differ, the first {differing[0]})")
        fig32 = presets.measure(loaded32, benchmark)
        # loaded in the precision the run computed in, it gives the run's figures, but for bfloat16 rounding that
        # depends on the batches' shapes (a run trained in mixed_bfloat16 scores a little differently in float32,
        # a preset's default)
        precision = runs.read_config(run_dir / "config.json")["settings"]["training"].get("precision", "float32")
        as_trained = fig32 if precision == "float32" else presets.measure(
            presets.load_preset(candidate32, precision=precision), benchmark)
        run_check = presets.figure_differences(as_trained, {split: run_metrics[split] for split in ("dev", "test")})
        drift = presets.largest_figure_difference(as_trained, run_metrics, splits=("dev", "test")) or 0.0
        if drift > 1e-6 and precision == "float32":  # the same weights, the same computation: the splits,
            # the vocabulary or the features differ
            raise ShipError(f"the float32 preset of {run_dir}, loaded in {precision}, does not give the run's figures "
                            f"on {dataset} (largest difference {drift:.2e}): {run_check}")
        if drift > 1e-6:
            print(f"[ship] the float32 preset holds the run's weights; loaded in {precision} its figures differ from "
                  f"the run's by up to {drift:.2e} on {dataset}: {run_check}", file=sys.stderr)
        candidate16 = presets.write_preset(run_dir, work / "float16", float16=True, benchmark=dataset,
                                           data_dir=args.data_dir, holdout_dev=holdout)
        weights16 = json.loads((candidate16 / presets.METADATA_FILE).read_text(encoding="utf-8"))["weights"]
        if not weights16.get("figures"):
            raise ShipError(f"the float16 preset could not be scored: {weights16.get('not_measured')}")
        fig16 = weights16["figures"]
        # over dev and test: the same figure as metadata.json's max_abs_difference, which the tests hold to 0.002
        difference = presets.largest_figure_difference(fig16, fig32, splits=("dev", "test"))
        float16 = {"auto": difference <= args.tolerance, "always": True, "never": False}[args.float16]
        print(f"[ship] test {summary(fig32['test'])} (float32) against {summary(fig16['test'])} (float16): "
              f"largest difference {difference:.4f} -> {'float16' if float16 else 'float32'}", file=sys.stderr)
        notes = card_notes(command=command, out=args.out, plan=args.plan, row=args.row, label=label, entry=entry,
                           chosen=chosen, seeds=seeds, key=key, dataset=dataset,
                           run_command=chosen["run"]["provenance"]["command"], float16=float16,
                           fig32=fig32["test"], fig16=fig16["test"], difference=difference,
                           tolerance=args.tolerance)
        final = presets.write_preset(run_dir, work / "final", card_notes=notes, float16=float16, compress=True,
                                     benchmark=dataset,
                                     data_dir=args.data_dir, holdout_dev=holdout)
        metadata = json.loads((final / presets.METADATA_FILE).read_text(encoding="utf-8"))
        shipped_figures = presets.preset_figures(metadata)
        expected = fig16 if float16 else fig32
        if presets.largest_figure_difference(shipped_figures, expected, splits=("test",)) > 1e-6:
            raise ShipError("the preset written last does not give the figures of its candidate")
        weights_bytes, total = check_limits(final, into, target)
        sizes = {name: {"preset_bytes": folder_bytes(path),
                        "weights_bytes": (path / presets.WEIGHTS_FILE).stat().st_size}
                 for name, path in (("float32", candidate32), ("float16", candidate16))}
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        final.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "preset": f"{entry}/{dataset}", "folder": str(target), "command": command,
        "results": str(out), "row": args.row, "label": label, "chosen_by": f"dev {key}",
        "seeds": [{"seed": item["seed"], "file": str(item["file"]), "dev": item["run"]["dev"],
                   "test": item["run"]["test"]} for item in seeds],
        "chosen_seed": chosen["seed"], "run_dir": str(run_dir),
        "float32": {"figures": fig32, **sizes["float32"]},
        "float16": {"figures": fig16, "difference_from_float32": presets.figure_differences(fig16, fig32),
                    **sizes["float16"]},
        "largest_difference": difference, "tolerance": args.tolerance, "run_figure_drift": drift,
        "stored": "float16" if float16 else "float32",
        "preset_bytes": folder_bytes(target), "weights_bytes": weights_bytes, "shipped_total_bytes": total,
        "limits": ({"weights_bytes": MAX_WEIGHTS_BYTES, "shipped_bytes": MAX_SHIPPED_BYTES}
                   if in_package(into) else None),
        "provenance": provenance.collect(started, command=command),
    }


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the ablation's results folder (benchmarks/ablation.py --out)")
    parser.add_argument("--row", type=int, required=True, help="the row of the ablation plan to ship")
    parser.add_argument("--runs", default=None, help="the run folders (default OUT/runs)")
    parser.add_argument("--plan", default=None, help="the ablation plan (benchmarks/ablations/*.json) that made "
                                                     "OUT, named in the model card's rebuild command")
    parser.add_argument("--into", default=str(PACKAGE_PRESETS),
                        help="the presets' folder (default keras_match/presets, where the package's size limits "
                             "apply; another folder has none)")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE,
                        help="the largest dev or test figure change float16 may make (default 0.002)")
    parser.add_argument("--float16", choices=("auto", "always", "never"), default="auto",
                        help="auto: float16 when within --tolerance (both are always measured)")
    parser.add_argument("--replace", action="store_true", help="replace a preset shipped already")
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        report = ship(args)
    except (ShipError, FileNotFoundError, FileExistsError, ValueError) as error:
        print(f"ship_presets.py: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
