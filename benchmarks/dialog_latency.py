"""Serving latency of one dialog turn against the full candidate set (CARNN dialog, dialog bAbI task 6); prints JSON.

Trains nothing. With `--run-dir` the run's model is exported: a finished `keras-match train carnn_dialog_*
--dataset dialog-babi-task6` run. Without it, the zoo entry `--model` (default carnn_dialog_i) is built with its
preset's settings (`--set KEY=JSON` overrides them, e.g. `--set units=16`) on dialog-babi-task6's vocabulary (the
training words, as `keras-match train` builds it: `keras_match.training.recipe.Recipe`) and candidate set, with random
weights: the latency does not depend on the weights. Then, on real task 6 test turns (each turn's history texts
and its last user utterance, turns spread evenly over the test split), `--turns` timed calls of one turn each:

- `serving_default` of the loaded SavedModel (`keras_match.serving.export.saved_model`): raw texts `history` [1, H] and
  `context` [1] in, tokenized in the graph, the scores of the task's whole candidate set (2,407) out;
- its `respond` signature: the same turn, and the candidate set's 2,407 texts passed at call time (tokenized in
  the graph on every call);
- its `serve_ids` signature on the same turns as token ids made beforehand (the model's time without the in-graph
  tokenization; ids as for ONNX below);
- onnxruntime on the ONNX conversion of `serve_ids` (`keras_match.serving.export.to_onnx`): token ids made beforehand
  (trimmed to the turn's longest text as the graph does; tokenization not timed). If the conversion fails, its
  error is recorded in the JSON instead.

Each path gives p50 / p99 / mean in ms. `agreement` says whether each path chose, on every timed turn, the
candidate the Keras model chooses (`Run.predict`, then the highest score, the lowest index among ties), with the
largest score difference. Also recorded: the export's size and time, the number of candidates, the units, the
entry, the cores (`os.cpu_count()`) and the threads (`--threads`, 0: TensorFlow's and onnxruntime's default
pools).

    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_latency.py --model carnn_dialog_i --out latency.json
    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_latency.py --run-dir runs/carnn_dialog_i

Numbers are from whatever CPU runs it. The JSON's `provenance` (`keras_match.artifacts.provenance`) records the command,
the code, the versions (and onnxruntime's), the machine (with its load average at the end), the start and end
times, the run, the task 6 data files with their sha256, and the load average at the start; `note` says when the
machine was busy (a load average at the start of at least half the cores), or gives `--note`.
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from export_latency import _log, _percentiles, _size_mb  # noqa: E402  (the pair models' latency benchmark)

DATASET = "dialog-babi-task6"
QUICK_TURNS = 5


def _settings(name, items):
    """`--set KEY=VALUE` as `keras-match train --set` reads it (a usage error exits with its message)."""
    from keras_match import cli

    try:
        return cli._parse_settings(name, items or [])
    except ValueError as error:
        raise SystemExit(str(error)) from None


def _timed(fn, calls, warmup):
    """`(seconds of each call, outputs of each call)`: `warmup` untimed calls first (on turns 0, 1, ...), then
    `calls` timed ones on turns 0 .. calls - 1."""
    for i in range(warmup):
        fn(i)
    seconds, outputs = [], []
    for i in range(calls):
        start = time.perf_counter()
        out = fn(i)
        seconds.append(time.perf_counter() - start)
        outputs.append(out)
    return seconds, outputs


def check_run_dir(run_dir):
    """Refuses, naming the folder, a `--run-dir` that is not a finished run (before anything heavy is imported)."""
    path = pathlib.Path(run_dir)
    if not path.is_dir():
        raise SystemExit(f"--run-dir {run_dir}: no such folder")
    missing = [name for name in ("config.json", "model.keras") if not (path / name).is_file()]
    if missing:
        raise SystemExit(f"--run-dir {run_dir}: not a finished keras-match run (no {', '.join(missing)}); give the "
                         f"folder of a finished `keras-match train carnn_dialog_* --dataset {DATASET}` run")


def build_run(args, dataset):
    """The run to export: `(run, description, entry, units)`.

    A trained run folder (its task must select among task 6's candidates), or the zoo entry `args.model` with its
    preset's settings (and `--set` overrides) on task 6's vocabulary and candidate set, with random weights.
    """
    from keras_match.artifacts import runs
    from keras_match.training.recipe import Recipe

    if args.run_dir:
        try:
            run = runs.load_run(args.run_dir)
        except (FileNotFoundError, ValueError) as error:
            raise SystemExit(f"--run-dir {args.run_dir}: {error}") from None
        if run.task.kind != "response_selection":
            raise SystemExit(f"--run-dir {args.run_dir}: a {run.task.kind} run; this benchmark needs a response "
                             f"selection run on {DATASET}")
        refused = run.task.accepts(dataset["test"])
        if refused:
            raise SystemExit(f"--run-dir {args.run_dir}: the {DATASET} test split {refused}")
        entry = run.config.get("zoo")
        units = run.config.get("settings", {}).get("model", {}).get("units")
        return run, f"run {args.run_dir}", entry, units
    recipe = Recipe.prepare(args.model, dataset, embeddings=None, seed=args.seed, **_settings(args.model, args.set))
    preprocessor = recipe.preprocessor()
    model, _ = recipe.model(preprocessor)
    settings = recipe.settings
    config = {"zoo": args.model, "family": settings.family, "builder": settings.builder,
              "settings": settings.to_dict(), "dataset": DATASET, "task": recipe.task.config(), "seed": args.seed}
    units = settings.model.get("units")
    description = (f"{args.model} preset settings{' with ' + ' '.join(args.set) if args.set else ''}, random "
                   f"weights (seed {args.seed}), {DATASET} training vocabulary ({preprocessor.vocab_size} ids)")
    return runs.Run(model=model, preprocessor=preprocessor, config=config), description, args.model, units


def test_turns(dataset, task, count):
    """`count` test turns spread evenly over the test split: `[(history texts, context)]` and their indices."""
    import numpy as np

    examples = task.examples(dataset["test"])
    n = len(examples)
    indices = np.linspace(0, n - 1, min(count, n)).round().astype(int).tolist()
    histories, contexts, lengths = examples.texts["history"], examples.texts["context"], examples.history_lengths
    return [(list(histories[i][:lengths[i]]), str(contexts[i])) for i in indices], indices


def _agreement(choices, scores, reference):
    """Whether `choices` (one per timed turn) are the Keras model's, and the largest score difference."""
    import numpy as np

    from keras_match.tasks.response_selection import choose

    wanted = choose(reference)
    choices = np.asarray(choices).reshape(-1)
    wrong = np.flatnonzero(choices != wanted)
    found = {"agrees": bool(len(wrong) == 0), "turns_compared": int(len(choices)), "mismatches": int(len(wrong))}
    if scores is not None:
        found["max_abs_score_diff"] = float(np.abs(np.asarray(scores) - reference).max())
    if len(wrong):  # how close the Keras model's top two were on those turns (round-off can swap near-ties)
        top2 = np.sort(reference[wrong], axis=1)[:, -2:]
        found["keras_top2_margin_at_mismatches"] = [float(m) for m in (top2[:, 1] - top2[:, 0])[:10]]
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default=None,
                        help=f"a finished `keras-match train carnn_dialog_* --dataset {DATASET}` run; default: "
                        "--model with random weights")
    parser.add_argument("--model", default="carnn_dialog_i",
                        help="without --run-dir: the zoo entry (default carnn_dialog_i), preset settings")
    parser.add_argument("--set", action="append", metavar="KEY=JSON",
                        help="without --run-dir: override a preset setting, e.g. --set units=16 (repeatable)")
    parser.add_argument("--seed", type=int, default=1234, help="without --run-dir: the random weights' seed")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--turns", type=int, default=None, help="timed one-turn calls per path (default 200)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls per path first (default 10)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK_TURNS} timed calls per path (unless --turns), 1 warmup call")
    parser.add_argument("--threads", type=int, default=0,
                        help="TensorFlow intra- and inter-op threads and onnxruntime intra-op threads (0: defaults)")
    parser.add_argument("--no-onnx", action="store_true", help="skip the ONNX conversion and its timing")
    parser.add_argument("--export-dir", default=None, help="keep the export here (default: a temporary folder)")
    parser.add_argument("--out", default=None, help="also write the JSON to this file")
    parser.add_argument("--note", default=None, help="a note recorded in the JSON (e.g. what else ran)")
    args = parser.parse_args(argv)
    turns = args.turns if args.turns is not None else (QUICK_TURNS if args.quick else 200)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 10)
    if turns < 1 or warmup < 0 or args.threads < 0:
        raise SystemExit("--turns must be >= 1, --warmup and --threads >= 0")
    if args.run_dir:
        check_run_dir(args.run_dir)
    started, load_average = time.time(), os.getloadavg()

    import numpy as np
    import tensorflow as tf

    if args.threads:  # before TensorFlow runs an op
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    from keras_match import training
    from keras_match.artifacts import provenance
    from keras_match.inputs import pipeline
    from keras_match.serving import export
    from keras_match.datasets.catalog import load_by_name
    from keras_match.tasks import task_for

    dataset = load_by_name(DATASET, data_dir=args.data_dir)
    run, description, entry, units = build_run(args, dataset)
    task = task_for(dataset)
    turn_texts, turn_indices = test_turns(dataset, task, turns)
    t = len(turn_texts)
    candidates = list(run.preprocessor.candidates)
    _log(f"{description}: {len(candidates)} candidates, {t} test turns")

    # the Keras model's scores of the timed turns (turn i % t on call i), the reference of every path
    width = max(len(h) for h, _ in turn_texts) or 1
    padded = {"history": np.array([h + [""] * (width - len(h)) for h, _ in turn_texts], dtype=object),
              "context": np.array([c for _, c in turn_texts], dtype=object)}
    reference = np.asarray(run.predict(padded))
    reference = reference[[i % t for i in range(turns)]]

    out = pathlib.Path(args.export_dir) if args.export_dir else pathlib.Path(tempfile.mkdtemp(prefix="dialog_latency_"))
    try:
        _log("exporting the SavedModel")
        start = time.perf_counter()
        version_dir = export.saved_model(run, out / (entry or "model"))
        export_seconds = time.perf_counter() - start
        export_facts = {"saved_model_seconds": round(export_seconds, 2), "saved_model_mb": _size_mb(version_dir),
                        "saved_model_variables_mb": _size_mb(version_dir / "variables")}
        start = time.perf_counter()
        loaded = tf.saved_model.load(str(version_dir))
        export_facts["saved_model_load_seconds"] = round(time.perf_counter() - start, 2)

        history_tensors = [tf.constant([h], tf.string) if h else tf.zeros([1, 0], tf.string) for h, _ in turn_texts]
        context_tensors = [tf.constant([c], tf.string) for _, c in turn_texts]
        turn_history = [tf.constant(h, tf.string) if h else tf.zeros([0], tf.string) for h, _ in turn_texts]
        turn_context = [tf.constant(c, tf.string) for _, c in turn_texts]
        candidate_tensor = tf.constant(candidates, tf.string)
        latency, agreement = {}, {}

        _log(f"timing serving_default: {turns} calls of 1 turn x {len(candidates)} candidates")
        serving_default = loaded.signatures["serving_default"]
        seconds, outputs = _timed(lambda i: serving_default(history=history_tensors[i % t],
                                                             context=context_tensors[i % t]), turns, warmup)
        latency["savedmodel_serving_default_text"] = _percentiles(seconds)
        agreement["savedmodel_serving_default_text"] = _agreement(
            [int(o["choice"][0]) for o in outputs], np.stack([o["scores"].numpy()[0] for o in outputs]), reference)

        if "respond" in loaded.signatures:
            _log(f"timing respond: {turns} calls of 1 turn with {len(candidates)} candidate texts")
            respond = loaded.signatures["respond"]
            seconds, outputs = _timed(lambda i: respond(history=turn_history[i % t], context=turn_context[i % t],
                                                        candidates=candidate_tensor), turns, warmup)
            latency["savedmodel_respond_text_with_candidates"] = _percentiles(seconds)
            agreement["savedmodel_respond_text_with_candidates"] = _agreement(
                [int(o["choice"]) for o in outputs], np.stack([o["scores"].numpy() for o in outputs]), reference)
            responses = {o["response"].numpy().decode("utf-8") == candidates[int(o["choice"])] for o in outputs}
            agreement["savedmodel_respond_text_with_candidates"]["response_is_the_choice"] = responses == {True}
        else:
            latency["savedmodel_respond_text_with_candidates"] = {"error": "the export has no respond signature"}

        # the same turns as token ids, made beforehand (not timed), each cut to its longest text as the graph cuts
        # them: the model's own time, without the in-graph tokenization
        encoded = pipeline.encode(run.preprocessor, padded)
        turn_ids = [{k: np.asarray(v) for k, v in
                     run.preprocessor.trim_padding({k: v[row:row + 1] for k, v in encoded.items()}).items()}
                    for row in range(t)]
        _log(f"timing serve_ids: {turns} calls of 1 turn x {len(candidates)} candidates (ids)")
        serve_ids = loaded.signatures["serve_ids"]
        id_tensors = [{k: tf.constant(v) for k, v in turn.items()} for turn in turn_ids]
        seconds, outputs = _timed(lambda i: serve_ids(**id_tensors[i % t]), turns, warmup)
        latency["savedmodel_serve_ids"] = _percentiles(seconds)
        agreement["savedmodel_serve_ids"] = _agreement(
            [int(o["choice"][0]) for o in outputs], np.stack([o["scores"].numpy()[0] for o in outputs]), reference)

        onnx_facts = None
        if args.no_onnx:
            onnx_facts = {"skipped": "--no-onnx"}
        else:
            _log("converting serve_ids to ONNX")
            start = time.perf_counter()
            try:
                import onnxruntime

                converted = export.to_onnx(version_dir)
            except Exception as error:  # recorded, not fatal: the SavedModel figures stand on their own
                onnx_facts = {"error": f"{type(error).__name__}: {error}"}
                _log("ONNX conversion failed:", onnx_facts["error"])
            else:
                onnx_facts = {"seconds_with_verification": round(time.perf_counter() - start, 2),
                              "mb": _size_mb(converted.path), "opset": converted.opset,
                              "max_abs_diff_vs_tf": converted.max_abs_diff, "onnxruntime": onnxruntime.__version__}
                options = onnxruntime.SessionOptions()
                if args.threads:
                    options.intra_op_num_threads = args.threads
                    options.inter_op_num_threads = args.threads
                session = onnxruntime.InferenceSession(str(converted.path), options,
                                                       providers=["CPUExecutionProvider"])
                names = [i.name for i in session.get_inputs()]
                outputs_named = [o.name for o in session.get_outputs()]
                ids = [{name: turn[name] for name in names} for turn in turn_ids]
                _log(f"timing onnxruntime: {turns} calls of 1 turn x {len(candidates)} candidates (ids)")
                seconds, outputs = _timed(lambda i: session.run(outputs_named, ids[i % t]), turns, warmup)
                latency["onnxruntime_ids"] = _percentiles(seconds)
                by_name = [dict(zip(outputs_named, o)) for o in outputs]
                agreement["onnxruntime_ids"] = _agreement(
                    [int(np.asarray(o["choice"]).reshape(-1)[0]) for o in by_name],
                    np.stack([np.asarray(o["scores"])[0] for o in by_name]), reference)
        if onnx_facts and "error" in onnx_facts or args.no_onnx:
            latency["onnxruntime_ids"] = onnx_facts

        cores = os.cpu_count()
        note = args.note
        if load_average[0] >= 0.5 * cores:
            busy = (f"busy machine: load average {load_average[0]:.2f} at the start on {cores} cores; the "
                    "latencies are higher than an idle machine's")
            note = f"{note}; {busy}" if note else busy
        result = {
            "model": description,
            "entry": entry,
            "units": units,
            "dataset": DATASET,
            "num_candidates": len(candidates),
            "turns": {"timed_calls_per_path": turns, "warmup_calls_per_path": warmup, "distinct_test_turns": t,
                      "test_turn_indices": turn_indices if t <= 20 else [turn_indices[0], turn_indices[-1]],
                      "history_texts_min_max": [min(len(h) for h, _ in turn_texts),
                                                max(len(h) for h, _ in turn_texts)],
                      "max_turns_read": run.preprocessor.max_turns},
            "cores": cores,
            "threads": args.threads or None,
            f"latency_1_turn_x_{len(candidates)}_candidates": latency,
            "agreement": {"all_agree": all(a["agrees"] for a in agreement.values()), **agreement},
            "export": {**export_facts, "onnx": onnx_facts},
            "note": note,
            "provenance": provenance.collect(
                started, run_dir=args.run_dir, entry=entry, settings_overrides=args.set, seed=None if args.run_dir
                else args.seed, dataset=DATASET, data_files=training.data_files(dataset),
                load_average_at_start=[round(x, 2) for x in load_average]),
        }
        text = json.dumps(result, indent=2)
        print(text)
        if args.out:
            pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(args.out).write_text(text + "\n", encoding="utf-8")
        return result
    finally:
        if not args.export_dir:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
