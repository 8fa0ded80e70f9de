"""benchmarks/onnx_conversion.py: each conversion's peak memory is its own process's, not its starter's."""

import subprocess
import sys

import numpy as np

from conftest import benchmark_module


def test_a_conversion_process_reports_its_own_peak_not_the_scripts():
    module = benchmark_module("onnx_conversion")
    held = np.ones(600 * 2**20, dtype=np.uint8)  # this process: 600 MB more resident than the child will need
    assert module.peak_rss_mb() >= 600
    # the child runs the function as the conversion child does (its source sits at the top of CHILD)
    assert module.CHILD.startswith("def peak_rss_mb()")
    code = module.CHILD.split("\nimport json", 1)[0] + "\nprint(peak_rss_mb())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 < float(done.stdout) < 200, done.stdout  # a bare Python: ru_maxrss here would read >= 600
    del held
