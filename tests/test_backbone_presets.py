"""A trained preset of an entry over a pretrained encoder stores only what trained: the backbone parts that did not
train are left out of `model.weights.h5` and put back from the pinned encoder when the preset loads, which
scores as the run did; `metadata.json` names the encoder by its weights' sha256 and a preset naming other weights
is refused in one line. (The backbone is the tiny BERT of `tests/conftest.py`; its "pinned" weights here are a
fixed random draw, so that two builds read the same ones, as two builds over the real MiniLM do.)"""

import json

import h5py
import numpy as np
import pytest

from keras_match import cli
from keras_match.artifacts import presets, runs
from keras_match.encoders import transformer

PAIRS = {"question": ["who wrote hamlet ?", "what is the capital of france ?"],
         "answer": ["hamlet is a tragedy by william shakespeare .", "paris is the capital of france ."]}


@pytest.fixture
def pinned_tiny(monkeypatch):
    """`TransformerEncoder.finish` puts the same weights in every tiny backbone (a seeded draw per weight)."""

    def finish(self, model):
        backbone = self.layer.backbone
        backbone.set_weights([np.random.default_rng(i).normal(0, 0.05, w.shape).astype("float32")
                              for i, w in enumerate(backbone.get_weights())])

    monkeypatch.setattr(transformer.TransformerEncoder, "finish", finish)


def weight_paths(path):
    names = []
    with h5py.File(path, "r") as f:
        f.visit(lambda name: names.append(name) if isinstance(f[name], h5py.Dataset) else None)
    return names


@pytest.mark.parametrize("trainable", ["frozen", 1])
def test_a_backbone_preset_stores_what_trained_and_loads_to_the_runs_scores(trainable, pinned_tiny, data_dir,
                                                                           tmp_path, capsys):
    run_dir, target = tmp_path / "run", tmp_path / "preset"
    assert cli.main(["train", "ctrn_minilm", "--dataset", "trecqa-raw", "--data-dir", str(data_dir),
                     "--max-train-questions", "3", "--epochs", "1", "--set", "filters=8", "--set", "dense_units=4",
                     "--set", f"backbone_trainable={trainable!r}".replace("'", '"'), "--run-dir", str(run_dir)]) == 0
    assert cli.main(["preset", str(run_dir), "--to", str(target)]) == 0
    run, loaded = runs.load_run(run_dir), presets.load_preset(target)
    np.testing.assert_allclose(loaded.score(PAIRS["question"], PAIRS["answer"]),
                               run.score(PAIRS["question"], PAIRS["answer"]), atol=1e-5)

    metadata = json.loads((target / presets.METADATA_FILE).read_text())
    states = transformer.backbone_layers(run.model)[0]
    frozen = sum(int(np.prod(w.shape)) for part in states.frozen_parts() for w in part.weights)
    assert metadata["encoder"]["name"] == "minilm-l6" and metadata["encoder"]["trained_layers"] == trainable
    assert metadata["encoder"]["frozen_parameters"] == frozen > 0
    assert metadata["parameters"]["stored"] == metadata["parameters"]["total"] - frozen
    stored = weight_paths(target / presets.WEIGHTS_FILE)
    stored_count = 0
    with h5py.File(target / presets.WEIGHTS_FILE, "r") as f:
        stored_count = sum(int(np.prod(f[name].shape)) for name in stored)
    assert stored_count == metadata["parameters"]["stored"]  # the frozen parts are not in the file
    # Keras names the backbone's two transformer layers by class and position: "transformer_encoder", "..._1"
    top, lower = ([name for name in stored if f"/{layer}/" in name] for layer in ("transformer_encoder_1",
                                                                                  "transformer_encoder"))
    assert bool(top) == (trainable == 1) and not lower and not [name for name in stored if "embedding" in name]
    assert "pretrained encoder: minilm-l6" in (target / presets.CARD_FILE).read_text()

    # a preset naming other encoder weights than the pinned ones is refused in one line
    metadata["encoder"]["weights_sha256"] = "0" * 64
    runs.write_json(target / presets.METADATA_FILE, metadata)
    runs.record_digests(target)
    with pytest.raises(presets.PresetError, match=r"metadata.json: .*weights of sha256 0{64}.* pins [0-9a-f]{64}"):
        presets.load_preset(target)
