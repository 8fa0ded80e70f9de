"""Pieces every matching-model builder shares: the pair inputs, the embedding layer, the matching features."""

from __future__ import annotations

import keras
import numpy as np


def pair_inputs():
    """The two model inputs: int32 token ids `question` [batch, lq] and `answer` [batch, la] (0 = padding).

    Lengths are left unknown so batches can be trimmed to their longest text.
    """
    question = keras.Input(shape=(None,), dtype="int32", name="question")
    answer = keras.Input(shape=(None,), dtype="int32", name="answer")
    return question, answer


def frozen_embedding(vocab_size, embedding_dim, embeddings=None, trainable=False):
    """A masking `Embedding` (id 0 is padding) shared by both texts.

    With `embeddings` ([vocab_size, dim] pretrained vectors) its width is taken from the matrix; the builder
    copies the vectors in with `set_weights` once the model is built, so the `.keras` config never holds the
    matrix. Raises ValueError when the matrix has the wrong number of rows.
    """
    if embeddings is not None:
        embeddings = np.asarray(embeddings)
        if embeddings.ndim != 2 or embeddings.shape[0] != vocab_size:
            raise ValueError(
                f"embeddings: expected a matrix of shape [vocab_size={vocab_size}, dim], "
                f"got shape {embeddings.shape}"
            )
        embedding_dim = int(embeddings.shape[1])
    return keras.layers.Embedding(
        vocab_size, embedding_dim, mask_zero=True, trainable=trainable, name="word_embedding"
    )


def matching_features(xq, xa):
    """`[xq; xa; xq * xa; xq - xa]`, the pair representation of MCAN eq. 15 (and many matching models)."""
    product = keras.layers.Multiply(name="pair_product")([xq, xa])
    difference = keras.layers.Subtract(name="pair_difference")([xq, xa])
    return keras.layers.Concatenate(name="pair_features")([xq, xa, product, difference])


def feature_input(num_features):
    """The optional third model input `features`, float32 `[batch, num_features]` (pair features computed by the
    preprocessor, e.g. the four word-overlap features), or None when `num_features` is 0.

    Raises:
        ValueError: `num_features` is not a non-negative integer.
    """
    if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 0:
        raise ValueError(f"num_features must be a non-negative integer, got {num_features!r}")
    if not num_features:
        return None
    return keras.Input(shape=(num_features,), dtype="float32", name="features")


def output_head(x, head="softmax", num_classes=None, regularizer=None):
    """The model's output layer, one of the heads of `keras_match.heads` (the score contract).

    Args:
        x: float tensor `[batch, d]`, the pair representation after the prediction layers.
        head: `"softmax"`: 2-class softmax over (not relevant, relevant), float32 `[batch, 2]` (MCAN eq. 16,
            CTRN); `"score"`: a raw linear score `[batch, 1]`; `"classification"`: softmax over `num_classes`
            labels, `[batch, num_classes]`.
        num_classes: the number of labels of a classification head (>= 2).
        regularizer: kernel regularizer of the output layer.

    Returns:
        The output tensor, from a layer named `keras_match.heads.OUTPUT_LAYERS[head]`.

    Raises:
        ValueError: unknown head, or a classification head without `num_classes >= 2`.
    """
    from keras_match import heads

    units = heads.check_head(head, num_classes)
    activation = None if head == "score" else "softmax"
    return keras.layers.Dense(
        units, activation=activation, kernel_regularizer=regularizer, name=heads.OUTPUT_LAYERS[head]
    )(x)
