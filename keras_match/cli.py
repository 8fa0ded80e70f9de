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

import argparse
import json
import os
import pathlib
import sys


def _positive_int(text):
    """argparse type: an integer >= 1 (the message names the argument through argparse)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def _seed(text):
    """argparse type: an integer from 0 to 2**32 - 1 (Keras's and NumPy's seed range)."""
    from keras_match.settings import SEED_MAX

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {SEED_MAX}, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {SEED_MAX}, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """One line for a usage error, `keras-match train: error: argument --epochs: ...`, and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parse_settings(name, items):
    """`--set KEY=VALUE` pairs: VALUE is JSON; a setting whose preset value is text (loss, head, compression,
    ...) also takes a bare word (`--set loss=listwise_softmax`)."""
    from keras_match import zoo

    preset = zoo.describe(name)
    text_settings = {key for section in zoo.SECTIONS for key, value in preset[section].items()
                     if isinstance(value, str)} | {"loss", "head", "optimizer"}
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE, e.g. --set lstm_units=100")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            if key not in text_settings:
                raise ValueError(f"--set {key}={value}: the value must be JSON (a number, true / false, null or "
                                 f"a quoted string)") from None
            overrides[key] = value
    return overrides


def command_settings(args):
    """The settings of a command, by name: a `--config FILE` (a `best.json` of `keras-match tune`), then the
    options that are settings (`--epochs`, `--batch-size`), then `--set`, each overriding the one before; an
    option and a `--set` of the same setting is an error.

    Raises:
        ValueError: a malformed `--set`, an option given twice, or a `--config` file of another entry.
    """
    overrides = {}
    if getattr(args, "config", None):
        from keras_match import zoo

        overrides.update(zoo.read_config(args.config, args.name))
    given = _parse_settings(args.name, args.set or [])
    for key in ("epochs", "batch_size", "precision"):  # settings that are also options: one or the other
        option = getattr(args, key, None)
        if key in given and option is not None:
            raise ValueError(f"--{key.replace('_', '-')} and --set {key}=... both given: give one")
        if option is not None:
            overrides[key] = option
    overrides.update(given)
    return overrides


def _cmd_train(args):
    from keras_match.training import train

    overrides = command_settings(args)
    report = train(
        args.name,
        args.dataset,
        data_dir=args.data_dir,
        train_split=args.train_split,
        embeddings_path=args.embeddings if args.embeddings != "none" else None,
        run_dir=args.run_dir,
        max_train_questions=args.max_train_questions,
        seed=args.seed,
        init_preset=args.init_preset,
        **overrides,
    )
    speed = report["train_pairs_per_s"]
    print(f"run written to {report['run_dir']} (best epoch {report['best_epoch']}, {report['wall_time_s']} s"
          + (f", {speed} training pairs/s)" if speed else ")"))
    for split, line in report["summary"].items():
        print(f"{split}: {line}")


def _cmd_evaluate(args):
    from keras_match import tasks
    from keras_match.datasets.catalog import load_by_name
    run = _load_trained(args)
    dataset = load_by_name(args.dataset, data_dir=args.data_dir)
    task = tasks.task_for(dataset)  # the dataset's own rules (a ranking benchmark's rule for no positive)
    split = args.split or ("test" if "test" in dataset else "dev")
    # Run.evaluate refuses a split of the other task or of other labels
    report = run.evaluate(dataset[split], task=task)
    print(f"{args.dataset} {split}: {task.summary(report)}")
    if args.json:
        print(json.dumps(report))


def _text_inputs(items, preprocessor, command):
    """The texts of `--NAME TEXT` (repeatable) and `--NAME-file FILE` options (one text per non-empty line; the
    plural `--NAMEs-file` is read too), one `NAME` per text input of the run's preprocessor. An input given once
    is repeated for every text of an input given several times (one question, many answers). The texts of an
    input of rank 2 (a dialog's `history`) are the turns of one example, oldest first.

    Raises:
        ValueError: an option that names no text input, a missing input, or inputs given different numbers
            (not 1) of times.
    """
    names = list(preprocessor.TEXT_INPUTS)
    rows = {name for name, rank in dict(preprocessor.TEXT_INPUTS).items() if rank == 2}  # a dialog's history
    texts = {name: [] for name in names}
    options = " ".join(f"--{name}" for name in names)
    i = 0
    while i < len(items):
        option = items[i]
        if not option.startswith("--") or i + 1 >= len(items):
            raise ValueError(f"{command}: unexpected {option!r}; this run reads {options} (TEXT, repeatable) or "
                             f"--NAME-file FILE")
        key, value = option[2:], items[i + 1]
        name = key[: -len("-file")] if key.endswith("-file") else key
        if name not in texts and name.endswith("s") and name[:-1] in texts:
            name = name[:-1]
        if name not in texts:
            raise ValueError(f"{command}: unknown option {option}; this run's model reads {options} (TEXT, "
                             "repeatable) or --NAME-file FILE")
        if key.endswith("-file"):
            with open(value, encoding="utf-8") as f:
                texts[name] += [line.rstrip("\r\n") for line in f if line.strip()]
        else:
            texts[name].append(value)
        i += 2
    missing = [f"--{name}" for name, values in texts.items() if not values]
    if missing:
        raise ValueError(f"{command}: give {' and '.join(missing)} (this run's model reads {options})")
    for name in rows:  # every --history TEXT (or line of --history-file) is a turn of ONE example's row
        texts[name] = [texts[name]]
    count = max(len(values) for values in texts.values())
    uneven = {name: len(values) for name, values in texts.items() if len(values) not in (1, count)}
    if uneven:
        raise ValueError(f"{command}: give each text input once or {count} times, got {uneven}")
    return {name: values * count if len(values) == 1 else values for name, values in texts.items()}


def _flag(option):
    """The command-line flag of a family's explain option: `top_k` -> `--top-k`."""
    return f"--{option.replace('_', '-')}"


def _explain_options(family, items):
    """The options of `family.explain_options` among the command's extra arguments, and the rest (the texts).

    Raises:
        ValueError: an option that another family's explanation takes (one line naming what this one takes).
    """
    from keras_match import zoo

    parser = _Parser(prog="keras-match explain", add_help=False, allow_abbrev=False)
    for name, spec in family.explain_options.items():
        parser.add_argument(_flag(name), dest=name, default=None, **spec)
    known, rest = parser.parse_known_args(items)
    others = {_flag(name) for other in zoo.families().values() for name in other.explain_options}
    foreign = [item.split("=", 1)[0] for item in rest if item.split("=", 1)[0] in others]
    if foreign:
        takes = " ".join(map(_flag, family.explain_options)) or "no option"
        raise ValueError(f"explain: a {family.name} run takes {takes}, not {', '.join(foreign)}")
    return {name: value for name, value in vars(known).items() if value is not None}, rest


class _ExplainParser(_Parser):
    """`keras-match explain`'s parser: its help lists each family's own options (`zoo.Family.explain_options`),
    read once the run is loaded; the families are imported only for the help."""

    def format_help(self):
        from keras_match import zoo

        lines = [super().format_help().rstrip(), "", "each family's options:"]
        for name, family in sorted(zoo.families().items()):
            for option, spec in family.explain_options.items():
                metavar = spec.get("metavar", option.upper())
                lines.append(f"  {name}: {_flag(option)} {metavar}{' ...' if spec.get('nargs') else ''}"
                             f"  {spec.get('help', '')}")
        return "\n".join(lines) + "\n"


def _cmd_explain(args):
    from keras_match import zoo
    from keras_match.runs import load_run, preprocessor_class_of

    preprocessor = preprocessor_class_of(args.run_dir)
    run = load_run(args.run_dir)
    family = zoo.families().get(run.config.get("family")) or zoo.family_of(run.config.get("zoo"))
    if family.explain is None:
        having = ", ".join(sorted(name for name, other in zoo.families().items() if other.explain is not None))
        raise ValueError(f"explain: the {family.name} family has no explanation plot (these have: {having})")
    options, rest = _explain_options(family, args.texts)
    texts = _text_inputs(rest, preprocessor, "explain")
    out = args.out or str(pathlib.Path(args.run_dir) / "explain.png")
    if args.data_dir is not None:
        options["data_dir"] = args.data_dir
    for line in family.explain(run, texts, out, **options):
        print(line)


def _trained_folder(args):
    """The folder of `RUN_DIR` or `--preset NAME_OR_PATH` (a shipped preset's folder for a name).

    Raises:
        ValueError: both or neither given (a usage error).
        FileNotFoundError: no such preset.
    """
    preset = getattr(args, "preset", None)
    if preset is not None and args.run_dir is not None:
        raise ValueError(f"give a run folder or --preset, not both (got {args.run_dir} and --preset {preset})")
    if preset is None and args.run_dir is None:
        raise ValueError("give a run folder (RUN_DIR) or --preset NAME_OR_PATH (see keras-match zoo --trained)")
    if preset is None:
        return pathlib.Path(args.run_dir)
    from keras_match import presets

    return presets.preset_dir(preset)


def _load_trained(args):
    """The `Run` of `RUN_DIR` or `--preset`; a preset folder given as RUN_DIR is read as a preset."""
    from keras_match import presets
    from keras_match.runs import load_run

    folder = _trained_folder(args)
    precision = getattr(args, "precision", None) or "float32"
    return (presets.load_preset(folder, precision=precision) if presets.is_preset(folder)
            else load_run(folder, precision=precision))


def _cmd_predict(args):
    from keras_match.runs import preprocessor_class_of

    folder = _trained_folder(args)
    texts = _text_inputs(args.texts, preprocessor_class_of(folder), "predict")  # checked before loading
    run = _load_trained(args)
    shown = run.preprocessor.shown_texts(texts)  # with the candidate set a dialog model keeps
    for line in run.task.predictions(run.head, run.predict(texts), shown, run.label_names):
        print(line)


def _cmd_export(args):
    from keras_match import export

    if args.opset is not None and not (args.onnx or args.onnx_path):
        raise ValueError(f"--opset {args.opset} applies to the ONNX export: add --onnx (or --onnx-path); nothing was "
                         "written")
    if args.opset is None:
        args.opset = export.MAX_ONNX_OPSET
    if args.onnx or args.onnx_path:  # every option is checked before a servable version is written
        if not 1 <= args.opset <= export.MAX_ONNX_OPSET:
            raise ValueError(f"--opset {args.opset}: tf2onnx writes opsets 1 to {export.MAX_ONNX_OPSET}; nothing "
                             "was written")
        export.check_onnx_precision(args.precision or "float32")
        if args.onnx_path and os.path.exists(args.onnx_path):
            raise FileExistsError(f"--onnx-path {args.onnx_path} exists: give a new folder; nothing was written")
    from keras_match import presets

    folder = _trained_folder(args)  # a run folder is read by export.saved_model itself; a preset is loaded here
    precision = args.precision or "float32"
    source = presets.load_preset(folder, precision=precision) if presets.is_preset(folder) else folder
    try:
        path = export.saved_model(source, args.to, version=args.version, warmup=not args.no_warmup,
                                  precision=precision)
    except ImportError as error:
        raise ValueError(f"{error} (or pass --no-warmup)") from error
    signatures = ", ".join(export.read_metadata(path)["signatures"])
    print(f"SavedModel written to {path} (signatures {signatures}; {precision})")
    if args.onnx or args.onnx_path:
        try:
            result = export.to_onnx(path, args.onnx_path, opset=args.opset)
        except (ImportError, export.ExportVerificationError) as error:
            raise ValueError(f"ONNX export failed ({path} was written and is valid): {error}") from error
        print(f"ONNX model written to {result.path} (opset {result.opset}; onnxruntime matches TensorFlow to "
              f"{result.max_abs_diff:.2g} on {result.num_samples} sample pairs)")


def _cmd_tune(args):
    from keras_match import storage, tuning
    from keras_match.metrics import figure_name

    overrides = command_settings(args)
    if args.max_trials is not None and args.tuner == "hyperband":
        raise ValueError("--max-trials does not apply to --tuner hyperband (its brackets set the trials); drop it")
    role = tuning.distributed_role()
    # before the data is read: a missing or wrong space fails at once
    space = tuning.read_space(args.space, args.name) if args.space else tuning.space_for(args.name)
    storage.check_writable_folder(args.dir, "--dir")  # before any work: the search's state and results go there
    hypermodel = tuning.MatchHyperModel(
        args.name, args.dataset, space=space, data_dir=args.data_dir, train_split=args.train_split,
        embeddings_path=args.embeddings if args.embeddings != "none" else None, seed=args.seed,
        max_train_questions=args.max_train_questions, verbose=2, **overrides)
    tuner = tuning.make_tuner(hypermodel, args.tuner, args.dir, max_trials=args.max_trials, seed=args.seed)
    print(f"searching {args.name} on {hypermodel.dataset_name} with {args.tuner} over {space['file']} "
          f"({len(space['hyperparameters'])} hyperparameters); objective dev {figure_name(hypermodel.task.monitor)}; "
          f"search state in {args.dir}", flush=True)
    if role is not None:
        address = f"{os.environ['KERASTUNER_ORACLE_IP']}:{os.environ['KERASTUNER_ORACLE_PORT']}"
        print(f"distributed search: this process is {os.environ['KERASTUNER_TUNER_ID']} "
              + ("(the chief: it serves the oracle at " + address + " and writes the results; the workers run "
                 "the trials)" if role == "chief" else f"(a worker of the chief at {address})"), flush=True)
    tuner.search(verbose=0)
    if role == "worker":
        print(f"{os.environ['KERASTUNER_TUNER_ID']}: no trial left; the chief writes the trial table and best.json")
        return
    result = tuning.write_results(tuner, hypermodel, args.dir)
    done = [r for r in result["trials"] if r["dev"] is not None]
    print(f"{len(result['trials'])} trials ({len(done)} finished); table {result['files']['csv']}, plot "
          f"{result['files']['plot']}")
    if result["best"]:
        best = result["best"]
        print(f"best: trial {best['trial']}, dev {figure_name(best['objective'][4:])} {best['dev']:.4f}: "
              + ", ".join(f"{k}={json.dumps(v)}" for k, v in best["settings"].items()))
        split = f" --train-split {args.train_split}" if args.train_split else ""
        print(f"retrain it: keras-match train {args.name} --dataset {args.dataset}{split} --config "
              f"{result['files']['best']}")


def _fetching():
    """The module `keras_match.datasets.download` (the package's attribute of that name is its function)."""
    import importlib

    return importlib.import_module("keras_match.datasets.download")


def _data_names(name):
    download = _fetching()

    if name == "all":
        return download.names()
    if name not in download.names():
        raise ValueError(f"unknown dataset {name!r}; valid: {download.names() + ['all']}")
    return [name]


def _cmd_data(args):
    """`data download NAME|all`: fetch and build what is missing or damaged; `data verify NAME|all`: a table of
    every file's state (exit status 1 unless all are OK)."""
    download = _fetching()

    names = _data_names(args.name)
    if args.action == "download":
        for name in names:
            report = download.download(name, args.data_dir)
            if not (report["fetched"] or report["built"]):
                print(f"{name}: every file present and intact in {report['data_dir']}")
        return 0
    rows = [(name, *row) for name in names for row in download.verify(name, args.data_dir)]
    width = max(len(row[1]) for row in rows)
    for name, relative, state, path in rows:
        print(f"{state:<8} {relative:<{width}}  {path}")
    counts = {state: sum(row[2] == state for row in rows) for state in (download.OK, download.MISSING,
                                                                         download.DAMAGED)}
    print(", ".join(f"{count} {state}" for state, count in counts.items()))
    if counts[download.OK] != len(rows):
        hint = " ".join(sorted({row[0] for row in rows if row[2] != download.OK}))
        print(f"keras-match data: {len(rows) - counts[download.OK]} file(s) missing or damaged; fix them with "
              f"`keras-match data download NAME` for: {hint}", file=sys.stderr)
        return 1
    return 0


def _cmd_preset(args):
    from keras_match import presets

    path = presets.write_preset(args.run_dir, args.to, card_notes=args.notes, float16=args.float16,
                                benchmark=args.dataset, data_dir=args.data_dir)
    metadata = json.loads((path / presets.METADATA_FILE).read_text(encoding="utf-8"))
    size = sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    embedding, weights = metadata["embedding"], metadata["weights"]
    print(f"preset written to {path} ({size / 1e6:.1f} MB; {metadata['parameters']['stored']:,} of "
          f"{metadata['parameters']['total']:,} parameters stored in {weights['dtype']}"
          + (f"; the frozen vectors are rebuilt at load from {embedding['vectors']}, sha256 "
             f"{embedding['vectors_sha256'][:12]}...)" if embedding["frozen"] else ")"))
    if weights["dtype"] == "float16":
        if not weights.get("figures"):
            print(f"float16 figures not measured: {weights.get('not_measured')}")
        for split, values in (weights.get("figures") or {}).items():
            run = metadata["figures"].get(split) or {}
            changes = weights["difference"].get(split) or {}
            print(f"float16 {split}: " + "  ".join(f"{key} {values[key]:.4f} (float32 {run[key]:.4f}, "
                                                   f"{changes[key]:+.4f})" for key in changes))


def _cmd_zoo(args):
    if args.trained:
        from keras_match import presets  # without Keras: the listing is quick

        shipped = presets.trained()
        for name in shipped:
            print(name)
        if not shipped:
            print("no trained presets are shipped yet; write your own: keras-match preset RUN --to DIR",
                  file=sys.stderr)
        return 0
    from keras_match import presets, zoo

    weights = {}
    for shipped in presets.trained():
        entry, dataset = shipped.split("/", 1)
        weights.setdefault(entry, []).append(dataset)
    # entry, family, its shipped trained weights (load(entry, weights=DATASET)) or "-", description
    for name in zoo.names():
        preset = zoo.describe(name)
        trained = ",".join(weights.get(name, [])) or "-"
        print(f"{name}\t{preset['family']}\t{trained}\t{preset['description']}")


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
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("explain", help="plot what a model attends to for one example, as PNG, for a family that has "
                       "such a plot (keras-match explain --help lists them and their own options); give the run's "
                       "texts as for predict (--question TEXT --answer TEXT)")
    p.__class__ = _ExplainParser  # argparse makes every subparser of `parser_class`
    p.add_argument("run_dir")
    p.add_argument("--data-dir", default=None, help="the benchmark data, for an explanation that reads the run's "
                   "dev split")
    p.add_argument("--out", default=None, help="the PNG to write (default RUN_DIR/explain.png)")
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("predict", help="score raw texts with a trained run: --NAME TEXT for each of its text inputs "
                       "(a pair model: --question TEXT --answer TEXT --answer TEXT ..., or --answers-file FILE, one "
                       "per line; an input given once goes with every text of the others). A ranker prints the "
                       "candidates best first, a classifier each pair's label")
    p.add_argument("run_dir", help="the run folder (or give --preset NAME_OR_PATH instead)")
    p.add_argument("--preset", default=None, metavar="NAME_OR_PATH", help=_PRESET_HELP)
    p.add_argument("--precision", choices=_SCORING_PRECISIONS, default=None, help=_SCORING_PRECISION_HELP)
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
                       "keras_match.presets.load_preset(DIR), without the data")
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
    from keras_match import provenance

    provenance.set_command(typed)
    if args.command not in ("zoo",):
        _quiet_tensorflow_import()
    try:
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


def _exit_status(error):
    """2 for a usage error (a bad argument or setting, a missing file named on the command line, a finished run
    as the target), 1 for a failure of the inputs or the machine (a damaged run or data file, changed inputs, a
    run in use, a failed download or write, an export that does not verify), None for anything else (a bug:
    its traceback is shown)."""
    from keras_match import export, runs
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
    from keras_match import storage
    from keras_match.datasets.download import DataError

    if isinstance(error, (DataError, storage.DamagedRunError)):  # names the file and what to do
        return " ".join(str(error).split())
    if isinstance(error, OSError) and not isinstance(error, storage.WriteError) and error.filename:
        return f"cannot use {error.filename}: {storage.describe_os_error(error)}; {storage.remedy(error)}"
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
