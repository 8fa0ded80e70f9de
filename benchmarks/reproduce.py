"""Train zoo models on a benchmark over several seeds and print the test figures as JSON.

Runs by hand (minutes to hours on a CPU), never in the test suite. Example:

    KERAS_MATCH_DATA=../shared/data python benchmarks/reproduce.py mcan_fm --dataset trecqa-clean \
        --seeds 1 2 3 --epochs 6 --out runs/reproduce

prints one JSON object: per-seed dev/test MAP, MRR, P@1, best epoch and wall time, their means and standard
deviations over seeds (on 68 TrecQA test questions a 0.01-0.02 MAP difference between single runs is noise,
so compare means), and the paper's reported figures from the zoo preset.

A benchmark without a test split (SemEval-2016 3A here: train and dev only) would have its model chosen on the
split it is scored on. `--holdout-dev 0.2` instead chooses the model on the last 20% of the training questions
(trained on the rest) and scores the benchmark's dev split as the test split:

    python benchmarks/reproduce.py ctrn_semeval --dataset semeval2016 --holdout-dev 0.2

`--transfer wikiqa` also scores every run, as trained, on other benchmarks' test splits (no training there; each
benchmark's own rule for questions without a correct answer) and records BM25's figures on them and on the
dataset's own test split (benchmarks/transfer.py's reference), so that the JSON alone holds a transfer table:

    python benchmarks/reproduce.py mcan_fm --dataset trecqa-clean --seeds 1 --transfer wikiqa
    python benchmarks/summarize.py results.json --split test wikiqa

`DATASET:SPLIT` scores another split of a transfer dataset than its test split; SNLI, whose training split is not
in the data folder, is scored on both of its splits after training on SICK (the columns `snli:dev` and `snli`):

    python benchmarks/reproduce.py compare_aggregate_mult_sick --dataset sick --seeds 1 --transfer snli:dev snli

`--max-train-questions N` trains on the first N training questions only (a run whose figures are not the
benchmark's, for measuring what does not depend on the weights: `benchmarks/encoder_speed.py`'s short-run rows);
its run folder's name has `-firstN` after the training split's (`mcan_fm-trecqa-clean-default-first20-...-s1234`).

`--config best.json` retrains the best configuration of a `keras-match tune` search over seeds, as `keras-match
train --config` does (`--epochs` and `--set` override it; a search run with `--epochs 5` retrains with the preset's
length when `--epochs` names it):

    python benchmarks/reproduce.py mcan_fm --config tuning-runs/mcan_fm/best.json --epochs 15 --seeds 1234 1 2
"""

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # benchmarks/transfer.py, also when imported


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="+", help="zoo entries")
    parser.add_argument("--dataset", default="trecqa-clean")
    parser.add_argument("--train-split", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234])
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--out", default="runs/reproduce", help="folder for the run directories")
    parser.add_argument("--set", action="append", metavar="KEY=JSON", default=[])
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="settings from a best.json of `keras-match tune` (--epochs and --set override them)")
    parser.add_argument("--holdout-dev", type=float, default=None, metavar="FRACTION",
                        help="choose the model on the last FRACTION of the training questions and score the "
                        "dataset's dev split as test (for benchmarks without a test split)")
    parser.add_argument("--embeddings", default="default",
                        help="the pretrained vectors, as `keras-match train --embeddings` (default: a run's default)")
    parser.add_argument("--transfer", nargs="+", default=[], metavar="DATASET",
                        help="also score each run on these datasets' test splits (transfer, no training there); "
                        "DATASET:SPLIT scores another split, e.g. snli:dev")
    parser.add_argument("--init-preset", default=None, metavar="PRESET",
                        help="fine-tune this trained preset (as `keras-match train --init-preset`) instead of "
                        "training from random weights")
    parser.add_argument("--max-train-questions", type=int, default=None, metavar="N",
                        help="train on the first N training questions (pairs, for classification) only, as "
                        "`keras-match train --max-train-questions`; the run folder's name has -firstN after the "
                        "split's")
    parser.add_argument("--label", default=None,
                        help="a name for these settings in the results table (benchmarks/summarize.py)")
    args = parser.parse_args(argv)
    if args.max_train_questions is not None and args.max_train_questions < 1:
        parser.error(f"--max-train-questions must be at least 1, got {args.max_train_questions}")

    from keras_match import tasks, zoo
    from keras_match.artifacts import provenance
    from keras_match.datasets.catalog import load_by_name
    from keras_match.training.trainer import train

    started = time.time()

    try:
        overrides, epochs = settings(args)
    except ValueError as error:
        raise SystemExit(f"reproduce.py: {error}") from None
    dataset = load_by_name(args.dataset, train_split=args.train_split)
    if args.holdout_dev:
        dataset = holdout_dev(dataset, args.holdout_dev)
    tag = f"-holdout{args.holdout_dev:g}" if args.holdout_dev else ""
    if args.max_train_questions is not None:
        tag += f"-first{args.max_train_questions}"
    figures = tasks.task_for(dataset).figures
    transfer_sets = transfer_splits(args.transfer)
    # other vectors give another run folder (and another row in the table)
    tagged = overrides if args.embeddings == "default" else dict(overrides, embeddings=args.embeddings)
    if args.init_preset:  # so does a preset to start from
        tagged = dict(tagged, init=args.init_preset)
    results = {}
    for name in args.names:
        runs = []
        for seed in args.seeds:
            run_dir = pathlib.Path(args.out) / (f"{name}-{args.dataset}-{args.train_split or 'default'}{tag}"
                                                f"{_settings_tag(tagged, epochs)}-s{seed}")
            metrics_file = run_dir / "metrics.json"
            if metrics_file.exists():  # finished earlier: reuse rather than retrain
                report = json.loads(metrics_file.read_text())
            else:
                with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the JSON
                    report = train(name, dataset, run_dir=run_dir, epochs=epochs, seed=seed, verbose=2,
                                   embeddings_path=None if args.embeddings == "none" else args.embeddings,
                                   init_preset=args.init_preset, max_train_questions=args.max_train_questions,
                                   **overrides)
            runs.append(
                {
                    "seed": seed,
                    "best_epoch": report["best_epoch"],
                    "epochs_run": report["epochs_run"],
                    "wall_time_s": report["wall_time_s"],
                    "epoch_seconds": report.get("epoch_seconds"),
                    "loss_mode": report.get("loss_mode", "pointwise"),
                    "train_pairs_per_s": report.get("train_pairs_per_s"),
                    "dev": {k: report["dev"][k] for k in figures},
                    "test": {k: report["test"][k] for k in figures} if "test" in report else None,
                    "provenance": report.get("provenance"),  # the run's own (None for a run from before it)
                }
            )
            if transfer_sets:
                runs[-1]["transfer"] = transfer_figures(run_dir, transfer_sets)
        speeds = [r["train_pairs_per_s"] for r in runs if r["train_pairs_per_s"]]
        summary = {"train_pairs_per_s": round(statistics.mean(speeds), 1) if speeds else None}
        for split in ("dev", "test"):
            values = [r[split] for r in runs if r[split]]
            if values:
                summary[split] = {
                    k: {
                        "mean": round(statistics.mean(v[k] for v in values), 4),
                        "std": round(statistics.stdev(v[k] for v in values), 4) if len(values) > 1 else 0.0,
                    }
                    for k in figures
                }
        results[name] = {
            "dataset": args.dataset,
            "train_split": args.train_split,
            "holdout_dev": args.holdout_dev,
            "max_train_questions": args.max_train_questions,
            "counts": {k: v.counts() for k, v in dataset.splits.items()},
            "overrides": overrides,
            "embeddings": args.embeddings,
            "init_preset": args.init_preset,
            "label": args.label,
            "runs": runs,
            "summary": summary,
            "reported": zoo.describe(name).get("reported"),
            "provenance": provenance.collect(started),
        }
        if transfer_sets:
            results[name]["bm25"] = bm25_references(dataset, transfer_sets)
    json.dump(results, sys.stdout, indent=2)
    print()


def settings(args):
    """`(overrides, epochs)` of the command line, by `keras-match train`'s rule (`cli._settings`): a `--config`
    file's settings, then `--epochs`, then `--set`, each overriding the one before; `epochs` is None for the
    preset's.

    Raises:
        SystemExit: `--config` with more than one zoo entry.
        ValueError: a malformed `--set`, `--epochs` and `--set epochs=...` both given, or a `--config` file that
            is not a best configuration of this entry.
    """
    from keras_match import cli

    if args.config and len(args.names) != 1:
        raise SystemExit("--config: give one zoo entry (a best.json configures one)")
    overrides = {}
    for name in args.names:
        one = argparse.Namespace(name=name, config=args.config, set=args.set, epochs=args.epochs, batch_size=None)
        overrides.update(cli.command_settings(one))
    return overrides, overrides.pop("epochs", None)


def transfer_splits(names):
    """{name: (split, the benchmark's no-positive rule, None for a classification set)} of the transfer datasets:
    `wikiqa` is WikiQA's test split, `snli:dev` SNLI's dev split (the name stays the figures' key)."""
    from keras_match import tasks
    from keras_match.datasets.catalog import load_by_name

    splits = {}
    for name in names:
        dataset_name, _, split = name.partition(":")
        split = split or "test"
        dataset = load_by_name(dataset_name)
        if split not in dataset:
            raise SystemExit(f"--transfer {name}: the dataset {dataset_name!r} has no {split!r} split "
                             f"(it has {', '.join(sorted(dataset.splits))})")
        task = tasks.task_for(dataset)
        splits[name] = (dataset[split], task.no_positive if isinstance(task, tasks.RankingTask) else None)
    return splits


def transfer_figures(run_dir, splits):
    """The finished run's figures on each transfer split, as it was trained (nothing refitted): MAP / MRR / P@1
    for a ranking set, accuracy / macro F1 for a classification set (a classifier scored on another set with
    the same labels, SICK to SNLI say)."""
    from keras_match import tasks, training

    run = training.load_run(run_dir)
    return {name: {k: v for k, v in run.evaluate(split, task=None if rule is None else tasks.RankingTask(rule)).items()
                   if k in run.task.figures}
            for name, (split, rule) in splits.items()}


def bm25_references(dataset, splits):
    """BM25's figures on the dataset's own test split and on every transfer split (benchmarks/transfer.py)."""
    from keras_match import tasks
    from transfer import bm25_figures

    references = {}
    task = tasks.task_for(dataset)
    if "test" in dataset and isinstance(task, tasks.RankingTask):
        references["test"] = bm25_figures(dataset["test"], task.no_positive)
    for name, (split, rule) in splits.items():
        if rule is not None:  # a ranking set
            references[name] = bm25_figures(split, rule)
    return references


def _settings_tag(overrides, epochs=None):
    """The part of a run folder's name that says its settings: `-bucketing=false,epochs=5,loss=pairwise_hinge`
    (sorted), so that runs of other settings never reuse each other's folders."""
    overrides = dict(overrides, **({"epochs": epochs} if epochs is not None else {}))
    if not overrides:
        return ""
    parts = [f"{key}={json.dumps(value, separators=(',', ':'))}".replace('"', "") for key, value in
             sorted(overrides.items())]
    return "-" + ",".join(part.replace("/", "_").replace(" ", "") for part in parts)


def holdout_dev(dataset, fraction):
    """`--holdout-dev`: `keras_match.datasets.base.hold_out_dev` (the last `fraction` of the training questions as
    dev, the dev split as test; raises ValueError for a fraction outside (0, 1) or a dataset with a test split)."""
    from keras_match.datasets.base import hold_out_dev

    return hold_out_dev(dataset, fraction)


if __name__ == "__main__":
    main()
