"""Forward + backward time of one Coupled-LSTMs block: the wavefront against a cell-by-cell schedule; prints JSON.

`CoupledLSTM2D` computes the `n x m` grid as a wavefront: the cells of an anti-diagonal at once, `n + m - 1`
sequential steps (`keras_match.models.coupled_lstm.coupled_lstm.wavefront`). Every public 2-D recurrence over a
sentence pair computes it cell by cell, `n * m` sequential steps. This script times both schedules on the same
layer (same weights, same cells, same input projections and direction flips: `CellByCellCoupledLSTM2D` only
replaces `_grid_states` with `cell_by_cell`, a row loop around a column loop of one cell each), after checking that
they give the same grid:

- `schedules`: one TC block and one LC block (four directions, `--units` 50) on `--batch-size` 32 pairs of
  `n = m = 30` random 50d word vectors; one step is the block's output, a random projection of it summed, and
  the gradients with respect to the block's weights and inputs (`tf.GradientTape` in one `tf.function`).
  Target: the wavefront at least 10x faster.
- `growth`: the wavefront's time for `n = m` in {10, 20, 40, 80} (and the cell-by-cell time for the sizes up to
  `--cell-by-cell-max`), with the time per sequential step (`n + m - 1` of them) and least-squares fits of the
  time against the number of steps and against the number of cells `n * m`.

Times are medians over `--rounds` calls after `--warmup` (wall clock, and the CPU time of this process). The JSON's
`provenance` (`keras_match.artifacts.provenance`) records the command, code, versions, machine (load average at the start
and end) and times. Serving latency of one question against 30 candidates (SavedModel and ONNX Runtime) is
measured by `export_latency.py --model lc_lstm` (and `tc_lstm`).

    python benchmarks/coupled_lstm_speed.py > benchmarks/results/coupled_lstm/speed.json
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
import tensorflow as tf  # noqa: E402

from keras_match.artifacts import provenance  # noqa: E402
from keras_match.models.coupled_lstm import CoupledLSTM2D  # noqa: E402


def cell_by_cell(cell, inputs_at, n, m, batch, directions, state_size, dtype):
    """The cell-by-cell schedule of the grid recurrence: `n * m` sequential cell calls (a `tf.while_loop` over
    the rows around one over the columns), each computing cell `(i, j)` of every example and direction from
    `(i, j - 1)` (the previous call) and `(i - 1, j)` (the row above, kept whole). Same contract as `wavefront`:
    `cell` and `inputs_at(s, lo, hi)` (here the one-cell window `s = i + j, lo = i, hi = i + 1`); returns
    `[directions, batch, n, m, state_size]`."""
    zeros = tf.zeros(tf.stack([directions, batch, state_size]), dtype)
    first_row = tf.zeros(tf.stack([m, directions, batch, state_size]), dtype)
    row_shape = tf.TensorShape([None, directions, None, state_size])

    def row(i, h_above, c_above, rows):
        def column(j, h_left, c_left, h_row, c_row):
            h, c = cell(inputs_at(i + j, i, i + 1), h_left, c_left, h_above[j], c_above[j])
            return j + 1, h, c, h_row.write(j, h), c_row.write(j, c)

        h_row = tf.TensorArray(dtype, size=m, element_shape=zeros.shape)
        c_row = tf.TensorArray(dtype, size=m, element_shape=zeros.shape)
        _, _, _, h_row, c_row = tf.while_loop(lambda j, *_: j < m, column, (0, zeros, zeros, h_row, c_row))
        h_row, c_row = h_row.stack(), c_row.stack()
        return i + 1, h_row, c_row, rows.write(i, h_row)

    rows = tf.TensorArray(dtype, size=n, element_shape=row_shape)
    _, _, _, rows = tf.while_loop(lambda i, *_: i < n, row, (0, first_row, first_row, rows),
                                  shape_invariants=(tf.TensorShape([]), row_shape, row_shape, tf.TensorShape(None)))
    return tf.transpose(rows.stack(), [2, 3, 0, 1, 4])  # [n, m, D, batch, U] -> [D, batch, n, m, U]


class CellByCellCoupledLSTM2D(CoupledLSTM2D):
    """`CoupledLSTM2D` with the cell-by-cell schedule in place of the wavefront (nothing else differs)."""

    def _grid_states(self, cell, inputs_at, n, m, batch):
        return cell_by_cell(cell, inputs_at, n, m, batch, self.directions, self.output_units, self.state_dtype)


def _step_function(layer, x, y, projection):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            loss = tf.reduce_sum(layer([x, y]) * projection)
        return loss, tape.gradient(loss, layer.trainable_weights + [x, y])

    return step


def _timed(fn, rounds, warmup):
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(rounds):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        wall.append(1000.0 * (time.perf_counter() - start))
        cpu.append(1000.0 * (time.process_time() - cpu_start))
    return {"median_wall_ms": round(statistics.median(wall), 1), "median_cpu_ms": round(statistics.median(cpu), 1),
            "p90_wall_ms": round(float(np.percentile(wall, 90)), 1), "rounds": rounds}


def _pair(coupling, units, batch, n, dim, seed):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(batch, n, dim)).astype("float32"))
    y = tf.constant(rng.normal(size=(batch, n, dim)).astype("float32"))
    wavefront_layer = CoupledLSTM2D(units, coupling=coupling, directions=4, name=f"{coupling}_wavefront")
    cell_layer = CellByCellCoupledLSTM2D(units, coupling=coupling, directions=4, name=f"{coupling}_cell_by_cell")
    wavefront_layer([x, y])
    cell_layer([x, y])
    cell_layer.set_weights(wavefront_layer.get_weights())
    projection = tf.constant(rng.normal(size=(batch, n, n, wavefront_layer.output_units)).astype("float32"))
    return x, y, wavefront_layer, cell_layer, projection


def _fit(xs, ys):
    """Least squares `y = a x + b` and its R^2."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    a, b = np.polyfit(xs, ys, 1)
    residual = ys - (a * xs + b)
    r2 = 1.0 - float(residual @ residual) / float(((ys - ys.mean()) ** 2).sum())
    return {"ms_per_unit": round(float(a), 3), "intercept_ms": round(float(b), 1), "r2": round(r2, 4)}


def measure(coupling, units, batch, n, dim, rounds, warmup, seed, cell_by_cell_too=True):
    x, y, wavefront_layer, cell_layer, projection = _pair(coupling, units, batch, n, dim, seed)
    result = {"n": n, "m": n, "sequential_steps": {"wavefront": 2 * n - 1, "cell_by_cell": n * n}}
    wavefront_step = _step_function(wavefront_layer, x, y, projection)
    result["wavefront"] = _timed(wavefront_step, rounds, warmup)
    result["wavefront"]["ms_per_sequential_step"] = round(result["wavefront"]["median_wall_ms"] / (2 * n - 1), 3)
    if cell_by_cell_too:
        difference = float(tf.reduce_max(tf.abs(wavefront_layer([x, y]) - cell_layer([x, y]))))
        if difference > 1e-4:
            raise AssertionError(f"{coupling} n = m = {n}: the schedules differ by {difference}")
        cell_step = _step_function(cell_layer, x, y, projection)
        gradients = [float(tf.reduce_max(tf.abs(a - b)) / tf.reduce_max(tf.abs(a)))
                     for a, b in zip(wavefront_step()[1], cell_step()[1])]
        if max(gradients) > 1e-4:
            raise AssertionError(f"{coupling} n = m = {n}: the schedules' gradients differ by {max(gradients)} "
                                 "of their largest value")
        result["max_difference"] = {"outputs_abs": difference, "gradients_relative_to_largest": max(gradients)}
        result["cell_by_cell"] = _timed(cell_step, max(1, rounds // 2), 1)
        result["speedup_wall"] = round(result["cell_by_cell"]["median_wall_ms"]
                                       / result["wavefront"]["median_wall_ms"], 2)
        result["speedup_cpu"] = round(result["cell_by_cell"]["median_cpu_ms"]
                                      / result["wavefront"]["median_cpu_ms"], 2)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--units", type=int, default=50)
    parser.add_argument("--dim", type=int, default=50, help="word vector size d")
    parser.add_argument("--length", type=int, default=30, help="n = m of the schedule comparison")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 80], help="n = m of the growth")
    parser.add_argument("--cell-by-cell-max", type=int, default=40,
                        help="largest n = m the (slow) cell-by-cell schedule is timed at in the growth")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    started, load_average = time.time(), os.getloadavg()
    report = {"benchmark": "coupled_lstm_speed",
              "what": "forward + backward (gradients of a random projection of the block's grid with respect to its "
                      "weights and inputs) of one CoupledLSTM2D block, four directions, ms per call",
              "batch_size": args.batch_size, "units": args.units, "dim": args.dim, "schedules": {}, "growth": {}}
    for coupling in ("tight", "loose"):
        print(f"{coupling}: n = m = {args.length}", file=sys.stderr, flush=True)
        report["schedules"][coupling] = measure(coupling, args.units, args.batch_size, args.length, args.dim,
                                                args.rounds, args.warmup, args.seed)
    for coupling in ("tight", "loose"):
        rows = []
        for n in args.sizes:
            print(f"{coupling}: growth n = m = {n}", file=sys.stderr, flush=True)
            rows.append(measure(coupling, args.units, args.batch_size, n, args.dim, args.rounds, args.warmup,
                                args.seed, cell_by_cell_too=n <= args.cell_by_cell_max))
        wall = [row["wavefront"]["median_wall_ms"] for row in rows]
        report["growth"][coupling] = {
            "sizes": rows,
            "wavefront_fit_vs_sequential_steps": _fit([2 * n - 1 for n in args.sizes], wall),
            "wavefront_fit_vs_cells": _fit([n * n for n in args.sizes], wall),
        }
    report["targets"] = {"speedup_at_length": 10.0}
    report["speedup_at_length_met"] = {c: report["schedules"][c]["speedup_wall"] >= 10.0 for c in ("tight", "loose")}
    report["provenance"] = provenance.collect(started, seed=args.seed,
                                              load_average_at_start=[round(v, 2) for v in load_average])
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
