"""Where the test suite's process time goes, by function, across every Python process it starts: prints JSON.

`benchmarks/suite_durations.py` tells which test files are slow; this tells what inside them is (tokenizing,
reading data, tracing, ONNX conversion ...), including the child processes the tests start (CLI runs, exporters,
the shipped presets' fresh process), which no in-process profiler sees. Every process started with
`benchmarks/suite_profile/` on `PYTHONPATH` loads its `sitecustomize.py`, a sampler of the main thread's stack
(see there), and writes its counts into the output folder:

    python benchmarks/suite_profile.py run --out /tmp/profile -- -q -n 2 --dist loadfile
    python benchmarks/suite_profile.py summarize /tmp/profile --match keras_match/ --top 40

`run` runs `python -m pytest ARGS` so and then summarizes; `summarize` reads a folder again. A function's
`seconds` is its share of its process's samples times the process's wall time, summed over the processes
(inclusive: a caller counts its callees' time). Measured with it (issue 56): a run of the whole suite put 207 s of
its process time in `keras_match.text.tokenize`, which the per-file durations did not show. The sampler slows
pure-Python code: the sampled suite took 1,723 s of pytest here, against 1,515 s and 1,649 s for two unsampled
clean-clone runs the same day. Four tests that simulate a full disk failed under the sampler's first version,
which wrote its file at exit without catching errors; this one catches them (not rerun on the whole suite).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import re
import subprocess
import sys
import time

from keras_match.artifacts import provenance

SAMPLER = pathlib.Path(__file__).resolve().parent / "suite_profile"


def summarize(folder, match=None, top=60) -> dict:
    """The sampled processes of `folder` (`<pid>.json`, see `suite_profile/sitecustomize.py`) summed: each process's
    wall seconds and command, and the `top` functions by summed inclusive seconds (only those whose
    `file:function` name `match` searches, a regular expression)."""
    pattern = re.compile(match) if match else None
    seconds, processes = collections.Counter(), []
    for path in sorted(pathlib.Path(folder).glob("[0-9]*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a process that was killed while writing
        if not record.get("samples"):
            continue
        processes.append({"pid": record["pid"], "seconds": record["seconds"], "worker": record.get("worker"),
                          "command": " ".join(record["argv"])[:160]})
        scale = record["seconds"] / record["samples"]
        for function, count in record["counts"].items():
            if pattern is None or pattern.search(function):
                seconds[function] += count * scale
    processes.sort(key=lambda process: -process["seconds"])
    return {"folder": str(folder), "processes": len(processes),
            "process_seconds": round(sum(process["seconds"] for process in processes), 1),
            "slowest_processes": processes[:20],
            "functions": [{"function": function, "seconds": round(value, 1)}
                          for function, value in seconds.most_common(top)]}


def run(out, pytest_args, match=None, top=60) -> dict:
    """`python -m pytest PYTEST_ARGS` with every process sampled into `out` (emptied of earlier samples first);
    returns `summarize(out)` with pytest's exit status."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("[0-9]*.json"):
        old.unlink()
    env = dict(os.environ, KERAS_MATCH_SAMPLE_DIR=str(out.resolve()),
               PYTHONPATH=os.pathsep.join(filter(None, [str(SAMPLER), os.environ.get("PYTHONPATH")])))
    status = subprocess.call([sys.executable, "-m", "pytest", *pytest_args], env=env)
    return dict(summarize(out, match, top), pytest_returncode=status, pytest_args=list(pytest_args))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="run pytest sampled, then summarize")
    running.add_argument("--out", required=True, help="folder for the samples")
    running.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: pytest's arguments")
    reading = commands.add_parser("summarize", help="summarize a folder of samples")
    reading.add_argument("folder")
    for command in (running, reading):
        command.add_argument("--match", help="only functions whose 'file:function' this regular expression finds")
        command.add_argument("--top", type=int, default=60)
    args = parser.parse_args(argv)
    started = time.time()
    if args.command == "run":
        pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
        result = run(args.out, pytest_args, args.match, args.top)
    else:
        result = summarize(args.folder, args.match, args.top)
    result["provenance"] = provenance.collect(started)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
