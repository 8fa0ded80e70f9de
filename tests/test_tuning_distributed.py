"""Keras Tuner's distributed search (issue 9): a chief and two workers of `keras-match tune` on 127.0.0.1.

The processes are real `keras-match tune` subprocesses that find each other through Keras Tuner's variables
(`KERASTUNER_TUNER_ID`, `KERASTUNER_ORACLE_IP`, `KERASTUNER_ORACLE_PORT`), on real TrecQA data and a tiny
grid, each worker with its own search folder as on separate machines.
"""

import json
import os
import re
import socket
import subprocess
import sys

import keras_tuner as kt
import pytest

from keras_match import cli
from keras_match.training import tuning

from learning_checks import ranking_figures_of_model

GRID = {"builders": ["qrnn"],
        "hyperparameters": {"filters": {"type": "choice", "values": [8, 16]},
                            "projection_dim": {"type": "choice", "values": [None, 12]}}}
COMBINATIONS = {(8, None), (8, 12), (16, None), (16, 12)}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tune(data_dir, space, folder, tuner_id, port):
    env = dict(os.environ, KERASTUNER_TUNER_ID=tuner_id, KERASTUNER_ORACLE_IP="127.0.0.1",
               KERASTUNER_ORACLE_PORT=str(port), TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    argv = ["tune", "qrnn_wikiqa", "--dataset", "trecqa-clean", "--data-dir", str(data_dir), "--tuner", "grid",
            "--space", str(space), "--dir", str(folder), "--epochs", "1", "--max-train-questions", "12",
            "--embeddings", "none", "--set", "dense_units=4"]
    program = f"import sys; from keras_match import cli; sys.exit(cli.main({argv!r}))"
    return subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_a_chief_and_two_workers_run_every_trial_once_and_the_chief_reports_the_best(data_dir, tmp_path):
    space = tmp_path / "tiny.json"
    space.write_text(json.dumps(GRID))
    port = _free_port()
    chief = _tune(data_dir, space, tmp_path / "chief", "chief", port)
    workers = [_tune(data_dir, space, tmp_path / name, name, port) for name in ("tuner0", "tuner1")]
    outputs = {}
    try:
        for name, process in [("tuner0", workers[0]), ("tuner1", workers[1]), ("chief", chief)]:
            outputs[name] = process.communicate(timeout=600)[0]
            assert process.returncode == 0, f"{name} failed:\n{outputs[name][-3000:]}"
    finally:
        for process in [chief, *workers]:
            if process.poll() is None:
                process.kill()

    ran = {}
    for name in ("tuner0", "tuner1"):
        for trial in re.findall(rf"^{name}: trial (\d+) \(", outputs[name], flags=re.M):
            ran.setdefault(trial, []).append(name)
    assert sorted(map(int, ran)) == [0, 1, 2, 3], outputs  # every grid point ran ...
    assert all(len(names) == 1 for names in ran.values()), ran  # ... exactly once, by one worker
    assert all(f"{name}: no trial left" in outputs[name] for name in ("tuner0", "tuner1"))

    rows = json.loads((tmp_path / "chief" / "trials.json").read_text())
    assert len(rows) == 4 and all(row["dev"] is not None for row in rows)
    assert {(r["hyperparameters"]["filters"], r["hyperparameters"]["projection_dim"]) for r in rows} == COMBINATIONS
    # The chief's dev MAP of a trial is that of the model the worker that ran it kept (in its own folder, as on its
    # own machine), built with the hyperparameters the chief recorded, scored again here and measured by trec_eval:
    # the first trial and one of the other worker (if it ran any).
    hypermodel = tuning.MatchHyperModel("qrnn_wikiqa", "trecqa-clean", space=tuning.read_space(space, "qrnn_wikiqa"),
                                        data_dir=data_dir, embeddings_path=None, max_train_questions=12, verbose=0,
                                        epochs=1, dense_units=4)
    checked = [rows[0], next((r for r in rows if ran[r["trial"]] != ran[rows[0]["trial"]]), rows[-1])]
    for row in checked:
        (worker,) = ran[row["trial"]]
        trial = kt.engine.trial.Trial.load(tmp_path / "chief" / "search" / f"trial_{row['trial']}" / "trial.json")
        model = hypermodel.build(trial.hyperparameters)
        model.load_weights(tmp_path / worker / "search" / f"trial_{row['trial']}" / "checkpoint.weights.h5")
        again = ranking_figures_of_model(model, hypermodel.preprocessor, hypermodel.recipe.dataset["dev"],
                                         hypermodel.task.no_positive, inputs=hypermodel.dev_inputs)
        assert row["dev"] == pytest.approx(again["map"], abs=1e-9), (row, worker)
    assert checked[0]["dev"] != checked[1]["dev"]  # two models ranking differently: no accidental agreement
    assert len(re.findall(r"^trial \d+ \(", outputs["chief"], flags=re.M)) == 4  # the chief's line per trial
    best = json.loads((tmp_path / "chief" / "best.json").read_text())
    top = max(rows, key=lambda r: r["dev"])
    assert best["trial"] == top["trial"] and best["dev"] == top["dev"]
    assert f"best: trial {top['trial']}, dev MAP {top['dev']:.4f}" in outputs["chief"]
    assert not (tmp_path / "tuner0" / "best.json").exists()  # a worker leaves the results to the chief


def test_an_incomplete_set_of_distribution_variables_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("KERASTUNER_ORACLE_IP", "127.0.0.1")
    monkeypatch.delenv("KERASTUNER_ORACLE_PORT", raising=False)
    monkeypatch.setenv("KERASTUNER_TUNER_ID", "tuner0")
    with pytest.raises(ValueError, match="KERASTUNER_ORACLE_PORT is not"):
        tuning.distributed_role()
    assert cli.main(["tune", "qrnn_wikiqa", "--dir", "unused"]) == 2
    assert "KERASTUNER_ORACLE_PORT" in capsys.readouterr().err
    monkeypatch.setenv("KERASTUNER_ORACLE_PORT", "8000")
    assert tuning.distributed_role() == "worker"
    monkeypatch.setenv("KERASTUNER_TUNER_ID", "chief")
    assert tuning.distributed_role() == "chief"
