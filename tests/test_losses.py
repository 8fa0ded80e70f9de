"""Tests for keras_match.losses: NumPy references, padding, serialization, get(), and a few training steps."""

import keras
import numpy as np
import pytest

from keras_match import losses

ALL = [losses.PointwiseCrossEntropy, losses.PairwiseHinge, losses.ListwiseSoftmax]


# ---------------------------------------------------------------------------------------------------------------
# NumPy references
# ---------------------------------------------------------------------------------------------------------------


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_pointwise(labels, probs):
    cls = (labels >= 1).astype(int)
    p = np.clip(probs[np.arange(len(labels)), cls], 1e-7, 1 - 1e-7)
    return np.mean(-np.log(p))


def _np_pairwise(scores, margin):
    return np.mean(np.maximum(0.0, margin - scores[:, 0] + scores[:, 1]))


def _np_listwise(labels, scores):
    """KL(normalised labels || softmax over the real candidates), per question, then the batch mean."""
    out = []
    for y, s in zip(labels, scores):
        real = y >= 0
        y, s = y[real].astype(float), s[real].astype(float)
        if y.sum() <= 0:
            out.append(0.0)
            continue
        t = y / y.sum()
        log_p = s - np.log(np.sum(np.exp(s - s.max()))) - s.max()
        nz = t > 0
        out.append(np.sum(t[nz] * (np.log(t[nz]) - log_p[nz])))
    return np.mean(out)


def _value(loss, y_true, y_pred):
    return float(keras.ops.convert_to_numpy(loss(y_true, y_pred)))


# ---------------------------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------------------------


def test_pointwise_matches_reference_and_keras():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=32)  # graded: 1 and 2 are relevant
    logits = rng.normal(size=(32, 2)).astype("float32")
    probs = _softmax(logits)
    loss = losses.PointwiseCrossEntropy()
    assert _value(loss, labels, probs) == pytest.approx(_np_pointwise(labels, probs), rel=1e-5)
    binary = (labels >= 1).astype(int)
    keras_ref = keras.losses.SparseCategoricalCrossentropy()(binary, probs)
    assert _value(loss, labels, probs) == pytest.approx(float(keras_ref), rel=1e-5)
    # from_logits gives the same value on the logits; [batch, 1] labels are accepted.
    logit_loss = losses.PointwiseCrossEntropy(from_logits=True)
    assert _value(logit_loss, labels[:, None], logits) == pytest.approx(_np_pointwise(labels, probs), rel=1e-5)


def test_pointwise_clips_probabilities():
    value = _value(losses.PointwiseCrossEntropy(), np.array([1, 0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert np.isfinite(value) and value == pytest.approx(-np.log(1e-7), rel=1e-4)


@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_pairwise_matches_reference(margin):
    scores = np.random.default_rng(1).normal(size=(64, 2)).astype("float32")
    value = _value(losses.PairwiseHinge(margin=margin), np.zeros(64), scores)
    assert value == pytest.approx(_np_pairwise(scores, margin), rel=1e-5)


def test_listwise_matches_reference_with_padding():
    rng = np.random.default_rng(2)
    batch, n = 16, 7
    labels = rng.integers(0, 3, size=(batch, n)).astype("float32")
    lengths = rng.integers(1, n + 1, size=batch)
    for i, length in enumerate(lengths):
        labels[i, length:] = -1
    labels[0, : lengths[0]] = 0  # a question without a positive
    labels[1, :] = -1  # an all-padding row
    scores = rng.normal(size=(batch, n)).astype("float32") * 3
    loss = losses.ListwiseSoftmax()
    assert _value(loss, labels, scores) == pytest.approx(_np_listwise(labels, scores), rel=1e-5)
    # Scores at padded positions do not matter, even huge ones.
    garbage = np.where(labels < 0, 1e6, scores).astype("float32")
    assert _value(loss, labels, garbage) == pytest.approx(_value(loss, labels, scores), rel=1e-6)
    # Rows without a positive contribute exactly 0.
    per_row = keras.ops.convert_to_numpy(losses.ListwiseSoftmax(reduction=None)(labels, scores))
    assert per_row.shape == (batch,) and per_row[0] == 0.0 and per_row[1] == 0.0
    assert np.all(per_row >= -1e-6)


def test_listwise_gradient_is_finite_with_padding():
    import tensorflow as tf

    labels = tf.constant([[1.0, 0.0, -1.0], [-1.0, -1.0, -1.0], [0.0, 0.0, -1.0]])
    scores = tf.Variable([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 3.0, 0.0]])
    with tf.GradientTape() as tape:
        value = losses.ListwiseSoftmax()(labels, scores)
    grad = tape.gradient(value, scores).numpy()
    assert np.all(np.isfinite(grad))
    assert np.all(grad[1:] == 0.0) and np.all(grad[:, 2] == 0.0)  # no-positive rows and padding get no gradient
    p = _softmax(np.array([2.0, 1.0]))
    np.testing.assert_allclose(grad[0, :2], (p - [1.0, 0.0]) / 3, rtol=1e-5)  # softmax - target, batch mean


# ---------------------------------------------------------------------------------------------------------------
# Modes, config, serialization, get()
# ---------------------------------------------------------------------------------------------------------------


def test_modes():
    assert [cls.mode for cls in ALL] == ["pointwise", "pairwise", "listwise"]
    assert losses.MODES == ("pointwise", "pairwise", "listwise")
    assert all(issubclass(cls, keras.losses.Loss) for cls in ALL)


@pytest.mark.parametrize(
    "loss",
    [
        losses.PointwiseCrossEntropy(from_logits=True, name="pce"),
        losses.PairwiseHinge(margin=0.5, reduction="sum"),
        losses.ListwiseSoftmax(name="lw"),
    ],
    ids=lambda loss: type(loss).__name__,
)
def test_config_and_serialization_round_trip(loss):
    config = loss.get_config()
    clone = type(loss).from_config(config)
    assert clone.get_config() == config
    serialized = keras.saving.serialize_keras_object(loss)
    assert serialized["registered_name"] == f"keras_match>{type(loss).__name__}"
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is type(loss) and restored.get_config() == config
    assert restored.mode == loss.mode


def test_get_and_names():
    assert losses.names() == [
        "pointwise", "pointwise_sigmoid", "pairwise", "pairwise_hinge", "listwise", "listwise_softmax",
        "PointwiseCrossEntropy", "PointwiseSigmoidCrossEntropy", "PairwiseHinge", "ListwiseSoftmax",
    ]
    assert [losses.mode_of(n) for n in ("pointwise_sigmoid", "pairwise_hinge", "listwise_softmax")] == [
        "pointwise", "pairwise", "listwise"]
    assert isinstance(losses.get("pairwise_hinge"), losses.PairwiseHinge)
    assert isinstance(losses.get("listwise_softmax"), losses.ListwiseSoftmax)
    assert isinstance(losses.get("pointwise"), losses.PointwiseCrossEntropy)
    assert isinstance(losses.get("PairwiseHinge"), losses.PairwiseHinge)
    assert isinstance(losses.get(losses.ListwiseSoftmax), losses.ListwiseSoftmax)
    instance = losses.PairwiseHinge(margin=0.2)
    assert losses.get(instance) is instance
    with pytest.raises(ValueError, match=r"unknown loss 'hinge'; valid names: \['pointwise', 'pointwise_sigmoid'"):
        losses.get("hinge")
    with pytest.raises(ValueError, match="mode"):
        losses.get(keras.losses.MeanSquaredError())
    with pytest.raises(ValueError, match="cannot interpret"):
        losses.get(3)


# ---------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------


def _task(mode, rng):
    """A tiny learnable task per mode: (model, x, y). Relevance = sign of the first feature."""
    dim, n = 4, 5
    if mode == "pointwise":
        x = rng.normal(size=(64, dim)).astype("float32")
        y = (x[:, 0] > 0).astype("int32")
        model = keras.Sequential([keras.Input((dim,)), keras.layers.Dense(2, activation="softmax")])
        return model, x, y
    if mode == "pairwise":
        pos = rng.normal(size=(64, dim)).astype("float32")
        neg = rng.normal(size=(64, dim)).astype("float32")
        pos[:, 0], neg[:, 0] = np.abs(pos[:, 0]), -np.abs(neg[:, 0])
        a, b = keras.Input((dim,)), keras.Input((dim,))
        scorer = keras.layers.Dense(1)  # shared by both candidates
        out = keras.layers.Concatenate()([scorer(a), scorer(b)])
        return keras.Model([a, b], out), [pos, neg], np.zeros(64, "float32")
    x = rng.normal(size=(32, n, dim)).astype("float32")
    y = (x[..., 0] > 0).astype("float32")
    y[:, -1] = -1  # padding
    inp = keras.Input((n, dim))
    out = keras.layers.Reshape((n,))(keras.layers.Dense(1)(inp))
    return keras.Model(inp, out), x, y


@pytest.mark.parametrize("name", ["pointwise", "pairwise", "listwise"])
def test_loss_decreases_when_training(name):
    keras.utils.set_random_seed(0)
    model, x, y = _task(name, np.random.default_rng(0))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=losses.get(name))
    history = model.fit(x, y, batch_size=len(y), epochs=10, verbose=0).history["loss"]
    assert history[-1] < history[0] * 0.9, history


def test_compiled_loss_survives_model_save(tmp_path):
    keras.utils.set_random_seed(0)
    model, x, y = _task("listwise", np.random.default_rng(0))
    model.compile(optimizer="adam", loss=losses.ListwiseSoftmax())
    model.fit(x, y, batch_size=len(y), epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    assert isinstance(restored.loss, losses.ListwiseSoftmax)
    np.testing.assert_allclose(restored.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0), rtol=1e-6)


def test_pointwise_sigmoid_matches_a_numpy_reference():
    """-[y log sigmoid(s) + (1 - y) log(1 - sigmoid(s))], y = label >= 1, also for large |s| (stable form)."""
    labels = np.array([0, 1, 2, 0, 1], "int32")
    scores = np.array([[0.3], [-1.2], [4.0], [60.0], [-60.0]], "float32")
    y = (labels >= 1).astype(float)
    s = scores[:, 0].astype(float)
    expected = np.mean(np.logaddexp(0.0, s) - y * s)  # log(1 + e^s) - y s
    got = float(losses.PointwiseSigmoidCrossEntropy()(labels, scores))
    assert np.isfinite(got)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
