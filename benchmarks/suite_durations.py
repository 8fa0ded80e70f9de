"""Where the test suite's time goes, from a pytest JUnit XML report: prints JSON.

CI keeps no output of a run that passed, so the suite's slowest files are measured by running `.ci/run` on a clean
clone with a JUnit report and summarizing it here (the wall time of `.ci/run` itself is measured outside):

    PYTEST_ADDOPTS="--junitxml=/tmp/junit.xml" bash .ci/run
    python benchmarks/suite_durations.py /tmp/junit.xml --wall-seconds 2074 \
        > benchmarks/results/suite_durations/<commit>.json
    python benchmarks/suite_durations.py --table benchmarks/results/suite_durations/<commit>.json

The JSON holds the test count by outcome, the summed test time (setup, call and teardown of each test, as pytest
reports it: with `-n 2` the two workers' times add up, so it is about twice the wall time when they are balanced),
each test file's summed time and test count, slowest first, the `--top` slowest tests and every failed test with
the first line of its message (`failed_tests`; the records of 61f1fd9 and before lack it), with the provenance
(`keras_match.artifacts.provenance`) of this summary and the report's own timestamp.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import xml.etree.ElementTree as ElementTree

from keras_match.artifacts import provenance


def _file_of(case) -> str:
    """The test file of a JUnit `testcase`: its `file` attribute, else its `classname` (`tests.models.test_x` or
    `tests.test_x.TestClass`) as a path."""
    if case.get("file"):
        return case.get("file")
    parts = case.get("classname", "").split(".")
    while parts and not parts[-1].startswith("test_"):
        parts.pop()  # a test class, not the module
    return "/".join(parts) + ".py" if parts else "?"


def _failure(case):
    """The `failure` or `error` element of a test case, or None."""
    return next((child for child in case if child.tag in ("failure", "error")), None)


def _outcome(case) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            return "skipped"
    return "passed"


def _failure_message(failure) -> str:
    """The first line of a `failure` / `error` element's message (its `message`, else its text; else its tag)."""
    message = (failure.get("message") or failure.text or "").strip()
    return message.splitlines()[0][:300] if message else failure.tag


def summarize(path, top: int = 25) -> dict:
    """The summary of the JUnit XML report at `path` (see the module docstring).

    Raises:
        ValueError: the file is not a JUnit XML report, or holds no test case; names the file.
    """
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        raise ValueError(f"{path}: not a readable JUnit XML report ({error}); write one with pytest --junitxml")
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    cases = [case for suite in suites for case in suite.iter("testcase")]
    if not cases:
        raise ValueError(f"{path}: holds no test case; write the report with pytest --junitxml")
    by_file = collections.defaultdict(lambda: {"seconds": 0.0, "tests": 0})
    outcomes = collections.Counter()
    tests, failed = [], []
    for case in cases:
        seconds = float(case.get("time") or 0.0)
        file = _file_of(case)
        name = f"{file}::{case.get('name')}"
        by_file[file]["seconds"] += seconds
        by_file[file]["tests"] += 1
        outcome = _outcome(case)
        outcomes[outcome] += 1
        tests.append({"test": name, "seconds": round(seconds, 2)})
        if outcome == "failed":
            failed.append({"test": name, "message": _failure_message(_failure(case))})
    files = sorted(({"file": name, "seconds": round(value["seconds"], 1), "tests": value["tests"]}
                    for name, value in by_file.items()), key=lambda row: -row["seconds"])
    tests.sort(key=lambda row: -row["seconds"])
    return {"report": str(path), "report_timestamp": suites[0].get("timestamp"),
            "report_seconds": float(suites[0].get("time") or 0.0), "outcomes": dict(outcomes),
            "summed_test_seconds": round(sum(row["seconds"] for row in files), 1), "files": files,
            "slowest_tests": tests[:top], "failed_tests": failed}


def table(result, where="result", rows: int = 15) -> str:
    """The markdown table of a summary: its `rows` slowest files with their share of the summed time."""
    provenance.require(result, where)
    total = result["summed_test_seconds"] or 1.0
    lines = ["| test file | tests | seconds | share |", "|---|---|---|---|"]
    for row in result["files"][:rows]:
        lines.append(f"| `{row['file']}` | {row['tests']} | {row['seconds']:.0f} | {row['seconds'] / total:.1%} |")
    rest = result["files"][rows:]
    if rest:
        seconds = sum(row["seconds"] for row in rest)
        lines.append(f"| {len(rest)} other files | {sum(row['tests'] for row in rest)} | {seconds:.0f} | "
                     f"{seconds / total:.1%} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", nargs="?", help="a pytest --junitxml report")
    parser.add_argument("--top", type=int, default=25, help="how many of the slowest tests to keep (default 25)")
    parser.add_argument("--wall-seconds", type=float, default=None,
                        help="the wall time of the whole run (e.g. `.ci/run` from a clean clone), to record beside")
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="print the markdown table of a JSON file this script wrote, and stop")
    args = parser.parse_args(argv)
    if args.table:
        provenance.print_table(args.table, table)
        return
    if not args.report:
        parser.error("give a JUnit XML report, or --table FILE")
    started = time.time()
    try:
        result = summarize(args.report, top=args.top)
    except ValueError as error:
        raise SystemExit(f"suite_durations.py: {error}")
    result["wall_seconds"] = args.wall_seconds
    result["provenance"] = provenance.collect(started)
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
