"""benchmarks/suite_profile.py: every Python process started with its sampler on PYTHONPATH is sampled, and the
samples are summed by function."""

import json
import os
import subprocess
import sys

from conftest import benchmark_module

BUSY = """
import time
def busy_function():
    end = time.time() + 1.0
    while time.time() < end:
        sum(range(1000))
busy_function()
"""


def _sampled_child(module, folder, code, sample=True):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(module.SAMPLER), os.environ.get("PYTHONPATH", "")]))
    if sample:
        env["KERAS_MATCH_SAMPLE_DIR"] = str(folder)
    else:
        env.pop("KERAS_MATCH_SAMPLE_DIR", None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def test_a_sampled_process_shows_its_busy_function_and_an_unsampled_one_writes_nothing(tmp_path):
    module = benchmark_module("suite_profile")
    _sampled_child(module, tmp_path, BUSY)
    (tmp_path / "999999.json").write_text('{"pid": 9')  # a process killed while writing: skipped
    result = module.summarize(tmp_path)
    assert result["processes"] == 1
    process = result["slowest_processes"][0]
    seconds = {row["function"]: row["seconds"] for row in result["functions"]}
    assert seconds["<string>:busy_function"] >= 0.5 * process["seconds"] > 0
    assert seconds["<string>:<module>"] >= seconds["<string>:busy_function"]  # inclusive: the caller holds it
    only = module.summarize(tmp_path, match="busy")["functions"]
    assert [row["function"] for row in only] == ["<string>:busy_function"]

    quiet = tmp_path / "quiet"
    quiet.mkdir()
    _sampled_child(module, quiet, BUSY, sample=False)
    assert list(quiet.iterdir()) == []


def test_run_samples_pytest_and_its_children(tmp_path):
    module = benchmark_module("suite_profile")
    tests = tmp_path / "suite"
    tests.mkdir()
    (tests / "test_child.py").write_text(
        "import subprocess, sys\n"
        f"BUSY = {BUSY!r}\n"
        "def test_starts_a_busy_child():\n"
        "    subprocess.run([sys.executable, '-c', BUSY], check=True)\n")
    out = tmp_path / "samples"
    result = module.run(out, [str(tests), "-q", "-p", "no:cacheprovider"], match="busy_function|test_starts")
    assert result["pytest_returncode"] == 0 and result["processes"] == 2  # pytest and the child it started
    functions = [row["function"] for row in result["functions"]]
    assert "<string>:busy_function" in functions
    assert any(name.endswith("test_child.py:test_starts_a_busy_child") for name in functions), functions
    assert json.loads(sorted(out.glob("[0-9]*.json"))[0].read_text())["samples"] > 0
