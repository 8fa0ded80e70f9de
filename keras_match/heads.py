"""The score contract: what a model's output means, and the one function that turns it into a ranking score.

Every builder ends with one of three output heads (`keras_match.models.common.output_head`), told apart by the
name of the output layer, which a saved `.keras` model keeps:

| head | output layer | output | ranking score |
| --- | --- | --- | --- |
| `"softmax"` | `relevance_probabilities` | float32 `[batch, 2]`, p(not relevant), p(relevant) | `p(relevant)`; for ranking losses the logit `log p1 - log p0` |
| `"score"` | `relevance_score` | float32 `[batch, 1]`, a raw score (Compare-Aggregate eq. 10, a max-margin head) | the score |
| `"classification"` | `class_probabilities` | float32 `[batch, num_classes]`, softmax over the dataset's labels | none: classifiers are scored by accuracy |

`ranking_score(model, outputs)` is the only place that reads a column of a model's output; training (every loss
mode), evaluation, `Run.score` and the exported signatures all call it. Models saved before heads existed end in
a 2-unit softmax layer named `probabilities`; they are read as the `"softmax"` head.

The loss follows from the head and the batching mode (`training_loss`): pointwise batches train a softmax head
with cross-entropy over its two classes (MCAN eq. 17), a score head with sigmoid cross-entropy and a classifier
with categorical cross-entropy; pairwise and listwise batches train the ranking score (the softmax head's logit)
with the hinge or the listwise softmax of `keras_match.losses`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_match import losses

HEADS = ("softmax", "score", "classification")
"""The output heads a builder can end with."""

OUTPUT_LAYERS = {
    "softmax": "relevance_probabilities",
    "score": "relevance_score",
    "classification": "class_probabilities",
}
"""The output layer's name for each head."""

_LEGACY_LAYERS = {"probabilities": "softmax"}  # runs written before the heads existed

_EPSILON = 1e-7


def check_head(head, num_classes=None):
    """Validates a head name and its class count.

    Returns:
        The number of output units: 2 (`softmax`), 1 (`score`) or `num_classes` (`classification`).

    Raises:
        ValueError: unknown head, or a classification head without an integer `num_classes >= 2`.
    """
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; valid heads: {list(HEADS)}")
    if head == "classification":
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"head='classification' needs num_classes, an integer >= 2; got {num_classes!r}")
        return num_classes
    return 2 if head == "softmax" else 1


def head_of(model) -> str:
    """The head a model ends with (`"softmax"`, `"score"` or `"classification"`).

    Raises:
        ValueError: the model's output layer is none of the heads' (the message names the layer).
    """
    if len(model.outputs) != 1:
        raise ValueError(f"model {model.name!r} has {len(model.outputs)} outputs; matching models have one head")
    layer_name = model.outputs[0]._keras_history.operation.name
    for head, name in OUTPUT_LAYERS.items():
        if layer_name == name:
            return head
    if layer_name in _LEGACY_LAYERS:
        return _LEGACY_LAYERS[layer_name]
    raise ValueError(
        f"model {model.name!r} ends in layer {layer_name!r}; a matching model's output layer is one of "
        f"{sorted(OUTPUT_LAYERS.values())} (build it with keras_match.models.common.output_head)"
    )


def ranking_score(head: str, outputs, logits: bool = False):
    """The relevance score of each pair from a model's output.

    Args:
        head: the model's head (`head_of(model)`).
        outputs: the model's output, `[batch, 2]` (softmax) or `[batch, 1]` (score); a tensor or an array.
        logits: for the softmax head, return the logit `log p(relevant) - log p(not relevant)` (what ranking
            losses train) instead of the probability `p(relevant)` (what evaluation and export report). Both
            order candidates the same way.

    Returns:
        float `[batch]`.

    Raises:
        ValueError: a classification head (it has no relevance score).
    """
    if head == "softmax":
        if logits:
            return ops.log(outputs[:, 1] + _EPSILON) - ops.log(outputs[:, 0] + _EPSILON)
        return outputs[:, 1]
    if head == "score":
        return outputs[:, 0]
    if head == "classification":
        raise ValueError("a 'classification' head gives class probabilities, not a ranking score")
    raise ValueError(f"unknown head {head!r}; valid heads: {list(HEADS)}")


def training_loss(head: str, mode: str, loss=None):
    """The Keras loss that trains a head with batches of a mode.

    Args:
        head: see `HEADS`.
        mode: `"pointwise"`, `"pairwise"` or `"listwise"` (`keras_match.losses.MODES`).
        loss: the configured loss (name or instance, see `keras_match.losses.get`); its settings (the hinge's
            margin) are kept. Only used for pairwise and listwise modes.

    Returns:
        A `keras.losses.Loss`.

    Raises:
        ValueError: a classification head with a ranking mode.
    """
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; valid heads: {list(HEADS)}")
    if head == "classification":
        if mode != "pointwise":
            raise ValueError(f"a classification head trains pointwise, not {mode!r}: set loss=pointwise")
        return keras.losses.SparseCategoricalCrossentropy(name="categorical_cross_entropy")
    if mode == "pointwise":
        if head == "softmax":
            return losses.PointwiseCrossEntropy()
        return losses.PointwiseSigmoidCrossEntropy()
    resolved = losses.get(loss if loss is not None else mode)
    if resolved.mode != mode:
        raise ValueError(f"loss {resolved.name!r} is {resolved.mode}, not {mode}")
    return resolved


class ListScorer(keras.Model):
    """Scores lists of pairs with a matching model: what pairwise and listwise training fit.

    The inputs hold `k` candidates per row (`k = 2` for pairwise: positive, negative); they are flattened to
    `[batch * k, ...]`, scored by `scorer` and turned into the ranking score of its head (`ranking_score` with
    `logits=True`), then reshaped to `[batch, k]` for `keras_match.losses.PairwiseHinge` / `ListwiseSoftmax`.
    Padded list items (all-padding ids) are scored like any row; the listwise loss ignores them (label -1).
    The scorer's weights are the only weights: saving the scorer saves what was trained.

    Call args:
        inputs: dict of the scorer's inputs with a list axis: token ids int32 `[batch, k, length]`, other inputs
            `[batch, k, ...]` (pair features float32 `[batch, k, f]`).

    Returns:
        float32 `[batch, k]`.

    Args:
        scorer: a matching model with a `"softmax"` or `"score"` head.
    """

    def __init__(self, scorer, **kwargs):
        super().__init__(**kwargs)
        self.scorer = scorer
        self.head = head_of(scorer)
        if self.head == "classification":
            raise ValueError("a classification head has no ranking score to train pairwise or listwise")
        self.built = True  # the scorer is built; its weights are all there is

    def call(self, inputs, training=False):
        k = ops.shape(next(iter(inputs.values())))[1]
        flat = {key: ops.reshape(value, (-1,) + tuple(ops.shape(value)[2:])) for key, value in inputs.items()}
        outputs = self.scorer(flat, training=training)
        return ops.reshape(ranking_score(self.head, outputs, logits=True), (-1, k))
