"""Shipped presets scored in float32 and in mixed bfloat16: does bfloat16 keep the test figures (issue 55)?

Serving in bfloat16 is worth offering only where it keeps the scores' order: the issue's bar is the test MAP of a
bfloat16 export equal to the float32 one's within 0.002. For each shipped trained preset (default: every one,
`keras_match.artifacts.presets.trained()`), in a process of its own, this loads the preset twice, `load_preset(name,
precision=P)` for P in float32 and mixed_bfloat16 (the same float32 weights; every layer but the output head
computes in bfloat16, as `keras-match export --precision mixed_bfloat16` serves it), scores the preset's test split
as `keras-match evaluate --preset` does (`Run.evaluate`), and records both precisions' figures, their differences,
the largest score difference and the seconds each took (bfloat16 is emulated, so slower, on a CPU without
bfloat16 units: `machine.bfloat16_units` in the provenance).

Each preset's result is written to `OUT/<entry>--<dataset>.json` as it finishes (a rerun skips those written;
`--force` measures again), then the summary of every file is printed as JSON:

    python benchmarks/precision_scoring.py --out benchmarks/results/precision_scoring
    python benchmarks/precision_scoring.py mcan_fm/trecqa-clean --out /tmp/scoring
    python benchmarks/precision_scoring.py --out benchmarks/results/precision_scoring --table
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

from keras_match.artifacts import provenance

PRECISIONS = ("float32", "mixed_bfloat16")
TOLERANCE = 0.002
"""The issue's bar: a bfloat16 test figure within this of the float32 one."""
FIGURES = ("map", "mrr", "p@1", "accuracy", "macro_f1", "per_response_accuracy", "per_dialog_accuracy")


def file_name(preset) -> str:
    return preset.replace("/", "--") + ".json"


def measure(preset, data_dir=None) -> dict:
    """Both precisions' test figures of shipped preset `preset` (`"entry/dataset"`)."""
    import numpy as np

    from keras_match.artifacts import presets
    from keras_match.inputs import pipeline

    started = time.time()
    metadata = json.loads((presets.preset_dir(preset) / presets.METADATA_FILE).read_text(encoding="utf-8"))
    benchmark = metadata.get("benchmark") or preset.split("/")[1]
    dataset = presets.benchmark_dataset(benchmark, metadata.get("holdout_dev"), data_dir=data_dir)
    result = {"preset": preset, "benchmark": benchmark, "figures": {}, "seconds": {}}
    outputs = {}
    for precision in PRECISIONS:
        begin = time.time()
        run = presets.load_preset(preset, precision=precision)
        task = run.task
        examples = task.examples(dataset["test"])
        inputs = pipeline.encode(run.preprocessor, examples.texts)
        outputs[precision] = pipeline.predict(run.model, inputs, run.preprocessor.SEQUENCE_INPUTS)
        figures = task.evaluate(run.head, outputs[precision], examples)
        result["figures"][precision] = {key: figures[key] for key in FIGURES if key in figures}
        result["seconds"][precision] = round(time.time() - begin, 1)
        del run
    f32, bf16 = (result["figures"][p] for p in PRECISIONS)
    result["difference"] = {key: round(bf16[key] - f32[key], 6) for key in f32}
    result["within_tolerance"] = all(abs(value) <= TOLERANCE for value in result["difference"].values())
    result["max_abs_score_difference"] = float(np.max(np.abs(outputs["float32"] - outputs["mixed_bfloat16"])))
    result["pairs"] = int(len(outputs["float32"]))
    result["provenance"] = provenance.collect(started, preset=preset, tolerance=TOLERANCE)
    return result


def table(results, path=None) -> str:
    """Markdown: one row a preset, its main figure in each precision and the verdict."""
    rows = ["| preset | pairs | figure | float32 | mixed_bfloat16 | difference | within 0.002 | s float32 / bfloat16 |",
            "|---|---|---|---|---|---|---|---|"]
    for result in results:
        provenance.require(result, path)
        f32 = result["figures"]["float32"]
        key = next(k for k in FIGURES if k in f32)
        rows.append(f"| `{result['preset']}` | {result['pairs']:,} | {key} | {f32[key]:.4f} | "
                    f"{result['figures']['mixed_bfloat16'][key]:.4f} | {result['difference'][key]:+.4f} | "
                    f"{'yes' if result['within_tolerance'] else 'no'} | "
                    f"{result['seconds']['float32']:.0f} / {result['seconds']['mixed_bfloat16']:.0f} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help="shipped presets, entry/dataset (default: every one)")
    parser.add_argument("--out", required=True, help="folder of the result files, one a preset")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--force", action="store_true", help="measure again the presets already written")
    parser.add_argument("--table", action="store_true", help="print the folder's results as a table and stop")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: one preset
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    if args.one:
        print(json.dumps(measure(args.one, args.data_dir)))
        return 0
    if args.table:
        files = sorted(out.glob("*.json"))
        print(table([json.loads(path.read_text()) for path in files], out))
        return 0
    from keras_match.artifacts import presets, storage

    out.mkdir(parents=True, exist_ok=True)
    for preset in args.presets or presets.trained():
        target = out / file_name(preset)
        if target.exists() and not args.force:
            print(f"{preset}: {target} exists, skipped", file=sys.stderr, flush=True)
            continue
        print(f"{preset} ...", file=sys.stderr, flush=True)
        command = [sys.executable, __file__, "--one", preset, "--out", str(out)] + (
            ["--data-dir", args.data_dir] if args.data_dir else [])
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            print(f"{preset}: failed: {lines[-1] if lines else done.returncode}", file=sys.stderr, flush=True)
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        storage.atomic_write(target, lambda staged: pathlib.Path(staged).write_text(json.dumps(result, indent=2)))
        print(f"  {json.dumps({k: result[k] for k in ('difference', 'within_tolerance', 'seconds')})}",
              file=sys.stderr, flush=True)
    summary = {path.stem: {k: v for k, v in json.loads(path.read_text()).items() if k != "provenance"}
               for path in sorted(out.glob("*.json"))}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
