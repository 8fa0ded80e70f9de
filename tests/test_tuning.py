"""Keras Tuner over the papers' grids (issue 9): search spaces, the hypermodel on real TrecQA data, resuming an
interrupted search, failed trials, the results files and `keras-match train --config best.json`."""

import csv
import json
import tempfile
import time

import keras_tuner as kt
import numpy as np
import pytest

from keras_match import cli, heads, zoo
from keras_match.inputs import pipeline
from keras_match.training import spaces, tuning
from keras_match.training.recipe import Recipe

from learning_checks import ranking_figures_of_model, ranking_figures_of_scores

# QRNN: the zoo's quickest model to build and train, so the searches below cost seconds per trial
TINY = {"file": "tiny.json", "family": "ctrn",
        "hyperparameters": {"filters": {"type": "choice", "values": [8, 16]},
                            "projection_dim": {"type": "choice", "values": [None, 12]}}}
FIXED = dict(dense_units=4, epochs=1, max_vocabulary=0)
"""Settings every trial shares: one epoch, a small dense layer, and the training words only as the vocabulary
(`max_vocabulary=0`: with the vector file's 400,000 words every trial built, checkpointed and reloaded an 80 MB
embedding matrix, and the grid-search test took 230 s instead of 44 s on this 2-core machine;
tests/test_vectors.py covers the vectors' words)."""


def test_every_zoo_entry_has_a_space_that_fits_it():
    for name in zoo.names():
        space = tuning.space_for(name)
        preset = zoo.describe(name)
        family = preset["family"]
        if preset["model"].get("backbone") and family != "encoder_rankers":  # its family searches no backbone
            assert space["file"] == "backbone.json" and "backbone_trainable" in space["hyperparameters"]
        else:
            assert space["family"] == family and space["file"] == f"{family}.json"  # tuning/<family>.json
    ctrn = tuning.space_for("ctrn")["hyperparameters"]
    assert ctrn["filters"] == {"type": "int", "min_value": 128, "max_value": 1024, "step": 128}  # the paper's grid
    assert ctrn["batch_size"]["values"] == [64, 128, 256, 512]
    hp = kt.HyperParameters()
    values = tuning.declare(hp, tuning.space_for("mcan_fm"))
    assert values["projection_dim"] is None  # a JSON choice: null comes back as None
    assert set(values) == set(tuning.space_for("mcan_fm")["hyperparameters"])


def _spaces_package(monkeypatch, tmp_path, name, files):
    """The search spaces come from the importable package `name` holding the files `files` (`{file: space}`)."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file_name, space in files.items():
        (package / file_name).write_text(json.dumps(space))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spaces, "SPACE_PACKAGE", name)


def test_a_zoo_entry_without_a_space_names_the_file_to_add(monkeypatch, tmp_path):
    _spaces_package(monkeypatch, tmp_path, "no_tuning_spaces", {})
    with pytest.raises(FileNotFoundError, match=r"zoo entry 'qrnn' has no search space: add tuning/ctrn\.json"):
        tuning.space_for("qrnn")


def test_a_space_that_does_not_fit_its_entry_is_refused(monkeypatch, tmp_path):
    bad = {"family": "ctrn", "hyperparameters": {"lstm_units": {"type": "int", "min_value": 1, "max_value": 2}}}
    _spaces_package(monkeypatch, tmp_path, "bad_tuning_spaces", {"ctrn.json": bad})
    with pytest.raises(ValueError, match=r"search space ctrn\.json does not fit zoo entry 'qrnn'.*lstm_units"):
        tuning.space_for("qrnn")


def test_a_space_file_of_your_own_is_read_and_checked_against_the_entry(tmp_path):
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"hyperparameters": {"filters": {"type": "int", "min_value": 64, "max_value": 128,
                                                               "step": 64}}}))
    space = tuning.read_space(own, "ctrn")
    assert space["file"] == str(own) and set(space["hyperparameters"]) == {"filters"}
    with pytest.raises(ValueError, match=r"own\.json does not fit zoo entry 'mcan_fm'.*filters"):
        tuning.read_space(own, "mcan_fm")
    own.write_text('{"hyperparameters": {"filters": ')
    with pytest.raises(ValueError, match=r"search space .*own\.json is not valid JSON"):
        tuning.read_space(own, "ctrn")
    with pytest.raises(FileNotFoundError):
        tuning.read_space(tmp_path / "missing.json", "ctrn")


def _conditional(**when):
    """A space of `ctrn_minilm` (the tiny backbone) whose backbone rate holds only where some layers train."""
    return {"hyperparameters": {"backbone_trainable": {"type": "choice", "values": ["frozen", 1]},
                                "backbone_learning_rate": {"type": "choice", "values": [0.002],
                                                           "when": {"backbone_trainable": [1]}, **when}}}


@pytest.mark.parametrize("when, message", [
    ({"backbone_layers": ["last"]}, "must be an object naming one hyperparameter declared before it"),
    ({"backbone_trainable": [2]}, r"must list some of 'backbone_trainable'\'s values \[\"frozen\", 1\]"),
    ({"backbone_trainable": []}, "must list some of"),
    ({"backbone_trainable": [1], "learning_rate": [0.1]}, "must be an object naming one hyperparameter"),
    ("backbone_trainable", "must be an object naming one hyperparameter"),
])
def test_a_condition_that_names_no_earlier_value_is_refused(tmp_path, when, message):
    own = tmp_path / "own.json"
    own.write_text(json.dumps(_conditional(when=when)))
    with pytest.raises(ValueError, match=r"own\.json, hyperparameter 'backbone_learning_rate': \"when\" " + message):
        tuning.read_space(own, "ctrn_minilm")


def test_a_conditional_value_is_checked_where_its_condition_holds(tmp_path):
    """The first trial (frozen) leaves the backbone rate out, so the bad rate is only found with its parent at 1."""
    own = tmp_path / "own.json"
    space = _conditional()
    space["hyperparameters"]["backbone_learning_rate"]["values"] = [-1.0]
    own.write_text(json.dumps(space))
    with pytest.raises(ValueError, match=r"hyperparameter 'backbone_learning_rate' = -1\.0: .*backbone_learning_rate"):
        tuning.read_space(own, "ctrn_minilm")


@pytest.mark.parametrize("oracle_class", [kt.oracles.GridSearchOracle, kt.oracles.RandomSearchOracle,
                                          kt.oracles.BayesianOptimizationOracle])
def test_the_backbone_space_searches_the_backbone_rate_only_where_layers_train(oracle_class):
    """The oracles over tuning/backbone.json (no training: each trial gets a random figure): a trial carries
    `backbone_learning_rate` exactly when some of the backbone's layers train; the grid runs 6 frozen trials and 24
    with each of the rate's values, no combination twice."""
    space = tuning.space_for("mcan_fm_minilm")
    hp = kt.HyperParameters()
    tuning.declare(hp, space)
    oracle = oracle_class(objective=kt.Objective("x", "max"), max_trials=100 if oracle_class is
                          kt.oracles.GridSearchOracle else 12, seed=3)
    oracle._set_project_dir(tempfile.mkdtemp(), "search")
    oracle.update_space(hp)
    trials, figures = [], np.random.default_rng(0)
    while (trial := oracle.create_trial(str(len(trials)))).status == "RUNNING":
        trials.append(tuning.declare(trial.hyperparameters.copy(), space))
        oracle.update_trial(trial.trial_id, {"x": float(figures.random())})
        oracle.end_trial(trial)
    assert trials and all((t["backbone_trainable"] == "frozen") != ("backbone_learning_rate" in t) for t in trials)
    if oracle_class is kt.oracles.GridSearchOracle:
        assert len(trials) == 30 and len({json.dumps(t, sort_keys=True) for t in trials}) == 30
        assert sum(t["backbone_trainable"] == "frozen" for t in trials) == 6
        assert sorted(json.dumps(t.get("backbone_learning_rate")) for t in trials) == \
            ["2e-05"] * 12 + ["null"] * 12 + ["null"] * 6
    else:
        assert len(trials) == 12


@pytest.mark.parametrize("kind", tuning.TUNERS)
def test_every_tuner_kind_is_made(hypermodel, tmp_path, kind):
    """The `tune` extra installs what each tuner needs (Bayesian optimization: scikit-learn)."""
    oracles = {"grid": kt.oracles.GridSearchOracle, "random": kt.oracles.RandomSearchOracle,
               "hyperband": kt.oracles.HyperbandOracle, "bayesian": kt.oracles.BayesianOptimizationOracle}
    tuner = tuning.make_tuner(hypermodel, kind, tmp_path / "search", max_trials=None if kind == "hyperband" else 2)
    assert isinstance(tuner.oracle, oracles[kind])


def _dev_map(hypermodel, model):
    """The dev MAP of a trial's model, measured by trec_eval (not keras_match.metrics)."""
    return ranking_figures_of_model(model, hypermodel.preprocessor, hypermodel.recipe.dataset["dev"],
                                    hypermodel.task.no_positive, inputs=hypermodel.dev_inputs)["map"]


@pytest.fixture(scope="module")
def hypermodel(data_dir):
    return tuning.MatchHyperModel("qrnn_wikiqa", "trecqa-clean", space=TINY, data_dir=data_dir, max_train_questions=12,
                                  verbose=0, **FIXED)


def test_a_grid_search_runs_every_combination_and_resumes_without_repeating(hypermodel, tmp_path, monkeypatch,
                                                                            capsys):
    fits = []
    original = tuning.MatchHyperModel.fit

    def counted(self, hp, model, *args, **kwargs):
        fits.append(dict(hp.values))
        if len(fits) == 3:
            raise KeyboardInterrupt  # killed during the third trial
        return original(self, hp, model, *args, **kwargs)

    monkeypatch.setattr(tuning.MatchHyperModel, "fit", counted)
    tuner = tuning.make_tuner(hypermodel, "grid", tmp_path / "search")
    with pytest.raises(KeyboardInterrupt):
        tuner.search(verbose=0)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("trial ")]
    assert len(lines) == 2 and "filters=8" in lines[0] and "val_map 0." in lines[0]

    again = tuning.make_tuner(hypermodel, "grid", tmp_path / "search")  # the same command again
    again.search(verbose=0)
    assert len(fits) == 5  # 2 finished + 1 interrupted + the interrupted one again + the last one
    assert fits[3] == fits[2] and fits[4] not in fits[:3]
    rows = tuning.trial_rows(again)
    finished = [r for r in rows if r["dev"] is not None]
    assert len(finished) == 4
    combos = {(r["hyperparameters"]["filters"], r["hyperparameters"]["projection_dim"]) for r in finished}
    assert combos == {(8, None), (8, 12), (16, None), (16, 12)}
    for r in finished:
        assert r["epochs"] == 1 and r["seconds"] > 0
    # the dev MAP recorded for a trial is that of the model Keras Tuner kept for it (its best epoch's weights),
    # scored again and measured by trec_eval: a trial of the interrupted search and the last of the resumed one
    for r in (finished[0], finished[-1]):
        kept = again.load_model(again.oracle.get_trial(r["trial"]))
        assert r["dev"] == pytest.approx(_dev_map(hypermodel, kept), abs=1e-9), r
    assert finished[0]["dev"] != finished[-1]["dev"]  # two models ranking differently: no accidental agreement

    result = tuning.write_results(again, hypermodel, tmp_path / "search")
    with open(result["files"]["csv"], encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert [row["filters"] for row in table if row["val_map"]].count("8") == 2
    best = json.loads((tmp_path / "search" / "best.json").read_text())
    assert best["dev"] == max(r["dev"] for r in finished)
    assert best["settings"]["dense_units"] == 4 and "filters" in best["settings"]
    assert (tmp_path / "search" / "trials.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failing_trial_is_recorded_and_the_search_goes_on(hypermodel, tmp_path, monkeypatch):
    original = zoo.build

    def build(settings, **kwargs):
        if settings.model["projection_dim"] == 12:
            raise MemoryError("simulated: out of memory for this width")
        return original(settings, **kwargs)

    monkeypatch.setattr(zoo, "build", build)
    tuner = tuning.make_tuner(hypermodel, "grid", tmp_path / "search", max_trials=3)
    tuner.search(verbose=0)
    rows = tuning.trial_rows(tuner)
    assert [r["hyperparameters"]["projection_dim"] for r in rows] == [None, 12, None]
    assert rows[1]["dev"] is None and "out of memory" in rows[1]["error"] and "FAILED" in rows[1]["status"]
    assert rows[0]["dev"] is not None and rows[2]["dev"] is not None  # the search went on after the failure


def test_tune_command_then_train_with_the_best_configuration(data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tuning, "space_for", lambda name: TINY)
    search = tmp_path / "search"
    args = ["tune", "qrnn_wikiqa", "--dataset", "trecqa-clean", "--train-split", "train", "--data-dir",
            str(data_dir), "--tuner", "random", "--max-trials", "2", "--dir", str(search), "--epochs", "1",
            "--max-train-questions", "12", "--set", "dense_units=4"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert out.count("\ntrial ") + out.startswith("trial ") == 2
    # the retraining command trains on the split the search trained on
    assert (f"retrain it: keras-match train qrnn_wikiqa --dataset trecqa-clean --train-split train --config "
            f"{search / 'best.json'}") in out
    best = json.loads((search / "best.json").read_text())
    assert best["dataset"] == "trecqa-clean" and best["train_split"] == "train"
    run_dir = tmp_path / "run"
    assert best["settings"]["epochs"] == 1  # the search's fixed --epochs travels with the configuration
    assert cli.main(["train", "qrnn_wikiqa", "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--max-train-questions", "12", "--run-dir", str(run_dir), "--config", str(search / "best.json"),
                     "--epochs", "2", "--set", "dropout=0.25"]) == 0
    settings = json.loads((run_dir / "config.json").read_text())["settings"]
    assert settings["model"]["filters"] == best["settings"]["filters"]
    assert settings["model"]["dense_units"] == 4  # from the configuration
    assert settings["training"]["epochs"] == 2 and settings["model"]["dropout"] == 0.25  # the options override it


def test_an_entry_over_a_backbone_searches_what_of_it_trains(data_dir, tmp_path, capsys):
    """`ctrn_minilm` (the tiny backbone of tests/conftest.py) searched over what of the encoder trains and, only
    where some layers train, the backbone's own rate (a `"when"`, as tuning/backbone.json has it; `tuning.space_for`
    gives that file, test_every_zoo_entry_has_a_space_that_fits_it): both trials of the grid train, the body as
    the entry and `--set` have it. Without the `"when"` the frozen trial would fail (a backbone rate with no layer
    of the backbone training); with it, that trial leaves the rate out (an empty cell of trials.csv)."""
    own, search = tmp_path / "own.json", tmp_path / "search"
    own.write_text(json.dumps(_conditional()))
    assert cli.main(["tune", "ctrn_minilm", "--dataset", "trecqa-raw", "--data-dir", str(data_dir), "--tuner", "grid",
                     "--space", str(own), "--dir", str(search), "--epochs", "1", "--max-train-questions", "3",
                     "--set", "filters=8", "--set", "dense_units=4"]) == 0
    rows = json.loads((search / "trials.json").read_text())
    rows = rows["trials"] if isinstance(rows, dict) else rows
    assert [(r["status"], r["hyperparameters"]) for r in rows] == [
        ("COMPLETED", {"backbone_trainable": "frozen"}),
        ("COMPLETED", {"backbone_trainable": 1, "backbone_learning_rate": 0.002})]
    with open(search / "trials.csv", encoding="utf-8") as f:
        assert [row["backbone_learning_rate"] for row in csv.DictReader(f)] == ["", "0.002"]
    best = json.loads((search / "best.json").read_text())["settings"]
    assert best["filters"] == 8 and best["dense_units"] == 4 and best["backbone_trainable"] in ("frozen", 1)


def test_a_config_of_another_zoo_entry_is_refused(tmp_path, capsys):
    path = tmp_path / "best.json"
    path.write_text(json.dumps({"zoo": "ctrn", "settings": {"filters": 128}}))
    assert cli.main(["train", "mcan_sm", "--config", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    assert f"{path} configures zoo entry 'ctrn', not 'mcan_sm'" in capsys.readouterr().err


def test_a_search_on_a_dev_split_without_relevant_answers_is_refused_at_once(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"qid": "q1", "question": "who wrote hamlet ?", "answer": "shakespeare .", "label": 1},
            {"qid": "q1", "question": "who wrote hamlet ?", "answer": "a play .", "label": 0}]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "dev.jsonl").write_text("".join(json.dumps(dict(r, label=0)) + "\n" for r in rows))
    with pytest.raises(ValueError, match="dev.jsonl: the dev split of 'data' has no question with a relevant answer"):
        tuning.MatchHyperModel("qrnn_wikiqa", str(folder), space=TINY, embeddings_path=None)


def test_a_trial_reports_the_epochs_it_ran_and_its_whole_time_not_those_of_its_best_epoch(data_dir, tmp_path,
                                                                                          monkeypatch):
    """Keras Tuner keeps each metric at the trial's best epoch: here the first of three. The first epoch's dev
    figures are the real ones (the recipe's evaluator); the second and third epochs report 0, so that the first is
    the best; what the trial records must then be the first epoch's figure, of the weights it had then."""
    hypermodel = tuning.MatchHyperModel("qrnn_wikiqa", "trecqa-clean", space=TINY, data_dir=data_dir,
                                        max_train_questions=12, verbose=0, dense_units=4, epochs=3, patience=5)
    real_evaluator, epochs = Recipe.evaluator, []

    def first_epoch_best(self, model, preprocessor, examples, inputs=None):
        evaluate = real_evaluator(self, model, preprocessor, examples, inputs)

        def figures():
            weights = [w.copy() for w in model.get_weights()]
            if epochs:
                epochs.append({"weights": weights})
                return {"map": 0.0, "mrr": 0.0, "p@1": 0.0}
            # the model's dev scores, from the evaluator's inputs, measured by trec_eval
            scores = heads.ranking_score(heads.head_of(model), pipeline.predict(model, inputs,
                                                                                preprocessor.SEQUENCE_INPUTS))
            epochs.append({"weights": weights, "trec_eval": ranking_figures_of_scores(
                hypermodel.recipe.dataset["dev"], scores, hypermodel.task.no_positive)})
            return evaluate()

        return figures

    monkeypatch.setattr(Recipe, "evaluator", first_epoch_best)
    walls = []
    original = tuning.MatchHyperModel.fit

    def timed(self, *args, **kwargs):
        start = time.time()
        history = original(self, *args, **kwargs)
        walls.append(time.time() - start)
        return history

    monkeypatch.setattr(tuning.MatchHyperModel, "fit", timed)
    tuner = tuning.make_tuner(hypermodel, "random", tmp_path / "search", max_trials=1)
    tuner.search(verbose=0)
    (row,) = tuning.trial_rows(tuner)
    assert len(epochs) == 3 and row["epochs"] == 3
    assert row["seconds"] == pytest.approx(walls[0], abs=0.2)
    # the dev figure recorded is the first epoch's real MAP (trec_eval on that epoch's scores), and the model
    # Keras Tuner kept for the trial has the first epoch's weights, which training then changed
    assert row["dev"] == pytest.approx(epochs[0]["trec_eval"]["map"], abs=1e-9)
    kept = tuner.load_model(tuner.oracle.get_trial(row["trial"]))
    assert all(np.array_equal(a, b) for a, b in zip(kept.get_weights(), epochs[0]["weights"], strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(epochs[0]["weights"], epochs[2]["weights"]))
