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
