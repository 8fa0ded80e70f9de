"""Training step time of IWAN with each CARNN encoder, and the iCARNN / sCARNN fast path against the stepped cell;
prints JSON.

Two measurements (issue 33, "Speed"):

- `iwan`: one training step (forward + backward + Adam update: one `model.train_on_batch`, which runs the model's
  compiled `tf.function` train step) of the zoo entries `iwan_ncarnn`, `iwan_icarnn`, `iwan_scarnn` and, for
  reference, `iwan` (its BiLSTM), each built by `keras_match.zoo.load(name, vocab_size=...)` with its preset's
  sizes (50d frozen embeddings, 100 units per direction, 50 for sCARNN; the preset's optimizer and pointwise
  loss), on `--batch-size` 64 random pairs of `--question-length` 40 and `--answer-length` 60 token ids with no
  padding (every pair at TrecQA's caps: the worst case of a batch) and random 0 / 1 labels. The entries are timed
  in interleaved rounds (one step of each per round, in turn), so a machine whose load drifts affects them
  alike. Reported: each entry's step time and its ratio to nCARNN's (`ratio_to_ncarnn`, < 1 is faster; the CARNN
  paper reports sCARNN about 30 % faster than nCARNN, i.e. about 0.7).
- `layer`: one `CARNN(units, variant)` layer alone (forward direction, `--layer-batch-size` 64 sequences of
  `--dim` 50 word vectors, a `--dim`-wide context, `--layer-units` 100 for "i", the input width for "s") at
  lengths `--lengths` {20, 40, 80, 160}, a quarter of the sequences padded to random shorter lengths. The fast
  path (`CARNN(variant="i" | "s")`: every gate at once, then `gated_linear_recurrence`'s `tf.scan`) is timed
  against the same `CARNNCell` (the layer's own cell, so the same weights) stepped by
  `keras.layers.RNN(cell, return_sequences=True, zero_output_for_mask=True)` over `[e_m; c]` (the context tiled
  onto every step, as `CARNN` feeds the nCARNN cell). Before timing, both must give the same outputs (max abs
  difference <= 1e-4, reported as `max_abs_difference`) and the same gradients (relative to the largest, also
  <= 1e-4); otherwise the script stops with AssertionError. One step is the layer's outputs, a random projection
  of them summed, and the gradients with respect to the layer's weights, the sequence and the context
  (`tf.GradientTape` in one `tf.function`). For reference `CARNN(variant="n")` (nCARNN has only the stepped
  form) is timed the same way (`ncarnn_stepped`).

Times are medians over `--rounds` calls after `--warmup` (wall clock, and the CPU time of this process, which
exceeds the wall time when TensorFlow's thread pools run in parallel). `--quick` shrinks everything (a test's
size). The JSON's `provenance` (`keras_match.artifacts.provenance`) records the command, code, versions, machine (with
load average at the start and end), the CPUs this process may run on (`cpu_affinity`, e.g. under `taskset`) and
the times. Serving latency (1 question x 30 candidates) and SavedModel / ONNX parity of the IWAN entries are
measured by `export_latency.py --model iwan_icarnn` (and the others).

    taskset -c 1 python benchmarks/carnn_speed.py > benchmarks/results/iwan/carnn_speed.json
    python benchmarks/carnn_speed.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_match.artifacts import provenance  # noqa: E402

ENTRIES = {"ncarnn": "iwan_ncarnn", "icarnn": "iwan_icarnn", "scarnn": "iwan_scarnn", "bilstm": "iwan"}
"""The encoders timed inside IWAN and their zoo entries; nCARNN is the ratios' reference."""

TOLERANCE = 1e-4
"""The largest max abs difference of outputs (and of gradients, relative to the largest) fast vs stepped."""


def _log(*args):
    print(*args, file=sys.stderr, flush=True)


def _summary(wall, cpu):
    return {"median_wall_ms": round(statistics.median(wall), 2), "median_cpu_ms": round(statistics.median(cpu), 2),
            "p90_wall_ms": round(float(np.percentile(wall, 90)), 2), "rounds": len(wall)}


def _once(fn):
    start, cpu_start = time.perf_counter(), time.process_time()
    fn()
    return 1000.0 * (time.perf_counter() - start), 1000.0 * (time.process_time() - cpu_start)


def _timed(fn, rounds, warmup):
    for _ in range(warmup):
        fn()
    wall, cpu = zip(*(_once(fn) for _ in range(rounds)))
    return _summary(wall, cpu)


# ---- IWAN training steps -------------------------------------------------------------------------------------

def iwan_steps(encoders, batch, question_length, answer_length, vocab_size, rounds, warmup, seed):
    """`{encoder: timing}` of one `train_on_batch` of each encoder's IWAN entry, in interleaved rounds."""
    from keras_match import zoo

    rng = np.random.default_rng(seed)
    x = {"question": rng.integers(1, vocab_size, size=(batch, question_length)).astype("int32"),
         "answer": rng.integers(1, vocab_size, size=(batch, answer_length)).astype("int32")}
    y = rng.integers(0, 2, size=(batch,)).astype("int32")
    models, result = {}, {}
    for encoder in encoders:
        model = zoo.load(ENTRIES[encoder], vocab_size=vocab_size)
        _log(f"iwan: {ENTRIES[encoder]} built, warming up")
        for _ in range(warmup):
            model.train_on_batch(x, y)
        models[encoder] = model
        result[encoder] = {"entry": ENTRIES[encoder], "parameters": int(model.count_params()),
                           "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights))}
    wall = {encoder: [] for encoder in encoders}
    cpu = {encoder: [] for encoder in encoders}
    for r in range(rounds):
        for encoder in encoders:
            w, c = _once(lambda: models[encoder].train_on_batch(x, y))
            wall[encoder].append(w)
            cpu[encoder].append(c)
        _log(f"iwan: round {r + 1}/{rounds}")
    for encoder in encoders:
        result[encoder].update(_summary(wall[encoder], cpu[encoder]))
    if "ncarnn" in result:
        reference = result["ncarnn"]
        for encoder in encoders:
            result[encoder]["ratio_to_ncarnn"] = {
                "wall": round(result[encoder]["median_wall_ms"] / reference["median_wall_ms"], 3),
                "cpu": round(result[encoder]["median_cpu_ms"] / reference["median_cpu_ms"], 3)}
    return result


# ---- the CARNN layer: fast path against the stepped cell -----------------------------------------------------

def _layer_inputs(batch, length, dim, seed):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(batch, length, dim)).astype("float32"))
    c = tf.constant(rng.normal(size=(batch, dim)).astype("float32"))
    lengths = np.full(batch, length)
    padded = rng.permutation(batch)[: batch // 4]  # a quarter of the rows shorter, padded at the end
    lengths[padded] = rng.integers(1, length + 1, size=len(padded))
    mask = tf.constant(np.arange(length)[None, :] < lengths[:, None])
    return x, c, mask


def _gradient_step(forward, weights, x, c, projection):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch([x, c])
            loss = tf.reduce_sum(forward() * projection)
        return loss, tape.gradient(loss, weights + [x, c])

    return step


def layer_paths(variant, batch, length, dim, units, rounds, warmup, seed):
    """The fast `CARNN(variant)` and its cell stepped by `keras.layers.RNN`: agreement and timings."""
    from keras_match.layers import CARNN

    x, c, mask = _layer_inputs(batch, length, dim, seed)
    fast = CARNN(units, variant=variant, name=f"carnn_{variant}_{length}")
    fast([x, c], mask=[mask, None])
    stepped_rnn = keras.layers.RNN(fast.cell, return_sequences=True, zero_output_for_mask=True,
                                   name=f"stepped_{variant}_{length}")

    def fast_forward():
        return fast([x, c], mask=[mask, None])

    def stepped_forward():
        tiled = tf.tile(c[:, None, :], tf.stack([1, tf.shape(x)[1], 1]))
        return stepped_rnn(tf.concat([x, tiled], axis=-1), mask=mask)

    fast_out, stepped_out = fast_forward(), stepped_forward()
    weights = list(fast.trainable_weights)
    if {id(w) for w in stepped_rnn.trainable_weights} != {id(w) for w in weights}:
        raise AssertionError(f"{variant}: the stepped RNN does not hold the fast layer's weights")
    difference = float(tf.reduce_max(tf.abs(fast_out - stepped_out)))
    if not difference <= TOLERANCE:
        raise AssertionError(f"CARNN variant {variant!r}, length {length}: fast and stepped outputs differ by "
                             f"{difference}")
    projection = tf.constant(np.random.default_rng(seed + 1).normal(size=fast_out.shape).astype("float32"))
    fast_step = _gradient_step(fast_forward, weights, x, c, projection)
    stepped_step = _gradient_step(stepped_forward, weights, x, c, projection)
    gradients = [float(tf.reduce_max(tf.abs(a - b)) / tf.maximum(tf.reduce_max(tf.abs(a)), 1e-12))
                 for a, b in zip(fast_step()[1], stepped_step()[1])]
    if not max(gradients) <= TOLERANCE:
        raise AssertionError(f"CARNN variant {variant!r}, length {length}: fast and stepped gradients differ by "
                             f"{max(gradients)} of their largest value")
    result = {"units": units, "max_abs_difference": difference,
              "max_gradient_difference_relative_to_largest": max(gradients)}
    result["fast"] = _timed(fast_step, rounds, warmup)
    result["stepped"] = _timed(stepped_step, rounds, warmup)
    result["speedup_wall"] = round(result["stepped"]["median_wall_ms"] / result["fast"]["median_wall_ms"], 2)
    result["speedup_cpu"] = round(result["stepped"]["median_cpu_ms"] / result["fast"]["median_cpu_ms"], 2)
    return result


def ncarnn_layer(batch, length, dim, units, rounds, warmup, seed):
    """`CARNN(variant="n")` (stepped by `keras.layers.RNN` inside the layer), timed like the others."""
    from keras_match.layers import CARNN

    x, c, mask = _layer_inputs(batch, length, dim, seed)
    layer = CARNN(units, variant="n", name=f"carnn_n_{length}")
    out = layer([x, c], mask=[mask, None])
    projection = tf.constant(np.random.default_rng(seed + 1).normal(size=out.shape).astype("float32"))
    step = _gradient_step(lambda: layer([x, c], mask=[mask, None]), list(layer.trainable_weights), x, c, projection)
    return {"units": units, **_timed(step, rounds, warmup)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encoders", nargs="+", default=list(ENTRIES), choices=list(ENTRIES))
    parser.add_argument("--batch-size", type=int, default=64, help="IWAN training batch")
    parser.add_argument("--question-length", type=int, default=40)
    parser.add_argument("--answer-length", type=int, default=60)
    parser.add_argument("--vocab-size", type=int, default=20000, help="the presets' vocab_size")
    parser.add_argument("--layer-batch-size", type=int, default=64)
    parser.add_argument("--dim", type=int, default=50, help="word vector (and context) width of the layer timing")
    parser.add_argument("--layer-units", type=int, default=100, help="iCARNN / nCARNN units of the layer timing")
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 40, 80, 160])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes for a test: batch 4, lengths 5 / 7, layer lengths 3 and 6, 2 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_size, args.question_length, args.answer_length, args.vocab_size = 4, 5, 7, 50
        args.layer_batch_size, args.dim, args.layer_units, args.lengths = 4, 6, 5, [3, 6]
        args.rounds, args.warmup = 2, 1

    started, load_average = time.time(), os.getloadavg()
    # Seeded once: `keras.utils.set_random_seed` between builds makes the earlier models' train steps retrace.
    keras.utils.set_random_seed(args.seed)
    report = {"benchmark": "carnn_speed", "quick": args.quick,
              "what": {"iwan": "one training step (train_on_batch: forward + backward + Adam update) of IWAN with "
                               "each context encoder, ms; ratio_to_ncarnn < 1 is faster than nCARNN",
                       "layer": "forward + backward (gradients of a random projection of the outputs with respect "
                                "to the weights, the sequence and the context) of one forward CARNN layer, ms: the "
                                "fast path against the same cell stepped by keras.layers.RNN"},
              "iwan": {"batch_size": args.batch_size, "question_length": args.question_length,
                       "answer_length": args.answer_length, "vocab_size": args.vocab_size, "padding": "none",
                       "encoders": {}},
              "layer": {"batch_size": args.layer_batch_size, "dim": args.dim, "context_dim": args.dim,
                        "padded_rows": "a quarter, random shorter lengths", "lengths": {}}}
    report["iwan"]["encoders"] = iwan_steps(args.encoders, args.batch_size, args.question_length,
                                            args.answer_length, args.vocab_size, args.rounds, args.warmup, args.seed)
    for length in args.lengths:
        row = {}
        for variant, units in (("i", args.layer_units), ("s", args.dim)):
            _log(f"layer: variant {variant}, length {length}")
            row[f"{variant}carnn"] = layer_paths(variant, args.layer_batch_size, length, args.dim, units,
                                                 args.rounds, args.warmup, args.seed)
        _log(f"layer: variant n, length {length}")
        row["ncarnn_stepped"] = ncarnn_layer(args.layer_batch_size, length, args.dim, args.layer_units,
                                             args.rounds, args.warmup, args.seed)
        report["layer"]["lengths"][str(length)] = row
    rows = report["layer"]["lengths"].values()
    report["layer"]["max_abs_difference"] = max(row[v]["max_abs_difference"] for row in rows
                                                for v in ("icarnn", "scarnn"))
    report["layer"]["tolerance"] = TOLERANCE
    report["provenance"] = provenance.collect(
        started, seed=args.seed, load_average_at_start=[round(v, 2) for v in load_average],
        cpu_affinity=sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        tensorflow_threads={"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                            "inter_op": tf.config.threading.get_inter_op_parallelism_threads()})
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
