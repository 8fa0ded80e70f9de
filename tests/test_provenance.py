"""A run's `metrics.json` says what made it (`keras_match.artifacts.provenance`)."""

import json
import pathlib
import subprocess

import pytest

from keras_match.artifacts import provenance


def test_a_finished_run_records_its_provenance(trained_run, data_dir):
    report = json.loads((trained_run / "metrics.json").read_text())
    found = provenance.check(report, trained_run / "metrics.json")
    config = json.loads((trained_run / "config.json").read_text())
    assert found["command"].startswith("keras-match train mcan_fm --dataset trecqa-clean --data-dir ")
    assert found["seed"] == config["seed"] == 1234 and found["settings"] == config["settings"]
    assert found["data_files"] == config["data_files"] and found["data_files"]  # every file with its sha256
    assert found["embeddings"] == {"path": config["embeddings"], "sha256": config["embeddings_sha256"]}
    assert found["versions"]["tensorflow"].startswith("2.") and found["versions"]["keras"].startswith("3.")
    assert found["machine"]["cores"] >= 1 and found["machine"]["threads"] >= 1
    assert found["started"] <= found["finished"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=provenance._ROOT).stdout.strip()
    assert found["code"]["commit"] == (head or None) and found["code"]["keras_match"] == "0.1.0"


@pytest.mark.parametrize("result,missing", [({}, "no provenance"), ({"provenance": {"command": "x"}}, "without")])
def test_a_result_without_provenance_is_refused(result, missing):
    with pytest.raises(ValueError, match=missing) as info:
        provenance.check(result, "results/old.json")
    assert str(info.value).startswith("results/old.json: ")


def test_command_line_as_typed():
    assert provenance.command_line(["/venv/bin/keras-match", "train", "mcan_fm", "--set", "head=score"]) == (
        "keras-match train mcan_fm --set head=score")
    assert provenance.command_line(["benchmarks/reproduce.py", "ctrn", "--seeds", "1", "2"]) == (
        "python benchmarks/reproduce.py ctrn --seeds 1 2")


def test_a_script_of_the_checkout_given_by_its_absolute_path_is_named_from_the_checkout_root(tmp_path):
    script = pathlib.Path(provenance.__file__).resolve().parents[2] / "benchmarks" / "reproduce.py"
    assert script.is_file()  # the checkout's own script (this test named keras_match/benchmarks/, which is none)
    assert provenance.command_line([str(script), "ctrn", "--seeds", "1"]) == (
        "python benchmarks/reproduce.py ctrn --seeds 1")  # as ablation.py starts it, from any checkout
    elsewhere = tmp_path / "benchmarks" / "reproduce.py"
    assert provenance.command_line([str(elsewhere), "ctrn"]) == f"python {elsewhere} ctrn"


def test_the_code_paths_are_those_of_this_checkout():
    # from 3d1d69f (provenance.py moved into keras_match/artifacts/) to this test, the root was keras_match/, no
    # code path matched there and every result file said dirty false
    root = provenance._ROOT
    assert (root / "keras_match" / "artifacts" / "provenance.py").is_file()
    for path in provenance.CODE_PATHS:
        assert (root / path).exists(), path


def test_dirty_means_the_code_differs_from_its_commit_not_the_result_files(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    for folder in ("benchmarks/results", "keras_match", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "keras_match" / "model.py").write_text("x = 1\n")
    (tmp_path / "benchmarks" / "bench.py").write_text("z = 1\n")
    (tmp_path / "benchmarks" / "results" / "r.json").write_text("{}\n")
    (tmp_path / "README.md").write_text("no figure\n")
    (tmp_path / "tests" / "test_x.py").write_text("assert 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    assert provenance.code()["dirty"] is False
    (tmp_path / "benchmarks" / "results" / "r.json").write_text('{"rerun": 1}\n')  # a benchmark rewrote its result
    (tmp_path / "README.md").write_text("a figure\n")  # README and tests compute nothing
    (tmp_path / "tests" / "test_x.py").write_text("assert True\n")
    (tmp_path / "notes.txt").write_text("untracked, outside the code\n")
    assert provenance.code()["dirty"] is False and provenance.code()["changed"] == []
    (tmp_path / "keras_match" / "model.py").write_text("x = 2\n")
    (tmp_path / "benchmarks" / "bench.py").write_text("z = 2\n")
    (tmp_path / "keras_match" / "new_module.py").write_text("y = 1\n")  # untracked code is code too
    found = provenance.code()
    assert found["dirty"] is True and len(found["commit"]) == 40
    assert found["changed"] == ["benchmarks/bench.py", "keras_match/model.py", "keras_match/new_module.py"]


def test_the_same_command_with_the_same_seed_gives_the_same_figures(trained_run, data_dir, tmp_path):
    """Two runs of one `keras-match train` command and seed on one machine: identical metrics.json figures."""
    from conftest import mcan_train_args

    from keras_match import cli

    again = tmp_path / "again"
    assert cli.main(mcan_train_args(data_dir, again, "--epochs", "1")) == 0  # the command of trained_run
    first = json.loads((trained_run / "metrics.json").read_text())
    second = json.loads((again / "metrics.json").read_text())
    for split in ("dev", "test"):
        for figure in ("map", "mrr", "p@1"):
            assert second[split][figure] == first[split][figure], (split, figure)
    assert second["provenance"]["seed"] == first["provenance"]["seed"]
    assert second["provenance"]["data_files"] == first["provenance"]["data_files"]
