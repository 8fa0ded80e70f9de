"""Does pinning each pytest-xdist worker to its own CPUs make the suite faster? Prints JSON.

`tests/conftest.py` pins worker k of `-n N` to CPUs k, k + N, ... before TensorFlow is imported
(`KERAS_MATCH_TEST_PINNING=0` turns it off). This runs the same test files with `-n 2 --dist loadfile` pinned and
unpinned, alternating (pinned, unpinned, unpinned, pinned, ... : drift on a noisy machine falls on both alike),
and reports each pass's wall seconds, outcome counts and the ratio of the medians (unpinned / pinned: above 1, the
pinning is faster). Run it with nothing else on the machine:

    KERAS_MATCH_DATA=../shared/data KERAS_MATCH_ENCODERS=../shared/models \
        python benchmarks/suite_pinning.py --rounds 1 > benchmarks/results/suite_pinning/<commit>.json

Each pass writes a JUnit report to a temporary folder; the summed test seconds of each (both workers' test time,
`benchmarks/suite_durations.py`) show whether the time saved is the tests' own or the workers' balance.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from keras_match.artifacts import provenance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_durations  # noqa: E402  (benchmarks/ is not a package)

FILES = ["tests/test_training_modes.py", "tests/test_crashes.py", "tests/test_export.py", "tests/test_bad_input.py"]
"""Files of the suite's kinds of test (short training runs, killed and resumed CLI processes, exports and ONNX,
fresh CLI processes): 483 s summed of the 3,017 of d04bf79's clean-clone CI."""


def one_pass(files, pinned: bool, workers: int, junit_dir: str, index: int) -> dict:
    """One pytest run of `files` with `-n workers --dist loadfile`; its wall seconds and JUnit summary."""
    report = os.path.join(junit_dir, f"pass{index}.xml")
    env = dict(os.environ, KERAS_MATCH_TEST_PINNING="1" if pinned else "0")
    env.pop("PYTEST_ADDOPTS", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", str(workers), "--dist", "loadfile",
                           "-p", "no:cacheprovider", f"--junitxml={report}", *files], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        summary = suite_durations.summarize(report, top=5)
    except ValueError:  # pytest ran no test (a usage error, a missing file, a broken conftest ...): say what it said
        last = (done.stdout.strip() or done.stderr.strip() or "no output").splitlines()[-1]  # pytest's summary
        raise SystemExit(f"suite_pinning.py: pass {index} ({'pinned' if pinned else 'unpinned'}) ran no test, "
                         f"pytest exited {done.returncode}: {last}") from None
    return {"pinned": pinned, "wall_seconds": round(wall, 1), "returncode": done.returncode,
            "outcomes": summary["outcomes"], "summed_test_seconds": summary["summed_test_seconds"]}


def _medians(passes, figure) -> dict:
    """`{"pinned": median, "unpinned": median}` of `figure` over the passes of each kind."""
    return {key: statistics.median(p[figure] for p in passes if p["pinned"] == pinned)
            for key, pinned in (("pinned", True), ("unpinned", False))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=FILES, help="test files (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of (pinned, unpinned), the second round reversed, ... (default 1)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    started = time.time()
    passes = []
    with tempfile.TemporaryDirectory(prefix="suite-pinning-") as junit_dir:
        for r in range(args.rounds):
            for pinned in ((True, False) if r % 2 == 0 else (False, True)):
                result = one_pass(args.files, pinned, args.workers, junit_dir, len(passes))
                passes.append(result)
                print(json.dumps(result), file=sys.stderr, flush=True)  # progress: each pass as it ends
    failed = [p for p in passes if p["returncode"] != 0]
    median = _medians(passes, "wall_seconds")
    summed = _medians(passes, "summed_test_seconds")
    print(json.dumps({
        "files": args.files, "workers": args.workers, "cpus": sorted(os.sched_getaffinity(0)),
        "passes": passes, "median_wall_seconds": median, "median_summed_test_seconds": summed,
        "wall_ratio_unpinned_over_pinned": round(median["unpinned"] / median["pinned"], 3),
        "summed_ratio_unpinned_over_pinned": round(summed["unpinned"] / summed["pinned"], 3),
        "failed_passes": len(failed), "provenance": provenance.collect(started),
    }, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
