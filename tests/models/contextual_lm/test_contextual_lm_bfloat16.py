"""The contextual language model under the `mixed_bfloat16` policy (issue 55): each kind built with
`dtype="mixed_bfloat16"` and the float32 model's weights, against the float64 NumPy reference of
test_contextual_lm.py (`reference_outputs`: eq. 3 / 5 / 6 / 11 / 12 and the Keras LSTM stepped in NumPy).

Tolerances. bfloat16 keeps 8 significant bits: one rounding to nearest moves a value by at most u = 2^-8 of itself.
Under the policy the embeddings are rounded to bfloat16; the CARNNs' matmuls round their results (accumulated in
float32), their gates and states run above bfloat16's precision (`keras_match.layers.CARNN`) and their outputs are
rounded once; the LSTM runs in float32; the logit layers compute in float32 (no rounding of the logits). So a logit
`sum_k h_k W_kj + b_j` (hidden = 6 terms, |h| < ~1, |W| < ~0.6) carries the few u of error of each `h_k`, at most
~3u sum_k |h_k W_kj| ~ 0.03, typically a tenth of that (independent signs): `ATOL = 2^-6`, `RTOL = 2^-7`
(measured: <= 0.0034). The LSTM kind only rounds its embeddings (u, through 6 input terms) and is held to
`ATOL = 2^-8` (measured: <= 0.0006).
"""

import keras
import ml_dtypes
import numpy as np
import pytest

from keras_match.models.contextual_lm import ContextualLanguageModel
from test_contextual_lm import HIDDEN
from test_contextual_lm import MODELS
from test_contextual_lm import V
from test_contextual_lm import X
from test_contextual_lm import Y
from test_contextual_lm import reference_outputs
from test_contextual_lm import small

POLICY = "mixed_bfloat16"
CARNN_TOL = {"atol": 2.0**-6, "rtol": 2.0**-7}  # the module docstring's reasoning, for each
LSTM_TOL = {"atol": 2.0**-8, "rtol": 2.0**-8}


def bfloat16_twin(model):
    twin = ContextualLanguageModel(V, hidden=HIDDEN, kind=model.kind, variant=model.variant, alpha=model.alpha,
                                   dtype=POLICY)
    twin.set_weights(model.get_weights())
    return twin


def assert_matches_reference(out, rows, labels, tolerance):
    logits = np.asarray(out["next_word"])
    for i, expected in enumerate(rows):
        np.testing.assert_allclose(logits[i, : len(expected)], expected, **tolerance)
    if labels:
        np.testing.assert_allclose(np.asarray(out["label"]), np.array(labels), **tolerance)


@pytest.mark.parametrize("kind,variant", MODELS)
def test_bfloat16_model_matches_numpy_reference_with_masks(kind, variant):
    model = small(kind, variant)
    rows, labels = reference_outputs(model, X)
    twin = bfloat16_twin(model)
    assert all(w.dtype == "float32" for w in twin.weights)
    policies = {layer.name: layer.compute_dtype for layer in twin.layers}
    assert policies["embedding"] == "bfloat16" and policies["next_word_logits"] == "float32"
    assert policies["language_model"] == ("float32" if kind == "lstm" else "bfloat16")
    out = twin(X)
    assert {keras.backend.standardize_dtype(v.dtype) for v in out.values()} == {"float32"}
    tolerance = LSTM_TOL if kind == "lstm" else CARNN_TOL
    assert_matches_reference(out, rows, labels, tolerance)
    if kind == "contextual":  # an empty previous sentence: c = 0, the label logits are the bias exactly
        np.testing.assert_array_equal(np.asarray(out["label"])[2], np.asarray(twin.get_layer("label_logits").bias))
    # Extra padding changes nothing at the real positions.
    padded = {k: np.pad(v, [(0, 0), (0, 3)]) for k, v in X.items()}
    real = X["tokens"] != 0
    np.testing.assert_allclose(np.asarray(twin(padded)["next_word"])[:, :5][real],
                               np.asarray(out["next_word"])[real], **tolerance)
    # Eq. 13's loss: the bfloat16 model's is the float32 model's within the logits' tolerance.
    np.testing.assert_allclose(float(twin.compute_loss(X, Y, out)), float(model.compute_loss(X, Y, model(X))),
                               **tolerance)


@pytest.mark.parametrize("kind", ["contextual", "lstm"])
def test_bfloat16_long_sentence_does_not_drift(kind):
    """60 tokens (and 40 of previous sentence): the states run in float32, so the error stays the per-step one
    of the module docstring (a bfloat16 state would take a rounding of up to u |h| at every step)."""
    model = small(kind, "i")
    rng = np.random.default_rng(3)
    x = {"previous": rng.integers(1, V, size=(2, 40)).astype(np.int32),
         "tokens": rng.integers(1, V, size=(2, 60)).astype(np.int32)}
    x["tokens"][1, 45:] = 0
    rows, labels = reference_outputs(model, x)
    assert_matches_reference(bfloat16_twin(model)(x), rows, labels, LSTM_TOL if kind == "lstm" else CARNN_TOL)


def test_bfloat16_config_and_keras_file_keep_the_policy(tmp_path):
    twin = bfloat16_twin(small("contextual", "n"))
    config = twin.get_config()
    assert keras.dtype_policies.get(config["dtype"]).name == POLICY
    clone = ContextualLanguageModel.from_config(config)
    assert clone.get_config() == config and clone.get_layer("embedding").dtype_policy.name == POLICY
    twin.save(tmp_path / "lm.keras")
    loaded = keras.saving.load_model(tmp_path / "lm.keras")
    assert loaded.get_layer("language_model").dtype_policy.name == POLICY
    for key, value in twin(X).items():
        np.testing.assert_array_equal(np.asarray(loaded(X)[key]), np.asarray(value))
    embedded = loaded.get_layer("embedding")(X["tokens"])
    assert np.asarray(embedded).dtype == ml_dtypes.bfloat16
