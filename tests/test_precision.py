"""The precision setting (`keras_match.precision`): float32 or mixed bfloat16, from the CLI to the run, its
figures, its exports and presets.

This project's CPU may lack bfloat16 units; bfloat16 is then emulated (slower, same numerics), which is all these
tests need. The layers' own bfloat16 checks against their NumPy references are beside their float32 ones.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match import cli, precision, zoo
from keras_match.artifacts import presets, runs
from keras_match.serving import export

from conftest import train_args

ALL_ENTRIES = zoo.names()


def _cpuinfo(tmp_path, name, flags):
    path = tmp_path / name
    path.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: fpu sse2 avx512f {flags}\n\n")
    return path


def test_auto_picks_bfloat16_only_where_the_cpu_has_its_units(tmp_path):
    with_units = _cpuinfo(tmp_path, "with", "avx512_bf16 amx_bf16")
    without = _cpuinfo(tmp_path, "without", "avx512_vnni")
    assert precision.bfloat16_units(with_units) == ["amx_bf16", "avx512_bf16"]
    assert precision.resolve("auto", with_units) == "mixed_bfloat16"
    assert precision.resolve("auto", without) == "float32"
    assert precision.resolve("auto", tmp_path / "no-such-file") == "float32"
    assert precision.resolve("float32", with_units) == "float32"  # asked for: kept whatever the CPU
    assert precision.resolve("mixed_bfloat16", without) == "mixed_bfloat16"
    assert precision.describe("auto", with_units) == "precision mixed_bfloat16 (auto: this CPU has amx_bf16, " \
                                                     "avx512_bf16)"
    assert "no bfloat16 units" in precision.describe("auto", without)
    assert precision.describe("float32", without) == "precision float32"


def test_a_bad_value_names_the_setting_and_the_valid_ones(capsys):
    with pytest.raises(ValueError, match=r'precision="bfloat16": must be one of float32, mixed_bfloat16, auto'):
        zoo.resolve("mcan_fm", precision="bfloat16")
    assert cli.main(["train", "mcan_fm", "--precision", "fp16", "--run-dir", "never-written"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['keras-match train: error: setting precision="fp16": must be one of float32, mixed_bfloat16, '
                   'auto']
    with pytest.raises(ValueError, match="--precision and --set precision"):
        cli.command_settings(cli.build_parser().parse_args(
            ["train", "mcan_fm", "--precision", "float32", "--set", "precision=float32"]))
    for command in (["evaluate", "RUN", "--dataset", "wikiqa"], ["export", "RUN", "--to", "x"],
                    ["predict", "RUN", "--question", "q", "--answer", "a"]):
        with pytest.raises(SystemExit) as stopped:  # argparse: exit 2 naming the option and its choices
            cli.main(command[:2] + ["--precision", "auto"] + command[2:])
        assert stopped.value.code == 2
        assert "--precision: invalid choice: 'auto' (choose from 'float32', 'mixed_bfloat16')" in capsys.readouterr().err


def test_auto_is_resolved_before_a_run_records_it():
    settings = zoo.resolve("mcan_fm", precision="auto")
    assert settings.training.precision == precision.resolve("auto")
    assert zoo.resolve("mcan_fm").training.precision == "float32"  # every entry's default


@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_every_entry_builds_in_mixed_bfloat16_with_a_float32_head(name):
    from model_testing import skip_pretrained_backbone

    skip_pretrained_backbone(name, "the mixed bfloat16 build")
    model = zoo.load(name, compile=False, precision="mixed_bfloat16", **_small(name))
    assert precision.of_model(model) == "mixed_bfloat16"
    assert all(v.dtype == "float32" for v in model.weights if "float" in v.dtype)  # variables stay float32
    assert model.outputs[0].dtype == "float32"
    float32 = precision.convert(model, "float32")
    assert precision.of_model(float32) == "float32"
    for a, b in zip(model.get_weights(), float32.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert precision.convert(float32, "float32") is float32


def _small(name):
    from model_testing import small_overrides

    extra = {"num_classes": 4} if zoo.describe(name)["family"] == "carnn_dialog" else {}
    return {**small_overrides(name), **extra}


def test_conversion_keeps_the_scores_within_bfloat16_rounding():
    rng = np.random.default_rng(0)
    model = zoo.load("compare_aggregate_mult", compile=False, vocab_size=50, units=16)
    inputs = {"question": rng.integers(1, 50, (6, 7)).astype("int32"),
              "answer": rng.integers(1, 50, (6, 11)).astype("int32")}
    bf16 = precision.convert(model, "mixed_bfloat16")
    assert precision.of_model(bf16) == "mixed_bfloat16"
    assert bf16.get_layer("relevance_score").dtype_policy.name == "float32"  # the head stays float32
    exact, rounded = np.asarray(model(inputs)), np.asarray(bf16(inputs))
    assert not np.array_equal(exact, rounded)  # it does compute in bfloat16
    # a score of magnitude s through ~10 bfloat16 roundings (2^-8 each) of O(1) activations: within 0.05
    np.testing.assert_allclose(rounded, exact, atol=0.05)
    np.testing.assert_array_equal(np.asarray(precision.convert(bf16, "float32")(inputs)), exact)


@pytest.fixture(scope="module")
def bfloat16_run(data_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "bf16"
    assert cli.main(train_args(data_dir, run_dir, "--epochs", "1", "--precision", "mixed_bfloat16")) == 0
    return run_dir


def test_a_bfloat16_run_records_its_precision_and_scores_as_it_trained(bfloat16_run, data_dir, capsys):
    config = json.loads((bfloat16_run / "config.json").read_text())
    metrics = json.loads((bfloat16_run / "metrics.json").read_text())
    assert config["settings"]["training"]["precision"] == "mixed_bfloat16"
    assert metrics["precision"] == metrics["provenance"]["precision"] == "mixed_bfloat16"
    assert isinstance(metrics["provenance"]["machine"]["bfloat16_units"], list)
    loaded = runs.load_run(bfloat16_run)
    assert precision.of_model(loaded.model) == "float32"  # scoring defaults to float32
    assert precision.of_model(runs.load_run(bfloat16_run, precision="mixed_bfloat16").model) == "mixed_bfloat16"
    assert cli.main(["evaluate", str(bfloat16_run), "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--precision", "mixed_bfloat16", "--json"]) == 0
    same = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert same["map"] == metrics["test"]["map"]  # the precision it trained and was scored in: the same figures
    assert cli.main(["evaluate", str(bfloat16_run), "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--json"]) == 0
    float32 = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert abs(float32["map"] - metrics["test"]["map"]) < 0.05  # a one-epoch model's near-ties may reorder


def test_an_old_config_without_precision_trained_in_float32(bfloat16_run, tmp_path):
    config = json.loads((bfloat16_run / "config.json").read_text())
    del config["settings"]["training"]["precision"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert runs.read_config(path)["settings"]["training"]["precision"] == "float32"


def test_export_takes_the_precision_asked_for(bfloat16_run, tmp_path):
    import tensorflow_text  # noqa: F401

    run = runs.load_run(bfloat16_run, precision="mixed_bfloat16")
    questions = ["who wrote hamlet ?"] * 3
    answers = ["shakespeare wrote hamlet .", "teapots are made of clay .", "hamlet is a play"]
    for kind in ("float32", "mixed_bfloat16"):
        version = export.saved_model(bfloat16_run, tmp_path / kind, precision=kind, warmup=False)
        metadata = export.read_metadata(version)
        assert metadata["precision"] == kind and metadata["trained_precision"] == "mixed_bfloat16"
        served = tf.saved_model.load(str(version)).signatures["serving_default"](
            question=tf.constant(questions), answer=tf.constant(answers))["score"].numpy()
        expected = runs.load_run(bfloat16_run, precision=kind).score(questions, answers)
        # float32: the same arithmetic; bfloat16: the graph and Keras order sums differently, and a score near 0.5
        # moves by whole bfloat16 steps of the features (2^-9 relative), so within two such steps of 0.5
        np.testing.assert_allclose(served, expected, atol=1e-6 if kind == "float32" else 4e-3)
    assert precision.of_model(run.model) == "mixed_bfloat16"
    with pytest.raises(ValueError, match="must be one of float32, mixed_bfloat16"):
        export.saved_model(bfloat16_run, tmp_path / "bad", precision="auto")
    assert not (tmp_path / "bad").exists()


def test_a_float16_preset_of_a_bfloat16_run_is_compared_with_its_float32_weights_in_float32(bfloat16_run,
                                                                                            data_dir, tmp_path):
    # a run that computed in mixed_bfloat16 scores a little differently in float32, which a preset loads in: the
    # float16 weights' difference must be what float16 storage changed, measured against the float32 weights in
    # float32 (the preset of the iwan_ncarnn_minilm TrecQA run differed from the run's bfloat16 MRR by 0.0028, from
    # the float32 weights' by 0.0000)
    target = presets.write_preset(bfloat16_run, tmp_path / "preset16", float16=True, data_dir=data_dir)
    metadata = json.loads((target / "metadata.json").read_text())
    weights, run_figures = metadata["weights"], metadata["figures"]
    assert metadata["trained_precision"] == "mixed_bfloat16"
    in_float32 = presets.measure(runs.load_run(bfloat16_run), "trecqa-clean", data_dir=data_dir)
    in_bfloat16 = presets.measure(runs.load_run(bfloat16_run, precision="mixed_bfloat16"), "trecqa-clean",
                                  data_dir=data_dir)
    float16 = presets.measure(presets.load_preset(target), "trecqa-clean", data_dir=data_dir)
    for split in ("dev", "test"):
        assert in_bfloat16[split]["map"] == pytest.approx(run_figures[split]["map"], abs=1e-9)  # the run's own
        for key in ("map", "mrr", "p@1"):
            assert weights["reference_figures"][split][key] == pytest.approx(in_float32[split][key], abs=1e-9)
            assert weights["figures"][split][key] == pytest.approx(float16[split][key], abs=1e-9)
            assert weights["difference"][split][key] == pytest.approx(
                float16[split][key] - in_float32[split][key], abs=1e-12)
    card = (target / "README.md").read_text()
    assert "computed in mixed_bfloat16" in card and "Computed in float32, as a preset loads" in card
    assert f"(float32 {in_float32['test']['map']:.4f}, " in card


def test_a_shipped_preset_loads_in_float32_unless_asked():
    run = presets.load_preset("compare_aggregate_mult/wikiqa-answered")
    assert precision.of_model(run.model) == "float32"
    assert run.config["settings"]["training"]["precision"] == "float32"  # what it trained in
    bf16 = presets.load_preset("compare_aggregate_mult/wikiqa-answered", precision="mixed_bfloat16")
    assert precision.of_model(bf16.model) == "mixed_bfloat16"
    questions = ["how are glacier caves formed ?"] * 2
    answers = ["a glacier cave is a cave formed within the ice of a glacier .", "teapots are made of clay ."]
    np.testing.assert_allclose(bf16.score(questions, answers), run.score(questions, answers), atol=0.1)
    assert keras.config.dtype_policy().name == "float32"  # building in a precision leaves the global policy alone


def test_tune_passes_the_precision_to_every_trial():
    from keras_match.training.recipe import Recipe

    args = cli.build_parser().parse_args(["tune", "qrnn", "--dir", "d", "--precision", "mixed_bfloat16"])
    overrides = cli.command_settings(args)
    assert overrides == {"precision": "mixed_bfloat16"}
    # a trial's settings: the command's fixed settings under the trial's values (Recipe.with_settings)
    recipe = Recipe(settings=zoo.resolve("qrnn", **overrides), overrides=overrides, dataset=None, task=None,
                    vectors=None, train_split=None, train_examples=None, dev_examples=None, seed=1)
    recipe.task = type("Task", (), {"check_preprocessor": lambda *a: None, "check_mode": lambda *a: None,
                                    "model_settings": lambda self, model: {}})()
    assert recipe.with_settings(dropout=0.3).training.precision == "mixed_bfloat16"


def test_onnx_of_a_bfloat16_export_is_refused_before_anything_is_written(bfloat16_run, tmp_path, capsys):
    assert cli.main(["export", str(bfloat16_run), "--to", str(tmp_path / "export"), "--precision",
                     "mixed_bfloat16", "--onnx", "--no-warmup"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ONNX export takes a float32 SavedModel" in err[0] and "--precision float32" in err[0]
    assert not (tmp_path / "export").exists()
    version = export.saved_model(bfloat16_run, tmp_path / "bf16", precision="mixed_bfloat16", warmup=False)
    with pytest.raises(ValueError, match="tf2onnx 1.17 converts a mixed_bfloat16 graph"):
        export.to_onnx(version)
    assert not (tmp_path / "bf16" / "onnx").exists()
