"""Fine-tuning from a trained preset (`keras-match train ENTRY --init-preset PRESET`, `keras_match.training.finetune`).

The presets are written from short real TrecQA runs (tests/conftest.py: small MCAN-FM, 12 training questions,
the data folder's GloVe 6B 50d); fine-tuning reads WikiQA's real training split, whose words the TrecQA
vocabulary partly lacks.
"""

import json

import h5py
import numpy as np
import pytest

from keras_match import cli
from keras_match.artifacts import presets, runs
from keras_match.text import vectors
from keras_match.training import finetune
from keras_match.training.callbacks import DevEvaluationCallback
from keras_match.training.trainer import train

from conftest import mcan_train_args

SMALL = {"lstm_units": 16, "highway_units": 8, "fm_factors": 4}
PAIRS = (["when was the teapot dome scandal ?", "who founded the company ?"],
         ["the scandal broke in 1923 .", "it was founded by two brothers in 1901 ."])


@pytest.fixture(scope="module")
def preset(trained_run, tmp_path_factory):
    """The preset of the session's run (frozen GloVe embeddings)."""
    target = tmp_path_factory.mktemp("presets") / "mcan_fm-trecqa-clean"
    assert cli.main(["preset", str(trained_run), "--to", str(target)]) == 0
    return target


@pytest.fixture(scope="module")
def trainable_preset(data_dir, tmp_path_factory):
    """A preset whose embeddings were trained (initialised from GloVe): its vocabulary is TrecQA's words only."""
    root = tmp_path_factory.mktemp("trainable")
    assert cli.main(mcan_train_args(data_dir, root / "run", "--epochs", "1", "--set", "trainable_embeddings=true")) == 0
    assert cli.main(["preset", str(root / "run"), "--to", str(root / "preset")]) == 0
    return root / "preset"


def _weights(path):
    """Every array of a Keras weights file, by its path in the file."""
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset)
                     else None)
    return arrays


def test_fine_tuning_keeps_every_word_id_and_weight_and_gives_new_words_their_vectors(trainable_preset, data_dir,
                                                                                      tmp_path):
    # a learning rate of 1e-12 leaves the weights where the preset put them, to within 1e-9
    report = train("mcan_fm", "wikiqa", data_dir=data_dir, run_dir=tmp_path / "run", max_train_questions=10,
                   epochs=1, learning_rate=1e-12, init_preset=str(trainable_preset), verbose=0, **SMALL)
    old = (trainable_preset / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    new = (tmp_path / "run" / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    assert new[: len(old)] == old  # every preset word keeps its id
    added = new[len(old):]
    assert added and not set(added) & set(old)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    metadata = json.loads((trainable_preset / "metadata.json").read_text())
    assert config["init_preset"]["weights_sha256"] == metadata["weights"]["sha256"]
    assert report["init_preset"] == config["init_preset"]
    assert config["settings"] == json.loads((trainable_preset / "config.json").read_text())["settings"] | {
        "training": config["settings"]["training"]}

    tuned = runs.load_run(tmp_path / "run")
    start = presets.load_preset(trainable_preset)
    embedding = tuned.model.get_layer("word_embedding").embeddings.numpy()
    before = start.model.get_layer("word_embedding").embeddings.numpy()
    assert embedding.shape == (before.shape[0] + len(added), before.shape[1])
    np.testing.assert_allclose(embedding[: before.shape[0]], before, atol=1e-9)
    glove = vectors.load_vectors(vectors.default_vectors(data_dir))
    index = glove.index
    with_vectors = [w for w in added if w in index]
    assert with_vectors  # WikiQA words TrecQA's 12 questions lack, that GloVe has
    for word in with_vectors[:50]:
        np.testing.assert_allclose(embedding[len(old) + 2 + added.index(word)], glove.matrix[index[word]],
                                   atol=1e-6, err_msg=word)
    for a, b in zip(start.model.weights, tuned.model.weights):
        if a.path != b.path or "word_embedding" in a.path:
            assert a.path == b.path
            continue
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-9, err_msg=a.path)
    # the old words' texts score as the preset scores them
    np.testing.assert_allclose(tuned.score(*PAIRS), start.score(*PAIRS), atol=1e-6)


def test_fine_tuning_a_frozen_vector_preset_from_the_command_line_and_resuming_it(preset, data_dir, tmp_path,
                                                                                    monkeypatch, capsys):
    run_dir = tmp_path / "run"
    argv = ["train", "mcan_fm", "--dataset", "wikiqa", "--data-dir", str(data_dir), "--run-dir", str(run_dir),
            "--max-train-questions", "10", "--epochs", "2", "--set", "patience=5", "--init-preset", str(preset)]
    original = DevEvaluationCallback.on_epoch_end

    def stop_after_first_epoch(self, epoch, logs=None):
        original(self, epoch, logs)
        raise KeyboardInterrupt

    monkeypatch.setattr(DevEvaluationCallback, "on_epoch_end", stop_after_first_epoch)
    assert cli.main(argv) == 130  # the command's status for Ctrl-C
    monkeypatch.setattr(DevEvaluationCallback, "on_epoch_end", original)
    assert "fine-tuning" in capsys.readouterr().out
    # resuming without the preset is another run
    without = argv[: argv.index("--init-preset")] + [f"--set={k}={v}" for k, v in SMALL.items()]
    assert cli.main(without) == 2
    assert "init_preset" in capsys.readouterr().err
    assert cli.main(argv) == 0
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2 and metrics["provenance"]["resumed_after_epoch"] == 1
    assert metrics["init_preset"]["preset"] == str(preset)
    # the preset's whole vocabulary (its file keeps the training words; loading appends the GloVe words)
    old = presets.load_preset(preset).preprocessor.encoder.vocabulary
    new = (run_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    assert new[: len(old)] == old
    # with frozen vectors every GloVe word is already there: what is added is WikiQA's words GloVe lacks
    glove = vectors.load_vectors(vectors.default_vectors(data_dir)).index
    assert all(word not in glove for word in new[len(old):])
    assert 0 < metrics["dev"]["map"] <= 1


@pytest.mark.parametrize("change, message", [
    ({"name": "mcan_sm"}, "the preset is a 'mcan_fm' model"),
    ({"lstm_units": 32}, "setting 'lstm_units' is 16 in the preset"),
    ({"data": "sick"}, "the preset is a ranking model"),
    ({"embeddings_path": None}, "its new words need them"),
])
def test_a_run_the_preset_cannot_start_is_refused_naming_why(preset, data_dir, tmp_path, change, message):
    arguments = {"name": "mcan_fm", "data": "wikiqa", **SMALL, **change}
    with pytest.raises((ValueError, presets.PresetError), match=message):
        train(arguments.pop("name"), arguments.pop("data"), data_dir=data_dir, run_dir=tmp_path / "run",
              max_train_questions=5, epochs=1, init_preset=str(preset), verbose=0, **arguments)
    assert not (tmp_path / "run" / "model.keras").exists()


def test_transfer_weights_refuses_a_model_of_other_shapes(preset):
    from keras_match import zoo

    start = presets.load_preset(preset)
    other = zoo.build(zoo.resolve("mcan_fm", lstm_units=8, highway_units=8, fm_factors=4),
                      **start.preprocessor.model_arguments())
    with pytest.raises(ValueError, match=r"weight .*: the preset's has shape \[.*\], the new model's"):
        finetune.transfer_weights(start.model, other)
