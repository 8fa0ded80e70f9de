"""CARNN voting (Table 1): the majority choice of runs, ties to the first run's choice."""

import numpy as np
import pytest

from keras_match.models.carnn_dialog.vote import majority


def test_majority_and_its_ties():
    choices = np.array([[1, 2, 3, 4, 5],
                        [1, 7, 8, 4, 6],
                        [9, 7, 8, 0, 6]])
    # example 0: 1 twice; 1: 7 twice; 2: 8 twice; 3: 4 twice; 4: 6 twice
    assert majority(choices).tolist() == [1, 7, 8, 4, 6]
    all_differ = np.array([[3, 0], [2, 1], [1, 2]])
    assert majority(all_differ).tolist() == [3, 0]  # no majority: the first run's choice
    tied_pairs = np.array([[5], [6], [6], [5]])
    assert majority(tied_pairs).tolist() == [5]  # 5 and 6 twice each: the first run's
    assert majority(np.array([[4, 2]])).tolist() == [4, 2]  # one run: its own choice
    with pytest.raises(ValueError, match="runs, examples"):
        majority(np.array([1, 2]))


def test_vote_of_finished_runs(data_dir, tmp_path):
    """Two short runs of different variants on a cut task 1: the vote of [a, a, b] is run a's choice, and a
    vote of one run gives that run's own figures."""
    import dataclasses

    from keras_match import train
    from keras_match.datasets import load
    from keras_match.models.carnn_dialog import vote

    full = load("dialog-babi-task1", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 40), ("dev", 10), ("test", 10))})
    dirs = []
    for variant in ("i", "s"):
        run_dir = tmp_path / variant
        train(f"carnn_dialog_{variant}", dataset, embeddings_path=None, run_dir=run_dir, epochs=1, seed=3,
              verbose=0, units=8, batch_size=16)
        dirs.append(run_dir)
    alone = vote(dirs[:1], dataset, "test")
    assert alone["num_runs"] == 1 and alone["voting"] == alone["runs"][0]
    result = vote([dirs[0], dirs[0], dirs[1]], dataset, "test")
    assert result["voting"] == alone["voting"] and result["runs"][2] == vote(dirs[1:], dataset, "test")["voting"]
    assert result["voting"]["num_examples"] == len(dataset["test"])
    with pytest.raises(ValueError, match="at least one run"):
        vote([], dataset, "test")


def test_a_run_trained_in_mixed_bfloat16_votes_in_it_and_scores_as_its_metrics_say(data_dir, tmp_path, monkeypatch):
    """The vote scores each run in the precision it trained in (`precision="trained"`): a 1,024-unit nCARNN run of
    task 6 trained in mixed bfloat16 and scored in float32 got 2 fewer of the 4,159 dev turns right (0.580188
    against its 0.580668), so benchmarks/dialog_vote.py refused it as not the run of its result file."""
    import dataclasses
    import json

    from keras_match import precision as precision_lib
    from keras_match import train
    from keras_match.artifacts import runs
    from keras_match.datasets import load
    from keras_match.models.carnn_dialog import vote

    full = load("dialog-babi-task1", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 40), ("dev", 10), ("test", 10))})
    run_dir = tmp_path / "bf16"
    train("carnn_dialog_n", dataset, embeddings_path=None, run_dir=run_dir, epochs=1, seed=3, verbose=0, units=8,
          batch_size=16, precision="mixed_bfloat16")
    assert precision_lib.of_model(runs.load_run(run_dir, precision="trained").model) == "mixed_bfloat16"
    assert precision_lib.of_model(runs.load_run(run_dir).model) == "float32"  # load_run's default is unchanged

    computed_in = []
    load_run = runs.load_run

    def recording(path, precision="float32"):
        run = load_run(path, precision=precision)
        computed_in.append(precision_lib.of_model(run.model))
        return run

    monkeypatch.setattr(runs, "load_run", recording)
    result = vote([run_dir], dataset, "dev")
    vote([run_dir], dataset, "dev", precision="float32")
    assert computed_in == ["mixed_bfloat16", "float32"]
    recorded = json.loads((run_dir / "metrics.json").read_text())["dev"]
    assert result["voting"]["per_response_accuracy"] == pytest.approx(recorded["per_response_accuracy"], abs=1e-9)
    assert result["voting"]["per_dialog_accuracy"] == pytest.approx(recorded["per_dialog_accuracy"], abs=1e-9)
