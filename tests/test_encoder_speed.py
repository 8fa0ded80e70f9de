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
