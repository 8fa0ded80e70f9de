"""The `keras-match` command: train, evaluate, predict and export zoo models.

```
keras-match train mcan_fm --dataset trecqa-clean
keras-match evaluate runs/mcan_fm-trecqa-clean --dataset wikiqa
keras-match predict runs/mcan_fm-trecqa-clean --question "..." --answer "..." --answer "..."
keras-match export runs/mcan_fm-trecqa-clean --to export/mcan_fm
keras-match zoo
```
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _print_figures(title, report):
    figures = "  ".join(f"{k.upper()} {report[k]:.4f}" for k in ("map", "mrr", "p@1"))
    skipped = f", {report['num_skipped']} without a positive answer skipped" if report.get("num_skipped") else ""
    print(f"{title}: {figures}  ({report['num_questions']} questions{skipped})")


def _cmd_train(args):
    from keras_match.training import train

    overrides = {}
    for item in args.set or []:
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value) if value else None
    report = train(
        args.name,
        args.dataset,
        data_dir=args.data_dir,
        train_split=args.train_split,
        embeddings_path=args.embeddings if args.embeddings != "none" else None,
        run_dir=args.run_dir,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_train_questions=args.max_train_questions,
        seed=args.seed,
        **overrides,
    )
    print(f"run written to {report['run_dir']} (best epoch {report['best_epoch']}, {report['wall_time_s']} s)")
    _print_figures("dev", report["dev"])
    if "test" in report:
        _print_figures("test", report["test"])


def _cmd_evaluate(args):
    from keras_match.training import load_dataset, load_run, no_positive_rule

    run = load_run(args.run_dir)
    dataset = load_dataset(args.dataset, data_dir=args.data_dir)
    split = args.split or ("test" if "test" in dataset else "dev")
    report = run.evaluate(dataset[split], no_positive=no_positive_rule(dataset))
    _print_figures(f"{args.dataset} {split}", report)
    if args.json:
        print(json.dumps(report))


def _cmd_predict(args):
    from keras_match.training import load_run

    answers = list(args.answer or [])
    if args.answers_file:
        with open(args.answers_file, encoding="utf-8") as f:
            answers += [line.rstrip("\r\n") for line in f if line.strip()]
    if not answers:
        raise ValueError("predict: give candidate answers with --answer or --answers-file")
    run = load_run(args.run_dir)
    scores = run.score([args.question] * len(answers), answers)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    for rank, i in enumerate(order, 1):
        print(f"{rank}\t{scores[i]:.4f}\t{answers[i]}")


def _cmd_export(args):
    from keras_match import export

    try:
        path = export.saved_model(args.run_dir, args.to, version=args.version, warmup=not args.no_warmup)
    except ImportError as error:
        raise ValueError(f"{error} (or pass --no-warmup)") from error
    print(f"SavedModel written to {path} (signatures serving_default, serve_ids, rank)")
    if args.onnx or args.onnx_path:
        try:
            result = export.to_onnx(path, args.onnx_path, opset=args.opset)
        except (ImportError, export.ExportVerificationError) as error:
            raise ValueError(f"ONNX export failed ({path} was written and is valid): {error}") from error
        print(f"ONNX model written to {result.path} (opset {result.opset}; onnxruntime matches TensorFlow to "
              f"{result.max_abs_diff:.2g} on {result.num_samples} sample pairs)")


def _cmd_zoo(args):
    from keras_match import zoo

    for name in zoo.names():
        print(f"{name}\t{zoo.describe(name)['description']}")


def build_parser():
    parser = argparse.ArgumentParser(prog="keras-match", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a zoo model and print its test MAP / MRR / P@1")
    p.add_argument("name", help="zoo entry, see `keras-match zoo`")
    p.add_argument("--dataset", default="trecqa-clean",
                   help="trecqa-clean, trecqa-raw, trecqa-raw-trec-eval, wikiqa, semeval2016, or a path to "
                   "TSV/JSONL files")
    p.add_argument("--train-split", choices=["train-all", "train"], default=None,
                   help="TrecQA training set (default train-all)")
    p.add_argument("--data-dir", default=None, help="benchmark data folder (default $KERAS_MATCH_DATA)")
    p.add_argument("--embeddings", default="default",
                   help="GloVe-format vectors file; 'default' = the data folder's GloVe 6B 50d; 'none'")
    p.add_argument("--run-dir", default=None, help="where the run is written (default runs/NAME-DATASET)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--max-train-questions", type=int, default=None, help="train on the first N questions")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--set", action="append", metavar="KEY=JSON",
                   help="override a preset setting, e.g. --set lstm_units=100 (repeatable)")
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("evaluate", help="score a trained run on a dataset's test split")
    p.add_argument("run_dir")
    p.add_argument("--dataset", required=True,
                   help="as for train; trecqa-raw-trec-eval scores raw TrecQA as trec_eval does on the full qrels")
    p.add_argument("--split", default=None, help="default: test (dev when there is no test split)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("predict", help="rank raw candidate answers for a raw question")
    p.add_argument("run_dir")
    p.add_argument("--question", required=True)
    p.add_argument("--answer", action="append", help="a candidate answer (repeat for each)")
    p.add_argument("--answers-file", default=None, help="a file of candidate answers, one per line")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("export", help="write a SavedModel for TensorFlow Serving (and optionally ONNX)")
    p.add_argument("run_dir")
    p.add_argument("--to", required=True, help="the model's base path; the version folder goes inside")
    p.add_argument("--version", type=int, default=None, help="default: next integer after the highest present")
    p.add_argument("--no-warmup", action="store_true",
                   help="do not write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api)")
    p.add_argument("--onnx", action="store_true",
                   help="also convert serve_ids to ONNX (BASE/onnx/VERSION/model.onnx), checked in onnxruntime")
    p.add_argument("--onnx-path", default=None, metavar="DIR",
                   help="folder for model.onnx (implies --onnx; must not exist); default BASE/onnx/VERSION")
    p.add_argument("--opset", type=int, default=18, help="ONNX opset, at most 18 (default 18)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("zoo", help="list the zoo entries")
    p.set_defaults(func=_cmd_zoo)
    return parser


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        print(f"keras-match {args.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
