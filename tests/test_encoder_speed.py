"""benchmarks/encoder_speed.py (issue 57's speed table): a plan row's run folder is the finished one whose settings
are the row's, an ambiguous or missing one is refused in one line saying what to give, and a row already measured
is not measured again (an interrupted measurement resumes)."""

import json

import pytest
from conftest import benchmark_module

speed = benchmark_module("encoder_speed")
ROW = next(row for row in speed.ROWS if row.get("plan") == "transformer_encoders_trecqa_clean" and row["row"] == 1)


def _run(root, name, training, finished=True):
    folder = root / "runs" / name
    folder.mkdir(parents=True)
    settings = {"model": {"backbone_trainable": 2}, "training": training, "preprocessing": {}}
    (folder / "config.json").write_text(json.dumps({"settings": settings}))
    if finished:
        (folder / "metrics.json").write_text("{}")
    return folder


def test_the_run_folder_is_the_finished_one_with_the_rows_settings(tmp_path):
    row_settings = {"learning_rate": 0.0003, "precision": "mixed_bfloat16"}
    wanted = _run(tmp_path, "mcan_fm_minilm-trecqa-clean-default-a-s1234", row_settings)
    _run(tmp_path, "mcan_fm_minilm-trecqa-clean-default-b-s1234", dict(row_settings, learning_rate=0.001))
    _run(tmp_path, "mcan_fm_minilm-trecqa-clean-default-c-s1234", row_settings, finished=False)
    _run(tmp_path, "mcan_fm_minilm-trecqa-clean-default-a-s1", row_settings)
    assert speed.run_folder(ROW, {ROW["plan"]: [tmp_path / "elsewhere", tmp_path]}) == wanted


def test_two_matching_folders_are_refused_naming_what_to_give(tmp_path):
    for tag in ("a", "b"):
        _run(tmp_path, f"mcan_fm_minilm-trecqa-clean-default-{tag}-s1234",
             {"learning_rate": 0.0003, "precision": "mixed_bfloat16"})
    with pytest.raises(SystemExit, match=r"2 finished run folders match .* give --runs "
                                         r"transformer_encoders_trecqa_clean=DIR"):
        speed.run_folder(ROW, {ROW["plan"]: [tmp_path]})


def test_a_measured_row_is_skipped_and_a_bad_runs_argument_refused(tmp_path, monkeypatch, capsys):
    index = speed.ROWS.index(ROW)
    (tmp_path / speed.output_name(index, ROW)).write_text("{}")
    monkeypatch.setattr(speed.subprocess, "run", lambda *a, **k: pytest.fail("a measured row ran again"))
    speed.main(["--out", str(tmp_path), "--rows", str(index)])
    assert "exists, skipped" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        speed.main(["--out", str(tmp_path), "--runs", "no-equals-sign"])
    assert "--runs 'no-equals-sign': expected PLAN=DIR" in capsys.readouterr().err


def test_a_short_run_row_trains_the_plan_rows_settings_one_epoch_on_few_questions_once(tmp_path, monkeypatch):
    row = next(row for row in speed.ROWS if "short_run" in row and row["plan"] == "transformer_encoders_sick")
    commands = []

    def fake_run(command, **kwargs):  # reproduce.py: writes the run folder its arguments name
        commands.append(command)
        assert command[command.index("--epochs") + 1] == "1"
        assert command[command.index("--max-train-questions") + 1] == str(row["short_run"])
        assert command[command.index("--seeds") + 1] == str(row["seed"])
        assert f"precision={json.dumps('mixed_bfloat16')}" in command  # the plan's own setting
        out = tmp_path / "work" / "runs"
        assert command[command.index("--out") + 1] == str(out)
        _run(tmp_path / "work", f"{row['entry']}-{row['benchmark']}-default-precision=mixed_bfloat16-first"
                                f"{row['short_run']}-s{row['seed']}", {"precision": "mixed_bfloat16"})
        return speed.subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(speed.subprocess, "run", fake_run)
    folder = speed.short_run_folder(row, tmp_path / "work")
    assert folder.name.endswith(f"-first{row['short_run']}-s{row['seed']}") and len(commands) == 1
    assert speed.short_run_folder(row, tmp_path / "work") == folder and len(commands) == 1  # trained once

    monkeypatch.setattr(speed.subprocess, "run", lambda command, **kwargs: speed.subprocess.CompletedProcess(command, 3))
    with pytest.raises(SystemExit, match="the short run exited with 3"):
        speed.short_run_folder(dict(row, seed=99), tmp_path / "work")


def test_reproduce_trains_on_the_first_questions_and_says_so_in_the_folder_and_json(data_dir, tmp_path, monkeypatch,
                                                                                     capsys):
    """`benchmarks/reproduce.py --max-train-questions N` (the short runs' trainer) hands N to `train` and names the
    run folder `-firstN`; N < 1 is refused before anything trains."""
    from keras_match.training import trainer

    reproduce = benchmark_module("reproduce")
    seen = []
    figures = {"map": 0.5, "mrr": 0.5, "p@1": 0.5}

    def fake_train(name, dataset, run_dir=None, **kwargs):
        seen.append(dict(kwargs, run_dir=run_dir))
        return {"best_epoch": 1, "epochs_run": 1, "wall_time_s": 1.0, "dev": figures, "test": figures}

    monkeypatch.setattr(trainer, "train", fake_train)
    monkeypatch.setenv("KERAS_MATCH_DATA", str(data_dir))
    reproduce.main(["mcan_fm", "--dataset", "trecqa-clean", "--out", str(tmp_path), "--epochs", "1",
                    "--max-train-questions", "7"])
    (call,) = seen
    assert call["max_train_questions"] == 7 and "-default-first7-" in call["run_dir"].name
    assert json.loads(capsys.readouterr().out)["mcan_fm"]["max_train_questions"] == 7
    with pytest.raises(SystemExit):
        reproduce.main(["mcan_fm", "--out", str(tmp_path), "--max-train-questions", "0"])
    assert "--max-train-questions must be at least 1" in capsys.readouterr().err and len(seen) == 1
