"""benchmarks/precision.py's arguments: `--set` reaches every entry measured (and a bad one is a one-line error
before anything is built), and an entry outside its table is measured on its preset's dataset."""

from conftest import benchmark_module


def test_a_bad_setting_is_refused_before_anything_runs(capsys):
    module = benchmark_module("precision")
    assert module.main(["carnn_dialog_n", "--set", "units=many"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("precision: --set units=many: the value must be JSON (a number, true / false, null or a quoted "
                   "string)")
    assert module.main(["carnn_dialog_n", "--set", "units"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err
    assert module.main(["carnn_dialog_n", "--set", "units=0"]) == 2  # against the setting's rule
    assert capsys.readouterr().err.strip() == "precision: setting units=0: must be an integer >= 1"
    assert module.main(["carnn_dialog_n", "--set", "unit=256"]) == 2  # no such setting
    assert "unit" in capsys.readouterr().err


def test_an_entry_outside_the_table_uses_its_presets_dataset():
    module = benchmark_module("precision")
    assert "carnn_dialog_n" not in module.ENTRIES
    assert module._preset_dataset("carnn_dialog_n") == "dialog-babi-task6"
    assert module._preset_dataset("ctrn") == "trecqa-raw"
