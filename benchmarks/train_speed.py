"""Training and scoring speed of the zoo on a real benchmark's pairs, with and without length bucketing.

For each zoo entry (its preset as `keras-match train` builds it: the training split's words (TrecQA: TRAIN-ALL)
followed by the default vectors' words, those frozen vectors, the preset's batch size and loss mode), on
`--dataset` (default trecqa-clean), in a process of its own so that its peak memory is its own:

- training pairs per second with length-bucketed batches and with plain shuffled batches, measured in
  alternating rounds of `--steps` training steps each (the same model, optimizer and process; a machine whose
  load drifts during the run affects both alike), after `--warmup` steps of each kind (tracing);
- training questions per second: the pairs per second times the questions an epoch trains on over the pairs
  it scores (one epoch's plan, `keras_match.inputs.batching.plan`: listwise and pairwise plans leave out the questions
  without a positive), so the rate at which an epoch's questions go by;
- scoring pairs per second (`keras_match.inputs.pipeline.predict`, length-sorted batches of 256) over the dataset's
  dev + test;
- with `--saved-model`: the model (its initial weights) exported as `keras-match export` does, loaded back, and
  the test pairs sent as raw text through its `serving_default` signature in batches of `--serve-batch`: pairs
  per second (tokenization in the graph included) after one warm-up batch;
- the padded share of the id tensors (padding / all positions) of each kind of batch;
- peak resident memory (ru_maxrss).

Prints one JSON object: `{"entries": {name: {...}}, "provenance": {...}}` (`keras_match.artifacts.provenance`: the command,
the code, the versions, the machine with its load average at the end, the start and end times, and the seed, the
dataset, its data files and the vectors with their sha256, and the load average at the start). `--table FILE`
prints such a file (or one that wraps it with more keys) as a markdown table instead of measuring; a file without
provenance is refused:

    python benchmarks/train_speed.py mcan_fm ctrn > speed.json
    python benchmarks/train_speed.py --table speed.json

    python benchmarks/train_speed.py                      # every zoo entry
    python benchmarks/train_speed.py mcan_fm ctrn --rounds 5 --steps 30
    python benchmarks/train_speed.py mcan_fm --loss pointwise pairwise_hinge listwise_softmax
    python benchmarks/train_speed.py compare_aggregate_{nn,ntn,euccos,sub,mult,submult_nn} --dataset wikiqa \
        --saved-model

Pairs per second count the (question, answer) pairs a step scores: one per pointwise example, two per pairwise
row, the real items of a listwise list (not its padding).
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


def measure(name, data_dir, rounds, steps, warmup, seed, loss=None, dataset_name="trecqa-clean",
            saved_model=False, serve_batch=256):
    import math

    import keras
    import numpy as np

    from keras_match import training
    from keras_match.artifacts import runs
    from keras_match.inputs import pipeline
    from keras_match.training.recipe import Recipe

    keras.utils.set_random_seed(seed)
    # the entry prepared as `keras-match train` prepares it: settings, data, vectors, preprocessor, model
    recipe = Recipe.prepare(name, dataset_name, data_dir=data_dir, seed=seed, **({"loss": loss} if loss else {}))
    dataset, task, mode, settings = recipe.dataset, recipe.task, recipe.mode, recipe.settings.training
    examples = recipe.train_examples
    preprocessor = recipe.preprocessor()
    fitting = recipe.fitting(preprocessor)  # the model, compiled, and the encoded splits, as training makes them
    model, fit_model = fitting.model, fitting.fit_model

    def batches(bucketing):
        kind = recipe.with_settings(bucketing=bucketing)
        # enough epochs of the loss mode's batches for the warm-up and the timed steps (repeated if need be)
        per_epoch = fitting.batches(epochs=1, settings=kind).steps_per_epoch
        epochs = max(1, math.ceil((warmup + rounds * steps) / per_epoch))
        data = fitting.batches(epochs=epochs, settings=kind).dataset
        while True:
            yield from data

    streams = {"bucketed": batches(True), "plain": batches(False)}
    pairs = {kind: 0 for kind in streams}
    seconds = {kind: 0.0 for kind in streams}
    positions = {kind: [0, 0] for kind in streams}  # real, all

    def run(kind, count, timed):
        for _ in range(count):
            x, y = next(streams[kind])
            start = time.perf_counter()
            fit_model.train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if timed:
                seconds[kind] += elapsed
                # real (question, answer) pairs scored: padded list items (label -1) do not count
                pairs[kind] += int(np.sum(np.asarray(y) >= 0)) if mode == "listwise" else int(
                    np.prod(x["question"].shape[:-1]))
                for key in preprocessor.SEQUENCE_INPUTS:
                    ids = np.asarray(x[key])
                    positions[kind][0] += int(np.count_nonzero(ids))
                    positions[kind][1] += ids.size

    for kind in streams:
        run(kind, warmup, timed=False)
    for _ in range(rounds):
        for kind in streams:
            run(kind, steps, timed=True)

    score_inputs = [recipe.encode(preprocessor, task.examples(dataset[split])) for split in ("dev", "test")]
    pipeline.predict(model, score_inputs[0], preprocessor.SEQUENCE_INPUTS)  # warm-up (tracing)
    start = time.perf_counter()
    scored = sum(len(pipeline.predict(model, encoded, preprocessor.SEQUENCE_INPUTS)) for encoded in score_inputs)
    score_seconds = time.perf_counter() - start

    speed = {kind: pairs[kind] / seconds[kind] for kind in streams}
    questions_per_pair = _questions_per_pair(examples, mode, settings, seed)
    result = {
        "dataset": dataset_name,
        "loss_mode": mode,
        "batch_size": settings.batch_size,
        "train_pairs_per_s": {kind: round(value, 1) for kind, value in speed.items()},
        "train_questions_per_s": {kind: round(value * questions_per_pair, 2) for kind, value in speed.items()},
        "bucketed_speedup": round(speed["bucketed"] / speed["plain"], 2),
        "padding_share": {kind: round(1 - real / total, 3) for kind, (real, total) in positions.items()},
        "timed_steps": rounds * steps,
        "score_pairs_per_s": round(scored / score_seconds, 1),
        "scored_pairs": scored,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "vocab_size": preprocessor.vocab_size,
        "train_pairs": len(examples),
        "train_questions": len(recipe.train_split),
        # what the entry read (`main` moves them to the provenance when every entry read the same)
        "data_files": training.data_files(dataset),
        "embeddings": {"path": recipe.vectors.source, "sha256": recipe.vectors.sha256} if recipe.vectors else None,
    }
    if saved_model:
        result["saved_model"] = serving_speed(runs.Run(model=model, preprocessor=preprocessor, config={"zoo": name}),
                                              dataset["test"].pairs(), serve_batch)
    return result


def _questions_per_pair(examples, mode, settings, seed):
    """Questions over scored pairs in one epoch's plan of `mode` (`settings`: the `TrainingSettings`)."""
    import numpy as np

    from keras_match.inputs import batching

    batches = batching.plan(mode, examples.groups, examples.labels, settings.batch_size,
                            np.random.default_rng(seed), list_size=settings.list_size)
    indices = np.concatenate([b.reshape(-1) for b in batches])
    real = indices[indices != batching.PAD_INDEX]
    return len(np.unique(np.asarray(examples.groups)[real])) / len(real)


def serving_speed(run, pairs, batch_size):
    """Pairs per second through the exported SavedModel's `serving_default` (raw text in, score out)."""
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the graph's tokenizer ops)

    from keras_match.serving import export

    folder = tempfile.mkdtemp(prefix="train_speed_export_")
    try:
        version_dir = export.saved_model(run, folder)
        serve = tf.saved_model.load(str(version_dir)).signatures["serving_default"]
        batches = [(tf.constant(pairs.questions[i:i + batch_size].tolist()),
                    tf.constant(pairs.answers[i:i + batch_size].tolist()))
                   for i in range(0, len(pairs), batch_size)]
        serve(question=batches[0][0], answer=batches[0][1])  # warm-up
        start = time.perf_counter()
        outputs = [serve(question=q, answer=a) for q, a in batches]
        seconds = time.perf_counter() - start
        scores = np.concatenate([o["score"].numpy() for o in outputs])
        if scores.shape[0] != len(pairs) or not np.isfinite(scores).all():
            raise ValueError(f"the SavedModel returned {scores.shape[0]} scores for {len(pairs)} pairs, or scores "
                             "that are not finite")
        return {"pairs_per_s": round(len(pairs) / seconds, 1), "pairs": len(pairs), "batch_size": batch_size}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


SHARED = ("data_files", "embeddings")
"""The keys of an entry's result that name what it read: the provenance's when every entry read the same."""


def results_object(entries, started, seed, dataset, load_average_start):
    """The printed JSON object: the entries, and their provenance; `data_files` and `embeddings` move from the
    entries to the provenance when every measured entry has the same (else each entry keeps its own)."""
    measured = [entry for entry in entries.values() if "error" not in entry]
    shared = {}
    for key in SHARED:
        values = [entry.get(key) for entry in measured]
        if values and all(value == values[0] for value in values):
            shared[key] = values[0]
            for entry in measured:
                entry.pop(key, None)
    return {"entries": entries,
            "provenance": provenance.collect(started, seed=seed, dataset=dataset, **shared,
                                             load_average_at_start=[round(x, 2) for x in load_average_start])}


def table(results, where="results") -> str:
    """The markdown table of a results object: one row per entry, with its training questions and pairs per
    second (bucketed / plain), scoring pairs per second, SavedModel serving pairs per second when measured, the
    padded share of bucketed batches and the peak memory; an entry whose child process failed shows its error.

    Raises:
        SystemExit: `results` (read from `where`) has no provenance.
    """
    provenance.require(results, where)
    lines = ["| entry | training questions/s, bucketed / plain | training pairs/s, bucketed / plain | scoring "
             "pairs/s | SavedModel pairs/s | padding, bucketed | peak RSS MB |", "|---|---|---|---|---|---|---|"]
    for name, entry in results["entries"].items():
        if "error" in entry:
            lines.append(f"| `{name}` | failed: {' '.join(entry['error'])} | | | | | |")
            continue
        questions, pairs = entry["train_questions_per_s"], entry["train_pairs_per_s"]
        served = f"{entry['saved_model']['pairs_per_s']:.0f}" if entry.get("saved_model") else "–"
        lines.append(f"| `{name}` | {questions['bucketed']:.1f} / {questions['plain']:.1f} | {pairs['bucketed']:.0f} / "
                     f"{pairs['plain']:.0f} | {entry['score_pairs_per_s']:.0f} | {served} | "
                     f"{entry['padding_share']['bucketed']:.2f} | {entry['peak_rss_mb']:.0f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="zoo entries (default: all)")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds of bucketed / plain steps")
    parser.add_argument("--steps", type=int, default=25, help="timed training steps per round and kind")
    parser.add_argument("--warmup", type=int, default=8, help="untimed steps of each kind first")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--loss", nargs="+", default=[None], metavar="LOSS",
                        help="losses to measure (pointwise, pairwise_hinge, listwise_softmax; default: the preset's)")
    parser.add_argument("--dataset", default="trecqa-clean", help="a ranking benchmark (default trecqa-clean)")
    parser.add_argument("--saved-model", action="store_true",
                        help="also export each model and time its serving_default signature on the test pairs")
    parser.add_argument("--serve-batch", type=int, default=256, help="pairs per serving call (default 256)")
    parser.add_argument("--entry", default=None, help=argparse.SUPPRESS)  # the per-entry child process
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="print the markdown table of a JSON file this script wrote (with its provenance), "
                             "and stop")
    args = parser.parse_args(argv)
    if args.table:
        provenance.print_table(args.table, table)  # SystemExit when unreadable or without provenance
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    if args.entry:
        result = measure(args.entry, args.data_dir, args.rounds, args.steps, args.warmup, args.seed, args.loss[0],
                         dataset_name=args.dataset, saved_model=args.saved_model, serve_batch=args.serve_batch)
        print(json.dumps(result))
        return

    from keras_match import zoo

    names = args.names or zoo.names()
    started, load_average_start = time.time(), os.getloadavg()
    entries = {}
    for name in names:
        for loss in args.loss:
            key = name if loss is None else f"{name} {loss}"
            print(f"measuring {key} ...", file=sys.stderr, flush=True)
            command = [sys.executable, __file__, "--entry", name, "--rounds", str(args.rounds), "--steps",
                       str(args.steps), "--warmup", str(args.warmup), "--seed", str(args.seed), "--dataset",
                       args.dataset, "--serve-batch", str(args.serve_batch)] + (["--saved-model"] if args.saved_model else [])
            if loss:
                command += ["--loss", loss]
            if args.data_dir:
                command += ["--data-dir", args.data_dir]
            child = subprocess.run(command, capture_output=True, text=True)
            if child.returncode != 0:
                entries[key] = {"error": child.stderr.strip().splitlines()[-1:]}
            else:
                entries[key] = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{key}: {json.dumps(entries[key])}", file=sys.stderr, flush=True)
    json.dump(results_object(entries, started, args.seed, args.dataset, load_average_start), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
