"""A zoo entry over a pretrained backbone exports as every entry does: the raw-text SavedModel holds the encoder's
WordPiece tokenizer in its graph and scores as the Keras model, the `rank` signature orders candidates, a REST
body decoded as TF Serving decodes it reaches the signature, and the ONNX conversion of `serve_ids` matches
TensorFlow. (`tests/test_export_zoo.py` exports the word-vector entries; the backbone here is the tiny random BERT
of `tests/conftest.py`, of MiniLM's vocabulary: the export path is the same as the pinned MiniLM's, which
`keras-match export` was run on by hand, see the issue 57 note.)"""

import numpy as np
import pytest
import tensorflow as tf
import tf_serving_emulation

from keras_match import serving
from keras_match.artifacts import runs
from keras_match.encoders.transformer import TRANSFORMER_LAYER
from keras_match.inputs import pipeline
from keras_match.serving import export
from keras_match.training.recipe import Recipe

QUESTIONS = ["who wrote hamlet ?", "what is the capital of France?", "Héllo, wörld: naïve café…"]
ANSWERS = ["hamlet is a tragedy by william shakespeare .", "Paris is the capital and largest city of France.",
           "antidisestablishmentarianism " * 30]


@pytest.fixture(scope="module")
def exported(data_dir, tmp_path_factory):
    recipe = Recipe.prepare("ctrn_minilm", "trecqa-raw", data_dir=data_dir, max_train_questions=3, filters=8,
                            dense_units=4)
    preprocessor = recipe.preprocessor()
    model, _ = recipe.model(preprocessor)
    run = runs.Run(model=model, preprocessor=preprocessor, config={"zoo": "ctrn_minilm",
                                                                    "task": recipe.task.config()})
    version = export.saved_model(run, tmp_path_factory.mktemp("export"), version=1, warmup=False)
    onnx = export.to_onnx(version)
    import tensorflow_text  # noqa: F401  (the exported graph's tokenizer ops)

    inputs = preprocessor.trim_padding(pipeline.encode(preprocessor, {"question": QUESTIONS, "answer": ANSWERS}))
    expected = np.asarray(model({k: tf.constant(v) for k, v in inputs.items()}, training=False))
    return {"model": model, "inputs": inputs, "expected": expected, "onnx": onnx,
            "loaded": tf.saved_model.load(str(version))}


def test_the_backbone_is_in_the_export_and_reads_wordpiece_ids(exported):
    layer = exported["model"].get_layer(TRANSFORMER_LAYER)
    assert layer.encoder == "minilm-l6" and layer.vocabulary_size == 30522
    ids = np.asarray(exported["inputs"]["question"])
    assert (ids[:, 0] == 101).all()  # [CLS] ... [SEP]: the encoder's WordPiece ids, not word ids
    assert np.asarray(exported["inputs"]["answer"]).shape[1] == 60  # truncated as training truncates


def test_raw_text_and_id_signatures_match_keras(exported):
    loaded, expected = exported["loaded"], exported["expected"]
    served = loaded.signatures["serving_default"](question=tf.constant(QUESTIONS), answer=tf.constant(ANSWERS))
    by_ids = loaded.signatures["serve_ids"](**{k: tf.constant(v) for k, v in exported["inputs"].items()})
    np.testing.assert_allclose(served["score"].numpy(), expected[:, -1], atol=1e-5)
    np.testing.assert_allclose(by_ids["score"].numpy(), expected[:, -1], atol=1e-5)


def test_a_rest_rank_body_reaches_the_rank_signature(exported):
    loaded = exported["loaded"]
    signature = loaded.signatures["rank"]
    feeds = tf_serving_emulation.decode_rest_body(serving.rest_rank_body(QUESTIONS[1], ANSWERS),
                                                  {name: spec.dtype.name for name, spec in
                                                   signature.structured_input_signature[1].items()})
    ranked = signature(**{k: tf.constant(v) for k, v in feeds.items()})
    alone = loaded.signatures["serving_default"](question=tf.constant([QUESTIONS[1]] * 3),
                                                 answer=tf.constant(ANSWERS))["score"].numpy()
    np.testing.assert_allclose(ranked["scores"].numpy().ravel(), alone, atol=1e-5)
    assert ranked["order"].numpy().ravel().tolist() == np.argsort(-alone, kind="stable").tolist()


def test_onnx_matches_tensorflow(exported):
    onnx = exported["onnx"]
    assert onnx.path.exists() and onnx.max_abs_diff < 1e-4 and onnx.num_samples > 0
