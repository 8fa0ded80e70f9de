"""CARNN voting (Tran et al. 2018, Table 1, "CARNN voting"): the majority choice of the three CARNN dialog entries.

Given the results folder of an ablation whose rows are the runs to vote over (benchmarks/ablation.py `--out OUT`,
e.g. `benchmarks/ablations/carnn_dialog_task6.json`: nCARNN, iCARNN and sCARNN on dialog bAbI task 6), this takes,
for each seed that every row has finished, the rows' run folders of that seed (under `--runs`, default
`OUT/runs`; the folder whose `metrics.json` holds the result file's figures) and scores their majority vote
(`keras_match.models.carnn_dialog.vote`; ties go to the first row's choice, the paper does not say) on each split;
`--rows` names the rows that vote where a plan holds others (`carnn_dialog_task6_width.json`: rows 1 2 3).
Each seed's result is written as it finishes to `OUT/voting/sSEED.json`, with its provenance; a seed whose file
exists is not scored again (a file of other rows is named, not reused). Prints the results as JSON.

    KERAS_MATCH_DATA=../shared/data python benchmarks/ablation.py benchmarks/ablations/carnn_dialog_task6.json \\
        --out benchmarks/results/carnn_dialog_task6
    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_vote.py benchmarks/results/carnn_dialog_task6 \\
        --plan benchmarks/ablations/carnn_dialog_task6.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import summarize  # noqa: E402  (benchmarks/summarize.py: result files with their provenance)
from ship_presets import ShipError, find_run_dir  # noqa: E402  (the run folder of a result file)

VOTING = "voting"


class VoteError(Exception):
    """Nothing was scored for a seed: the message says why."""


def voting_path(out: pathlib.Path, seed) -> pathlib.Path:
    return out / VOTING / f"s{seed}.json"


def seed_runs(plan: dict, out: pathlib.Path, runs_dir: pathlib.Path, seed, rows=None) -> list[dict]:
    """`[{"row", "label", "entry", "dataset", "file", "run_dir", "run"}]` for the plan's rows at `seed`: the row
    numbers `rows` in that order (the first breaks ties), or every row (None).

    Raises:
        VoteError: a row number the plan does not have, a row without a finished result at this seed, or
            without a single run folder holding its figures.
    """
    found = []
    rows = range(len(plan["rows"])) if rows is None else rows
    for index in rows:
        if not 0 <= index < len(plan["rows"]):
            raise VoteError(f"row {index}: the plan has rows 0-{len(plan['rows']) - 1}")
        row = plan["rows"][index]
        path = out / f"{index:02d}-s{seed}.json"
        if not path.is_file():
            raise VoteError(f"row {index} ({row['label']}) has no result at seed {seed} ({path})")
        results = summarize.read(path)
        entry = row.get("model", plan.get("model"))
        dataset = row.get("dataset", plan.get("dataset"))
        if entry not in results:
            raise VoteError(f"{path} holds {sorted(results)}, not {entry}")
        run = results[entry]["runs"][0]
        try:
            run_dir = find_run_dir(runs_dir, entry, dataset, run)
        except ShipError as error:
            raise VoteError(str(error)) from None
        found.append({"row": index, "label": row["label"], "entry": entry, "dataset": dataset, "file": str(path),
                      "run_dir": str(run_dir), "run": run})
    datasets = {item["dataset"] for item in found}
    if len(datasets) != 1:
        raise VoteError(f"the rows are on {sorted(datasets)}: a vote needs one candidate set")
    return found


def vote_seed(plan: dict, out: pathlib.Path, runs_dir: pathlib.Path, seed, splits, data_dir=None,
              dataset=None, rows=None) -> dict:
    """Score the vote of the plan's rows at `seed` on `splits` and write `OUT/voting/sSEED.json`.

    `dataset`: the loaded dataset the runs were scored on (default: the rows' dataset by name from `data_dir`).
    `rows`: the row numbers that vote, the first breaking ties (default: every row, in the plan's order).

    Raises:
        VoteError: a row is missing, or a run folder does not score its split as its result file says.
    """
    from keras_match import training
    from keras_match.artifacts import provenance
    from keras_match.datasets.catalog import load_by_name
    from keras_match.models.carnn_dialog import vote

    started = time.time()
    members = seed_runs(plan, out, runs_dir, seed, rows)
    dataset_name = members[0]["dataset"]
    if dataset is None:
        dataset = load_by_name(dataset_name, data_dir=data_dir)
    result = {"dataset": dataset_name, "seed": seed, "members": [
        {key: item[key] for key in ("row", "label", "entry", "file", "run_dir")} for item in members], "splits": {}}
    for split in splits:
        print(f"[vote] seed {seed}: {len(members)} runs on {dataset_name} {split}", file=sys.stderr, flush=True)
        scored = vote([item["run_dir"] for item in members], dataset, split)
        for item, figures in zip(members, scored["runs"]):  # the vote re-scores each run: it must be the run
            recorded = (item["run"].get(split) or {}).get("per_response_accuracy")
            if recorded is not None and abs(recorded - figures["per_response_accuracy"]) > 1e-6:
                raise VoteError(f"{item['run_dir']} scores {figures['per_response_accuracy']:.6f} on {split}, its "
                                f"result file {item['file']} says {recorded:.6f}")
        result["splits"][split] = scored
    result["provenance"] = provenance.collect(started, seed=seed, dataset=dataset_name,
                                              data_files=training.data_files(dataset))
    target = voting_path(out, seed)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    partial.replace(target)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path, help="the ablation's results folder (benchmarks/ablation.py --out)")
    parser.add_argument("--plan", type=pathlib.Path, required=True, help="the ablation plan that made OUT")
    parser.add_argument("--runs", type=pathlib.Path, default=None, help="the run folders (default OUT/runs)")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="default: the plan's")
    parser.add_argument("--splits", nargs="+", default=["dev", "test"])
    parser.add_argument("--rows", nargs="+", type=int, default=None,
                        help="the plan's row numbers that vote, the first breaking ties (default: every row)")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    args = parser.parse_args(argv)
    plan = json.loads(args.plan.read_text(encoding="utf-8"))
    runs_dir = args.runs or args.out / "runs"
    wanted = list(range(len(plan["rows"]))) if args.rows is None else args.rows
    report, missing = {}, {}
    for seed in args.seeds or plan["seeds"]:
        target = voting_path(args.out, seed)
        try:
            if target.is_file():
                done = json.loads(target.read_text(encoding="utf-8"))
                voted = [member["row"] for member in done["members"]]
                if voted != wanted:
                    raise VoteError(f"{target} is the vote of rows {voted}, not of rows {wanted}: move it away to "
                                    "vote again")
                report[str(seed)] = done
                continue
            report[str(seed)] = vote_seed(plan, args.out, runs_dir, seed, args.splits, data_dir=args.data_dir,
                                          rows=wanted)
        except VoteError as error:
            missing[str(seed)] = str(error)
            print(f"[vote] seed {seed} not scored: {error}", file=sys.stderr, flush=True)
    print(json.dumps({"voted": {seed: {split: values["voting"] for split, values in item["splits"].items()}
                                for seed, item in report.items()}, "not_scored": missing}, indent=1))
    return 0 if report else 1


if __name__ == "__main__":
    sys.exit(main())
