"""The CARNN dialog layers under the `mixed_bfloat16` policy (issue 55), against the float64 NumPy references of
references_carnn_dialog.py (eq. 8 and 10).

Tolerances. bfloat16 keeps 8 significant bits: one rounding to nearest moves a value by at most u = 2^-8 of itself.
Both layers compute in float32 under the policy, so their only bfloat16 errors are the roundings of their inputs
(Keras casts a layer's float inputs to its compute dtype; upstream layers hand them over in bfloat16 anyway) and,
for `HistoryAttention`, of its output:

- `HistoryAttention`: a logit `h~_m^T c` over d = 6 terms |t_k| <~ 2 (N(0, 1) inputs) is off by at most 2u sum_k
  |t_k| ~ 0.05 (~0.01 with independent signs), which moves each attention weight by as much of itself; the summary
  (|h~| <~ 3) adds u |h_his|. `ATOL = 2^-5`, `RTOL = 2^-6`; measured: <= 0.016.
- `CandidateScorer`: s_l = sum_ij h_i W_ij e_lj is computed in float32 (W float32, unrounded) from h_i and e_lj
  rounded to bfloat16, (1 + d_i)(1 + e_j) with |d_i|, |e_j| <= u, so |s_l - exact| <= (2u + u^2) sum_ij |h_i W_ij
  e_lj| (float32's own error, ~2^-24 of that sum, is negligible): the test checks that bound element by element,
  and the score itself is never rounded to bfloat16.
"""

import ml_dtypes
import numpy as np
import pytest

import references_carnn_dialog as ref
from helpers import GARBAGE
from helpers import call_layer
from keras_match.models.carnn_dialog import CandidateIds
from keras_match.models.carnn_dialog import CandidateScorer
from keras_match.models.carnn_dialog import HistoryAttention
from test_carnn_dialog_layers import DIM
from test_carnn_dialog_layers import LENGTHS
from test_carnn_dialog_layers import history

POLICY = "mixed_bfloat16"
U = 2.0**-8  # bfloat16's unit roundoff
HISTORY_TOL = {"atol": 2.0**-5, "rtol": 2.0**-6}  # the module docstring's reasoning


def as_float(array):
    return np.asarray(array).astype(np.float64)


@pytest.mark.parametrize("empty_history", ["context", "zeros"])
def test_bfloat16_history_attention_matches_the_numpy_loop(empty_history):
    rng, h, e, c, mask = history(0)
    layer = HistoryAttention(empty_history, dtype=POLICY)
    out = call_layer(layer, [h, e, c], mask)
    assert out.dtype == ml_dtypes.bfloat16
    out = as_float(out)
    np.testing.assert_allclose(out, ref.history_attention(h, e, c, mask, empty_history), **HISTORY_TOL)
    # No history turn: exactly c (rounded to bfloat16 once) or exactly 0.
    expected_empty = as_float(c[3].astype(ml_dtypes.bfloat16)) if empty_history == "context" else np.zeros(DIM)
    np.testing.assert_array_equal(out[3], expected_empty)
    # Padded turns (new garbage, NaN, inf, three more of them) change nothing.
    h2 = np.where(mask[..., None], h, np.nan).astype("float32")
    e2 = np.where(mask[..., None], e, np.inf).astype("float32")
    extra = rng.uniform(-GARBAGE, GARBAGE, size=(len(LENGTHS), 3, DIM)).astype("float32")
    h2, e2 = np.concatenate([h2, extra], axis=1), np.concatenate([e2, extra], axis=1)
    mask2 = np.concatenate([mask, np.zeros((len(LENGTHS), 3), bool)], axis=1)
    padded = as_float(call_layer(layer, [h2, e2, c], mask2))
    np.testing.assert_allclose(padded, ref.history_attention(h, e, c, mask, empty_history), **HISTORY_TOL)
    np.testing.assert_allclose(padded, out, **HISTORY_TOL)


def test_bfloat16_history_attention_over_a_long_history():
    """300 turns: the softmax over the turns and the weighted sum run in float32 (a bfloat16 normaliser would
    round at every one of the 300 terms; 300 is not even a bfloat16 count past 256)."""
    _, h, e, c, mask = history(1, lengths=[300, 257], turns=300)
    out = as_float(call_layer(HistoryAttention(dtype=POLICY), [h, e, c], mask))
    np.testing.assert_allclose(out, ref.history_attention(h, e, c, mask), **HISTORY_TOL)


@pytest.mark.parametrize("projection", [False, True])
def test_bfloat16_candidate_scorer_matches_the_numpy_loop(projection):
    rng = np.random.default_rng(6)
    summary = rng.normal(size=(3, DIM)).astype("float32")
    candidates = rng.normal(size=(7, DIM)).astype("float32")
    layer = CandidateScorer(projection, dtype=POLICY)
    layer.build([summary.shape, candidates.shape])
    kernel = None
    if projection:
        kernel = rng.normal(size=(DIM, DIM)).astype("float32")
        layer.set_weights([kernel])
        assert layer.kernel.dtype == "float32"
    out = call_layer(layer, [summary, candidates])
    assert out.dtype == np.float32  # the model's logits (its head): float32 under the policy
    # The module docstring's bound: (2u + u^2) sum_ij |h_i W_ij e_lj|, per score.
    weights = np.abs(kernel) if projection else np.eye(DIM)
    bound = (2 * U + U * U) * np.einsum("bi,ij,lj->bl", np.abs(summary), weights, np.abs(candidates))
    error = np.abs(out - ref.candidate_scores(summary, candidates, kernel))
    assert np.all(error <= bound + 1e-6), (error.max(), bound.min())


@pytest.mark.parametrize("projection", [False, True])
def test_bfloat16_candidate_scorer_keeps_close_candidates_apart(projection):
    """Scores 12 and 12 + 2^-6 (inputs exact in bfloat16): float32 scores keep them apart; bfloat16 scores, spaced
    2^-4 near 12, would tie."""
    summary = np.ones((1, DIM), "float32")
    candidates = np.full((2, DIM), 2.0, "float32")
    candidates[1, 0] += 2.0**-6
    layer = CandidateScorer(projection, dtype=POLICY)
    layer.build([summary.shape, candidates.shape])  # W starts as the identity
    out = call_layer(layer, [summary, candidates])
    np.testing.assert_array_equal(out, [[12.0, 12.0 + 2.0**-6]])
    assert np.float32(12.0 + 2.0**-6).astype(ml_dtypes.bfloat16) == 12.0  # the tie bfloat16 would make


def test_bfloat16_candidate_ids_stay_int32():
    ids = np.arange(12, dtype=np.int32).reshape(4, 3)
    layer = CandidateIds(4, 3, dtype=POLICY)
    layer.build(None)
    layer.set_ids(ids)
    out = call_layer(layer, np.zeros((2, 5), np.int32))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ids)
