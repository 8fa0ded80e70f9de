import json
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from keras_match import zoo

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_names_list_every_preset_file():
    # zoo/<family>/<entry>.json; an abstract preset is written only to be extended and is no entry
    paths = sorted((REPO / "zoo").glob("*/*.json"))
    files = sorted(p.stem for p in paths if not json.loads(p.read_text(encoding="utf-8")).get("abstract"))
    assert zoo.names() == files
    for path in paths:
        if path.stem in files:
            assert zoo.describe(path.stem)["family"] == path.parent.name, path
    assert {"mcan_sm", "mcan_nn", "mcan_fm"} <= set(zoo.names())


@pytest.mark.parametrize("name", ["mcan_sm", "mcan_nn", "mcan_fm"])
def test_mcan_presets_hold_the_paper_settings(name):
    preset = zoo.describe(name)
    model, training = preset["model"], preset["training"]
    assert model["compression"] == name.split("_")[1]
    assert (model["lstm_units"], model["highway_units"], model["fm_factors"]) == (300, 200, 10)
    assert (model["dropout"], model["l2"], model["trainable_embeddings"]) == (0.2, 1e-6, False)
    assert (training["optimizer"], training["learning_rate"]) == ("adam", 3e-4)
    assert preset["reported"]["dataset"] == "trecqa-clean"


@pytest.mark.parametrize("name", ["mcan_sm", "mcan_nn", "mcan_fm"])
def test_mcan_presets_build_the_readings_the_ablation_chose(name):
    # issue 16 (benchmarks/ablations/mcan_fm_trecqa.json, rows 0-3 and 7 on dev): the frozen embeddings are not
    # dropped (section 3.2.2), the max / mean casts weight each word, and training runs longer with patience 4
    model = zoo.load(name, vocab_size=50, embedding_dim=8, lstm_units=4, highway_units=3, compile=False)
    assert model.get_layer("dropout_embedded").rate == 0.0
    assert model.get_layer("dropout_highway_1").rate == 0.2
    assert model.get_layer("multi_cast_attention").pooled_casts == "weighted"
    training = zoo.describe(name)["training"]
    assert (training["epochs"], training["patience"]) == (15, 4)
    # the paper's other reading stays one setting away
    broadcast = zoo.load(name, vocab_size=50, embedding_dim=8, lstm_units=4, highway_units=3, compile=False,
                         pooled_casts="broadcast", embedding_dropout=None)
    assert broadcast.get_layer("dropout_embedded").rate == 0.2
    assert broadcast.get_layer("multi_cast_attention").pooled_casts == "broadcast"


def test_load_builds_a_compiled_model_with_overrides():
    model = zoo.load("mcan_fm", vocab_size=50, embedding_dim=8, lstm_units=4, highway_units=3,
                     learning_rate=1e-3)
    assert model.optimizer is not None
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(1e-3)
    assert model.get_layer("siamese_lstm").units == 4
    out = model({"question": np.array([[2, 3]], "int32"), "answer": np.array([[4]], "int32")})
    assert out.shape == (1, 2)


def test_describe_is_a_copy():
    zoo.describe("mcan_fm")["model"]["lstm_units"] = 1
    assert zoo.describe("mcan_fm")["model"]["lstm_units"] == 300


def test_unknown_names_and_settings_are_rejected():
    with pytest.raises(ValueError, match="mcan_fm"):
        zoo.load("no_such_model")
    with pytest.raises(ValueError, match="lstm_unit.*valid settings"):
        zoo.load("mcan_fm", lstm_unit=3)


def test_an_installed_copy_finds_the_presets(tmp_path):
    """A non-editable install (wheel) carries zoo/ as keras_match.zoo_presets."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
         str(tmp_path / "wheel"), str(REPO)],
        check=True, capture_output=True,
    )
    (wheel,) = (tmp_path / "wheel").glob("keras_match-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        members = zf.namelist()
    assert "keras_match/zoo_presets/mcan/mcan_fm.json" in members
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(tmp_path / "site"),
         str(wheel)],
        check=True, capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    code = "import json, keras_match.zoo as z; print(json.dumps([z.__file__, z.names()]))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True)
    location, names = json.loads(out.stdout.strip().splitlines()[-1])
    assert location.startswith(str(tmp_path / "site"))
    assert names == zoo.names()
