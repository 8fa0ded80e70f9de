"""Training step time of zoo entries over a pretrained transformer backbone (issue 57), beside the same entries over
their papers' 50d word vectors; prints JSON.

Each configuration is a zoo entry built by `keras_match.zoo.build(keras_match.zoo.resolve(name, **settings))` with
its preset's sizes: `words` (the paper's frozen 50d word vectors, a vocabulary of `--vocab-size` ids),
`frozen` (`backbone=minilm-l6`, no backbone weight trains) and `top2` (`backbone_trainable=2`: the top two of the
six transformer layers train). It is compiled with its preset's optimizer and pointwise loss and trained with
`model.train_on_batch` on `--batch-size` pairs of random token ids (`[CLS]` ... `[SEP]` for the backbone), every
question `--question-length` and every answer `--answer-length` ids long (no padding: the worst case of a batch),
random 0 / 1 labels. Reported per configuration: the first two steps (`first_steps_s`: tracing the train step,
its first execution, one more step), the median of `--rounds` further steps (`step_s`, wall clock), the
parameters, the trainable parameters, and `epoch_minutes_trecqa_clean`: the step time times the batches of
TrecQA clean's 53,417 training pairs (an estimate for planning, not a measured epoch).

    python benchmarks/backbone_speed.py > benchmarks/results/backbones/steps.json
    python benchmarks/backbone_speed.py --quick

The pretrained encoder is found as `keras_match.encoders.pretrained.locate` finds it (`$KERAS_MATCH_ENCODERS`,
else the user cache; fetched on first use). The JSON's `provenance` records command, code, versions, machine
(with its load before and after) and times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from keras_match import zoo  # noqa: E402
from keras_match.artifacts import provenance  # noqa: E402

ENTRIES = ("compare_aggregate_mult", "mcan_fm", "ctrn", "iwan_ncarnn")
"""The entries timed (the issue's transformer-input variants)."""

VARIANTS = {"words": {}, "frozen": {"backbone": "minilm-l6"},
            "top2": {"backbone": "minilm-l6", "backbone_trainable": 2}}
"""The input encoders compared, as zoo settings."""

TRECQA_CLEAN_TRAIN_PAIRS = 53_417


def _ids(rng, batch, length, vocab_size, wordpiece):
    ids = rng.integers(1000 if wordpiece else 2, vocab_size, size=(batch, length)).astype("int32")
    if wordpiece:
        ids[:, 0], ids[:, -1] = 101, 102  # [CLS], [SEP]
    return ids


def measure(name, variant, args):
    settings = zoo.resolve(name, **VARIANTS[variant])
    wordpiece = variant != "words"
    vocab_size = 30_522 if wordpiece else args.vocab_size
    model = zoo.build(settings, vocab_size=None if wordpiece else vocab_size)
    zoo.compile_model(model, settings)
    rng = np.random.default_rng(args.seed)
    inputs = {"question": _ids(rng, args.batch_size, args.question_length, vocab_size, wordpiece),
              "answer": _ids(rng, args.batch_size, args.answer_length, vocab_size, wordpiece)}
    if "features" in [tensor.name for tensor in model.inputs]:
        inputs["features"] = rng.random((args.batch_size, model.get_layer("features").output.shape[-1]),
                                        dtype=np.float32)
    labels = rng.integers(0, 2, size=(args.batch_size, 1)).astype("float32")  # every head's pointwise loss reads 0 / 1
    started = time.perf_counter()
    for _ in range(2):
        model.train_on_batch(inputs, labels)
    first = time.perf_counter() - started
    steps = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        model.train_on_batch(inputs, labels)
        steps.append(time.perf_counter() - started)
    step = statistics.median(steps)
    return {
        "first_steps_s": round(first, 2),
        "step_s": round(step, 4),
        "parameters": int(model.count_params()),
        "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
        "epoch_minutes_trecqa_clean": round(step * np.ceil(TRECQA_CLEAN_TRAIN_PAIRS / args.batch_size) / 60, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", nargs="+", default=list(ENTRIES))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--question-length", type=int, default=20)
    parser.add_argument("--answer-length", type=int, default=40)
    parser.add_argument("--vocab-size", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one entry, 2 rounds, batch 4: a test's size")
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.rounds, args.batch_size = args.entries[:1], 2, 4
    started = time.time()
    results = {}
    for name in args.entries:
        for variant in args.variants:
            results[f"{name}/{variant}"] = dict(entry=name, variant=variant, **measure(name, variant, args))
            print(f"{name} {variant}: {results[f'{name}/{variant}']}", file=sys.stderr, flush=True)
    report = {"entries": results, "settings": {k: v for k, v in vars(args).items() if k != "entries"}}
    report["provenance"] = provenance.collect(started)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
