"""float32 against mixed bfloat16: one training step and the serving latency of each family's main entry.

For each entry (default: every family's main entry on its paper's benchmark, `ENTRIES`), in a process of its own:

- the entry prepared as `keras-match train` prepares it (the training split's words and the default vectors'
  words, the preset's batch size, loss mode and length-bucketed batches at the benchmark's real lengths), built
  twice with the same initial weights: once in `float32`, once in `mixed_bfloat16` (`keras_match.precision`);
- one training step (`train_on_batch`) of each, on the same real batches, after `--warmup` steps of each
  (tracing), in `--rounds` alternating rounds of `--steps` steps (a machine whose load drifts affects both
  alike); the median step of each and their ratio `float32 / mixed_bfloat16` (above 1: bfloat16 is faster);
- serving: the model exported as `keras-match export --precision P` writes it (raw text in, tokenizer in the
  graph), loaded back, and one test question with 30 of its candidates (repeated when it has fewer) sent
  through `serving_default` `--requests` times: p50 / p99 milliseconds per request, in each precision;
- the largest difference between the two precisions' scores of those 30 pairs (initial weights);
- the CPU's bfloat16 units (`/proc/cpuinfo`: `amx_bf16`, `avx512_bf16`): without them TensorFlow emulates
  bfloat16 and it is slower, which the ratios then show.

Prints one JSON object, `{"entries": {name: {...}}, "provenance": {...}}`; `--table FILE` prints such a file as a
markdown table instead of measuring (a file without provenance is refused):

    python benchmarks/precision.py > benchmarks/results/precision/steps.json
    python benchmarks/precision.py mcan_fm --rounds 3 --steps 5
    python benchmarks/precision.py --table benchmarks/results/precision/steps.json

`--set KEY=VALUE` (repeatable, as `keras-match train --set`) changes a setting of every entry measured; the
result's key is then the entry and its settings (`carnn_dialog_n units=1024`), its `settings` the overrides. The
CARNN dialog model at the paper's width (issue 58):

    for units in 256 512 1024; do python benchmarks/precision.py carnn_dialog_n --set units=$units \
        --rounds 2 --steps 3 > benchmarks/results/precision/carnn_dialog_n-units$units.json; done
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from keras_match.artifacts import provenance

ENTRIES = {
    "mcan_fm": "trecqa-clean",
    "compare_aggregate_mult": "wikiqa",
    "ctrn": "trecqa-raw",
    "iwan_ncarnn": "trecqa-clean",
    "lc_lstm": "trecqa-clean",
    "carnn_dialog_i": "dialog-babi-task6",
}
"""Each family's main entry and the benchmark its paper reports (the shipped preset's)."""

PRECISIONS = ("float32", "mixed_bfloat16")


def _median(values):
    import numpy as np

    return float(np.median(values))


def _serving_latency(run, precision, question, candidates, requests):
    """p50 / p99 ms of one request of 1 question x len(candidates) candidates through the exported SavedModel."""
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the graph's tokenizer ops)

    from keras_match.serving import export

    folder = tempfile.mkdtemp(prefix="precision_export_")
    try:
        version_dir = export.saved_model(run, folder, precision=precision, warmup=False)
        serve = tf.saved_model.load(str(version_dir)).signatures["serving_default"]
        texts = {"question": tf.constant([question] * len(candidates)), "answer": tf.constant(candidates)}
        first = serve(**texts)  # tracing
        seconds = []
        for _ in range(requests):
            start = time.perf_counter()
            serve(**texts)["score"].numpy()
            seconds.append(time.perf_counter() - start)
        ms = 1000 * np.asarray(seconds)
        return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2),
                "scores": first["score"].numpy().astype(float).tolist()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _preset_dataset(name):
    """The dataset an entry's preset names (`keras_match.zoo.describe`), else trecqa-clean."""
    from keras_match import zoo

    dataset = zoo.describe(name).get("dataset")
    return dataset if isinstance(dataset, str) else "trecqa-clean"


def measure(name, dataset_name, data_dir, rounds, steps, warmup, requests, seed, overrides=None):
    import math

    import keras
    import numpy as np

    from keras_match import precision, training
    from keras_match.artifacts import runs
    from keras_match.training.recipe import Recipe

    keras.utils.set_random_seed(seed)
    recipe = Recipe.prepare(name, dataset_name, data_dir=data_dir, seed=seed, **(overrides or {}))
    examples = recipe.train_examples
    preprocessor = recipe.preprocessor()
    embeddings, _ = recipe.embeddings(preprocessor)
    fittings = {kind: recipe.fitting(preprocessor, settings=recipe.with_settings(precision=kind), embeddings=embeddings)
                for kind in PRECISIONS}
    models = {kind: fitting.model for kind, fitting in fittings.items()}
    fit_models = {kind: fitting.fit_model for kind, fitting in fittings.items()}
    models["mixed_bfloat16"].set_weights(models["float32"].get_weights())
    assert precision.of_model(models["mixed_bfloat16"]) == "mixed_bfloat16"

    per_epoch = fittings["float32"].batches(epochs=1).steps_per_epoch
    needed = warmup + rounds * steps
    data = fittings["float32"].batches(epochs=max(1, math.ceil(needed / per_epoch))).dataset
    batches = [batch for batch, _ in zip(data, range(needed))]

    seconds = {kind: [] for kind in PRECISIONS}
    losses = {kind: [] for kind in PRECISIONS}
    for kind in PRECISIONS:
        for x, y in batches[:warmup]:
            fit_models[kind].train_on_batch(x, y)
    for r in range(rounds):
        for kind in PRECISIONS:
            for x, y in batches[warmup + r * steps: warmup + (r + 1) * steps]:
                start = time.perf_counter()
                loss = fit_models[kind].train_on_batch(x, y)
                seconds[kind].append(time.perf_counter() - start)
                losses[kind].append(float(np.asarray(loss).reshape(-1)[0]))
    step_ms = {kind: round(1000 * _median(values), 2) for kind, values in seconds.items()}
    result = {
        "dataset": dataset_name,
        "settings": dict(overrides or {}),
        "loss_mode": recipe.mode,
        "batch_size": recipe.settings.training.batch_size,
        "step_ms": step_ms,
        "step_ratio": round(step_ms["float32"] / step_ms["mixed_bfloat16"], 3),
        "timed_steps": rounds * steps,
        "losses_finite": all(np.isfinite(v).all() for v in losses.values()),
        "mean_tokens_per_batch": round(float(np.mean([
            sum(int(np.count_nonzero(np.asarray(x[key]))) for key in preprocessor.SEQUENCE_INPUTS)
            for x, _ in batches])), 1),
    }
    if list(preprocessor.TEXT_INPUTS) == ["question", "answer"] and "test" in recipe.dataset:
        split = recipe.dataset["test"]
        pairs = split.pairs()
        questions = list(dict.fromkeys(pairs.questions.tolist()))
        counts = {q: int(np.sum(pairs.questions == q)) for q in questions}
        question = max(questions, key=counts.get)
        candidates = pairs.answers[pairs.questions == question].tolist()
        candidates = (candidates * math.ceil(30 / len(candidates)))[:30]
        serving = {}
        for kind in PRECISIONS:
            run = runs.Run(model=models["float32"], preprocessor=preprocessor, config={"zoo": name})
            serving[kind] = _serving_latency(run, kind, question, candidates, requests)
        scores = {kind: np.asarray(value.pop("scores")) for kind, value in serving.items()}
        result["serving_1x30"] = serving
        result["serving_ratio_p50"] = round(serving["float32"]["p50_ms"] / serving["mixed_bfloat16"]["p50_ms"], 3)
        # the initial weights' scores: how far bfloat16 arithmetic moves them (the figures of trained models are
        # compared by the seed runs, not here: untrained scores are near-ties)
        result["serving_max_abs_score_difference"] = round(float(np.abs(scores["float32"] -
                                                                        scores["mixed_bfloat16"]).max()), 5)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["data_files"] = training.data_files(recipe.dataset)
    return result


def table(results, where="results") -> str:
    """The markdown table of a results object."""
    units = results["provenance"]["machine"].get("bfloat16_units")
    lines = [f"bfloat16 units on this CPU: {', '.join(units) if units else 'none (bfloat16 emulated)'}", "",
             "| entry | dataset | mode | batch | step ms float32 | step ms mixed_bfloat16 | step ratio | "
             "serve 1x30 p50 / p99 ms float32 | mixed_bfloat16 | serving ratio |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, entry in results["entries"].items():
        if "error" in entry:
            lines.append(f"| `{name}` | {entry.get('dataset', '')} | error: {entry['error']} | | | | | | | |")
            continue
        serving = entry.get("serving_1x30")
        serve = {k: f"{v['p50_ms']:.1f} / {v['p99_ms']:.1f}" for k, v in serving.items()} if serving else {}
        lines.append(
            f"| `{name}` | {entry['dataset']} | {entry['loss_mode']} | {entry['batch_size']} | "
            f"{entry['step_ms']['float32']:.1f} | {entry['step_ms']['mixed_bfloat16']:.1f} | "
            f"{entry['step_ratio']:.2f}x | {serve.get('float32', '')} | {serve.get('mixed_bfloat16', '')} | "
            f"{'%.2fx' % entry['serving_ratio_p50'] if serving else ''} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="*", help=f"zoo entries (default {', '.join(ENTRIES)})")
    parser.add_argument("--dataset", default=None, help="one dataset for every entry (default: the entry's "
                        "dataset in ENTRIES, else its preset's)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps of each precision first (tracing: "
                        "length-bucketed batches have several shapes)")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of every entry measured (VALUE is JSON or, for a text setting, a word)")
    parser.add_argument("--table", default=None, metavar="FILE", help="print FILE as a table instead of measuring")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: one entry
    args = parser.parse_args(argv)
    if args.table:
        provenance.print_table(args.table, table)
        return 0
    from keras_match import zoo
    from keras_match.cli.commands import _parse_settings

    names = args.entries or ([args.one] if args.one else list(ENTRIES))
    try:
        overrides = {name: _parse_settings(name, args.set) for name in names}
        for name in names:  # an unknown setting or a value against its rule, before any process starts
            zoo.resolve(name, **overrides[name])
    except ValueError as error:
        print(f"precision: {error}", file=sys.stderr)
        return 2
    if args.one:
        result = measure(args.one, args.dataset, args.data_dir, args.rounds, args.steps, args.warmup, args.requests,
                         args.seed, overrides[args.one])
        print(json.dumps(result))
        return 0
    started, load_start = time.time(), os.getloadavg()
    entries = {}
    for name in names:
        dataset = args.dataset or ENTRIES.get(name) or _preset_dataset(name)
        key = " ".join([name] + args.set)
        command = [sys.executable, __file__, "--one", name, "--dataset", dataset, "--rounds", str(args.rounds),
                   "--steps", str(args.steps), "--warmup", str(args.warmup), "--requests", str(args.requests),
                   "--seed", str(args.seed)] + (["--data-dir", args.data_dir] if args.data_dir else [])
        command += [f"--set={item}" for item in args.set]
        print(f"{key} on {dataset} ...", file=sys.stderr, flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            entries[key] = {"dataset": dataset, "settings": overrides[name],
                            "error": lines[-1] if lines else f"exit {done.returncode}"}
        else:
            entries[key] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  {json.dumps({k: v for k, v in entries[key].items() if k != 'data_files'})}", file=sys.stderr,
              flush=True)
    print(json.dumps({"entries": entries, "provenance": provenance.collect(
        started, seed=args.seed, rounds=args.rounds, steps=args.steps, warmup=args.warmup, requests=args.requests,
        load_average_at_start=[round(x, 2) for x in load_start])}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
