"""Time and memory of converting trained presets to ONNX, with and without the embedding stand-ins; prints JSON.

`keras_match.serving.export.to_onnx` converts a SavedModel's `serve_ids` with tf2onnx. tf2onnx copies the whole graph,
constants included, for each of its optimizer passes, so a model with frozen GloVe vectors (a 400,000 x 50
matrix, 80 MB) took most of a minute and several GB to convert. `to_onnx` now converts such a model with a
one-row stand-in for each embedding matrix and puts the matrices back afterwards
(`keras_match.serving.onnx_export._convert_with_stand_ins`, verified on the same samples as before, the usual
conversion when the stand-in conversion is refused). The matrices are stood in for before TensorFlow's graph
optimizer (grappler) runs on the frozen graph, which copies every constant for its passes too; at first they were
stood in for only after it. This script measures the ways of `--ways` (`WAYS`) for each preset: the preset is
loaded and exported as a SavedModel once, then each conversion runs in a fresh process (so that the peak resident
memory is the conversion's: the process imports TensorFlow, loads the SavedModel, converts and verifies), and
reports the wall time of `to_onnx`, the process's own peak RSS (`peak_rss_mb`), the model's size, the largest
score difference from TensorFlow, and the largest difference of each way's ONNX outputs from the first way's on
the verification samples.

    python benchmarks/onnx_conversion.py [PRESET ...] > benchmarks/results/export/onnx_conversion.json

Default: every shipped preset (`keras_match.artifacts.presets.trained()`). Needs the `onnx` and `glove` extras, no data.
Numbers are from whatever CPU runs it (the JSON's provenance records the machine and its load average).
"""

import argparse
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: `VmHWM` of `/proc/self/status` (Linux), which starts anew when
    a program is executed, else `ru_maxrss`. A process started by another one with `subprocess` (fork or vfork, then
    exec) inherits the starter's `ru_maxrss`: the peak of a conversion child would read at least this script's
    resident size (measured: 1,513 MB in a child of a 1.5 GB process, whose own peak was 13 MB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


CHILD = textwrap.dedent(inspect.getsource(peak_rss_mb)) + textwrap.dedent(
    """
    import json, pathlib, sys, time
    import numpy as np
    from keras_match.serving import export, onnx_export
    version, target, way = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    if way == "usual":  # no constant is stood in for: tf2onnx converts the whole graph (set where it is read:
        onnx_export.ONNX_STAND_IN_BYTES = float("inf")  # `export` only re-exports to_onnx)
    elif way == "after_grappler":  # stood in for only in the graph TensorFlow's optimizer has already copied
        onnx_export.ONNX_EARLY_STAND_INS = False
    elif way == "unlifted":  # the matrices stood in for, the dense kernels left in the graph as constants
        onnx_export.ONNX_LIFT_BYTES = None
    started = time.perf_counter()
    made = export.to_onnx(version, target)
    seconds = time.perf_counter() - started
    import onnxruntime
    session = onnxruntime.InferenceSession(str(made.path), providers=["CPUExecutionProvider"])
    outputs = []
    for sample in export.sample_inputs(export.read_metadata(version)):
        feeds = {spec.name: np.asarray(sample[spec.name]) for spec in session.get_inputs()}
        outputs.append(session.run(None, feeds)[0].tolist())
    stood_in = json.loads((made.path.parent / "keras_match.json").read_text())["onnx"]["stood_in"]
    print(json.dumps({"to_onnx_seconds": round(seconds, 2), "max_abs_diff": made.max_abs_diff,
                      "model_bytes": made.path.stat().st_size, "stood_in": stood_in,
                      "peak_rss_mb": peak_rss_mb(),
                      "outputs": outputs}))
    """
)


WAYS = ("stand_ins", "unlifted", "after_grappler", "usual")
"""`stand_ins`: `to_onnx` as it is (the matrices stood in for before TensorFlow's graph optimizer runs on the
frozen graph, the other large weights graph inputs while converting: `ONNX_LIFT_BYTES`); `unlifted`: the matrices
stood in for, the other weights left as constants (the way before the lifting); `after_grappler`: stood in for only
after that optimizer (`ONNX_EARLY_STAND_INS` off, the way before it: no weight is lifted there); `usual`: no
stand-in, tf2onnx converts the whole graph."""


def convert(version: pathlib.Path, target: pathlib.Path, way: str) -> dict:
    """One conversion in a fresh process: its figures (the outputs on the samples kept for the comparison)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(version), str(target), way], capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode != 0:
        raise SystemExit(f"the {way} conversion of {version} failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if way == "usual" and result["stood_in"]:
        raise SystemExit(f"the usual conversion of {version} stood in for {result['stood_in']}: it measured nothing")
    result["process_seconds"] = round(time.perf_counter() - started, 2)
    return result


def main(argv=None):
    from keras_match.artifacts import presets, provenance
    from keras_match.serving import export

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("presets", nargs="*", help="preset names (default: every shipped preset)")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS),
                        help="the conversions to measure, each preset's in this order (default: all four)")
    args = parser.parse_args(argv)
    names = args.presets or presets.trained()
    started = time.time()
    load_average = os.getloadavg()
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        for index, name in enumerate(names):
            print(f"[{index + 1}/{len(names)}] {name}", file=sys.stderr, flush=True)
            version = export.saved_model(presets.load_preset(name), work / f"export-{index}", warmup=False)
            ways = {way: convert(version, work / f"onnx-{index}-{way}", way) for way in args.ways}
            outputs = {way: ways[way].pop("outputs") for way in ways}
            first = args.ways[0]
            for way in args.ways[1:]:  # the largest difference of each way's outputs from the first way's
                ways[way][f"max_abs_diff_from_{first}"] = max(
                    float(np.max(np.abs(np.asarray(a) - np.asarray(b)), initial=0.0))
                    for a, b in zip(outputs[first], outputs[way]))
            rows[name] = ways
    result = {
        "presets": rows,
        "provenance": provenance.collect(started, load_average_at_start=[round(x, 2) for x in load_average]),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
