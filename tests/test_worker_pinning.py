"""tests/conftest.py pins each pytest-xdist worker to its own share of the CPUs before TensorFlow is imported."""

import json
import os

import pytest

import conftest
from conftest import benchmark_module


@pytest.fixture
def machine(monkeypatch):
    """A 4-CPU machine: `os.sched_getaffinity` gives CPUs 0-3; what `os.sched_setaffinity` is given is kept."""
    pinned = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: pinned.append((pid, set(cpus))))
    for key in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "KERAS_MATCH_TEST_PINNING"):
        monkeypatch.delenv(key, raising=False)
    return pinned


@pytest.mark.parametrize("worker, count, share", [("gw0", "2", {0, 2}), ("gw1", "2", {1, 3}), ("gw3", "4", {3}),
                                                  ("gw0", "1", {0, 1, 2, 3})])
def test_worker_k_of_n_keeps_every_nth_cpu_from_k(machine, monkeypatch, worker, count, share):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    assert conftest._pin_xdist_worker() == share
    assert machine == [(0, share)]


@pytest.mark.parametrize("env", [{}, {"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "5"},
                                 {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
                                  "KERAS_MATCH_TEST_PINNING": "0"},
                                 {"PYTEST_XDIST_WORKER": "master", "PYTEST_XDIST_WORKER_COUNT": "2"}],
                         ids=["no-xdist", "more-workers-than-cpus", "turned-off", "not-a-worker-id"])
def test_nothing_is_pinned_outside_a_worker_with_cpus_of_its_own(machine, monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert conftest._pin_xdist_worker() is None
    assert machine == []


def test_this_worker_runs_on_its_share():
    """In the suite run as README says (`-n 2`), this process is pinned to what the pinning chose."""
    if conftest.PINNED_CPUS is None:
        pytest.skip("not a pinned pytest-xdist worker (run with -n 2 on at least two CPUs)")
    assert os.sched_getaffinity(0) == conftest.PINNED_CPUS


def _fake_pass(walls, failing=()):
    """A stand-in for `suite_pinning.one_pass`: each call's wall seconds from `walls` (pinned, unpinned)."""
    calls = []

    def one_pass(files, pinned, workers, junit_dir, index):
        calls.append(pinned)
        return {"pinned": pinned, "wall_seconds": walls[pinned][calls.count(pinned) - 1],
                "returncode": 1 if index in failing else 0, "outcomes": {"passed": 3},
                "summed_test_seconds": 2 * walls[pinned][0]}
    return one_pass, calls


def test_the_pinning_benchmark_alternates_and_reports_the_ratio_of_medians(monkeypatch, capsys):
    module = benchmark_module("suite_pinning")
    one_pass, calls = _fake_pass({True: [100.0, 110.0, 90.0], False: [130.0, 120.0, 150.0]})
    monkeypatch.setattr(module, "one_pass", one_pass)
    assert module.main(["--rounds", "3", "tests/test_x.py"]) == 0
    assert calls == [True, False, False, True, True, False]  # the second round reversed, so drift falls on both
    result = json.loads(capsys.readouterr().out)
    assert result["median_wall_seconds"] == {"pinned": 100.0, "unpinned": 130.0}
    assert result["wall_ratio_unpinned_over_pinned"] == 1.3 and result["files"] == ["tests/test_x.py"]
    assert result["failed_passes"] == 0 and result["provenance"]["command"]


def test_a_failing_pass_fails_the_benchmark(monkeypatch, capsys):
    module = benchmark_module("suite_pinning")
    one_pass, _ = _fake_pass({True: [100.0], False: [130.0]}, failing={1})
    monkeypatch.setattr(module, "one_pass", one_pass)
    assert module.main([]) == 1
    assert json.loads(capsys.readouterr().out)["failed_passes"] == 1


def test_a_pass_that_runs_no_test_is_one_line(tmp_path, capsys):
    module = benchmark_module("suite_pinning")
    with pytest.raises(SystemExit, match=r"pass 0 \(pinned\) ran no test, pytest exited 5: no tests ran"):
        module.one_pass([str(tmp_path / "no-such-file.py")], True, 1, str(tmp_path), 0)
