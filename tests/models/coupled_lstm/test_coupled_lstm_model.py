"""Weight sharing of `CoupledLSTM2D` (against the NumPy reference with tied weights), `build_coupled_lstm`'s
outputs for both heads, and the zoo entries' parameter counts beside the paper's Table 2."""

import numpy as np
import pytest

import references_coupled_lstm as ref
from helpers import call_layer
from helpers import padded_batch

from keras_match import zoo
from keras_match.models.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm import build_coupled_lstm


def _tied_reference_weights(layer, directions):
    """The layer's (tied) weights as the reference takes them: one slice per direction, LSTM^2 = LSTM^1."""
    weights = {w.name: np.repeat(np.asarray(w.numpy()), directions // w.shape[0], axis=0) for w in layer.weights}
    if layer.share_streams:
        for key in list(weights):
            weights[key.replace("lstm1", "lstm2")] = weights[key]
    return weights


def _randomized(layer, rng, input_shape, scale=0.7):
    layer.build(input_shape)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * scale for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("coupling,share_streams", [("tight", False), ("loose", False), ("loose", True)])
def test_tied_weights_match_the_reference_with_tied_weights(coupling, share_streams):
    rng = np.random.default_rng(3)
    x, x_mask = padded_batch(rng, [4, 2, 3], 4, 3)
    y, y_mask = padded_batch(rng, [5, 1, 4], 5, 3)
    layer = _randomized(CoupledLSTM2D(3, coupling=coupling, share_directions=True, share_streams=share_streams),
                        rng, [(None, None, 3), (None, None, 3)])
    out = call_layer(layer, [x, y], [x_mask, y_mask])
    expected = ref.coupled_lstm(x, y, x_mask, y_mask, _tied_reference_weights(layer, 4), coupling, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling", ["tight", "loose"])
def test_tied_grid_block_matches_the_reference(coupling):
    rng = np.random.default_rng(4)
    n, m = 3, 4
    x_mask = np.arange(n)[None, :] < np.array([3, 1])[:, None]
    y_mask = np.arange(m)[None, :] < np.array([2, 4])[:, None]
    mask = x_mask[:, :, None] & y_mask[:, None, :]
    grid = (rng.normal(size=(2, n, m, 4)) * mask[..., None]).astype("float32")
    layer = _randomized(CoupledLSTM2D(2, coupling=coupling, share_directions=True,
                                      share_streams=coupling == "loose"), rng, (None, None, None, 4))
    out = call_layer(layer, grid, mask)
    expected = ref.coupled_lstm_grid(grid, mask, _tied_reference_weights(layer, 4), coupling, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coupling,share_directions,share_streams,expected", [
    # LSTM: 4u (d + 2u) + 4u per stream, per direction; TC: 5u (dx + dy + 2u) + 5u per direction (u = 50, d = 100)
    ("loose", False, False, 4 * 2 * 40200),
    ("loose", True, False, 2 * 40200),
    ("loose", True, True, 40200),
    ("tight", False, False, 4 * 75250),
    ("tight", True, False, 75250),
])
def test_sharing_divides_the_parameter_count(coupling, share_directions, share_streams, expected):
    layer = CoupledLSTM2D(50, coupling=coupling, share_directions=share_directions, share_streams=share_streams)
    layer.build([(None, None, 100), (None, None, 100)])
    assert layer.count_params() == expected


def test_share_streams_needs_loose_coupling_and_equal_widths():
    with pytest.raises(ValueError, match="share_streams"):
        CoupledLSTM2D(4, coupling="tight", share_streams=True)
    with pytest.raises(ValueError, match="same feature dimension"):
        CoupledLSTM2D(4, share_streams=True).build([(None, None, 3), (None, None, 5)])


def test_sharing_flags_round_trip_through_the_config():
    layer = CoupledLSTM2D(4, share_directions=True, share_streams=True)
    clone = CoupledLSTM2D.from_config(layer.get_config())
    assert clone.share_directions and clone.share_streams


PAIR = {"question": np.array([[5, 6, 7, 0], [8, 0, 0, 0]], "int32"), "answer": np.array([[9, 10, 0], [11, 12, 13]], "int32")}


@pytest.mark.parametrize("coupling,blocks", [("loose", 2), ("tight", 2)])
def test_builder_outputs_for_both_heads(coupling, blocks):
    small = dict(vocab_size=20, embedding_dim=6, units=3, dense_units=4, coupling=coupling, blocks=blocks)
    score = build_coupled_lstm(**small)
    assert tuple(score(PAIR).shape) == (2, 1)
    classifier = build_coupled_lstm(**small, pooling=(1, 1), head="classification", num_classes=3)
    probabilities = np.asarray(classifier(PAIR))
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


def _without_embeddings(model):
    return model.count_params() - model.get_layer("word_embedding").count_params()


@pytest.mark.parametrize("name,blocks,table_2", [
    ("lc_lstm", 1, 45_000), ("lc_lstm_stacked", 4, 135_000), ("tc_lstm", 1, 77_500), ("tc_lstm_stacked", 4, 190_000),
])
def test_paper_sized_models_have_table_2_parameter_counts(name, blocks, table_2):
    """With the paper's 100d words, SNLI's 3-class softmax and pooling (1, 1), the entries have Table 2's counts
    (to 1%): LC 45,403 / 136,003, TC 77,953 / 191,203."""
    model = zoo.load(name, vocab_size=30, embedding_dim=100, blocks=blocks, pooling=[1, 1], head="classification",
                     num_classes=3, compile=False)
    assert abs(_without_embeddings(model) - table_2) / table_2 < 0.01


def test_zoo_entries_are_registered_with_adagrad():
    entries = {"lc_lstm", "tc_lstm", "lc_lstm_stacked", "tc_lstm_stacked", "tc_lstm_stacked_sick"}
    assert entries <= set(zoo.names())
    for name in entries:
        settings = zoo.resolve(name)
        assert settings.training.optimizer == "adagrad" and settings.model["units"] == 50
