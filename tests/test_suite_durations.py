"""benchmarks/suite_durations.py: where the suite's time goes, from a pytest JUnit XML report."""

import json
import subprocess
import sys

import pytest

from conftest import SUITE_DURATIONS, benchmark_module, file_seconds

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="5" time="30.5"
 timestamp="2026-12-01T22:00:00">
<testcase classname="tests.models.test_zoo_entries" name="test_zoo_entry[mcan_fm]" time="12.25"/>
<testcase classname="tests.models.test_zoo_entries" name="test_zoo_entry[ctrn]" time="3.5"/>
<testcase classname="tests.test_export_zoo" name="test_onnx_matches_keras[qrnn]" time="9.0">
 <failure message="boom">trace</failure></testcase>
<testcase classname="tests.test_export_zoo.TestGroup" name="test_one" time="1.0"/>
<testcase classname="tests.test_text" name="test_skip" time="0.25"><skipped message="no data"/></testcase>
</testsuite></testsuites>
"""


def test_a_report_is_summed_by_file_slowest_first(tmp_path):
    module = benchmark_module("suite_durations")
    path = tmp_path / "junit.xml"
    path.write_text(REPORT)
    result = module.summarize(path, top=2)
    assert result["outcomes"] == {"passed": 3, "failed": 1, "skipped": 1}
    assert result["summed_test_seconds"] == pytest.approx(26.0)
    assert result["files"] == [
        {"file": "tests/models/test_zoo_entries.py", "seconds": 15.8, "tests": 2},  # 15.75, rounded to 0.1
        {"file": "tests/test_export_zoo.py", "seconds": 10.0, "tests": 2},  # a test class counts to its module
        {"file": "tests/test_text.py", "seconds": 0.2, "tests": 1}]
    assert [row["test"] for row in result["slowest_tests"]] == [
        "tests/models/test_zoo_entries.py::test_zoo_entry[mcan_fm]", "tests/test_export_zoo.py::test_onnx_matches_keras[qrnn]"]
    assert result["report_seconds"] == 30.5
    assert result["failed_tests"] == [{"test": "tests/test_export_zoo.py::test_onnx_matches_keras[qrnn]",
                                       "message": "boom"}]


def test_the_command_writes_json_with_provenance_and_its_table(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(REPORT)
    script = str(benchmark_module("suite_durations").__file__)
    done = subprocess.run([sys.executable, script, str(path), "--wall-seconds", "40"], capture_output=True,
                          text=True, check=True)
    result = json.loads(done.stdout)
    assert result["wall_seconds"] == 40 and result["provenance"]["command"]
    saved = tmp_path / "summary.json"
    saved.write_text(done.stdout)
    shown = subprocess.run([sys.executable, script, "--table", str(saved)], capture_output=True, text=True,
                           check=True).stdout
    assert "| `tests/models/test_zoo_entries.py` | 2 | 16 | 60.8% |" in shown


def test_a_file_that_is_not_a_report_is_named(tmp_path):
    bad = tmp_path / "junit.xml"
    bad.write_text("not xml")
    done = subprocess.run([sys.executable, str(benchmark_module("suite_durations").__file__), str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.strip().count("\n") == 0
    assert f"{bad}: not a readable JUnit XML report" in done.stderr
    empty = tmp_path / "empty.xml"
    empty.write_text('<testsuites><testsuite name="pytest" time="0"/></testsuites>')
    with pytest.raises(ValueError, match="holds no test case"):
        benchmark_module("suite_durations").summarize(empty)


def test_the_suite_runs_its_files_in_the_order_of_the_newest_record(tmp_path, request):
    module = benchmark_module("suite_durations")
    path = tmp_path / "junit.xml"
    path.write_text(REPORT)
    newer = module.summarize(path, top=2)
    older = dict(newer, report_timestamp="2026-11-01T00:00:00", files=[{"file": "tests/test_text.py", "seconds": 99.0,
                                                                      "tests": 1}])
    (tmp_path / "a.json").write_text(json.dumps(newer))  # names do not decide: the report's timestamp does
    (tmp_path / "b.json").write_text(json.dumps(older))
    (tmp_path / "c.json").write_text(json.dumps({"report": "no files"}))
    assert file_seconds(tmp_path) == {"tests/models/test_zoo_entries.py": 15.8, "tests/test_export_zoo.py": 10.0,
                                      "tests/test_text.py": 0.2}
    assert file_seconds(tmp_path / "none") == {}
    # this session's order: the files the committed newest record lists, slowest first, each file's tests together
    seconds = file_seconds(SUITE_DURATIONS)
    files = list(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in request.session.items))
    known = [seconds[name] for name in files if name in seconds]
    assert known == sorted(known, reverse=True)
    assert len(files) == len({item.nodeid.split("::", 1)[0] for item in request.session.items})
