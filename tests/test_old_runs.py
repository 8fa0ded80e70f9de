"""Run folders written before the settings had sections still load, score the same and export: their
`config.json` (the first layout: a `preset` with the truncation lengths among its training settings and the pair
features at its top level, the task as a word) is read into today's layout by `keras_match.artifacts.runs.read_config`."""

import json
import shutil

import numpy as np
import pytest

from keras_match import tasks, zoo
from keras_match.artifacts import runs
from keras_match.serving import export
from keras_match.datasets.catalog import load_by_name
from keras_match.settings import TrainingSettings, section_fields


def first_layout(config):
    """The `config.json` the first layout wrote for the same run (keras-match up to commit 1e260b4)."""
    settings = config["settings"]
    preprocessing = dict(settings["preprocessing"])
    lowercase = preprocessing.pop("lowercase")
    overlap, bm25 = preprocessing.pop("overlap_features"), preprocessing.pop("bm25_feature")
    described = zoo.describe(config["zoo"])
    preset = {"builder": config["builder"], "description": described["description"], "paper": described["paper"],
              "model": settings["model"], "training": {**settings["training"], **preprocessing},
              "dataset": described["dataset"], "reported": described["reported"], "name": config["zoo"],
              "overlap_features": overlap, "bm25_feature": bm25}
    task = config["task"]
    return {"zoo": config["zoo"], "preset": preset, "dataset": config["dataset"], "task": task["kind"],
            "label_names": task.get("label_names"), "no_positive_rule": task.get("no_positive_rule"),
            "loss_mode": "pointwise", "train_split": config["train_split"], "seed": config["seed"],
            "max_train_questions": config["max_train_questions"], "embeddings": config["embeddings"],
            "embeddings_sha256": config["embeddings_sha256"], "data_files": config["data_files"],
            "max_question_length": preprocessing["max_question_length"],
            "max_answer_length": preprocessing["max_answer_length"], "lowercase": lowercase,
            "overlap_features": overlap, "bm25_feature": bm25}


@pytest.fixture
def old_run(trained_run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(trained_run, old)
    config = json.loads((trained_run / "config.json").read_text())
    (old / "config.json").write_text(json.dumps(first_layout(config)))
    (old / runs.DIGESTS_FILE).unlink()  # the first layout had no record of its files' sha256
    return old


def test_a_first_layout_config_reads_as_todays(trained_run, old_run):
    today = runs.read_config(trained_run / "config.json")
    converted = runs.read_config(old_run / "config.json")
    assert converted["settings"] == today["settings"]
    assert converted["task"] == today["task"] == {"kind": "ranking", "no_positive_rule": "skip"}
    for key in ("zoo", "builder", "dataset", "seed", "data_files", "embeddings_sha256"):
        assert converted[key] == today[key], key
    assert set(converted["settings"]["training"]) == set(section_fields(TrainingSettings))


def test_a_first_layout_run_scores_and_exports_like_todays(trained_run, old_run, data_dir, tmp_path):
    old, new = runs.load_run(old_run), runs.load_run(trained_run)
    questions, answers = ["who wrote hamlet ?"] * 2, ["Shakespeare wrote Hamlet .", "the teapot dome scandal"]
    np.testing.assert_array_equal(old.score(questions, answers), new.score(questions, answers))
    dataset = load_by_name("trecqa-clean", data_dir=data_dir)
    assert old.evaluate(dataset["test"], task=tasks.task_for(dataset)) == \
        new.evaluate(dataset["test"], task=tasks.task_for(dataset))
    metadata = export.read_metadata(export.saved_model(old, tmp_path / "export", version=1, warmup=False))
    assert sorted(metadata["signatures"]) == ["rank", "serve_ids", "serving_default"]
    assert metadata["task"] == {"kind": "ranking", "no_positive_rule": "skip"}
    # a finished run of the first layout is still refused as a training target
    with pytest.raises(FileExistsError, match="holds a finished run"):
        runs.check_resume(runs.RunFiles(old_run), runs.read_config(trained_run / "config.json"))


def test_a_first_layout_classifier_keeps_its_labels(tmp_path):
    config = {"zoo": "mcan_sm", "task": "classification", "label_names": ["entailment", "neutral", "contradiction"],
              "preset": {"builder": "mcan", "model": {"head": "classification", "num_classes": 3},
                         "training": {"learning_rate": 0.001, "max_question_length": 40, "max_answer_length": 40}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    converted = runs.read_config(tmp_path / "config.json")
    assert converted["task"] == {"kind": "classification", "label_names": ["entailment", "neutral", "contradiction"]}
    assert tasks.task_from_config(converted).label_names == ("entailment", "neutral", "contradiction")
    assert converted["settings"]["preprocessing"] == {"max_question_length": 40, "max_answer_length": 40,
                                                      "overlap_features": False, "bm25_feature": False,
                                                      "lowercase": True}
    # a run of the first layout trained in float32, before the precision setting existed: read as such
    assert converted["settings"]["training"] == {"learning_rate": 0.001, "precision": "float32"}


def test_a_dialog_run_written_before_history_cut_kept_the_last_turns(tmp_path):
    config = {"format": 1, "zoo": "carnn_dialog_i", "settings": {
        "model": {"units": 8}, "training": {"precision": "float32"},
        "preprocessing": {"max_turns": 30, "max_turn_length": 30}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert runs.read_config(tmp_path / "config.json")["settings"]["preprocessing"] == {
        "max_turns": 30, "max_turn_length": 30, "history_cut": "oldest"}
    pair = dict(config, zoo="mcan_fm", settings=dict(config["settings"], preprocessing={"max_question_length": 40}))
    (tmp_path / "config.json").write_text(json.dumps(pair))  # a pair run has no history to cut
    assert runs.read_config(tmp_path / "config.json")["settings"]["preprocessing"] == {"max_question_length": 40}


def test_a_run_interrupted_before_the_settings_were_recorded_as_built_resumes(trained_run, tmp_path, monkeypatch):
    """Runs begun before `Settings.for_vectors` recorded the entry's embedding_dim (mcan_fm: 300) over GloVe 50d;
    today's config of the same run says 50. Interrupted, such a run resumes; another setting still refuses it."""
    interrupted = tmp_path / "interrupted"
    shutil.copytree(trained_run, interrupted)
    (interrupted / "metrics.json").unlink()
    monkeypatch.setattr(runs, "finished_epochs", lambda files: 1)
    today = runs.read_config(trained_run / "config.json")
    assert today["embeddings_sha256"] and today["settings"]["model"]["embedding_dim"] == 50
    recorded = json.loads(json.dumps(today))
    recorded["settings"]["model"]["embedding_dim"] = 300
    (interrupted / "config.json").write_text(json.dumps(recorded))
    assert runs.check_resume(runs.RunFiles(interrupted), today) is True
    recorded["settings"]["model"]["lstm_dropout"] = 0.123
    (interrupted / "config.json").write_text(json.dumps(recorded))
    with pytest.raises(ValueError, match="settings differ"):
        runs.check_resume(runs.RunFiles(interrupted), today)
