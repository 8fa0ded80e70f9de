"""Run an ablation: rows of settings x seeds through benchmarks/reproduce.py, resumable, one JSON file per result.

The rows come from a JSON file (`benchmarks/ablations/*.json`):

    {"model": "mcan_fm", "dataset": "trecqa-clean", "epochs": 5, "seeds": [1234, 1, 2],
     "rows": [{"label": "baseline", "set": {}}, {"label": "+ weighted casts", "set": {"pooled_casts": "weighted"}}]}

A plan-level `set` holds the settings every row shares (a row's own `set` overrides them key by key).

A row may name its own `model`, `dataset`, `train_split`, `holdout_dev`, `embeddings` or `init_preset` (a
comparison of zoo entries: one row per entry; a benchmark without a test split, as `reproduce.py --holdout-dev`;
other pretrained vectors, as `keras-match train --embeddings`; fine-tuning a trained preset, as `keras-match train
--init-preset`).
A `transfer` list of datasets (the plan's or a row's) also scores every run on their test splits, with BM25
beside it (reproduce.py --transfer).
Each (row, seed) trains once with `reproduce.py --set KEY=VALUE ... --label LABEL` and writes
`OUT/<row number>-<seed>.json` when it finishes; a result already written is not run again (unless it has no
provenance, `keras_match.artifacts.provenance`: a file from before results recorded it is run again and replaced), and an
interrupted run resumes from its last finished epoch (reproduce.py's run folders under `OUT/runs`). Rows run seed
by seed (every row's first seed, then every row's second seed, ...), so that a session that ends early leaves a
complete first-seed table. `--seeds` and `--rows` run a part of the plan. `--jobs 2` runs two (row, seed)
at once, each pinned to its own core: on this 2-core machine an mcan_fm epoch took 100 s on one pinned core, as
on two unpinned, so two jobs halve an ablation's time. At the end the summary of what finished is printed as JSON
(benchmarks/summarize.py: dev and test means and standard deviations per row, in the plan's order); `--table`
prints it as a markdown table instead, without running anything. Both refuse a result without provenance.

    KERAS_MATCH_DATA=../shared/data python benchmarks/ablation.py benchmarks/ablations/mcan_fm_trecqa.json \
        --out runs/ablation-mcan_fm --jobs 2
    python benchmarks/ablation.py benchmarks/ablations/mcan_fm_trecqa.json --out runs/ablation-mcan_fm --table
    python benchmarks/ablation.py benchmarks/ablations/mcan_fm_trecqa.json --out runs/ablation-mcan_fm --table \
        --split test wikiqa

Progress goes to stderr (one line per run started and finished); each run's own log to `OUT/logs/NN-sSEED.txt`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import queue
import subprocess
import sys
import time

from keras_match.metrics import figure_name

HERE = pathlib.Path(__file__).resolve().parent


def load_plan(path):
    """The ablation file as a dict, checked: `model`, `dataset`, `seeds`, `rows` (each with `label`, `set`), an
    optional plan-level `set`."""
    with open(path, encoding="utf-8") as f:
        try:
            plan = json.load(f)
        except ValueError as e:
            raise SystemExit(f"{path}: not JSON ({e})") from None
    for key in ("seeds", "rows"):
        if key not in plan:
            raise SystemExit(f"{path}: missing {key!r}")
    if not isinstance(plan.get("set", {}), dict):
        raise SystemExit(f"{path}: 'set' must be an object (the settings every row shares)")
    for i, row in enumerate(plan["rows"]):
        if not isinstance(row, dict) or "label" not in row or not isinstance(row.get("set", {}), dict):
            raise SystemExit(f"{path}: rows[{i}] needs a 'label' and a 'set' object")
        for key in ("model", "dataset"):
            if key not in row and key not in plan:
                raise SystemExit(f"{path}: missing {key!r} (for the plan or in rows[{i}])")
    return plan


def row_setting(plan, row, key):
    """The row's own `model` / `dataset` / `train_split` / `holdout_dev` / `embeddings` / `transfer` /
    `init_preset`, else the plan's."""
    return row.get(key, plan.get(key))


def row_settings(plan, row):
    """The settings a row trains with: the plan's `set`, overridden key by key by the row's own."""
    return {**plan.get("set", {}), **row.get("set", {})}


def command(plan, row, seed, out):
    args = [sys.executable, str(HERE / "reproduce.py"), row_setting(plan, row, "model"), "--dataset",
            row_setting(plan, row, "dataset"), "--seeds", str(seed), "--out", str(out / "runs"), "--label",
            row["label"]]
    if row_setting(plan, row, "train_split"):
        args += ["--train-split", row_setting(plan, row, "train_split")]
    if row_setting(plan, row, "holdout_dev"):
        args += ["--holdout-dev", str(row_setting(plan, row, "holdout_dev"))]
    if row_setting(plan, row, "embeddings"):
        args += ["--embeddings", row_setting(plan, row, "embeddings")]
    if row_setting(plan, row, "transfer"):
        args += ["--transfer", *row_setting(plan, row, "transfer")]
    if row_setting(plan, row, "init_preset"):
        args += ["--init-preset", row_setting(plan, row, "init_preset")]
    settings = row_settings(plan, row)
    epochs = settings.pop("epochs", plan.get("epochs"))
    if epochs is not None:
        args += ["--epochs", str(epochs)]
    for key, value in sorted(settings.items()):
        args += ["--set", f"{key}={json.dumps(value)}"]
    return args


def result_path(out, index, seed):
    return out / f"{index:02d}-s{seed}.json"


def finished(path):
    """Whether `path` holds a finished result with its provenance (a file written before results recorded where
    they came from is not: the plan runs it again)."""
    summarize = _summarize()
    try:
        summarize.read(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, summarize.ProvenanceError):
        return False
    return True


def partial_path(target, pid):
    """Where process `pid` writes a result before it is complete: its own name, so that another process that
    runs the same (row, seed) by mistake (and fails, the run folder being in use) never removes it."""
    return target.with_suffix(f".{pid}.partial")


def run(plan, out, seeds=None, rows=None, jobs=1):
    """Train every (row, seed) of the plan whose result is missing; `seeds` / `rows` (row numbers) limit the part
    run; `jobs` > 1 runs that many at once, each pinned to its own core (`taskset`), in the plan's order."""
    out.mkdir(parents=True, exist_ok=True)
    seeds = plan["seeds"] if seeds is None else seeds
    indices = range(len(plan["rows"])) if rows is None else rows
    for index in indices:
        if not 0 <= index < len(plan["rows"]):
            raise SystemExit(f"--rows: no row {index} (the plan has rows 0-{len(plan['rows']) - 1})")
    cores = sorted(os.sched_getaffinity(0))
    if not 1 <= jobs <= len(cores):
        raise SystemExit(f"--jobs: must be from 1 to the {len(cores)} cores this process may use, got {jobs}")
    order = [(seed, index) for seed in seeds for index in indices]
    todo = [(n, seed, index) for n, (seed, index) in enumerate(order, 1) if not finished(result_path(out, index, seed))]
    free = queue.Queue()
    for core in cores[:jobs]:
        free.put(core)

    def one(n, seed, index):
        core = free.get()
        try:
            _run_one(plan, out, index, seed, f"[{n}/{len(order)}]", ["taskset", "-c", str(core)] if jobs > 1 else [])
        finally:
            free.put(core)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for future in [pool.submit(one, *item) for item in todo]:
            future.result()


def _run_one(plan, out, index, seed, progress, prefix):
    """Train one (row, seed) and write its result file; a failed run leaves no result and is named."""
    row = plan["rows"][index]
    target = result_path(out, index, seed)
    log = out / "logs" / f"{target.stem}.txt"
    log.parent.mkdir(exist_ok=True)
    print(f"{progress} {row['label']} (seed {seed}) ...", file=sys.stderr, flush=True)
    start = time.time()
    partial = partial_path(target, os.getpid())
    with open(partial, "w", encoding="utf-8") as stdout, open(log, "a", encoding="utf-8") as stderr:
        code = subprocess.call(prefix + command(plan, row, seed, out), stdout=stdout, stderr=stderr)
    if code != 0:
        partial.unlink(missing_ok=True)
        print(f"{progress} {row['label']} (seed {seed}) failed (exit {code}); see {log}", file=sys.stderr,
              flush=True)
        return
    os.replace(partial, target)
    figures = json.loads(target.read_text())[row_setting(plan, row, "model")]["runs"][0]
    print(f"{progress} {row['label']} (seed {seed}): dev {_short(figures['dev'])}, test "
          f"{_short(figures.get('test') or {})}, {time.time() - start:.0f} s", file=sys.stderr, flush=True)


def _short(figures):
    return " ".join(f"{figure_name(k)} {v:.3f}" for k, v in figures.items() if isinstance(v, float))


def _summarize():
    sys.path.insert(0, str(HERE))
    import summarize

    return summarize


def result_paths(out):
    """The finished results in `out`, row by row in the plan's order (`NN-sSEED.json`)."""
    return sorted(str(p) for p in out.glob("*-s*.json"))


def table(out, splits=("dev", "test")):
    """The markdown table of the results in `out` (refuses a result without provenance: ProvenanceError)."""
    return _summarize().table(result_paths(out), splits=splits, sort=False)[0]


def summary(out, splits=("dev", "test")):
    """The JSON summary of the results in `out`, rows in the plan's order (summarize.summary)."""
    return _summarize().summary(result_paths(out), splits=splits, sort=False)[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("plan", help="the ablation JSON file")
    parser.add_argument("--out", required=True, help="folder for the results, the run folders and the log")
    parser.add_argument("--table", action="store_true",
                        help="print the markdown table of the finished results and stop (default: run what is "
                        "missing, then print their JSON summary)")
    parser.add_argument("--split", nargs="+", default=["dev", "test"],
                        help="the table's splits (default: dev test); a transfer dataset of the plan's, e.g. wikiqa, "
                        "adds its columns and BM25's row")
    parser.add_argument("--seeds", type=int, nargs="+", help="run only these seeds (default: the plan's)")
    parser.add_argument("--rows", type=int, nargs="+", help="run only these row numbers (default: every row)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at once, each pinned to its own core (default 1; a run uses one core about as "
                        "fast as two here)")
    args = parser.parse_args(argv)
    plan = load_plan(args.plan)
    out = pathlib.Path(args.out)
    if not args.table:
        run(plan, out, seeds=args.seeds, rows=args.rows, jobs=args.jobs)
    try:
        if args.table:
            print(table(out, splits=tuple(args.split)) or f"no finished result in {out} yet")
        else:
            print(json.dumps(summary(out, splits=tuple(args.split)), indent=2))
    except _summarize().ProvenanceError as error:
        raise SystemExit(str(error)) from None


if __name__ == "__main__":
    main()
