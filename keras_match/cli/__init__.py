"""The `keras-match` command: train, evaluate, predict and export zoo models.

```
keras-match train mcan_fm --dataset trecqa-clean
keras-match evaluate runs/mcan_fm-trecqa-clean --dataset wikiqa
keras-match predict runs/mcan_fm-trecqa-clean --question "..." --answer "..." --answer "..."
keras-match export runs/mcan_fm-trecqa-clean --to export/mcan_fm
keras-match preset runs/mcan_fm-trecqa-clean --to presets/mcan_fm-trecqa-clean   # a trained preset folder
keras-match predict --preset mcan_fm/trecqa-clean --question "..." --answer "..."  # or --preset PRESET_DIR
keras-match tune mcan_fm --dataset trecqa-clean --tuner random --max-trials 12 --dir tuning-runs/mcan_fm
keras-match train mcan_fm --config tuning-runs/mcan_fm/best.json
keras-match zoo                          # --trained: the trained presets the package ships
keras-match data download trecqa        # or: all; `data verify NAME|all` checks every file's sha256
```
"""

from __future__ import annotations

import contextlib
import os
import sys


from keras_match.cli.commands import (  # noqa: F401  (command_settings, _explain_options, _parse_settings: read by tests and benchmarks)
    _ExplainParser,
    _Parser,
    _cmd_data,
    _cmd_evaluate,
    _cmd_explain,
    _cmd_export,
    _cmd_predict,
    _cmd_preset,
    _cmd_train,
    _cmd_tune,
    _cmd_zoo,
    _explain_options,
    _parse_settings,
    _positive_int,
    _seed,
    command_settings,
)


_PRESET_HELP = ("a trained preset instead of a run folder: a shipped one's name ENTRY/DATASET (keras-match zoo "
                "--trained) or a preset folder (keras-match preset RUN --to DIR)")

_PRESET_MARK = "\x00preset:"


def _lift_preset(argv):
    """`predict`'s texts are options read after parsing (`parse_known_args`), so an optional positional would take
    a text as the run folder: `--preset NAME` is moved into the positional's place, marked, and read back in
    `main`.

    Raises:
        ValueError: both a run folder and `--preset` (a usage error).
    """
    if not argv or argv[0] != "predict" or not any(a == "--preset" or a.startswith("--preset=") for a in argv):
        return argv
    rest, preset, i = [], None, 1
    while i < len(argv):
        item = argv[i]
        if item == "--preset" and i + 1 < len(argv):
            preset, i = argv[i + 1], i + 2
        elif item.startswith("--preset="):
            preset, i = item.split("=", 1)[1], i + 1
        else:
            rest.append(item)
            i += 1
    if preset is None:
        return argv
    if rest and not rest[0].startswith("-"):
        raise ValueError(f"give a run folder or --preset, not both (got {rest[0]} and --preset {preset})")
    return ["predict", _PRESET_MARK + preset, *rest]


_TRAIN_PRECISION_HELP = ("what the model computes in: float32, mixed_bfloat16 (float32 weights, bfloat16 "
                         "arithmetic) or auto (mixed_bfloat16 where the CPU has bfloat16 units); default the entry's "
                         "`precision` setting (float32); same as --set precision=P")
_SCORING_PRECISIONS = ("float32", "mixed_bfloat16")
_SCORING_PRECISION_HELP = "what the model computes in while scoring (default float32, whatever it trained in)"


_ENCODERS_HELP = ("the folder holding the pretrained encoders' folders (all-MiniLM-L6-v2/), checked against their "
                  "sha256; default $KERAS_MATCH_ENCODERS, else the user cache ~/.cache/keras_match/encoders, where "
                  "a missing encoder is fetched from its public origin on first use")


def _encoders_folder(value):
    """`--encoders-dir`: an existing folder (argparse turns the error into the command's one usage line)."""
    import argparse
    import pathlib

    path = pathlib.Path(value).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a folder; give the folder that holds the encoders' "
                                         "folders (e.g. all-MiniLM-L6-v2/), or leave the option out to use "
                                         "$KERAS_MATCH_ENCODERS or the user cache")
    return path.resolve()


def _add_encoders_option(parser):
    parser.add_argument("--encoders-dir", type=_encoders_folder, default=None, metavar="DIR", help=_ENCODERS_HELP)


def build_parser():
    parser = _Parser(prog="keras-match", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("train", help="train a zoo model and print its test figures (MAP / MRR / P@1, or "
                       "accuracy for classification)")
    p.add_argument("name", help="zoo entry, see `keras-match zoo`")
    p.add_argument("--dataset", default="trecqa-clean",
                   help="trecqa-clean, trecqa-raw, trecqa-raw-trec-eval, wikiqa, semeval2016 (ranking); sick, "
                   "msrp (classification); or a path to TSV/JSONL files")
    p.add_argument("--train-split", default=None,
                   help="the training set: TrecQA train-all (default) or train; SemEval-2016 train-part2 (default) "
                   "or train-part2+train-2015 (with the organizers' 2015 threads)")
    p.add_argument("--data-dir", default=None,
                   help="benchmark data folder (default $KERAS_MATCH_DATA, else the user cache "
                   "~/.cache/keras_match/data, where a missing benchmark is fetched and built on first use)")
    p.add_argument("--embeddings", default="default",
                   help="pretrained vectors: a GloVe text file, a folder (.npy + parquet index), 'glove-6b-50d' "
                   "(the glove extra), 'none', or 'default' ($KERAS_MATCH_EMBEDDINGS, else glove-6b-50d when "
                   "installed, else the data folder's filtered GloVe 6B 50d)")
    p.add_argument("--run-dir", default=None, help="where the run is written (default runs/NAME-DATASET)")
    p.add_argument("--epochs", type=_positive_int, default=None)
    p.add_argument("--batch-size", type=_positive_int, default=None)
    p.add_argument("--max-train-questions", type=_positive_int, default=None,
                   help="train on the first N questions")
    p.add_argument("--seed", type=_seed, default=1234)
    p.add_argument("--precision", default=None, metavar="P", help=_TRAIN_PRECISION_HELP)
    p.add_argument("--set", action="append", metavar="KEY=JSON",
                   help="override a preset setting, e.g. --set lstm_units=100, --set loss=listwise_softmax "
                   "(pointwise, pairwise_hinge, listwise_softmax), --set head=score (repeatable)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="the settings of a best.json written by `keras-match tune` (--set overrides them)")
    p.add_argument("--init-preset", default=None, metavar="PRESET",
                   help="fine-tune a trained preset of NAME (ENTRY/DATASET of `keras-match zoo --trained`, or a "
                   "preset folder): its settings and weights, its vocabulary extended by the new words (with their "
                   "pretrained vectors); training settings (--epochs, --set learning_rate=...) may change")
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("tune", help="search a zoo model's hyperparameter grid (tuning/) with Keras Tuner on dev; "
                       "rerun the same command to continue an interrupted search")
    p.add_argument("name", help="zoo entry, see `keras-match zoo`")
    p.add_argument("--dataset", default="trecqa-clean", help="as for train")
    p.add_argument("--train-split", default=None, help="as for train")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--embeddings", default="default", help="as for train")
    p.add_argument("--tuner", choices=["grid", "random", "hyperband", "bayesian"], default="random")
    p.add_argument("--max-trials", type=_positive_int, default=None,
                   help="trials to run (default: every combination for grid, 10 for random and bayesian)")
    p.add_argument("--dir", required=True, help="the search folder: Keras Tuner's state, trials.csv / .json, "
                   "trials.png, best.json")
    p.add_argument("--epochs", type=_positive_int, default=None, help="epochs per trial (Hyperband: its largest)")
    p.add_argument("--max-train-questions", type=_positive_int, default=None)
    p.add_argument("--seed", type=_seed, default=1234)
    p.add_argument("--precision", default=None, metavar="P", help=_TRAIN_PRECISION_HELP + " (every trial)")
    p.add_argument("--set", action="append", metavar="KEY=JSON", help="fix a setting for every trial")
    p.add_argument("--config", default=None, metavar="FILE", help="fixed settings from a best.json")
    p.add_argument("--space", default=None, metavar="FILE",
                   help="a search space of your own (the JSON format of tuning/; default: the entry's paper's)")
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser("evaluate", help="score a trained run (or --preset) on a dataset's test split (MAP / MRR / "
                       "P@1 or accuracy / F1)")
    p.add_argument("run_dir", nargs="?", default=None)
    p.add_argument("--preset", default=None, metavar="NAME_OR_PATH", help=_PRESET_HELP)
    p.add_argument("--dataset", required=True,
                   help="as for train; trecqa-raw-trec-eval scores raw TrecQA as trec_eval does on the full qrels")
    p.add_argument("--split", default=None, help="default: test (dev when there is no test split)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    p.add_argument("--precision", choices=_SCORING_PRECISIONS, default=None, help=_SCORING_PRECISION_HELP)
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("explain", help="plot what a model attends to for one example, as PNG, for a family that has "
                       "such a plot (keras-match explain --help lists them and their own options); give the run's "
                       "texts as for predict (--question TEXT --answer TEXT)")
    p.__class__ = _ExplainParser  # argparse makes every subparser of `parser_class`
    p.add_argument("run_dir")
    p.add_argument("--data-dir", default=None, help="the benchmark data, for an explanation that reads the run's "
                   "dev split")
    p.add_argument("--out", default=None, help="the PNG to write (default RUN_DIR/explain.png)")
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("predict", help="score raw texts with a trained run: --NAME TEXT for each of its text inputs "
                       "(a pair model: --question TEXT --answer TEXT --answer TEXT ..., or --answers-file FILE, one "
                       "per line; an input given once goes with every text of the others). A ranker prints the "
                       "candidates best first, a classifier each pair's label")
    p.add_argument("run_dir", help="the run folder (or give --preset NAME_OR_PATH instead)")
    p.add_argument("--preset", default=None, metavar="NAME_OR_PATH", help=_PRESET_HELP)
    p.add_argument("--precision", choices=_SCORING_PRECISIONS, default=None, help=_SCORING_PRECISION_HELP)
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("export", help="write a SavedModel for TensorFlow Serving (and optionally ONNX) of a run "
                       "(or --preset)")
    p.add_argument("run_dir", nargs="?", default=None)
    p.add_argument("--preset", default=None, metavar="NAME_OR_PATH", help=_PRESET_HELP)
    p.add_argument("--to", required=True, help="the model's base path; the version folder goes inside")
    p.add_argument("--precision", choices=_SCORING_PRECISIONS, default=None, help=_SCORING_PRECISION_HELP)
    p.add_argument("--version", type=_positive_int, default=None,
                   help="default: next integer after the highest present")
    p.add_argument("--no-warmup", action="store_true",
                   help="do not write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api)")
    p.add_argument("--onnx", action="store_true",
                   help="also convert serve_ids to ONNX (BASE/onnx/VERSION/model.onnx), checked in onnxruntime")
    p.add_argument("--onnx-path", default=None, metavar="DIR",
                   help="folder for model.onnx (implies --onnx; must not exist); default BASE/onnx/VERSION")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset, at most 18 (default 18; with --onnx)")
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("data", help="fetch the benchmarks from their public originals and build the derived files "
                       "(download), or check every file's sha256 (verify)")
    p.add_argument("action", choices=["download", "verify"])
    p.add_argument("name", help="trecqa, wikiqa, semeval2016, sick, snli, msrp, dialog-babi, or all")
    p.add_argument("--data-dir", default=None,
                   help="the data folder (default $KERAS_MATCH_DATA, else ~/.cache/keras_match/data)")
    p.set_defaults(func=_cmd_data)

    p = sub.add_parser("preset", help="write a trained preset of a finished run: its config, preprocessor and "
                       "vocabulary, model.weights.h5 without the frozen pretrained vectors (rebuilt at load), "
                       "metadata.json and a README.md model card; loads with --preset DIR or "
                       "keras_match.artifacts.presets.load_preset(DIR), without the data")
    p.add_argument("run_dir")
    p.add_argument("--to", required=True, metavar="DIR", help="the preset folder to write (must not exist)")
    p.add_argument("--notes", default=None, help="text for the model card's Notes section")
    p.add_argument("--float16", action="store_true",
                   help="store the weights in float16 (half the size; loaded back as float32); the preset is then "
                        "scored on the dataset's dev and test splits and the figures' differences recorded")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="the dataset name the run's figures are of (default the run's; e.g. wikiqa-answered)")
    p.add_argument("--data-dir", default=None, help="benchmark data folder for the float16 figures (default "
                                                    "$KERAS_MATCH_DATA, then the user cache)")
    _add_encoders_option(p)
    p.set_defaults(func=_cmd_preset)

    p = sub.add_parser("zoo", help="list the zoo entries: name, family, the datasets of its shipped trained weights "
                                   "('-': none) and description, tab-separated")
    p.add_argument("--trained", action="store_true",
                   help="list the trained presets shipped in the package (entry/dataset) instead")
    p.set_defaults(func=_cmd_zoo)
    return parser


def _quiet_tensorflow_import():
    """Import TensorFlow with stderr (file descriptor 2) pointed at /dev/null, then restore it: TensorFlow 2.21
    writes six start-up notices there at import (absl, oneDNN, cudart; some twice) whatever
    `TF_CPP_MIN_LOG_LEVEL` says, and a command's stderr is its own one-line messages. Not done when the user asks
    for TensorFlow's logs (`TF_CPP_MIN_LOG_LEVEL` below 2) or TensorFlow is already imported."""
    if "tensorflow" in sys.modules or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3") not in ("2", "3"):
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            import tensorflow  # noqa: F401
    except ImportError:
        pass  # the command that needs it reports it, on the restored stderr
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    typed = list(argv)
    try:
        argv = _lift_preset(argv)
    except ValueError as error:
        parser.error(f"predict: {error}")
    args, extra = parser.parse_known_args(argv)
    if args.command == "predict":
        args.preset = None
        if args.run_dir.startswith(_PRESET_MARK):
            args.run_dir, args.preset = None, args.run_dir[len(_PRESET_MARK):]
    if extra and args.command not in ("predict", "explain"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.texts = extra  # predict and explain: the run's text inputs, read once the run is loaded
    from keras_match.artifacts import provenance

    provenance.set_command(typed)
    _quiet_tensorflow_import()  # every command imports it (`zoo` too: the families' layers, the presets' encoders)
    try:
        with _encoders_variable(getattr(args, "encoders_dir", None)):
            status = args.func(args)
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError, RuntimeError) as error:
        status = _exit_status(error)
        if status is None:
            raise
        print(f"keras-match {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return status
    return status or 0


@contextlib.contextmanager
def _encoders_variable(folder):
    """`--encoders-dir`: the command reads `$KERAS_MATCH_ENCODERS` as `folder` wherever it locates an encoder, and
    the variable is as it was after the command (a caller of `main` in its own process keeps its own)."""
    if folder is None:
        yield
        return
    from keras_match.encoders.pretrained import ENV_ENCODERS

    before = os.environ.get(ENV_ENCODERS)
    os.environ[ENV_ENCODERS] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_ENCODERS, None)
        else:
            os.environ[ENV_ENCODERS] = before


def _exit_status(error):
    """2 for a usage error (a bad argument or setting, a missing file named on the command line, a finished run
    as the target), 1 for a failure of the inputs or the machine (a damaged run or data file, changed inputs, a
    run in use, a failed download or write, an export that does not verify), None for anything else (a bug:
    its traceback is shown)."""
    from keras_match.artifacts import runs
    from keras_match.serving import export
    from keras_match.datasets.base import DataFormatError
    from keras_match.datasets.download import DataError

    failures = (runs.DamagedRunError, runs.ChangedInputError, runs.RunInUseError, DataFormatError, DataError,
                export.ExportVerificationError)
    if isinstance(error, failures):
        return 1
    if isinstance(error, (FileNotFoundError, FileExistsError)):
        return 2
    if isinstance(error, OSError):  # storage.WriteError, or a folder that could not be made or read
        return 1
    if isinstance(error, ValueError):
        return 2
    return None


def _one_line(error):
    from keras_match.artifacts import storage
    from keras_match.datasets.download import DataError

    if isinstance(error, (DataError, storage.DamagedRunError)):  # names the file and what to do
        return " ".join(str(error).split())
    if isinstance(error, OSError) and not isinstance(error, storage.WriteError) and error.filename:
        return f"cannot use {error.filename}: {storage.describe_os_error(error)}; {storage.remedy(error)}"
    return str(error)

