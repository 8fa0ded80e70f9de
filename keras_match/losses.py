"""Training objectives for answer selection, one per batching mode.

Every loss is a :class:`keras.losses.Loss` with a class attribute ``mode`` that tells the training loop how to
batch the data, so the loop never changes when a loss is added:

* ``"pointwise"``: one (question, candidate) pair per example; ``y_true`` the labels ``[batch]``.
* ``"pairwise"``: one (question, positive, negative) triple per example; ``y_pred`` ``[batch, 2]`` scores.
* ``"listwise"``: one question with its (padded) candidates per example; ``y_pred`` and ``y_true``
  ``[batch, n]``, label ``-1`` marking padding.

The losses are registered for Keras serialization under the package ``"keras_match"``, so models compiled
with them save and load with ``keras.saving``. Use :func:`get` to resolve a name (``"pointwise"``,
``"pairwise"``, ``"listwise"`` or a class name) to an instance.
"""

from __future__ import annotations

import keras
from keras import ops

MODES = ("pointwise", "pairwise", "listwise")

# Stands in for -inf in masked softmaxes: finite, so padded entries give 0 * finite = 0 instead of NaN.
_MASK_VALUE = -1e9


@keras.saving.register_keras_serializable(package="keras_match")
class PointwiseCrossEntropy(keras.losses.Loss):
    """Cross-entropy of a 2-class softmax over (irrelevant, relevant), one candidate per example.

    Equals sparse categorical cross-entropy with class ``1`` for labels ``>= 1`` and class ``0`` otherwise.
    Probabilities are clipped to ``[epsilon, 1 - epsilon]`` (``keras.config.epsilon()``) before the log.

    Call args:
        y_true: labels of shape ``[batch]`` (or ``[batch, 1]``), int or float; relevant means ``>= 1``
            (graded labels are binarised).
        y_pred: float of shape ``[batch, 2]``: softmax probabilities (column 1 = relevant), or logits when
            ``from_logits=True``.

    Returns (per example, before reduction):
        float of shape ``[batch]``: ``-log p(class)``.

    Args:
        from_logits: whether ``y_pred`` holds logits instead of probabilities.
        name: the loss name.
        reduction: Keras reduction over the batch (default mean, ``"sum_over_batch_size"``).
        dtype: the dtype of the computation (default ``keras.config.floatx()``).

    Reference:
        Tay, Tuan & Hui, "Multi-Cast Attention Networks", KDD 2018, eq. 16-17 (softmax output trained with
        cross-entropy); also used by CTRN (Tay et al., 2018).
    """

    mode = "pointwise"

    def __init__(self, from_logits=False, name="pointwise_cross_entropy", reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.from_logits = bool(from_logits)

    def call(self, y_true, y_pred):
        relevant = ops.cast(ops.greater_equal(ops.reshape(y_true, (-1,)), 1), "int32")
        one_hot = ops.one_hot(relevant, y_pred.shape[-1], dtype=y_pred.dtype)
        if self.from_logits:
            log_probs = ops.log_softmax(y_pred, axis=-1)
        else:
            eps = keras.config.epsilon()
            log_probs = ops.log(ops.clip(y_pred, eps, 1.0 - eps))
        return -ops.sum(one_hot * log_probs, axis=-1)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


@keras.saving.register_keras_serializable(package="keras_match")
class PointwiseSigmoidCrossEntropy(keras.losses.Loss):
    """Sigmoid cross-entropy of a raw relevance score, one candidate per example.

    For models whose head outputs one raw score per pair (``keras_match.heads``, head ``"score"``):
    ``-[y log sigmoid(s) + (1 - y) log(1 - sigmoid(s))]`` with ``y = 1`` for labels ``>= 1``.

    Call args:
        y_true: labels of shape ``[batch]`` (or ``[batch, 1]``); relevant means ``>= 1``.
        y_pred: float scores (logits) of shape ``[batch, 1]`` or ``[batch]``.

    Returns (per example, before reduction):
        float of shape ``[batch]``.

    Args:
        name: the loss name.
        reduction: Keras reduction over the batch (default mean, ``"sum_over_batch_size"``).
        dtype: the dtype of the computation (default ``keras.config.floatx()``).
    """

    mode = "pointwise"

    def __init__(self, name="pointwise_sigmoid_cross_entropy", reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        relevant = ops.cast(ops.greater_equal(ops.reshape(y_true, (-1,)), 1), y_pred.dtype)
        logits = ops.reshape(y_pred, (-1,))
        # log(1 + exp(-|s|)) + max(s, 0) - y s: the numerically stable form
        return ops.relu(logits) - logits * relevant + ops.log1p(ops.exp(-ops.abs(logits)))


@keras.saving.register_keras_serializable(package="keras_match")
class PairwiseHinge(keras.losses.Loss):
    """Margin ranking (hinge) loss on (positive, negative) score pairs: ``max(0, margin - s_pos + s_neg)``.

    Call args:
        y_true: ignored (pass zeros of shape ``[batch]``); the positive is always column 0 of ``y_pred``.
        y_pred: float of shape ``[batch, 2]``: column 0 = the positive candidate's score, column 1 = the
            negative candidate's score, for the same question.

    Returns (per example, before reduction):
        float of shape ``[batch]``: ``max(0, margin - y_pred[:, 0] + y_pred[:, 1])``.

    Args:
        margin: the required score gap, a float (default 1.0).
        name: the loss name.
        reduction: Keras reduction over the batch (default mean, ``"sum_over_batch_size"``).
        dtype: the dtype of the computation (default ``keras.config.floatx()``).

    Reference:
        Rao, He & Lin, "Noise-Contrastive Estimation for Answer Selection with Deep Neural Networks",
        CIKM 2016 (pairwise ranking with a hinge loss); Tay et al., HyperQA, WSDM 2018.
    """

    mode = "pairwise"

    def __init__(self, margin=1.0, name="pairwise_hinge", reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.margin = float(margin)

    def call(self, y_true, y_pred):
        return ops.relu(self.margin - y_pred[:, 0] + y_pred[:, 1])

    def get_config(self):
        return {**super().get_config(), "margin": self.margin}


@keras.saving.register_keras_serializable(package="keras_match")
class ListwiseSoftmax(keras.losses.Loss):
    """KL divergence between a question's normalised label distribution and the softmax of its scores.

    For one question with candidate scores ``s`` and labels ``y`` (padding excluded):
    ``target = y / sum(y)``, ``p = softmax(s)`` over the real candidates, loss ``= KL(target || p)``
    ``= sum_i target_i * (log target_i - log p_i)``. Padded candidates are masked out of the softmax; a question
    with no relevant candidate (``sum(y) == 0``, including all-padding rows) contributes 0. Graded labels weigh
    the target proportionally.

    Call args:
        y_true: labels of shape ``[batch, n]``, ``>= 0`` for real candidates and ``-1`` (any negative value) for
            padding.
        y_pred: float scores of shape ``[batch, n]``; values at padded positions are ignored.

    Returns (per question, before reduction):
        float of shape ``[batch]``.

    Args:
        name: the loss name.
        reduction: Keras reduction over the batch (default mean, ``"sum_over_batch_size"``).
        dtype: the dtype of the computation (default ``keras.config.floatx()``; keep float32 or wider, the
            mask value ``-1e9`` overflows float16).

    Reference:
        Wang & Jiang, "A Compare-Aggregate Model for Matching Text Sequences", ICLR 2017, eq. 10.
    """

    mode = "listwise"

    def __init__(self, name="listwise_softmax", reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        mask = ops.greater_equal(y_true, 0)
        labels = ops.where(mask, y_true, ops.zeros_like(y_true))
        total = ops.sum(labels, axis=-1, keepdims=True)
        target = labels / ops.where(total > 0, total, ops.ones_like(total))
        masked = ops.where(mask, y_pred, ops.full_like(y_pred, _MASK_VALUE))
        log_probs = masked - ops.logsumexp(masked, axis=-1, keepdims=True)
        log_target = ops.log(ops.where(target > 0, target, ops.ones_like(target)))  # 0 where target == 0
        return ops.sum(target * (log_target - log_probs), axis=-1)


_LOSSES = {
    "pointwise": PointwiseCrossEntropy,
    "pointwise_sigmoid": PointwiseSigmoidCrossEntropy,
    "pairwise": PairwiseHinge,
    "pairwise_hinge": PairwiseHinge,
    "listwise": ListwiseSoftmax,
    "listwise_softmax": ListwiseSoftmax,
}
_BY_NAME = {**_LOSSES, **{cls.__name__: cls for cls in _LOSSES.values()}}


def mode_of(identifier) -> str:
    """The batching mode (``"pointwise"``, ``"pairwise"``, ``"listwise"``) of a loss name, class or instance.

    Raises:
        ValueError: as :func:`get`.
    """
    return get(identifier).mode


def names() -> list[str]:
    """The names :func:`get` accepts: the modes and the class names.

    Returns:
        list of str.
    """
    return list(_BY_NAME)


def get(identifier) -> keras.losses.Loss:
    """Resolve a loss by name, class or instance.

    Args:
        identifier: a name from :func:`names` (``"pointwise"``, ``"pairwise_hinge"`` (or ``"pairwise"``),
            ``"listwise_softmax"`` (or ``"listwise"``), ``"pointwise_sigmoid"``, ``"PointwiseCrossEntropy"``, ...), a loss class, or a loss instance (returned as is). Classes and
            instances need a ``mode`` attribute in :data:`MODES`.

    Returns:
        A ``keras.losses.Loss`` instance with a ``mode`` attribute.

    Raises:
        ValueError: unknown name (the message lists the valid names), or a class/instance without a valid
            ``mode``.
    """
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"unknown loss {identifier!r}; valid names: {names()}")
        return _BY_NAME[identifier]()
    if isinstance(identifier, type) and issubclass(identifier, keras.losses.Loss):
        identifier = identifier()
    if isinstance(identifier, keras.losses.Loss):
        if getattr(identifier, "mode", None) not in MODES:
            raise ValueError(
                f"loss {identifier!r} has no valid `mode` attribute (one of {MODES}); the training loop needs it "
                "to choose the batching"
            )
        return identifier
    raise ValueError(f"cannot interpret {identifier!r} as a loss; pass one of {names()} or a loss instance")


__all__ = [
    "MODES",
    "ListwiseSoftmax",
    "PairwiseHinge",
    "PointwiseCrossEntropy",
    "PointwiseSigmoidCrossEntropy",
    "get",
    "mode_of",
    "names",
]
