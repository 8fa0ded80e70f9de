"""The word-vector input encoder: a lookup of (pretrained, frozen or trained) word vectors."""

from __future__ import annotations

import functools

import keras
import numpy as np

from keras_match.encoders.base import LayerEncoder

__all__ = ["WordVectorEncoder", "word_vectors", "EMBEDDING_LAYER"]

EMBEDDING_LAYER = "word_embedding"
"""The name of the encoder's `Embedding` layer in every model (presets leave its frozen matrix out of the weights
file and rebuild it from the vectors)."""


class WordVectorEncoder(LayerEncoder):
    """Each token's word vector: a masking `keras.layers.Embedding` named `word_embedding`, shared by every text.

    The encoder of every family's paper: GloVe (or random) vectors, frozen (`trainable=False`, the papers' choice
    but Coupled-LSTMs') or trained with the model. The matrix is copied into the layer once the model is built
    (`finish`), so the model's `.keras` config never holds it.

    Args:
        vocab_size: int, the number of token ids including padding (0) and OOV (1), as
            `keras_match.text.TextEncoder.vocab_size`.
        embedding_dim: int, the vectors' width; ignored when `embeddings` is given (its width is used).
        embeddings: optional float array `[vocab_size, dim]`, pretrained vectors (`keras_match.text.load_embeddings`);
            without it the vectors start random (Keras' uniform initialiser).
        trainable: bool, whether training updates the vectors.

    Returns of `__call__`:
        `[..., length, dim]` in the model's compute dtype, masked where the id is 0.

    Raises:
        ValueError: `embeddings` is not a `[vocab_size, dim]` matrix.

    Examples:
    >>> encoder = WordVectorEncoder(vocab_size=1000, embedding_dim=50)
    >>> encoder(keras.Input(shape=(None,), dtype="int32")).shape
    (None, None, 50)
    """

    def __init__(self, vocab_size, embedding_dim=300, embeddings=None, trainable=False):
        if embeddings is not None:
            embeddings = np.asarray(embeddings)
            if embeddings.ndim != 2 or embeddings.shape[0] != vocab_size:
                raise ValueError(f"embeddings: expected a matrix of shape [vocab_size={vocab_size}, dim], got "
                                 f"shape {embeddings.shape}")
            embedding_dim = int(embeddings.shape[1])
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.embeddings = embeddings
        self.trainable = trainable
        self._layer = None

    @property
    def output_dim(self) -> int:
        return int(self.embedding_dim)

    def new_layer(self):
        """The masking `Embedding` layer named `word_embedding`."""
        return keras.layers.Embedding(self.vocab_size, self.embedding_dim, mask_zero=True, trainable=self.trainable,
                                      name=EMBEDDING_LAYER)

    def finish(self, model):
        if self.embeddings is not None:
            self.layer.set_weights([np.asarray(self.embeddings, dtype="float32")])


def word_vectors(vocab_size, embeddings=None, embedding_dim=300, trainable_embeddings=False):
    """A `WordVectorEncoder` from the zoo's word-vector settings (`embedding_dim`, `trainable_embeddings`)."""
    return WordVectorEncoder(vocab_size, embedding_dim, embeddings, trainable_embeddings)


def word_vectors_with(**defaults):
    """`word_vectors` with other defaults (a family whose paper trains its vectors, or uses 50d ones)."""
    return functools.partial(word_vectors, **defaults)
