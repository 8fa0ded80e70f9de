import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match.models.ctrn import CTRN
from keras_match.models.ctrn import QRNN
from keras_match.models.ctrn.ctrn import stretch_indices

import references_ctrn as ref
from helpers import call_layer
from helpers import pad_more
from helpers import padded_batch
from helpers import run_layer_test

ALIGNMENTS = ["index", "stretch"]


def make_pair(seed, q_lengths=(5, 2, 3, 1), a_lengths=(7, 6, 3, 0), dim=3):
    """q [4, 5, dim] and a [4, 7, dim]: unequal tensor lengths, and true lengths shorter, longer and equal."""
    rng = np.random.default_rng(seed)
    q, q_mask = padded_batch(rng, list(q_lengths), 5, dim)
    a, a_mask = padded_batch(rng, list(a_lengths), 7, dim)
    return rng, q, a, q_mask, a_mask


def randomized(layer, rng, input_dim):
    layer.build([(None, None, input_dim), (None, None, input_dim)])
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.7 for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_layer_roundtrip(tmp_path, alignment):
    _, q, a, q_mask, a_mask = make_pair(0)
    run_layer_test(
        lambda: CTRN(4, kernel_size=2, alignment=alignment, kernel_regularizer="l2"),
        [q, a],
        [q_mask, a_mask],
        expected_shape=((4, 5, 4), (4, 7, 4)),
        expected_weights=2,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("kernel_size", [1, 3])
def test_matches_numpy_reference(alignment, kernel_size):
    rng, q, a, q_mask, a_mask = make_pair(1)
    layer = randomized(CTRN(4, kernel_size=kernel_size, alignment=alignment), rng, 3)
    kernel, bias = layer.get_weights()
    hq, ha = call_layer(layer, [q, a], [q_mask, a_mask])
    ref_q, ref_a = ref.ctrn(q, a, q_mask, a_mask, kernel, bias, alignment)
    np.testing.assert_allclose(hq, ref_q, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ha, ref_a, rtol=1e-4, atol=1e-5)
    # The question side longer than the answer side as well (swap the roles).
    ha2, hq2 = call_layer(layer, [a, q], [a_mask, q_mask])
    ref_a2, ref_q2 = ref.ctrn(a, q, a_mask, q_mask, kernel, bias, alignment)
    np.testing.assert_allclose(ha2, ref_a2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hq2, ref_q2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_without_masks_every_position_is_real(alignment):
    rng, q, a, _, _ = make_pair(2)
    layer = randomized(CTRN(3, alignment=alignment), rng, 3)
    hq, ha = call_layer(layer, [q / 50.0, a / 50.0])
    ref_q, ref_a = ref.ctrn(q / 50.0, a / 50.0, np.ones((4, 5), bool), np.ones((4, 7), bool),
                            *layer.get_weights(), alignment)
    np.testing.assert_allclose(hq, ref_q, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ha, ref_a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_extra_padding_on_either_side_changes_nothing(alignment):
    rng, q, a, q_mask, a_mask = make_pair(3)
    layer = randomized(CTRN(4, alignment=alignment), rng, 3)
    hq, ha = call_layer(layer, [q, a], [q_mask, a_mask])
    for extra_q, extra_a in ((4, 0), (0, 3), (6, 6)):
        long_q, long_q_mask = pad_more(rng, q, q_mask, extra_q)
        long_a, long_a_mask = pad_more(rng, a, a_mask, extra_a)
        lhq, lha = call_layer(layer, [long_q, long_a], [long_q_mask, long_a_mask])
        np.testing.assert_allclose(lhq[:, :5], hq, atol=1e-6)
        np.testing.assert_allclose(lha[:, :7], ha, atol=1e-6)
        assert not lhq[~long_q_mask].any() and not lha[~long_a_mask].any()


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_identical_texts_give_the_qrnn_output_squared(alignment):
    """With a == q the partner's gates are the own gates, so h^(q-dagger) = h^(q) and the output is h_q^2."""
    rng, q, _, q_mask, _ = make_pair(4)
    ctrn = randomized(CTRN(4, kernel_size=2, alignment=alignment), rng, 3)
    qrnn = QRNN(4, kernel_size=2)
    qrnn.build((None, None, 3))
    qrnn.set_weights(ctrn.get_weights())
    hq, ha = call_layer(ctrn, [q, q], [q_mask, q_mask])
    expected = call_layer(qrnn, q, q_mask) ** 2
    np.testing.assert_allclose(hq, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ha, expected, rtol=1e-5, atol=1e-6)


def test_partner_gates_matter():
    rng, q, a, q_mask, a_mask = make_pair(5)
    layer = randomized(CTRN(4), rng, 3)
    hq, _ = call_layer(layer, [q, a], [q_mask, a_mask])
    other_a = a.copy()
    other_a[0, 0] += 1.0  # a real answer step of example 0
    hq2, _ = call_layer(layer, [q, other_a], [q_mask, a_mask])
    assert not np.allclose(hq[0], hq2[0])
    np.testing.assert_array_equal(hq[1:], hq2[1:])


def test_swapping_the_texts_swaps_the_outputs():
    rng, q, a, q_mask, a_mask = make_pair(6)
    layer = randomized(CTRN(4, alignment="stretch"), rng, 3)
    hq, ha = call_layer(layer, [q, a], [q_mask, a_mask])
    ha2, hq2 = call_layer(layer, [a, q], [a_mask, q_mask])
    np.testing.assert_allclose(hq, hq2, atol=1e-6)
    np.testing.assert_allclose(ha, ha2, atol=1e-6)


def test_alignments_agree_on_equal_lengths_and_differ_otherwise():
    rng, q, a, q_mask, a_mask = make_pair(7, q_lengths=(5, 2, 4, 1), a_lengths=(5, 6, 4, 7))
    index = randomized(CTRN(4, alignment="index"), rng, 3)
    stretch = CTRN(4, alignment="stretch")
    stretch.build([q.shape, a.shape])
    stretch.set_weights(index.get_weights())
    iq, ia = call_layer(index, [q, a], [q_mask, a_mask])
    sq, sa = call_layer(stretch, [q, a], [q_mask, a_mask])
    for row in (0, 2):  # |q| == |a|: t* = t either way
        np.testing.assert_allclose(sq[row], iq[row], atol=1e-6)
        np.testing.assert_allclose(sa[row], ia[row], atol=1e-6)
    assert not np.allclose(sq[1], iq[1]) and not np.allclose(sa[3], ia[3])


def test_stretch_indices():
    own = tf.constant([3, 7, 4, 2, 0])
    partner = tf.constant([7, 3, 4, 0, 5])
    out = stretch_indices(5, own, partner).numpy()
    np.testing.assert_array_equal(out[0], [0, 3, 6, 6, 6])  # ceil(7 / 3) = 3
    np.testing.assert_array_equal(out[1], [0, 2, 2, 2, 2])  # clipped to |partner| - 1 = 2
    np.testing.assert_array_equal(out[2], [0, 1, 2, 3, 3])
    np.testing.assert_array_equal(out[3], [0, 0, 0, 0, 0])  # empty partner
    np.testing.assert_array_equal(out[4], [0, 4, 4, 4, 4])  # empty own text: ratio 5


def test_empty_texts_give_finite_zero_outputs():
    rng, q, a, q_mask, a_mask = make_pair(8)  # a row 3 is empty
    for alignment in ALIGNMENTS:
        layer = randomized(CTRN(4, alignment=alignment), rng, 3)
        hq, ha = call_layer(layer, [q, a], [q_mask, a_mask])
        assert np.all(np.isfinite(hq)) and np.all(np.isfinite(ha))
        assert not ha[3].any() and hq[3, 0].any()


def test_no_extra_parameters_over_qrnn():
    ctrn, qrnn = CTRN(16, kernel_size=3), QRNN(16, kernel_size=3)
    ctrn.build([(None, None, 10), (None, None, 10)])
    qrnn.build((None, None, 10))
    assert ctrn.count_params() == qrnn.count_params() == 3 * 3 * 16 * 10 + 3 * 16
    assert [w.shape for w in ctrn.weights] == [w.shape for w in qrnn.weights]


def test_masks_propagate_through_a_functional_model():
    q_ids, a_ids = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    embed = keras.layers.Embedding(10, 4, mask_zero=True)
    hq, ha = CTRN(3)([embed(q_ids), embed(a_ids)])
    assert hq.shape == (None, None, 3) and ha.shape == (None, None, 3)
    masks = [keras.ops.cast(hq._keras_mask, "int32"), keras.ops.cast(ha._keras_mask, "int32")]
    model = keras.Model([q_ids, a_ids], masks)
    q, a = np.array([[3, 4, 0]]), np.array([[1, 0, 0, 0]])
    mq, ma = model([q, a])
    np.testing.assert_array_equal(mq, [[1, 1, 0]])
    np.testing.assert_array_equal(ma, [[1, 0, 0, 0]])


def test_invalid_arguments():
    with pytest.raises(ValueError, match="alignment"):
        CTRN(4, alignment="attention")
    with pytest.raises(ValueError, match="positive integer"):
        CTRN(0)
    with pytest.raises(ValueError, match="same, defined last dimension"):
        CTRN(4).build([(None, 3, 5), (None, 4, 6)])
    with pytest.raises(ValueError, match="pair"):
        CTRN(4).build((None, 3, 5))


def test_qrnn_and_both_alignments_convert_to_onnx():
    tf2onnx = pytest.importorskip("tf2onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(9)
    index = randomized(CTRN(4, kernel_size=3, alignment="index"), rng, 3)
    stretch = randomized(CTRN(4, kernel_size=2, alignment="stretch"), rng, 3)
    qrnn = QRNN(4, kernel_size=2)
    qrnn.build((None, None, 3))
    qrnn.set_weights(stretch.get_weights())
    spec = [tf.TensorSpec([None, None, 3], name="q"), tf.TensorSpec([None, None, 3], name="a"),
            tf.TensorSpec([None, None], tf.bool, name="q_mask"), tf.TensorSpec([None, None], tf.bool, name="a_mask")]

    def outputs(q, a, q_mask, a_mask):
        masks = [q_mask, a_mask]
        return [*index([q, a], mask=masks), *stretch([q, a], mask=masks), qrnn(q, mask=q_mask)]

    function = tf.function(outputs, input_signature=spec)
    proto, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=17)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed, (q_lengths, a_lengths) in enumerate([((5, 2, 3, 1), (7, 6, 3, 0)), ((2, 1), (1, 2))]):
        _, q, a, q_mask, a_mask = make_pair(seed, q_lengths, a_lengths)
        q, a = q[:, : max(q_lengths)] / 50.0, a[:, : max(a_lengths)] / 50.0  # the graph keeps lengths free
        q_mask, a_mask = q_mask[:, : max(q_lengths)], a_mask[:, : max(a_lengths)]
        got = session.run(None, {"q": q, "a": a, "q_mask": q_mask, "a_mask": a_mask})
        expected = [t.numpy() for t in function(q, a, q_mask, a_mask)]
        for g, e in zip(got, expected):
            assert np.abs(e).max() > 1e-3  # not trivially zero
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
