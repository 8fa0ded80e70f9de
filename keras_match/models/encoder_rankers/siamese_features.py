"""What a bi-encoder's head reads of the two sentence embeddings: their cosine similarity (ranking), or SBERT's
classification features `[u; v; |u - v|]`."""

from __future__ import annotations

import keras
from keras import ops

from keras_match.layers.checks import one_of

__all__ = ["SiameseFeatures", "SIAMESE_FEATURES"]

SIAMESE_FEATURES = ("cosine", "concatenation")
"""The pair features `SiameseFeatures` gives: the cosine similarity, or SBERT's concatenation."""


@keras.saving.register_keras_serializable(package="keras_match")
class SiameseFeatures(keras.layers.Layer):
    """The pair features of two sentence embeddings `u` (the question's) and `v` (the answer's).

    - `"cosine"`: `cos(u, v) = u . v / (max(||u||, eps) max(||v||, eps))`, `[batch, 1]`: SBERT's regression and
      inference objective (Reimers & Gurevych 2019, section 3), the score sentence-transformers ranks by. With
      unit inputs (`SentenceEmbedding`) it is their dot product.
    - `"concatenation"`: `[u; v; |u - v|]`, `[batch, 3 dim]`: SBERT's classification objective (section 3, eq. 1:
      `o = softmax(W_t (u, v, |u - v|))`, the softmax being the head's).

    Args:
        features: `"cosine"` or `"concatenation"` (`SIAMESE_FEATURES`).
        epsilon: float > 0, the smallest norm divided by (a zero embedding, an empty text, gives cosine 0).
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`; the zoo's bi-encoder uses `"float32"`).

    Call arguments:
        inputs: `[u, v]`, float `[batch, dim]` each.

    Returns:
        `[batch, 1]` (cosine, in [-1, 1]) or `[batch, 3 * dim]` (concatenation), in the layer's compute dtype.

    Raises:
        ValueError: an unknown `features`; at build, inputs that are not two `[batch, dim]` tensors of one width.

    Examples:
    >>> u = np.array([[1.0, 0.0]], "float32"); v = np.array([[0.6, 0.8]], "float32")
    >>> float(SiameseFeatures("cosine")([u, v])[0, 0])
    0.6
    >>> SiameseFeatures("concatenation")([u, v]).shape
    TensorShape([1, 6])

    Reference:
        Reimers & Gurevych, Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks, EMNLP 2019, section 3
        (the classification objective, eq. 1, and the cosine objective).
    """

    def __init__(self, features="cosine", epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        one_of("features", features, SIAMESE_FEATURES)
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
            raise ValueError(f"epsilon must be a number > 0, got {epsilon!r}")
        self.features = features
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        shapes = list(input_shape) if isinstance(input_shape, (list, tuple)) else []
        if len(shapes) != 2 or any(len(shape) != 2 for shape in shapes) or shapes[0][-1] != shapes[1][-1]:
            raise ValueError(f"Layer {self.name} expects [u, v], two [batch, dim] tensors of one width. "
                             f"Received input_shape={input_shape}")
        self.built = True

    def call(self, inputs):
        u, v = (ops.cast(x, self.compute_dtype) for x in inputs)
        if self.features == "concatenation":
            return ops.concatenate([u, v, ops.abs(u - v)], axis=-1)
        return ops.sum(u * v, axis=-1, keepdims=True) / (self._norm(u) * self._norm(v))

    def _norm(self, x):
        norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
        return ops.maximum(norm, ops.cast(self.epsilon, x.dtype))

    def compute_output_shape(self, input_shape):
        u_shape = input_shape[0]
        width = 1 if self.features == "cosine" else (None if u_shape[-1] is None else 3 * u_shape[-1])
        return (u_shape[0], width)

    def get_config(self):
        config = super().get_config()
        config.update(features=self.features, epsilon=self.epsilon)
        return config
