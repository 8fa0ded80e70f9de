"""The `keras-match` subcommands (`_cmd_train`, `_cmd_export` ...) and what they share: the `--set` settings,
the texts of `predict` / `explain`, a run folder or a preset. `keras_match.cli` parses the command line and
calls them."""

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
                     if isinstance(value, str)} | {"loss", "head", "optimizer", "backbone", "backbone_layers",
                                                   "backbone_trainable", "tokenizer"}
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
    from keras_match.training.trainer import train

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
        FileNotFoundError: no such `--NAME-file`.
        keras_match.datasets.DataFormatError: a line of a `--NAME-file` is not UTF-8 (names the file and line).
    """
    from keras_match.datasets.reader import iter_lines

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
        if key.endswith("-file"):  # a line that is not UTF-8 is named (file, line): a DataFormatError
            texts[name] += [line for _, line in iter_lines(value) if line.strip()]
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
    from keras_match.artifacts.runs import load_run, preprocessor_class_of

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
    from keras_match.artifacts import presets

    return presets.preset_dir(preset)


def _load_trained(args):
    """The `Run` of `RUN_DIR` or `--preset`; a preset folder given as RUN_DIR is read as a preset."""
    from keras_match.artifacts import presets
    from keras_match.artifacts.runs import load_run

    folder = _trained_folder(args)
    precision = getattr(args, "precision", None) or "float32"
    return (presets.load_preset(folder, precision=precision) if presets.is_preset(folder)
            else load_run(folder, precision=precision))


def _cmd_predict(args):
    from keras_match.artifacts.runs import preprocessor_class_of

    folder = _trained_folder(args)
    texts = _text_inputs(args.texts, preprocessor_class_of(folder), "predict")  # checked before loading
    run = _load_trained(args)
    shown = run.preprocessor.shown_texts(texts)  # with the candidate set a dialog model keeps
    for line in run.task.predictions(run.head, run.predict(texts), shown, run.label_names):
        print(line)


def _cmd_export(args):
    from keras_match.serving import export

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
    from keras_match.artifacts import presets

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
    from keras_match.artifacts import storage
    from keras_match.training import tuning
    from keras_match.metrics import figure_name

    overrides = command_settings(args)
    if args.max_trials is not None and args.tuner == "hyperband":
        raise ValueError("--max-trials does not apply to --tuner hyperband (its brackets set the trials); drop it")
    role = tuning.distributed_role()
    # before the data is read: a missing or wrong space fails at once
    space = tuning.read_space(args.space, args.name) if args.space else tuning.space_for(args.name)
    # before any work: the search's state and results go there (a refused search leaves no empty folder)
    with storage.checked_folder(args.dir, "--dir"):
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
        root = _fetching().resolve_data_dir(args.data_dir)
        where = "" if root.is_dir() else f" (the data folder {root} does not exist yet: download creates it)"
        print(f"keras-match data: {len(rows) - counts[download.OK]} file(s) missing or damaged{where}; fix them "
              f"with `keras-match data download NAME` for: {hint}", file=sys.stderr)
        return 1
    return 0


def _cmd_preset(args):
    from keras_match.artifacts import presets

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
        from keras_match.artifacts import presets

        shipped = presets.trained()
        for name in shipped:
            print(name)
        if not shipped:
            print("no trained presets are shipped yet; write your own: keras-match preset RUN --to DIR",
                  file=sys.stderr)
        return 0
    from keras_match import zoo
    from keras_match.artifacts import presets

    weights = {}
    for shipped in presets.trained():
        entry, dataset = shipped.split("/", 1)
        weights.setdefault(entry, []).append(dataset)
    # entry, family, its shipped trained weights (load(entry, weights=DATASET)) or "-", description
    for name in zoo.names():
        preset = zoo.describe(name)
        trained = ",".join(weights.get(name, [])) or "-"
        print(f"{name}\t{preset['family']}\t{trained}\t{preset['description']}")
