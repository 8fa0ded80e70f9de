"""benchmarks/summarize.py: the results table is computed from reproduce.py's JSON files."""

import json

import pytest
from conftest import benchmark_module

from keras_match.artifacts import provenance


def _summarize():
    return benchmark_module("summarize")


def _result(seed, test_map, loss_mode="pointwise", overrides=None):
    made = provenance.collect(0.0, command=f"python benchmarks/reproduce.py ctrn --seeds {seed}")
    run = {"seed": seed, "best_epoch": 2, "epochs_run": 4, "wall_time_s": 100.0, "loss_mode": loss_mode,
           "train_pairs_per_s": 200.0 + seed, "dev": {"map": 0.7, "mrr": 0.8, "p@1": 0.6},
           "test": {"map": test_map, "mrr": 0.8, "p@1": 0.7}, "provenance": made}
    return {"ctrn": {"dataset": "trecqa-raw", "train_split": "train", "overrides": overrides or {},
                     "runs": [run], "provenance": made}}


@pytest.mark.parametrize("where", ["file", "run"])
def test_a_result_without_provenance_is_refused_naming_the_file(tmp_path, where, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "old.json"
    good.write_text(json.dumps(_result(1, 0.7)))
    old = _result(2, 0.6)
    del (old["ctrn"] if where == "file" else old["ctrn"]["runs"][0])["provenance"]
    bad.write_text(json.dumps(old))
    module = _summarize()
    with pytest.raises(module.ProvenanceError, match="old.json"):
        module.table([str(good), str(bad)])
    with pytest.raises(SystemExit, match=r"old\.json.*no provenance"):
        module.main([str(good), str(bad)])
    assert capsys.readouterr().out == ""  # nothing printed from the good file alone


def test_the_default_output_is_json_with_the_table_s_figures(tmp_path, capsys):
    paths = []
    for seed, value in [(1, 0.70), (2, 0.74)]:
        path = tmp_path / f"r{seed}.json"
        path.write_text(json.dumps(_result(seed, value)))
        paths.append(str(path))
    _summarize().main(paths + ["--split", "test", "dev"])
    found = json.loads(capsys.readouterr().out)
    (row,) = found["rows"]
    assert row["model"] == "ctrn" and row["seeds"] == [1, 2]
    assert row["figures"]["test"]["map"]["mean"] == pytest.approx(0.72)
    assert row["figures"]["test"]["map"]["std"] == pytest.approx(0.0282843, abs=1e-6)
    assert row["figures"]["dev"]["mrr"] == {"mean": 0.8, "std": 0.0, "n": 2}
    _summarize().main(paths + ["--table"])
    assert "| 0.720 ± 0.028 |" in capsys.readouterr().out


def test_rows_group_seeds_and_average(tmp_path):
    paths = []
    for i, (seed, value, mode) in enumerate([(1, 0.70, "pointwise"), (2, 0.74, "pointwise"), (1, 0.5, "listwise")]):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(_result(seed, value, mode)))
        paths.append(str(path))
    empty = tmp_path / "interrupted.json"
    empty.write_text("")
    text, skipped = _summarize().table(paths + [str(empty)])
    assert skipped == [str(empty)]
    lines = text.splitlines()
    assert lines[0].startswith("| model | dataset | train | loss | seeds | test MAP | test MRR | test P@1")
    pointwise = next(line for line in lines if "| pointwise |" in line)
    assert "| 1, 2 |" in pointwise and "| 0.720 ± 0.028 |" in pointwise  # mean and stdev of 0.70, 0.74
    listwise = next(line for line in lines if "| listwise |" in line)
    assert "| 0.500 |" in listwise


def test_plain_batches_are_their_own_row(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_result(1, 0.7)))
    b.write_text(json.dumps(_result(1, 0.6, overrides={"bucketing": False})))
    text, _ = _summarize().table([str(a), str(b)])
    assert sum("pointwise" in line for line in text.splitlines()) == 2
    assert any("pointwise (plain)" in line and "0.600" in line for line in text.splitlines())


def test_settings_are_their_own_rows_named_by_label_or_overrides(tmp_path):
    rows = [({"pooled_casts": "weighted"}, None, 0.70), ({"pooled_casts": "weighted"}, None, 0.72),
            ({"clipnorm": 1.0}, "+ clip norm 1", 0.60), ({}, None, 0.50)]
    paths = []
    for i, (overrides, label, value) in enumerate(rows):
        result = _result(i, value, overrides=overrides)
        result["ctrn"]["label"] = label
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(result))
        paths.append(str(path))
    lines = _summarize().table(paths)[0].splitlines()
    assert lines[0].startswith("| model | dataset | train | loss | variant | seeds |")
    weighted = next(line for line in lines if '| pooled_casts="weighted" |' in line)
    assert "| 0, 1 |" in weighted and "| 0.710 ± 0.014 |" in weighted
    assert any("| + clip norm 1 | 2 |" in line and "| 0.600 |" in line for line in lines)
    assert any("| pointwise |  | 3 |" in line and "| 0.500 |" in line for line in lines)


def _reproduce():
    return benchmark_module("reproduce")


def test_run_folders_of_other_settings_never_coincide():
    tag = _reproduce()._settings_tag
    assert tag({}) == ""
    assert tag({"loss": "pairwise_hinge", "bucketing": False}, 5) == "-bucketing=false,epochs=5,loss=pairwise_hinge"
    assert tag({"bucketing": False, "loss": "pairwise_hinge"}, 5) == tag({"loss": "pairwise_hinge",
                                                                          "bucketing": False}, 5)
    names = {tag({"loss": "pointwise"}), tag({"loss": "pointwise", "bucketing": False}),
             tag({"loss": "pointwise"}, 5), tag({"projection_dim": 300}), tag({"embeddings_dropout": 0.0})}
    assert len(names) == 5
    assert "/" not in tag({"embeddings": "/data/glove.txt"})
    assert tag({"embeddings": "runs/v25.txt.gz", "pooled_casts": "weighted"}) != tag({"pooled_casts": "weighted"})


def test_a_transfer_dataset_is_a_split_and_bm25_is_its_reference_row(tmp_path):
    paths = []
    for seed, wikiqa in ((1, 0.60), (2, 0.64)):
        result = _result(seed, 0.7)
        result["ctrn"]["runs"][0]["transfer"] = {"wikiqa": {"map": wikiqa, "mrr": 0.7, "p@1": 0.5}}
        result["ctrn"]["bm25"] = {"test": {"map": 0.69, "mrr": 0.78, "p@1": 0.6},
                                  "wikiqa": {"map": 0.586, "mrr": 0.595, "p@1": 0.4}}
        path = tmp_path / f"r{seed}.json"
        path.write_text(json.dumps(result))
        paths.append(str(path))
    lines = _summarize().table(paths, figures=["map"], splits=("test", "wikiqa"))[0].splitlines()
    assert lines[0].startswith("| model | dataset | train | loss | seeds | test MAP | wikiqa MAP |")
    bm25 = next(line for line in lines if line.startswith("| BM25 |"))
    assert "| 0.690 | 0.586 |" in bm25
    model = next(line for line in lines if line.startswith("| ctrn |"))
    assert "| 0.700 ± 0.000 | 0.620 ± 0.028 |" in model
    # without a recorded reference for every split shown, no BM25 row
    assert not any(line.startswith("| BM25 |") for line in
                   _summarize().table(paths, figures=["map"], splits=("dev",))[0].splitlines())


def _args(names, config=None, epochs=None, sets=()):
    import argparse

    return argparse.Namespace(names=names, config=config, epochs=epochs, set=list(sets))


def test_reproduce_retrains_a_best_json_with_epochs_and_set_overriding_it(tmp_path):
    settings = _reproduce().settings
    best = tmp_path / "best.json"
    best.write_text(json.dumps({"zoo": "mcan_fm", "dataset": "trecqa-clean", "settings": {
        "epochs": 5, "learning_rate": 0.001, "lstm_units": 150, "projection_dim": None}}))
    assert settings(_args(["mcan_fm"], best)) == ({"learning_rate": 0.001, "lstm_units": 150,
                                                   "projection_dim": None}, 5)
    overrides, epochs = settings(_args(["mcan_fm"], best, epochs=15, sets=["learning_rate=0.0003"]))
    assert epochs == 15 and overrides["learning_rate"] == 0.0003 and overrides["lstm_units"] == 150
    assert settings(_args(["mcan_fm"], sets=["epochs=7", "dropout=0.1"])) == ({"dropout": 0.1}, 7)
    assert settings(_args(["mcan_fm"])) == ({}, None)


def test_reproduce_refuses_a_best_json_of_another_entry_or_two_epoch_counts(tmp_path):
    import pytest

    settings = _reproduce().settings
    best = tmp_path / "best.json"
    best.write_text(json.dumps({"zoo": "ctrn", "settings": {"filters": 256}}))
    with pytest.raises(ValueError, match="configures zoo entry 'ctrn', not 'mcan_fm'"):
        settings(_args(["mcan_fm"], best))
    with pytest.raises(SystemExit, match="one zoo entry"):
        settings(_args(["ctrn", "qrnn"], best))
    with pytest.raises(ValueError, match="--epochs and --set epochs"):
        settings(_args(["mcan_fm"], epochs=5, sets=["epochs=7"]))
    with pytest.raises(SystemExit, match="--epochs and --set epochs"):  # the command: a message, no traceback
        _reproduce().main(["mcan_fm", "--epochs", "5", "--set", "epochs=7"])
