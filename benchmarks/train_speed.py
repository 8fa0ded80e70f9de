"""Training and scoring speed of the zoo on real TrecQA TRAIN-ALL pairs, with and without length bucketing.

For each zoo entry (its preset as `keras-match train` builds it: the TRAIN-ALL words followed by the default
vectors' words, those frozen vectors, the preset's batch size and loss mode), in a process of its own so that
its peak memory is its own:

- training pairs per second with length-bucketed batches and with plain shuffled batches, measured in
  alternating rounds of `--steps` training steps each (the same model, optimizer and process; a machine whose
  load drifts during the run affects both alike), after `--warmup` steps of each kind (tracing);
- scoring pairs per second (`keras_match.pipeline.predict`, length-sorted batches of 256) over TrecQA clean
  dev + test;
- the padded share of the id tensors (padding / all positions) of each kind of batch;
- peak resident memory (ru_maxrss).

Prints one JSON object: `{"machine": ..., "entries": {name: {...}}}`.

    python benchmarks/train_speed.py                      # every zoo entry
    python benchmarks/train_speed.py mcan_fm ctrn --rounds 5 --steps 30
    python benchmarks/train_speed.py mcan_fm --loss pointwise pairwise_hinge listwise_softmax

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


def measure(name, data_dir, rounds, steps, warmup, seed, loss=None):
    import keras
    import numpy as np

    from keras_match import heads, losses, pipeline, tasks, text, training, zoo
    from keras_match.datasets.catalog import load_by_name
    from keras_match.vectors import load_vectors

    keras.utils.set_random_seed(seed)
    dataset = load_by_name("trecqa-clean", data_dir=data_dir)
    task = tasks.task_for(dataset)
    preset, mode = training._resolve_preset(name, task, None, None, {"loss": loss} if loss else {})
    settings = preset["training"]
    examples = task.examples(dataset["train"])
    vectors = load_vectors(training.default_embeddings_path(data_dir))
    preprocessor = training.build_preprocessor(examples, preset, vectors)
    embeddings, _ = text.load_embeddings(vectors, preprocessor.encoder, seed=seed)
    model = zoo.build(preset, vocab_size=preprocessor.vocab_size, embeddings=embeddings,
                      num_features=preprocessor.num_features)
    fit_model = training._compile_for_mode(model, preset, mode)
    inputs = pipeline.encode(preprocessor, examples.texts)

    def batches(bucketing):
        data = pipeline.training_dataset(inputs, examples, mode, settings["batch_size"], seed, bucketing=bucketing,
                                         list_size=settings.get("list_size"))
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
                for key in ("question", "answer"):
                    ids = np.asarray(x[key])
                    positions[kind][0] += int(np.count_nonzero(ids))
                    positions[kind][1] += ids.size

    for kind in streams:
        run(kind, warmup, timed=False)
    for _ in range(rounds):
        for kind in streams:
            run(kind, steps, timed=True)

    score_data = [task.examples(dataset[split]) for split in ("dev", "test")]
    score_inputs = [pipeline.encode(preprocessor, ex.texts) for ex in score_data]
    pipeline.predict(model, score_inputs[0])  # warm-up (tracing)
    start = time.perf_counter()
    scored = sum(len(pipeline.predict(model, encoded)) for encoded in score_inputs)
    score_seconds = time.perf_counter() - start

    speed = {kind: pairs[kind] / seconds[kind] for kind in streams}
    return {
        "loss_mode": mode,
        "batch_size": settings["batch_size"],
        "train_pairs_per_s": {kind: round(value, 1) for kind, value in speed.items()},
        "bucketed_speedup": round(speed["bucketed"] / speed["plain"], 2),
        "padding_share": {kind: round(1 - real / total, 3) for kind, (real, total) in positions.items()},
        "timed_steps": rounds * steps,
        "score_pairs_per_s": round(scored / score_seconds, 1),
        "scored_pairs": scored,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "vocab_size": preprocessor.vocab_size,
        "train_pairs": len(examples),
    }


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
    parser.add_argument("--entry", default=None, help=argparse.SUPPRESS)  # the per-entry child process
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    if args.entry:
        result = measure(args.entry, args.data_dir, args.rounds, args.steps, args.warmup, args.seed, args.loss[0])
        print(json.dumps(result))
        return

    from keras_match import zoo

    names = args.names or zoo.names()
    results = {"machine": {"cpus": os.cpu_count(), "load_average_start": os.getloadavg()}, "entries": {}}
    for name in names:
        for loss in args.loss:
            key = name if loss is None else f"{name} {loss}"
            print(f"measuring {key} ...", file=sys.stderr, flush=True)
            command = [sys.executable, __file__, "--entry", name, "--rounds", str(args.rounds), "--steps",
                       str(args.steps), "--warmup", str(args.warmup), "--seed", str(args.seed)]
            if loss:
                command += ["--loss", loss]
            if args.data_dir:
                command += ["--data-dir", args.data_dir]
            child = subprocess.run(command, capture_output=True, text=True)
            if child.returncode != 0:
                results["entries"][key] = {"error": child.stderr.strip().splitlines()[-1:]}
            else:
                results["entries"][key] = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{key}: {json.dumps(results['entries'][key])}", file=sys.stderr, flush=True)
    results["machine"]["load_average_end"] = os.getloadavg()
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
