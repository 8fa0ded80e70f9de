"""benchmarks/ablation.py: rows x seeds through reproduce.py, one result file each, resumable."""

import json
import pathlib

import pytest
from conftest import REPO, benchmark_module


def _ablation():
    return benchmark_module("ablation")


PLAN = {"model": "mcan_fm", "dataset": "trecqa-clean", "epochs": 5, "seeds": [1, 2],
        "rows": [{"label": "base", "set": {}}, {"label": "weighted", "set": {"pooled_casts": "weighted", "epochs": 9}}]}


def test_every_shipped_plan_names_known_settings():
    from keras_match import zoo
    from keras_match.families import BACKBONE_SETTINGS
    from keras_match.preprocessors.pair import PAIR_FEATURES

    module = _ablation()
    for path in (REPO / "benchmarks" / "ablations").glob("*.json"):
        plan = module.load_plan(path)
        for row in plan["rows"]:
            preset = zoo.describe(module.row_setting(plan, row, "model"))
            # the pair features and the truncation / vocabulary settings are preprocessing settings
            known = set(preset["model"]) | set(preset["training"]) | set(preset["preprocessing"])
            known |= set(BACKBONE_SETTINGS)  # every family's input encoder takes them
            if zoo.family_of(preset["name"]).preprocessor == "pair":  # a dialog entry reads no pair features
                assert set(PAIR_FEATURES) <= set(preset["preprocessing"])
            settings = module.row_settings(plan, row)
            assert set(settings) <= known, (path, row)
            zoo.resolve(preset["name"], **settings)  # the values follow the settings' rules


def test_commands_carry_the_row_settings_and_its_own_epochs():
    module = _ablation()
    base = module.command(PLAN, PLAN["rows"][0], 1, pathlib.Path("out"))
    assert base[base.index("--epochs") + 1] == "5" and "--set" not in base
    weighted = module.command(PLAN, PLAN["rows"][1], 2, pathlib.Path("out"))
    assert weighted[weighted.index("--epochs") + 1] == "9"
    assert weighted[weighted.index("--set") + 1] == 'pooled_casts="weighted"'
    assert weighted[weighted.index("--seeds") + 1] == "2" and weighted[weighted.index("--label") + 1] == "weighted"
    assert "--transfer" not in base
    transfer = dict(PLAN, transfer=["wikiqa", "trecqa-raw"])
    args = module.command(transfer, transfer["rows"][0], 1, pathlib.Path("out"))
    assert args[args.index("--transfer") + 1:args.index("--transfer") + 3] == ["wikiqa", "trecqa-raw"]
    own = module.command(transfer, dict(transfer["rows"][0], transfer=["semeval2016"]), 1, pathlib.Path("out"))
    assert own[own.index("--transfer") + 1] == "semeval2016"
    assert "--embeddings" not in own
    vectors = module.command(PLAN, dict(PLAN["rows"][0], embeddings="v25.txt"), 1, pathlib.Path("out"))
    assert vectors[vectors.index("--embeddings") + 1] == "v25.txt"
    assert "--init-preset" not in vectors
    tuned = module.command(PLAN, dict(PLAN["rows"][0], init_preset="mcan_fm/trecqa-clean"), 1, pathlib.Path("out"))
    assert tuned[tuned.index("--init-preset") + 1] == "mcan_fm/trecqa-clean"


def test_the_plan_level_set_reaches_every_row_and_a_row_overrides_it():
    module = _ablation()
    shared = dict(PLAN, set={"patience": 3, "pooled_casts": "broadcast"})
    base = module.command(shared, shared["rows"][0], 1, pathlib.Path("out"))
    assert [base[i + 1] for i, a in enumerate(base) if a == "--set"] == ["patience=3", 'pooled_casts="broadcast"']
    weighted = module.command(shared, shared["rows"][1], 1, pathlib.Path("out"))
    assert [weighted[i + 1] for i, a in enumerate(weighted) if a == "--set"] == ["patience=3",
                                                                             'pooled_casts="weighted"']
    assert shared["rows"][1]["set"] == {"pooled_casts": "weighted", "epochs": 9}  # the plan is not changed


def test_a_plan_level_set_must_be_an_object(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(dict(PLAN, set=["patience=3"])))
    with pytest.raises(SystemExit, match="'set' must be an object"):
        _ablation().load_plan(path)


def _fake_result(label, seed, value, provenance=True):
    from keras_match.artifacts import provenance as record

    made = {"provenance": record.collect(0.0, command=f"reproduce.py --label {label}")} if provenance else {}
    run = {"seed": seed, "best_epoch": 1, "epochs_run": 2, "wall_time_s": 1.0, "loss_mode": "pointwise",
           "train_pairs_per_s": 10.0, "dev": {"map": value, "mrr": value}, "test": {"map": value, "mrr": value},
           **made}
    return {"mcan_fm": {"dataset": "trecqa-clean", "train_split": None, "overrides": {}, "label": label,
                        "runs": [run], **made}}


def _record_calls(module, monkeypatch):
    """Replace the runs by one that writes a result of dev / test MAP 0.7; the (label, seed) list of its calls."""
    calls = []

    def fake_call(args, stdout, stderr):
        label, seed = args[args.index("--label") + 1], int(args[args.index("--seeds") + 1])
        calls.append((label, seed))
        stdout.write(json.dumps(_fake_result(label, seed, 0.7)))
        return 0

    monkeypatch.setattr(module.subprocess, "call", fake_call)
    return calls


def test_a_result_without_provenance_is_run_again_and_replaced(tmp_path, monkeypatch):
    module = _ablation()
    old = module.result_path(tmp_path, 0, 1)
    old.write_text(json.dumps(_fake_result("base", 1, 0.5, provenance=False)))  # written before provenance
    kept = module.result_path(tmp_path, 1, 1)
    kept.write_text(json.dumps(_fake_result("weighted", 1, 0.6)))
    calls = _record_calls(module, monkeypatch)
    module.run(PLAN, tmp_path, seeds=[1])
    assert calls == [("base", 1)]
    assert json.loads(old.read_text())["mcan_fm"]["runs"][0]["dev"]["map"] == 0.7
    assert json.loads(kept.read_text())["mcan_fm"]["runs"][0]["dev"]["map"] == 0.6


def test_results_are_written_once_failures_leave_nothing_and_a_rerun_continues(tmp_path, monkeypatch, capsys):
    module = _ablation()
    calls = []

    def fake_call(args, stdout, stderr):
        label, seed = args[args.index("--label") + 1], int(args[args.index("--seeds") + 1])
        calls.append((label, seed))
        if label == "weighted" and seed == 2 and len(calls) < 5:
            stdout.write("{")  # a run that dies half-way through its output
            return 1
        stdout.write(json.dumps(_fake_result(label, seed, 0.7 if label == "base" else 0.8)))
        return 0

    monkeypatch.setattr(module.subprocess, "call", fake_call)
    other = module.partial_path(module.result_path(tmp_path, 1, 2), 999999)  # another process' result, failing here
    other.write_text("{")
    module.run(PLAN, tmp_path)
    assert calls == [("base", 1), ("weighted", 1), ("base", 2), ("weighted", 2)]  # seed by seed
    assert other.exists()
    other.unlink()
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["00-s1.json", "00-s2.json", "01-s1.json"]
    assert not list(tmp_path.glob("*.partial"))
    assert "failed (exit 1)" in capsys.readouterr().err

    module.run(PLAN, tmp_path)  # the rerun only runs what is missing
    assert calls[4:] == [("weighted", 2)]
    text = module.table(tmp_path)
    assert "| base | 1, 2 |" in text and "| weighted | 1, 2 |" in text
    assert text.index("| base |") < text.index("| weighted |")


def test_a_row_may_name_its_own_model_and_dataset(tmp_path, monkeypatch):
    module = _ablation()
    plan = {"seeds": [3], "dataset": "wikiqa", "rows": [
        {"label": "mult", "model": "compare_aggregate_mult", "set": {}},
        {"label": "nn on trecqa", "model": "compare_aggregate_nn", "dataset": "trecqa-clean",
         "train_split": "train", "set": {}}]}
    first = module.command(plan, plan["rows"][0], 3, pathlib.Path("out"))
    assert first[2:5] == ["compare_aggregate_mult", "--dataset", "wikiqa"] and "--train-split" not in first
    second = module.command(plan, plan["rows"][1], 3, pathlib.Path("out"))
    assert second[2:5] == ["compare_aggregate_nn", "--dataset", "trecqa-clean"]
    assert second[second.index("--train-split") + 1] == "train"

    def fake_call(args, stdout, stderr):
        name, seed = args[2], int(args[args.index("--seeds") + 1])
        stdout.write(json.dumps({name: _fake_result(args[args.index("--label") + 1], seed, 0.7)["mcan_fm"]}))
        return 0

    monkeypatch.setattr(module.subprocess, "call", fake_call)
    module.run(plan, tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["00-s3.json", "01-s3.json"]


def _write(path, plan):
    path.write_text(json.dumps(plan))
    return path


def test_the_table_keeps_the_plan_s_row_order(tmp_path, monkeypatch, capsys):
    module = _ablation()
    plan = {**PLAN, "seeds": [1], "rows": [{"label": "z: the baseline", "set": {}},
                                           {"label": "a: a change", "set": {"loss": "pairwise_hinge"}}]}

    def fake_call(args, stdout, stderr):
        result = _fake_result(args[args.index("--label") + 1], 1, 0.7)
        result["mcan_fm"]["runs"][0]["loss_mode"] = "pairwise" if "--set" in args else "pointwise"
        stdout.write(json.dumps(result))
        return 0

    monkeypatch.setattr(module.subprocess, "call", fake_call)
    module.run(plan, tmp_path)
    text = module.table(tmp_path)  # sorted by loss and label, the change would come first
    assert text.index("| z: the baseline |") < text.index("| a: a change |")
    module.main([str(_write(tmp_path / "p.json", plan)), "--out", str(tmp_path), "--table", "--split", "test"])
    printed = capsys.readouterr().out
    assert "| test MAP |" in printed and "dev MAP" not in printed
    assert printed.index("| z: the baseline |") < printed.index("| a: a change |")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"seeds": [1], "rows": [{"label": "x", "model": "mcan_fm", "set": {}}]}))
    with pytest.raises(SystemExit, match=r"missing 'dataset' \(for the plan or in rows\[0\]\)"):
        module.load_plan(path)


@pytest.mark.parametrize("plan, message", [({"model": "m", "seeds": [1], "rows": [{"label": "a", "set": {}}]}, "missing 'dataset'"),
                                           ({"model": "m"}, "missing 'seeds'"),
                                           ({**PLAN, "rows": [{"set": {}}]}, r"rows\[0\] needs a 'label'")])
def test_bad_plans_are_named(tmp_path, plan, message):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(SystemExit, match=message):
        _ablation().load_plan(path)


def test_seeds_and_rows_run_only_their_part_and_an_unknown_row_is_named(tmp_path, monkeypatch):
    module = _ablation()
    calls = _record_calls(module, monkeypatch)
    module.run(PLAN, tmp_path, seeds=[2], rows=[1])
    assert calls == [("weighted", 2)]
    module.run(PLAN, tmp_path, seeds=[2])  # the other process's result is not run again
    assert calls == [("weighted", 2), ("base", 2)]
    with pytest.raises(SystemExit, match="no row 2"):
        module.run(PLAN, tmp_path, rows=[2])


def test_jobs_run_at_once_each_pinned_to_its_own_core(tmp_path, monkeypatch):
    import os
    import threading
    import time

    module = _ablation()
    # two cores, whatever this process may use (a pytest-xdist worker is pinned to one, tests/conftest.py)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    plan = {**PLAN, "seeds": [1, 2], "rows": PLAN["rows"] + [{"label": "third", "set": {}}]}
    running, seen, lock = set(), [], threading.Lock()
    overlap = []

    def fake_call(args, stdout, stderr):
        assert args[:2] == ["taskset", "-c"]
        core, label, seed = int(args[2]), args[args.index("--label") + 1], int(args[args.index("--seeds") + 1])
        with lock:
            assert core not in running  # never two runs on one core
            running.add(core)
            seen.append((label, seed))
            overlap.append(len(running))
        time.sleep(0.05)
        with lock:
            running.discard(core)
        stdout.write(json.dumps(_fake_result(label, seed, 0.7)))
        return 0

    monkeypatch.setattr(module.subprocess, "call", fake_call)
    module.run(plan, tmp_path, jobs=2)
    assert sorted(seen) == sorted((row["label"], s) for s in (1, 2) for row in plan["rows"])  # each once
    assert max(overlap) == 2
    assert len(list(tmp_path.glob("*-s*.json"))) == 6 and not list(tmp_path.glob("*.partial"))
    with pytest.raises(SystemExit, match="--jobs: must be from 1 to the"):
        module.run(plan, tmp_path, jobs=3)
