"""`keras-match predict` on a CARNN dialog run: the `--history` texts are the turns of one dialog, `--context` the
last user utterance, and each printed line is the chosen candidate of the model's own set."""

import dataclasses

import numpy as np

from keras_match import cli, train
from keras_match.datasets import load
from keras_match.artifacts.runs import load_run

HISTORY = ["good morning", "hello what can i help you with today", "can you book a table"]


def test_predict_chooses_from_the_candidate_set(data_dir, tmp_path, capsys):
    full = load("dialog-babi-task1", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 30), ("dev", 5), ("test", 5))})
    run_dir = tmp_path / "run"
    train("carnn_dialog_i", dataset, embeddings_path=None, run_dir=run_dir, epochs=1, seed=3, verbose=0, units=8,
          batch_size=16)
    capsys.readouterr()
    turns = [arg for turn in HISTORY for arg in ("--history", turn)]
    contexts = ["with italian cuisine please", "zzqx"]
    assert cli.main(["predict", str(run_dir), *turns, "--context", contexts[0], "--context", contexts[1]]) == 0
    lines = capsys.readouterr().out.splitlines()
    run = load_run(run_dir)
    scores = run.predict({"history": [HISTORY, HISTORY], "context": contexts})  # [2, C]
    assert len(lines) == 2  # one dialog turn per --context; the same history for both
    for line, row in zip(lines, np.asarray(scores)):
        choice, score, response = line.split("\t")
        assert int(choice) == int(np.argmax(row)) and float(score) == round(float(row.max()), 4)
        assert response == run.preprocessor.candidates[int(choice)]
    assert cli.main(["predict", str(run_dir), "--context", "hi"]) == 2  # the history is required
    assert "--history" in capsys.readouterr().err
