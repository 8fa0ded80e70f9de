"""The CARNN dialog layers against the NumPy references of references_carnn_dialog.py: `HistoryAttention` (eq. 8),
`CandidateScorer` (eq. 10), and the candidate-set constant `CandidateIds`."""

import keras
import numpy as np
import pytest

import references_carnn_dialog as ref
from helpers import GARBAGE
from helpers import call_layer
from helpers import lengths_mask
from helpers import run_layer_test
from keras_match.models.carnn_dialog import CandidateIds
from keras_match.models.carnn_dialog import CandidateScorer
from keras_match.models.carnn_dialog import HistoryAttention

# Unequal history lengths; the last example has no history turn at all (a dialog's first response).
LENGTHS, TURNS, DIM = [4, 1, 3, 0], 5, 6


def history(seed, lengths=LENGTHS, turns=TURNS, dim=DIM):
    """h, e [batch, turns, dim] with garbage at padded turns, c [batch, dim], the turn mask."""
    rng = np.random.default_rng(seed)
    mask = lengths_mask(lengths, turns)
    shape = (len(lengths), turns, dim)
    h, e = (np.where(mask[..., None], rng.normal(size=shape), rng.uniform(-GARBAGE, GARBAGE, size=shape))
            .astype("float32") for _ in range(2))
    c = rng.normal(size=(len(lengths), dim)).astype("float32")
    return rng, h, e, c, mask


@pytest.mark.parametrize("empty_history", ["context", "zeros"])
def test_history_attention_matches_the_numpy_loop(empty_history):
    rng, h, e, c, mask = history(0)
    out = call_layer(HistoryAttention(empty_history), [h, e, c], mask)
    np.testing.assert_allclose(out, ref.history_attention(h, e, c, mask, empty_history), atol=1e-5)
    assert np.isfinite(out).all()
    expected_empty = c[3] if empty_history == "context" else np.zeros(DIM)
    np.testing.assert_allclose(out[3], expected_empty, atol=1e-6)


def test_history_attention_ignores_padded_turns():
    rng, h, e, c, mask = history(1)
    layer = HistoryAttention()
    out = call_layer(layer, [h, e, c], mask)
    # new garbage at the padded turns, and three more padded turns
    h2, e2 = (np.where(mask[..., None], x, rng.uniform(-GARBAGE, GARBAGE, size=x.shape)).astype("float32")
              for x in (h, e))
    extra = rng.uniform(-GARBAGE, GARBAGE, size=(len(LENGTHS), 3, DIM)).astype("float32")
    h2, e2 = np.concatenate([h2, extra], axis=1), np.concatenate([e2, extra], axis=1)
    mask2 = np.concatenate([mask, np.zeros((len(LENGTHS), 3), bool)], axis=1)
    np.testing.assert_allclose(call_layer(layer, [h2, e2, c], mask2), out, atol=1e-6)
    # not even NaN or inf at a padded turn reaches the output (selected away, not multiplied by 0)
    h3 = np.where(mask[..., None], h, np.nan).astype("float32")
    e3 = np.where(mask[..., None], e, np.inf).astype("float32")
    np.testing.assert_allclose(call_layer(layer, [h3, e3, c], mask), out, atol=1e-6)


def test_history_attention_without_a_mask_reads_every_turn():
    _, h, e, c, _ = history(2, lengths=[5, 5, 5, 5])
    full = np.ones((4, TURNS), bool)
    np.testing.assert_allclose(call_layer(HistoryAttention(), [h, e, c]), ref.history_attention(h, e, c, full),
                               atol=1e-5)


def test_history_attention_the_residual_and_the_attention_matter():
    """Not a plain mean nor the CARNN output alone: each term of eq. 8 changes the result."""
    _, h, e, c, mask = history(3)
    out = call_layer(HistoryAttention(), [h, e, c], mask)
    without_residual = ref.history_attention(h, np.zeros_like(e), c, mask)
    assert np.abs(out[:3] - without_residual[:3]).max() > 1e-2
    uniform = np.stack([(h[b, :n] + e[b, :n]).mean(0) for b, n in enumerate(LENGTHS[:3])])
    assert np.abs(out[:3] - uniform).max() > 1e-2


def test_history_attention_layer_test(tmp_path):
    _, h, e, c, mask = history(4)
    run_layer_test(lambda: HistoryAttention(name="history_attention"), [h, e, c], masks=mask,
                   expected_shape=(4, DIM), expected_weights=0, tmp_path=tmp_path)


def test_history_attention_rejects_bad_inputs():
    with pytest.raises(ValueError, match="empty_history"):
        HistoryAttention("mean")
    _, h, e, c, mask = history(5)
    with pytest.raises(ValueError, match="one defined width"):
        HistoryAttention()([h, e[..., :3], c])


@pytest.mark.parametrize("projection", [False, True])
def test_candidate_scorer_matches_the_numpy_loop(projection):
    rng = np.random.default_rng(6)
    summary = rng.normal(size=(3, DIM)).astype("float32")
    candidates = rng.normal(size=(7, DIM)).astype("float32")
    layer = CandidateScorer(projection)
    layer.build([summary.shape, candidates.shape])
    kernel = None
    if projection:
        np.testing.assert_allclose(layer.kernel.numpy(), np.eye(DIM))  # starts as eq. 10's plain dot product
        kernel = rng.normal(size=(DIM, DIM)).astype("float32")
        layer.kernel.assign(kernel)
    out = call_layer(layer, [summary, candidates])
    assert out.shape == (3, 7)
    np.testing.assert_allclose(out, ref.candidate_scores(summary, candidates, kernel), atol=1e-4)


@pytest.mark.parametrize("projection", [False, True])
def test_candidate_scorer_layer_test(projection, tmp_path):
    rng = np.random.default_rng(7)
    summary = rng.normal(size=(3, DIM)).astype("float32")
    candidates = rng.normal(size=(7, DIM)).astype("float32")
    run_layer_test(lambda: CandidateScorer(projection, name="candidate_scores"), [summary, candidates],
                   expected_shape=(3, 7), expected_weights=int(projection), tmp_path=tmp_path)


def test_candidate_ids_is_a_constant_of_the_model(tmp_path):
    ids = np.arange(12, dtype=np.int32).reshape(4, 3)
    layer = CandidateIds(4, 3, name="candidate_ids")
    config = layer.get_config()
    assert config["num_candidates"] == 4 and config["length"] == 3
    assert set(config) == {"name", "trainable", "dtype", "num_candidates", "length"}  # the ids are a weight
    x = keras.Input(shape=(None,), dtype="int32")
    model = keras.Model(x, layer(x))
    layer.set_ids(ids)
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 1
    assert layer.non_trainable_weights[0].dtype == "int32"
    np.testing.assert_array_equal(model(np.zeros((2, 5), np.int32)), ids)
    model.save(tmp_path / "ids.keras")
    np.testing.assert_array_equal(keras.models.load_model(tmp_path / "ids.keras")(np.zeros((1, 1), np.int32)), ids)
    clone = keras.Model.from_config(model.get_config())
    np.testing.assert_array_equal(clone(np.zeros((1, 1), np.int32)), np.zeros((4, 3)))  # config: no values
    with pytest.raises(ValueError, match="shape"):
        layer.set_ids(np.zeros((3, 3), np.int32))
    with pytest.raises(ValueError, match="num_candidates"):
        CandidateIds(0, 3)
