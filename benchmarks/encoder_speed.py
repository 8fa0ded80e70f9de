"""Issue 57's speed table: each transformer-input model beside its GloVe entry, served and trained.

For every row of `ROWS` this runs `benchmarks/export_latency.py` on the row's trained model (a shipped preset, or
the run folder of an ablation plan's row and seed) and writes its JSON, with the row added under `"row"`, to
`OUT/NN-<entry>.json` as soon as it is measured; a row whose file exists is skipped, so an interrupted
measurement resumes. The rows are measured one after the other: run it with nothing else on the machine.

    KERAS_MATCH_DATA=../shared/data KERAS_MATCH_ENCODERS=../shared/models python benchmarks/encoder_speed.py \\
        --out benchmarks/results/transformer_encoders_speed [--runs PLAN=DIR ...] [--rows 0 3]

A row with `"short_run": N` has no trained run folder on the machine that measured it (the SemEval-2016 and SICK
cross-encoders' and SICK's bi-encoder's were on none): its model is trained here, with the plan row's settings
but one epoch on the first N training questions (`benchmarks/reproduce.py --max-train-questions`), into
`--work` (default `runs/encoder_speed`), and measured from that run. Latency, parameters and preset size depend on
the architecture, the settings and what trains, not on the weights' values; the row file's `row.short_run` says
so, and the table marks the row.

A plan row's run folder is found under the `--out` its result file records (`benchmarks/results/<plan>/
NN-sSEED.json`, its `provenance.command`), or under the folders given as `--runs PLAN=DIR` (the `--out` given to
`ablation.py` for that plan, or its `runs/` folder; one plan may be given several, as when its rows ran in different
folders), the one whose settings are the row's. The table (`benchmarks/tables.py`, `transformer-encoders-speed`)
adds each row's training seconds per epoch from its training result files.
"""

import argparse
import json
import pathlib
import shlex
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"

ROWS = [
    # benchmark, label, entry; the model measured (a shipped preset, or a plan's row and seed); the training
    # result files whose epoch seconds the table shows (folder, row); for a top-2 row, those of the same model
    # with MiniLM's layers at their own rate (`backbone_learning_rate`: the same layers train, so the same
    # parameters and serving cost)
    {"benchmark": "trecqa-clean", "label": "GloVe 6B 50d (frozen)", "entry": "mcan_fm",
     "preset": "mcan_fm/trecqa-clean", "train": ["mcan_fm_main_job", 1]},
    {"benchmark": "trecqa-clean", "label": "GloVe 6B 50d (frozen)", "entry": "iwan_ncarnn",
     "preset": "iwan_ncarnn/trecqa-clean", "train": ["iwan_trecqa", 1]},
    {"benchmark": "trecqa-clean", "label": "MiniLM top 2 layers fine-tuned", "entry": "mcan_fm_minilm",
     "plan": "transformer_encoders_trecqa_clean", "row": 1, "seed": 1234,
     "train": ["transformer_encoders_trecqa_clean", 1], "train_backbone_rate": ["transformer_encoders_trecqa_clean", 6]},
    {"benchmark": "trecqa-clean", "label": "MiniLM top 2 layers fine-tuned", "entry": "iwan_ncarnn_minilm",
     "plan": "transformer_encoders_trecqa_clean", "row": 3, "seed": 1234,
     "train": ["transformer_encoders_trecqa_clean", 3], "train_backbone_rate": ["transformer_encoders_trecqa_clean", 7]},
    {"benchmark": "trecqa-clean", "label": "cross-encoder, every layer fine-tuned", "entry": "cross_encoder_minilm",
     "plan": "transformer_encoders_trecqa_clean", "row": 4, "seed": 1234,
     "train": ["transformer_encoders_trecqa_clean", 4]},
    {"benchmark": "trecqa-clean", "label": "bi-encoder, every layer fine-tuned", "entry": "bi_encoder_minilm",
     "plan": "transformer_encoders_trecqa_clean", "row": 5, "seed": 1234,
     "train": ["transformer_encoders_trecqa_clean", 5]},
    {"benchmark": "wikiqa-answered", "label": "GloVe 6B 50d (frozen)", "entry": "compare_aggregate_mult",
     "preset": "compare_aggregate_mult/wikiqa-answered", "train": ["compare_aggregate_wikiqa", 0]},
    {"benchmark": "wikiqa-answered", "label": "MiniLM top 2 layers fine-tuned",
     "entry": "compare_aggregate_mult_minilm",
     "preset": "compare_aggregate_mult_minilm/wikiqa-answered", "train": ["transformer_encoders_wikiqa", 1]},
    {"benchmark": "trecqa-raw", "label": "GloVe 6B 50d (frozen)", "entry": "ctrn",
     "preset": "ctrn/trecqa-raw", "train": ["ctrn_trecqa_raw", 2]},
    {"benchmark": "trecqa-raw", "label": "MiniLM top 2 layers fine-tuned", "entry": "ctrn_minilm",
     "plan": "transformer_encoders_trecqa_raw", "row": 1, "seed": 1234,
     "train": ["transformer_encoders_trecqa_raw", 1], "train_backbone_rate": ["transformer_encoders_trecqa_raw", 4]},
    # SemEval-2016 and SICK: seed 1's run folders where seed 1234's are not on the machine that measured them;
    # the cross-encoders' run folders of these two plans (and SICK's bi-encoder's) were on none: those rows train
    # a short run with the row's settings (`short_run`: the first N training questions, one epoch)
    {"benchmark": "semeval2016", "label": "GloVe 6B 50d (frozen)", "entry": "ctrn_semeval",
     "preset": "ctrn_semeval/semeval2016", "train": ["semeval2016", 1]},
    {"benchmark": "semeval2016", "label": "MiniLM top 2 layers fine-tuned", "entry": "ctrn_semeval",
     "plan": "transformer_encoders_semeval2016", "row": 1, "seed": 1,
     "train": ["transformer_encoders_semeval2016", 1],
     "train_backbone_rate": ["transformer_encoders_semeval2016", 4]},
    {"benchmark": "semeval2016", "label": "bi-encoder, every layer fine-tuned", "entry": "bi_encoder_minilm",
     "plan": "transformer_encoders_semeval2016", "row": 3, "seed": 1,
     "train": ["transformer_encoders_semeval2016", 3]},
    {"benchmark": "sick", "label": "GloVe 6B 50d (frozen)", "entry": "compare_aggregate_submult_nn_sick",
     "preset": "compare_aggregate_submult_nn_sick/sick", "train": ["compare_aggregate_sick", 0]},
    {"benchmark": "sick", "label": "MiniLM frozen (shipped)", "entry": "compare_aggregate_submult_nn_sick_minilm",
     "preset": "compare_aggregate_submult_nn_sick_minilm/sick", "train": ["transformer_encoders_sick", 5]},
    {"benchmark": "sick", "label": "MiniLM top 2 layers fine-tuned", "entry": "compare_aggregate_submult_nn_sick",
     "plan": "transformer_encoders_sick", "row": 1, "seed": 1, "train": ["transformer_encoders_sick", 1]},
    {"benchmark": "sick", "label": "cross-encoder, every layer fine-tuned", "entry": "cross_encoder_minilm",
     "plan": "transformer_encoders_sick", "row": 2, "seed": 1234, "short_run": 200,
     "train": ["transformer_encoders_sick", 2]},
    {"benchmark": "sick", "label": "bi-encoder (SBERT classifier), every layer fine-tuned",
     "entry": "bi_encoder_minilm", "plan": "transformer_encoders_sick", "row": 3, "seed": 1234, "short_run": 200,
     "train": ["transformer_encoders_sick", 3]},
    {"benchmark": "semeval2016", "label": "cross-encoder, every layer fine-tuned", "entry": "cross_encoder_minilm",
     "plan": "transformer_encoders_semeval2016", "row": 2, "seed": 1234, "short_run": 20,
     "train": ["transformer_encoders_semeval2016", 2]},
]
"""The rows of the speed table; a row's file is `NN-<entry>.json` (NN its index here, so a new row is added at the
end); the table shows them benchmark by benchmark, in the order each benchmark first appears here."""


def output_name(index, row):
    return f"{index:02d}-{row['entry']}.json"


def recorded_out(plan, row, seed):
    """The `--out` of the reproduce.py command that wrote a plan row's result file (its run folders' parent)."""
    path = RESULTS / plan / f"{row:02d}-s{seed}.json"
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"encoder_speed.py: {path}: {error} (run the plan's row first)") from None
    (entry,) = result.values()  # {entry: its figures, runs and provenance}
    command = shlex.split(entry["provenance"]["command"])
    return pathlib.Path(command[command.index("--out") + 1])


def run_folder(row, roots):
    """The run folder of a plan row's seed: under one of the folders `roots[plan]` (or their `runs/`), else under
    the `--out` its result file records."""
    plan, seed = row["plan"], row["seed"]
    bases = ([base for root in roots[plan] for base in (root, root / "runs")] if plan in roots
             else [recorded_out(plan, row["row"], seed)])
    spec = json.loads((HERE / "ablations" / f"{plan}.json").read_text(encoding="utf-8"))
    wanted = dict(spec.get("set", {}), **spec["rows"][row["row"]].get("set", {}))
    found = [path for base in bases for path in sorted(base.glob(f"{row['entry']}-{row['benchmark']}-*-s{seed}"))
             if (path / "metrics.json").is_file() and _settings_match(path, wanted)]
    if len(found) != 1:
        where = ", ".join(str(base) for base in bases)
        raise SystemExit(f"encoder_speed.py: row {row['entry']} ({plan} row {row['row']}, seed {seed}): "
                         f"{len(found)} finished run folders match under {where}; give --runs {plan}=DIR")
    return found[0]


def short_run_folder(row, work):
    """Train a `short_run` row's model (the plan row's settings, one epoch on the first `row["short_run"]`
    training questions; `benchmarks/reproduce.py`) into `work/runs`, unless it is there; returns its run folder."""
    if str(HERE) not in sys.path:  # benchmarks/ablation.py, also when this file is imported from elsewhere
        sys.path.insert(0, str(HERE))
    import ablation

    plan = ablation.load_plan(HERE / "ablations" / f"{row['plan']}.json")
    spec = dict(plan["rows"][row["row"]])
    spec["set"] = dict(spec.get("set", {}), epochs=1)
    command = ablation.command(plan, spec, row["seed"], work) + ["--max-train-questions", str(row["short_run"])]
    wanted = ablation.row_settings(plan, spec)
    pattern = f"{row['entry']}-{row['benchmark']}-*-first{row['short_run']}*-s{row['seed']}"

    def found():
        return [path for path in sorted((work / "runs").glob(pattern))
                if (path / "metrics.json").is_file() and _settings_match(path, wanted)]

    if not found():
        print(f"    a short run: {shlex.join(command[1:])}", file=sys.stderr, flush=True)
        done = subprocess.run(command, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f"encoder_speed.py: row {row['entry']} ({row['plan']} row {row['row']}): the short run "
                             f"exited with {done.returncode}")
    runs = found()
    if len(runs) != 1:
        raise SystemExit(f"encoder_speed.py: row {row['entry']}: {len(runs)} short runs match {pattern} under "
                         f"{work / 'runs'}")
    return runs[0]


def _settings_match(run_dir, wanted):
    """Whether a run folder's settings hold every setting of `wanted` (a plan's and its row's; `epochs` aside: a
    cap, not what the run trained with)."""
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))["settings"]
    have = {key: value for section in config.values() if isinstance(section, dict) for key, value in section.items()}
    return all(key == "epochs" or have.get(key) == value for key, value in wanted.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder of the row files")
    parser.add_argument("--runs", nargs="*", default=[], metavar="PLAN=DIR",
                        help="where a plan's run folders are (a plan may be given more than once)")
    parser.add_argument("--rows", nargs="*", type=int, help="only these rows (default: every row)")
    parser.add_argument("--work", default="runs/encoder_speed",
                        help="where the short-run rows' runs are trained (default runs/encoder_speed)")
    parser.add_argument("--queries", type=int, default=100, help="timed 1 x 30 ranking calls per path")
    parser.add_argument("--batches", type=int, default=3, help="timed batch-256 calls per path")
    args = parser.parse_args(argv)
    roots = {}
    for item in args.runs:
        plan, sep, folder = item.partition("=")
        if not sep or not folder:
            parser.error(f"--runs {item!r}: expected PLAN=DIR")
        roots.setdefault(plan, []).append(pathlib.Path(folder))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for index, row in enumerate(ROWS):
        if args.rows is not None and index not in args.rows:
            continue
        target = out / output_name(index, row)
        if target.exists():
            print(f"[{index}] {row['entry']}: {target} exists, skipped", file=sys.stderr, flush=True)
            continue
        if "preset" in row:
            source = ["--preset", row["preset"]]
        elif "short_run" in row:
            source = ["--run-dir", str(short_run_folder(row, pathlib.Path(args.work)))]
        else:
            source = ["--run-dir", str(run_folder(row, roots))]
        command = [sys.executable, str(HERE / "export_latency.py"), *source, "--queries", str(args.queries),
                   "--batches", str(args.batches)]
        print(f"[{index}] {row['entry']} ({row['label']}): {' '.join(source)}", file=sys.stderr, flush=True)
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise SystemExit(f"encoder_speed.py: row {index} ({row['entry']}): export_latency.py exited with "
                             f"{done.returncode}; the rows before it are written")
        result = json.loads(done.stdout)
        result["row"] = dict(row, index=index)
        tmp = target.with_suffix(".partial")
        tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        tmp.replace(target)


if __name__ == "__main__":
    main()
