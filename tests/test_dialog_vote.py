"""benchmarks/dialog_vote.py: CARNN voting over an ablation's finished dialog runs, seed by seed, written as it
finishes, each run checked against its result file."""

import dataclasses
import json
import time

import pytest
from conftest import benchmark_module

from keras_match.artifacts import provenance

SEED = 3


@pytest.fixture(scope="module")
def ablation(data_dir, tmp_path_factory):
    """Two short runs (iCARNN, sCARNN) on a cut task 1, and the result files of a three-row plan (i, s, i)."""
    from keras_match import train
    from keras_match.datasets import load

    full = load("dialog-babi-task1", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 40), ("dev", 10), ("test", 12))})
    out = tmp_path_factory.mktemp("ablation")
    plan = {"dataset": "dialog-babi-task1", "seeds": [SEED, 4], "rows": [
        {"label": "i", "model": "carnn_dialog_i", "set": {}}, {"label": "s", "model": "carnn_dialog_s", "set": {}},
        {"label": "i again", "model": "carnn_dialog_i", "set": {}}]}
    reports = {}
    for variant in ("i", "s"):
        entry = f"carnn_dialog_{variant}"
        reports[entry] = train(entry, dataset, embeddings_path=None, epochs=1, seed=SEED, verbose=0, units=8,
                               batch_size=16, run_dir=out / "runs" / f"{entry}-dialog-babi-task1-default-s{SEED}")
    for index, row in enumerate(plan["rows"]):
        report = reports[row["model"]]
        figures = {split: {key: report[split][key] for key in ("per_response_accuracy", "per_dialog_accuracy")}
                   for split in ("dev", "test")}
        record = provenance.collect(time.time(), seed=SEED)
        run = {"seed": SEED, **figures, "epochs_run": 1, "wall_time_s": 10.0, "provenance": record}
        result = {row["model"]: {"dataset": "dialog-babi-task1", "label": row["label"], "provenance": record,
                                 "reported": {"per_response_accuracy": 0.52}, "runs": [run]}}
        (out / f"{index:02d}-s{SEED}.json").write_text(json.dumps(result))
    return {"plan": plan, "out": out, "dataset": dataset, "reports": reports}


def test_the_vote_of_a_seed_is_written_with_its_provenance_and_equals_the_vote_of_its_runs(ablation):
    from keras_match.models.carnn_dialog import vote

    module = benchmark_module("dialog_vote")
    out = ablation["out"]
    result = module.vote_seed(ablation["plan"], out, out / "runs", SEED, ["dev", "test"], dataset=ablation["dataset"])
    runs = [out / "runs" / f"carnn_dialog_{v}-dialog-babi-task1-default-s{SEED}" for v in ("i", "s", "i")]
    assert [m["run_dir"] for m in result["members"]] == [str(r) for r in runs]
    expected = vote(runs, ablation["dataset"], "test")
    assert result["splits"]["test"]["voting"] == expected["voting"]
    # i, s, i: iCARNN's choice wins every example, so the vote scores exactly as the iCARNN run
    assert expected["voting"]["per_response_accuracy"] == pytest.approx(
        ablation["reports"]["carnn_dialog_i"]["test"]["per_response_accuracy"], abs=1e-9)
    written = json.loads(module.voting_path(out, SEED).read_text())
    assert written["splits"]["dev"]["voting"] == result["splits"]["dev"]["voting"]
    provenance.check(written, "voting file")


def test_a_missing_row_or_a_run_that_does_not_score_as_its_result_file_is_named(ablation, tmp_path):
    module = benchmark_module("dialog_vote")
    out = ablation["out"]
    with pytest.raises(module.VoteError, match=r"row 0 \(i\) has no result at seed 4"):
        module.vote_seed(ablation["plan"], out, out / "runs", 4, ["test"], dataset=ablation["dataset"])
    # a result file whose figure the run folder does not give: no run folder holds it
    changed = tmp_path / "changed"
    changed.mkdir()
    for path in out.glob("*-s*.json"):
        text = json.loads(path.read_text())
        for result in text.values():
            result["runs"][0]["test"]["per_response_accuracy"] += 0.25
        (changed / path.name).write_text(json.dumps(text))
    with pytest.raises(module.VoteError, match="need exactly one"):
        module.vote_seed(ablation["plan"], changed, out / "runs", SEED, ["test"], dataset=ablation["dataset"])
    assert not module.voting_path(changed, SEED).exists()


def test_rows_chooses_the_voters_and_the_first_breaks_ties(ablation, tmp_path):
    import shutil

    module = benchmark_module("dialog_vote")
    out = tmp_path / "out"
    out.mkdir()
    for path in ablation["out"].glob("*-s*.json"):
        shutil.copy(path, out / path.name)
    runs = ablation["out"] / "runs"
    result = module.vote_seed(ablation["plan"], out, runs, SEED, ["test"], dataset=ablation["dataset"], rows=[1, 0])
    assert [m["row"] for m in result["members"]] == [1, 0]
    assert [m["entry"] for m in result["members"]] == ["carnn_dialog_s", "carnn_dialog_i"]
    # two voters: where they differ it is a tie, which the first (sCARNN) wins, so the vote scores as sCARNN
    assert result["splits"]["test"]["voting"]["per_response_accuracy"] == pytest.approx(
        ablation["reports"]["carnn_dialog_s"]["test"]["per_response_accuracy"], abs=1e-9)
    assert json.loads(module.voting_path(out, SEED).read_text())["members"] == result["members"]
    # the seed's voting file is reused only for the rows that made it
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ablation["plan"]))
    argv = [str(out), "--plan", str(plan), "--runs", str(runs), "--seeds", str(SEED)]
    assert module.main(argv + ["--rows", "1", "0"]) == 0
    assert module.main(argv + ["--rows", "0", "1"]) == 1  # not scored: the file holds rows [1, 0]
    with pytest.raises(module.VoteError, match=r"row 3: the plan has rows 0-2"):
        module.seed_runs(ablation["plan"], out, runs, SEED, rows=[0, 3])


def test_the_readme_table_shows_each_row_and_the_vote_beside_the_paper(ablation, tmp_path, monkeypatch):
    import shutil

    module = benchmark_module("dialog_vote")
    tables = benchmark_module("tables")
    out = ablation["out"]
    if not module.voting_path(out, SEED).exists():
        module.vote_seed(ablation["plan"], out, out / "runs", SEED, ["dev", "test"], dataset=ablation["dataset"])
    folder = tmp_path / "results" / "carnn_dialog_task6"
    (folder / "voting").mkdir(parents=True)
    for path in out.glob("*-s*.json"):
        shutil.copy(path, folder / path.name)
    monkeypatch.setattr(tables, "RESULTS", tmp_path / "nothing")
    with pytest.raises(tables.TableError, match="no result file"):
        tables.carnn_dialog_task6()
    monkeypatch.setattr(tables, "RESULTS", tmp_path / "results")
    lines = tables.carnn_dialog_task6().splitlines()
    assert len(lines) == 2 + 3  # header, rule, the three rows (no vote yet)
    shutil.copy(module.voting_path(out, SEED), folder / "voting" / f"s{SEED}.json")
    lines = tables.carnn_dialog_task6().splitlines()
    vote = json.loads(module.voting_path(out, SEED).read_text())["splits"]["test"]["voting"]
    assert lines[-1].startswith("| CARNN voting | `carnn_dialog_i` + `carnn_dialog_s` + `carnn_dialog_i` | 3 |")
    assert f"| {vote['per_response_accuracy']:.3f} |" in lines[-1]
    assert "| 0.520 |" in lines[2]  # the row's paper figure
    # a voting file that does not say what made it is refused
    broken = json.loads((folder / "voting" / f"s{SEED}.json").read_text())
    del broken["provenance"]
    (folder / "voting" / f"s{SEED}.json").write_text(json.dumps(broken))
    with pytest.raises(tables.TableError, match="provenance"):
        tables.carnn_dialog_task6()


def test_a_variant_row_is_paired_with_the_presets_row_of_its_own_model(ablation, tmp_path, monkeypatch):
    tables = benchmark_module("tables")
    results = tmp_path / "results"
    written = {json.loads(path.read_text()).popitem()[0]: json.loads(path.read_text())
               for path in ablation["out"].glob("0[01]-s*.json")}  # iCARNN's and sCARNN's result files
    plans = {"carnn_dialog_task6": {"rows": [{"label": f"carnn_dialog_{v}", "model": f"carnn_dialog_{v}", "set": {}}
                                             for v in "nis"]},
             "width": {"rows": [{"label": "s wide", "model": "carnn_dialog_s", "set": {"units": 1024}},
                                {"label": "i wide", "model": "carnn_dialog_i", "set": {"units": 1024}}]}}

    def write(folder, index, entry, shift):
        result = json.loads(json.dumps(written[entry]))
        result[entry]["runs"][0]["test"]["per_response_accuracy"] += shift
        (results / folder).mkdir(parents=True, exist_ok=True)
        (results / folder / f"{index:02d}-s{SEED}.json").write_text(json.dumps(result))

    write("carnn_dialog_task6", 1, "carnn_dialog_i", 0.0)
    write("carnn_dialog_task6", 2, "carnn_dialog_s", 0.0)
    write("width", 0, "carnn_dialog_s", 0.25)
    write("width", 1, "carnn_dialog_i", 0.125)
    monkeypatch.setattr(tables, "RESULTS", results)
    monkeypatch.setattr(tables, "_plan", plans.__getitem__)
    lines = tables._task6_variant("width", [("units", lambda s: s.get("units", 256), 256)]).splitlines()
    # the presets' rows of the models the plan trains (no nCARNN), then each row against its own model's
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| carnn_dialog_i", "| carnn_dialog_s", "| s wide",
                                                            "| i wide"]
    assert f"| +0.250 ({SEED}) |" in lines[4] and f"| +0.125 ({SEED}) |" in lines[5]
    # the votes: the presets' vote of the seed, then each vote of the plan's rows against it, paired by seed
    module = benchmark_module("dialog_vote")
    out = ablation["out"]
    if not module.voting_path(out, SEED).exists():
        module.vote_seed(ablation["plan"], out, out / "runs", SEED, ["dev", "test"], dataset=ablation["dataset"])
    presets_vote = json.loads(module.voting_path(out, SEED).read_text())
    wide_vote = json.loads(json.dumps(presets_vote))
    wide_vote["members"] = [dict(member, row=row) for row, member in zip([1, 0], wide_vote["members"])]
    wide_vote["splits"]["test"]["voting"]["per_response_accuracy"] += 0.125
    for folder, written_vote in (("carnn_dialog_task6", presets_vote), ("width", wide_vote)):
        (results / folder / "voting").mkdir()
        (results / folder / "voting" / f"s{SEED}.json").write_text(json.dumps(written_vote))
    lines = tables._task6_variant("width", [("units", lambda s: s.get("units", 256), 256)]).splitlines()
    assert len(lines) == 2 + 4 + 2
    test_figure = presets_vote["splits"]["test"]["voting"]["per_response_accuracy"]
    assert lines[6].startswith(f"| CARNN voting of the presets' rows | 256 | {SEED} |")
    assert f"| {test_figure:.3f} |" in lines[6] and lines[6].endswith("| – | – | – |")
    assert lines[7].startswith(f"| CARNN voting of rows 1, 0 | 1024 | {SEED} |")  # the first row's settings
    assert f"| {test_figure + 0.125:.3f} |" in lines[7] and f"| +0.125 ({SEED}) | – | – |" in lines[7]
