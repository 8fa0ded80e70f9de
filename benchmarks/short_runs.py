"""Short real-data runs of every model family, for comparing the code before and after a change: prints JSON.

Each run trains a small zoo model for one or two epochs on the first questions of a real benchmark through the
`keras-match train` command, exports it as a SavedModel and records its dev and test figures (full precision),
the exported signatures (names, inputs, outputs) and the scores the SavedModel gives a few raw pairs. Two
checkouts that give the same file agree on everything a user sees of these runs. By hand, never in the tests
(about 10 minutes on 2 cores):

    KERAS_MATCH_DATA=../shared/data python benchmarks/short_runs.py --out runs/short --json before.json
    ... change the code ...
    python benchmarks/short_runs.py --out runs/short-after --json after.json
    python benchmarks/short_runs.py --compare before.json after.json

`--only NAME` runs some of the runs (see `RUNS`); a run whose folder holds a finished run is read, not retrained.
The JSON (`{"runs": [...], "provenance": {...}}`) carries its provenance (`keras_match.artifacts.provenance`: the command,
the code and its commit, the versions, the machine, the start and end times, the seed, `$KERAS_MATCH_DATA` and
`$KERAS_MATCH_EMBEDDINGS`); each run's own `metrics.json` has the data files and vectors it read. `--compare`
compares the figures only, so files from before the provenance (with `commit` and `versions` keys) still compare.
"""

import argparse
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SMALL_MCAN = ["--set", "lstm_units=16", "--set", "highway_units=8", "--set", "fm_factors=4"]
RUNS = {
    "mcan_fm-trecqa-clean": ["mcan_fm", "--dataset", "trecqa-clean", "--max-train-questions", "80", "--epochs", "2",
                             *SMALL_MCAN],
    "mcan_fm-pairwise-score": ["mcan_fm", "--dataset", "trecqa-clean", "--max-train-questions", "60", "--epochs",
                               "2", "--set", "loss=pairwise_hinge", "--set", "head=score", *SMALL_MCAN],
    "mcan_sm-sick": ["mcan_sm", "--dataset", "sick", "--max-train-questions", "600", "--epochs", "1", *SMALL_MCAN],
    "ctrn-trecqa-raw": ["ctrn", "--dataset", "trecqa-raw", "--train-split", "train", "--max-train-questions", "60",
                        "--epochs", "2", "--set", "filters=32", "--set", "dense_units=16"],
    "qrnn-bm25-wikiqa": ["qrnn_wikiqa", "--dataset", "wikiqa", "--max-train-questions", "120", "--epochs", "1",
                         "--set", "filters=32", "--set", "bm25_feature=true"],
    "compare_aggregate_mult-wikiqa": ["compare_aggregate_mult", "--dataset", "wikiqa", "--max-train-questions",
                                      "150", "--epochs", "2", "--set", "units=24"],
    "compare_aggregate_submult_nn_sick": ["compare_aggregate_submult_nn_sick", "--dataset", "sick",
                                          "--max-train-questions", "600", "--epochs", "1", "--set", "units=16"],
}
PAIRS = {"question": ["who wrote hamlet ?", "when was the teapot dome scandal ?", ""],
         "answer": ["shakespeare wrote hamlet .", "the scandal broke in 1923 .", "a man plays a guitar ."]}


def signature_table(version_dir):
    """`{signature: {"inputs": {name: [dtype, shape]}, "outputs": {...}}}` of a SavedModel, and the scores of
    `serving_default` for `PAIRS`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the graph's tokenizer ops)

    loaded = tf.saved_model.load(str(version_dir))
    table = {}
    for name, function in loaded.signatures.items():
        _, inputs = function.structured_input_signature
        table[name] = {
            "inputs": {k: [v.dtype.name, v.shape.as_list() if v.shape.rank is not None else None]
                       for k, v in sorted(inputs.items())},
            "outputs": {k: [v.dtype.name, v.shape.as_list() if v.shape.rank is not None else None]
                        for k, v in sorted(function.structured_outputs.items())},
        }
    outputs = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in PAIRS.items()})
    scores = {k: v.numpy().tolist() for k, v in outputs.items() if v.dtype != tf.string}
    labels = {k: [x.decode() for x in v.numpy().tolist()] for k, v in outputs.items() if v.dtype == tf.string}
    return table, {**scores, **labels}


def run_one(name, out, seed):
    from keras_match import cli

    run_dir = pathlib.Path(out) / name
    start = time.time()
    if not (run_dir / "metrics.json").exists():
        status = cli.main(["train", *RUNS[name], "--run-dir", str(run_dir), "--seed", str(seed)])
        if status != 0:
            return {"name": name, "error": f"keras-match train exited with {status}"}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    export_dir = run_dir / "export"
    version = export_dir / "1"
    if not version.exists():
        assert cli.main(["export", str(run_dir), "--to", str(export_dir), "--version", "1", "--no-warmup"]) == 0
    table, served = signature_table(version)
    keep = ("map", "mrr", "p@1", "accuracy", "macro_f1", "num_questions", "num_pairs")
    return {
        "name": name,
        "command": ["keras-match", "train", *RUNS[name], "--seed", str(seed)],
        "dev": {k: v for k, v in metrics["dev"].items() if k in keep},
        "test": {k: v for k, v in metrics.get("test", {}).items() if k in keep},
        "best_epoch": metrics["best_epoch"],
        "history": metrics["history"],
        "signatures": table,
        "served": served,
        "seconds": round(time.time() - start, 1),
    }


def compare(before, after):
    """The differences between two result files, one line each (none: identical figures and signatures)."""
    old = {r["name"]: r for r in json.loads(pathlib.Path(before).read_text())["runs"]}
    new = {r["name"]: r for r in json.loads(pathlib.Path(after).read_text())["runs"]}
    lines = []
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            lines.append(f"{name}: only in {'after' if name in new else 'before'}")
            continue
        for key in ("dev", "test", "best_epoch", "history", "signatures", "served"):
            if old[name].get(key) != new[name].get(key):
                lines.append(f"{name}: {key} differs: {json.dumps(old[name].get(key))} -> "
                             f"{json.dumps(new[name].get(key))}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/short", help="folder for the run directories")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--only", nargs="+", choices=sorted(RUNS), default=None)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                        help="print the differences of two result files (exit status 1 if any)")
    args = parser.parse_args(argv)
    if args.compare:
        lines = compare(*args.compare)
        print("\n".join(lines) if lines else "identical: figures, epoch histories, signatures and served scores")
        return 1 if lines else 0
    from keras_match.artifacts import provenance

    # this process's command, taken now: each run's `keras-match train` (cli.main) sets the command of its own run
    command = provenance.command_line(sys.argv)
    started = time.time()
    results = {"runs": []}
    for name in args.only or RUNS:
        results["runs"].append(run_one(name, args.out, args.seed))
        results["provenance"] = provenance.collect(started, command, seed=args.seed,
                                                   data_dir=os.environ.get("KERAS_MATCH_DATA"),
                                                   embeddings=os.environ.get("KERAS_MATCH_EMBEDDINGS"))
        if args.json:  # each run written as it finishes
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
