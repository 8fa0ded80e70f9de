"""The exported SavedModel, loaded in a fresh Python process, scores raw text like the Keras model."""

import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_match import cli, export, training

QUESTIONS = ["When was the Teapot Dome scandal?", "who is the president of france", "", "Zürich café ?"]
ANSWERS = ["The scandal broke in 1923 .", "", "zzqx qqzx", " ".join(["word"] * 500)]

LOADER = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops, as the TF Serving binary does)
    path, questions, answers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    loaded = tf.saved_model.load(path)
    text = loaded.signatures["serving_default"](
        question=tf.constant(questions), answer=tf.constant(answers))["score"].numpy()
    print(json.dumps({"serving_default": text.tolist(), "signatures": sorted(loaded.signatures)}))
    """
)


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("export") / "mcan_fm"
    assert cli.main(["export", str(trained_run), "--to", str(base)]) == 0
    return base


def test_tf_serving_layout(exported):
    assert (exported / "1" / "saved_model.pb").exists()
    assert (exported / "1" / "variables").is_dir()
    assets = list((exported / "1" / "assets").iterdir())
    assert any(p.read_text(encoding="utf-8").splitlines()[:1] for p in assets)
    assert not [p for p in exported.iterdir() if p.name.startswith(".tmp")]


def test_fresh_process_scores_raw_text_like_keras(exported, trained_run):
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(exported / "1"), json.dumps(QUESTIONS), json.dumps(ANSWERS)],
        check=True, capture_output=True, text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"serving_default", "serve_ids"} <= set(result["signatures"])
    served = np.array(result["serving_default"])
    expected = training.load_run(trained_run).score(QUESTIONS, ANSWERS)
    assert np.isfinite(served).all()
    np.testing.assert_allclose(served, expected, atol=1e-5)


def test_versions_increment_and_are_never_overwritten(trained_run, tmp_path):
    run = training.load_run(trained_run)
    assert export.saved_model(run, tmp_path).name == "1"
    assert export.saved_model(run, tmp_path).name == "2"
    with pytest.raises(FileExistsError):
        export.saved_model(run, tmp_path, version=2)
    with pytest.raises(ValueError):
        export.saved_model(run, tmp_path, version=0)
