"""`benchmarks/dialog_latency.py`: one dialog bAbI task 6 turn against the whole candidate set, through the
SavedModel's `serving_default`, `respond` and `serve_ids` and through ONNX. A small random-weights CARNN (16 units)
and a few calls: the figures are not checked, what they must satisfy is (p50 <= p99, every path chooses what the
Keras model chooses, the task's 2,407 candidates), and a folder that is not a finished run is refused by name."""

import json

import pytest
from conftest import benchmark_module

from keras_match.datasets import load

PATHS = ("savedmodel_serving_default_text", "savedmodel_respond_text_with_candidates", "savedmodel_serve_ids",
         "onnxruntime_ids")


def test_quick_run_times_every_path_and_agrees_with_keras(data_dir, tmp_path, capsys):
    module = benchmark_module("dialog_latency")
    out = tmp_path / "latency.json"
    result = module.main(["--quick", "--set", "units=16", "--data-dir", str(data_dir), "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(result))

    task6 = load("dialog-babi-task6", data_dir=data_dir)
    assert result["num_candidates"] == len(task6.candidates) == 2407
    assert result["entry"] == "carnn_dialog_i" and result["units"] == 16 and result["cores"] >= 1
    latency = result["latency_1_turn_x_2407_candidates"]
    assert sorted(latency) == sorted(PATHS)  # ONNX converted: an error here would be recorded, not timed
    for path in PATHS:
        figures = latency[path]
        assert figures["calls"] == module.QUICK_TURNS
        assert 0 < figures["p50_ms"] <= figures["p99_ms"], path
        agreement = result["agreement"][path]
        assert agreement["agrees"] and agreement["mismatches"] == 0, (path, agreement)
        assert agreement["turns_compared"] == module.QUICK_TURNS and agreement["max_abs_score_diff"] < 1e-4
    assert result["agreement"]["all_agree"] is True
    assert result["agreement"]["savedmodel_respond_text_with_candidates"]["response_is_the_choice"] is True
    assert result["export"]["saved_model_mb"] > 0 and result["export"]["onnx"]["max_abs_diff_vs_tf"] <= 1e-4
    assert result["provenance"]["dataset"] == "dialog-babi-task6" and result["provenance"]["settings_overrides"] == [
        "units=16"]


def test_a_folder_that_is_not_a_finished_run_is_refused_by_name(tmp_path):
    module = benchmark_module("dialog_latency")
    empty = tmp_path / "empty_run"
    empty.mkdir()
    with pytest.raises(SystemExit) as info:
        module.main(["--run-dir", str(empty), "--quick"])
    message = str(info.value)
    assert str(empty) in message and "not a finished keras-match run" in message and "model.keras" in message

    interrupted = tmp_path / "interrupted"  # a run stopped before its model was written
    interrupted.mkdir()
    (interrupted / "config.json").write_text("{}")
    with pytest.raises(SystemExit) as info:
        module.main(["--run-dir", str(interrupted), "--quick"])
    assert str(interrupted) in str(info.value) and "no model.keras" in str(info.value)

    missing = tmp_path / "nowhere"
    with pytest.raises(SystemExit, match="no such folder") as info:
        module.main(["--run-dir", str(missing), "--quick"])
    assert str(missing) in str(info.value)
