"""Data-parallel training through `TF_CONFIG` (issue 9): two local `keras-match train` workers of a
`tf.distribute.MultiWorkerMirroredStrategy` cluster end with identical weights.

The workers are given different seeds on purpose: their initial weights, dropout masks and batch orders differ,
so they can only end equal if the strategy broadcasts the initial weights and all-reduces every step's gradients.
"""

import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_match import cli
from keras_match.artifacts import runs
from keras_match.training import distribution

ARGS = ["--dataset", "trecqa-clean", "--max-train-questions", "12", "--epochs", "1", "--embeddings", "none",
        "--set", "filters=8", "--set", "dense_units=4"]
MODEL = "qrnn_wikiqa"  # the zoo's quickest to build; dropout makes the seeds matter


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _worker(data_dir, run_dir, index, ports, seed):
    tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                 "task": {"type": "worker", "index": index}}
    env = dict(os.environ, TF_CONFIG=json.dumps(tf_config), TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    argv = ["train", MODEL, "--data-dir", str(data_dir), "--run-dir", str(run_dir), "--seed", str(seed), *ARGS]
    program = f"import sys; from keras_match import cli; sys.exit(cli.main({argv!r}))"
    return subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _weights(run_dir):
    return runs.load_run(run_dir).model.get_weights()


def test_two_workers_end_with_identical_weights(data_dir, tmp_path):
    ports = _free_ports(2)
    workers = [_worker(data_dir, tmp_path / f"worker{i}", i, ports, seed=7 + i) for i in range(2)]
    outputs = []
    try:
        for i, process in enumerate(workers):
            outputs.append(process.communicate(timeout=600)[0])
            assert process.returncode == 0, f"worker {i} failed:\n{outputs[-1][-3000:]}"
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
    assert "data-parallel, worker 0 of a cluster of 2" in outputs[0]
    assert "data-parallel, worker 1 of a cluster of 2" in outputs[1]
    first, second = _weights(tmp_path / "worker0"), _weights(tmp_path / "worker1")
    assert len(first) == len(second) > 0
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    histories = [json.loads((tmp_path / f"worker{i}" / "metrics.json").read_text())["history"] for i in range(2)]
    assert histories[0] == histories[1]  # the same averaged loss and the same dev figures on both workers

    # the check can fail: a worker trained alone with its seed ends elsewhere
    assert cli.main(["train", MODEL, "--data-dir", str(data_dir), "--run-dir", str(tmp_path / "alone"),
                     "--seed", "7", *ARGS]) == 0
    alone = _weights(tmp_path / "alone")
    assert any(not np.array_equal(a, b) for a, b in zip(first, alone))


@pytest.mark.parametrize("value, message", [
    ("{not json", "TF_CONFIG is not valid JSON"),
    ('{"task": {"type": "worker", "index": 0}}', "TF_CONFIG needs a \"cluster\""),
    ('{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 2}}', "task index 2"),
    ('{"cluster": {"worker": ["a:1"], "ps": ["c:3"]}, "task": {"type": "worker", "index": 0}}', r"\['ps'\]"),
])
def test_a_malformed_tf_config_is_a_usage_error_naming_what_is_wrong(monkeypatch, capsys, value, message):
    monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(ValueError, match=message):
        distribution.cluster_description()
    assert cli.main(["train", MODEL, "--run-dir", "unused"]) == 2
    assert "TF_CONFIG" in capsys.readouterr().err


def test_a_cluster_of_one_or_no_tf_config_trains_as_usual(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert distribution.strategy_from_environment() is None
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}')
    assert distribution.cluster_description() is None and distribution.strategy_from_environment() is None
    model = keras.Sequential([keras.layers.Dense(1)])
    distribution.prepare_fit(model, None, None)  # nothing to do without a strategy
    assert "_maybe_symbolic_build" not in vars(model)  # Keras' own build stays in place
